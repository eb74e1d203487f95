"""Replay nanochat's own inference (``nanochat/engine.py``'s ``Engine.generate`` at the pinned
commit) on fake tensors and record its memory: the ground truth for vramdoc's nanochat generate
estimate (issue 22).

Usage::

    git -C NANOCHAT_CLONE archive 92d63d4e8bb4df75c3b71618f31ddde2378b2bcd nanochat | tar -x -C DIR
    python tools/nanochat_replay/replay_nanochat_generate.py --nanochat DIR \\
        --out tests/data/nanochat_generate_replay.json

What runs is nanochat's code itself, imported from ``DIR/nanochat`` (``gpt.py``, ``engine.py``,
``flash_attention.py``, ``common.py``):

- **Loading** as ``checkpoint_manager.build_model`` does it: the checkpoint's tensors on the
  device first (``torch.load(map_location=device)``; the dtypes ``base_train.py`` saves: the
  matrices, the head and the scalars in float32, ``wte`` and the value embeddings in the compute
  dtype), then ``GPT(config)`` given storage (``to_empty``: every parameter float32, the rotary
  buffers in the compute dtype), ``init_weights()`` (recomputes the rotary tables, casts ``wte``
  and the value embeddings), ``load_state_dict(model_data, strict=True, assign=True)`` (the
  checkpoint's tensors become the parameters, the empty ones are freed) and ``eval()``. The
  model is built on the (fake) device directly instead of the meta device and ``to_empty`` (the
  same storages: fake tensors cannot be swapped), and ``Module.to(dtype)`` assigns
  ``param.data`` (``replay_nanochat.param_data_assignment``).
- **Generation**: ``Engine(model, tokenizer).generate(prompt, num_samples, max_tokens,
  temperature, top_k)`` driven to its end: a batch-1 prefill into a ``KVCache`` of the prompt's
  length, the logits of the last position expanded to ``num_samples`` rows, a second ``KVCache``
  of ``num_samples`` rows and ``prompt + max_tokens`` positions filled from the first (which is
  then deleted), and one decoding forward per new token.

What stands in for the GPU and for the rest of nanochat:

- ``COMPUTE_DTYPE`` (``NANOCHAT_DTYPE`` set before the import), ``F.rms_norm`` (CUDA's fused
  kernel) and SDPA (the kernel CUDA picks) as in ``replay_nanochat.py``; FA3 is not available to a
  replay, so nanochat's SDPA fallback of ``flash_attn_with_kvcache`` runs (it writes the new keys
  and values into the cache in place, as FA3 does, and calls SDPA on views of the cache; a
  sliding-window layer whose window is shorter than the prompt gets an explicit boolean mask at
  the prefill).
- Fake tensors have no values: ``Tensor.item()`` on a ``KVCache``'s ``cache_seqlens`` returns the
  cache's position (tracked in Python from ``advance``, ``reset`` and ``prefill``), and
  ``Tensor.tolist()`` of the sampled tokens returns an ordinary token id for each row, so no row
  ends early and the calculator tool is never entered (its state is Python lists only).
- The tokenizer is a stand-in that names nanochat's special tokens (``Engine`` asks only for
  their ids); ``nanochat.tokenizer`` (rustbpe, tiktoken) is not imported.
"""

from __future__ import annotations

import contextlib
import importlib
import os
import sys
import types
import weakref
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ["TORCHDYNAMO_DISABLE"] = "1"

import torch  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensor  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "hf_replay"))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from hf_sdpa import scratch_bytes  # noqa: E402
from replay_common import print_live, unique_bytes  # noqa: E402
from replay_nanochat import (  # noqa: E402
    NANOCHAT_COMMIT, VOCAB, config_of, fake_gpu, param_data_assignment, run_replays)
from tracker import StorageTracker  # noqa: E402

SPECIALS = ["<|bos|>", "<|user_start|>", "<|user_end|>", "<|assistant_start|>",
            "<|assistant_end|>", "<|python_start|>", "<|python_end|>", "<|output_start|>",
            "<|output_end|>"]
# An ordinary token every row "samples" (no special token: rows run to max_tokens).
ORDINARY = 1000


@dataclass(frozen=True)
class Run:
    """One ``Engine.generate`` call on a model ``base_train.py --depth`` builds."""

    name: str
    depth: int
    prompt_tokens: int
    max_tokens: int
    num_samples: int = 1
    max_seq_len: int = 2048
    window_pattern: str = "SSSL"
    dtype: str = "bfloat16"
    temperature: float = 1.0
    top_k: int | None = None
    aspect_ratio: int = 64
    head_dim: int = 128


class PhaseTracker(StorageTracker):
    """The storage tracker with the largest live total of each phase."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.phase_peaks: dict[str, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = super().__torch_dispatch__(func, types, args, kwargs)
        # A kernel's scratch lives while it runs, beside its inputs and outputs.
        live = self.total + (self.scratch(func, args) if self.scratch else 0)
        if live > self.phase_peaks.get(self.phase, 0):
            self.phase_peaks[self.phase] = live
        return out


class StandInTokenizer:
    """What ``Engine.generate`` asks of nanochat's tokenizer: the special tokens' ids."""

    def encode_special(self, text: str) -> int:
        return VOCAB - 1 - SPECIALS.index(text)

    def get_bos_token_id(self) -> int:
        return self.encode_special("<|bos|>")

    def get_vocab_size(self) -> int:
        return VOCAB


def scratch(func: object, args: tuple) -> int:
    """Scratch a CUDA kernel allocates while it runs: ``hf_sdpa.scratch_bytes``, and
    ``multinomial``'s: drawing one sample without replacement, ATen's ``multinomial_out`` makes
    ``q = empty_like(self).exponential_()`` and takes ``argmax(self / q)`` (fake tensors return
    the result only)."""
    if func is torch.ops.aten.multinomial.default:
        probs = args[0]
        return probs.numel() * probs.element_size()
    return scratch_bytes(func, args)


def load_nanochat(root: Path, dtype: str):
    """nanochat's ``gpt`` and ``engine`` modules from ``root`` with ``COMPUTE_DTYPE`` = ``dtype``
    (``nanochat.tokenizer`` replaced by a stand-in module: ``checkpoint_manager`` imports it)."""
    os.environ["NANOCHAT_DTYPE"] = dtype
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for name in [m for m in sys.modules if m == "nanochat" or m.startswith("nanochat.")]:
        del sys.modules[name]
    importlib.import_module("nanochat")
    stand_in = types.ModuleType("nanochat.tokenizer")
    stand_in.get_tokenizer = StandInTokenizer
    sys.modules["nanochat.tokenizer"] = stand_in
    gpt = importlib.import_module("nanochat.gpt")
    engine = importlib.import_module("nanochat.engine")
    fa = importlib.import_module("nanochat.flash_attention")
    assert not fa.USE_FA3
    return gpt, engine


@contextlib.contextmanager
def known_positions(engine):
    """``KVCache`` positions known in Python (fake tensors have no values): ``item()`` of a
    cache's ``cache_seqlens`` (or a view of it) is the position its own methods set; ``tolist()``
    of a fake tensor is an ordinary token id per element."""
    # Weak: the engine frees the prefill's cache with `del`, and the replay must not keep it.
    caches: weakref.WeakValueDictionary = weakref.WeakValueDictionary()
    cls = engine.KVCache
    saved = {n: getattr(cls, n) for n in ("__init__", "reset", "advance", "prefill")}
    item, tolist = torch.Tensor.item, FakeTensor.tolist

    def init(self, *a, **k):
        saved["__init__"](self, *a, **k)
        self.replay_pos = 0
        caches[self.cache_seqlens.untyped_storage()._cdata] = self

    def reset(self):
        saved["reset"](self)
        self.replay_pos = 0

    def advance(self, n):
        saved["advance"](self, n)
        self.replay_pos += n

    def prefill(self, other):
        saved["prefill"](self, other)
        self.replay_pos = other.replay_pos

    def fake_item(t):
        if isinstance(t, FakeTensor):
            cache = caches.get(t.untyped_storage()._cdata)
            if cache is None:
                raise RuntimeError("item() of a fake tensor that is no cache position")
            return cache.replay_pos
        return item(t)

    def fake_tolist(t):
        if isinstance(t, FakeTensor):
            def fill(shape):
                return ORDINARY if not shape else [fill(shape[1:]) for _ in range(shape[0])]
            return fill(list(t.shape))
        return tolist(t)  # pragma: no cover

    cls.__init__, cls.reset, cls.advance, cls.prefill = init, reset, advance, prefill
    torch.Tensor.item, FakeTensor.tolist = fake_item, fake_tolist
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(cls, n, f)
        torch.Tensor.item, FakeTensor.tolist = item, tolist


def checkpoint_tensors(gpt, config, compute):
    """The state dict ``torch.load(map_location=device)`` puts on the device: a model's
    parameters in the dtypes ``base_train.py`` saved them in (float32, ``wte`` and the value
    embeddings in the compute dtype; no buffers: the rotary tables are not persistent)."""
    with torch.device("meta"):
        shapes = gpt.GPT(config)
    data = {}
    for name, p in shapes.named_parameters():
        embedding = name.startswith("transformer.wte") or name.startswith("value_embeds")
        dtype = compute if embedding else torch.float32
        data[name] = torch.empty(p.shape, dtype=dtype)
    return data


def replay(run: Run, root: Path, explain: bool = False) -> dict:
    gpt, engine = load_nanochat(root, run.dtype)
    compute = getattr(torch, run.dtype)
    config = config_of(gpt, run)
    with contextlib.ExitStack() as stack:
        tracker = fake_gpu(stack, gpt, PhaseTracker("cpu", snapshot=explain, scratch=scratch))
        stack.enter_context(known_positions(engine))
        # checkpoint_manager.build_model, phase="eval".
        tracker.phase = "load"
        model_data = checkpoint_tensors(gpt, config, compute)
        model = gpt.GPT(config)
        with param_data_assignment():
            model.init_weights()
        model.load_state_dict(model_data, strict=True, assign=True)
        del model_data
        model.eval()
        counts = model.num_scaling_params()
        param_bytes = unique_bytes(model.parameters())
        buffer_bytes = unique_bytes(model.buffers())
        load_peak = tracker.peak
        if explain:
            print(f"load: peak {tracker.peak}")
            print_live(tracker.peak_live)
        # infer_bench.py's torch.cuda.reset_peak_memory_stats before the generate call.
        tracker.phase = "prefill"
        tracker.reset_peak()
        resident = tracker.total
        eng = engine.Engine(model, StandInTokenizer())
        # Each cache's bytes by its position in the call (no reference kept: the engine frees
        # the prefill's cache with `del`).
        cache_sizes: dict[int, int] = {}
        original_forward = model.forward

        def forward(idx, targets=None, kv_cache=None, loss_reduction="mean"):
            # The first forward is the prefill (of any length), the others decoding steps.
            steps = sum(1 for p in tracker.phase_peaks if p.startswith("decode"))
            prefill = not cache_sizes
            tracker.phase = "prefill" if prefill else f"decode {steps + 1}"
            cache_sizes.setdefault(0 if prefill else 1, unique_bytes(
                [kv_cache.k_cache, kv_cache.v_cache, kv_cache.cache_seqlens]))
            out = original_forward(idx, targets, kv_cache, loss_reduction)
            tracker.phase = "replicate" if prefill else f"sample {steps + 1}"
            return out

        model.forward = forward
        prompt = [ORDINARY] * run.prompt_tokens
        produced = 0
        for column, _masks in eng.generate(prompt, num_samples=run.num_samples,
                                           max_tokens=run.max_tokens,
                                           temperature=run.temperature, top_k=run.top_k):
            assert len(column) == run.num_samples
            produced += 1
        assert produced == run.max_tokens
        if explain:
            print(f"generate: peak {tracker.peak} in {tracker.peak_phase}")
            print_live(tracker.peak_live)

    peaks = tracker.phase_peaks
    decode = [v for k, v in peaks.items() if k.startswith("decode") or k.startswith("sample")]
    return {
        "run": asdict(run),
        "model_dim": config.n_embd,
        "n_head": config.n_head,
        "params": counts["total"],
        "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes,
        "load_peak_bytes": load_peak,
        "resident_bytes": resident,
        "prefill_kv_bytes": cache_sizes[0],
        "kv_cache_bytes": cache_sizes[1],
        "prefill_forward_peak_bytes": peaks["prefill"],
        "replicate_peak_bytes": peaks["replicate"],
        "prefill_peak_bytes": max(peaks["prefill"], peaks["replicate"]),
        "first_decode_peak_bytes": max(peaks["decode 1"], peaks["sample 1"]),
        "decode_peak_bytes": max(decode),
        "generate_peak_bytes": tracker.peak,
        "generate_peak_phase": tracker.peak_phase,
    }


# Depths of nanochat's miniseries; d20 (the speedrun's) and d26 with all their layers, the rest
# small enough to replay quickly (every block is built the same, depth also sets the width).
RUNS = [
    Run("d4-p64-n16-b1", 4, 64, 16),
    Run("d4-p700-n40-b4-L", 4, 700, 40, 4, window_pattern="L"),
    Run("d6-p1500-n100-b8", 6, 1500, 100, 8),
    Run("d6-p300-n64-b16-fp32", 6, 300, 64, 16, dtype="float32"),
    Run("d8-p2048-n64-b1-argmax", 8, 2048, 64, 1, temperature=0.0),
    Run("d8-p256-n64-b32-topk", 8, 256, 64, 32, temperature=0.6, top_k=50),
    Run("d12-p4000-n32-b2", 12, 4000, 32, 2),
    Run("d12-p100-n200-b64", 12, 100, 200, 64, window_pattern="SL"),
    # chat_cli.py's sampling (temperature 0.6, top-k 50).
    Run("d20-p512-n128-b1-chat", 20, 512, 128, 1, temperature=0.6, top_k=50),
    Run("d20-p2048-n64-b8", 20, 2048, 64, 8),
    Run("d26-p1000-n24-b4", 26, 1000, 24, 4),
    # Past sequence_len (2048): the full-context layers are windowed too.
    Run("d4-p3000-n200-b2-s1024", 4, 3000, 200, 2, max_seq_len=1024),
]


def main(argv: list[str] | None = None) -> int:
    def summary(e: dict) -> str:
        return (f"load {e['load_peak_bytes'] / 2**20:.1f} MiB, prefill "
                f"{e['prefill_peak_bytes'] / 2**20:.1f} MiB, decode "
                f"{e['decode_peak_bytes'] / 2**20:.1f} MiB")

    return run_replays(__doc__.splitlines()[0],
                       "tools/nanochat_replay/replay_nanochat_generate.py", RUNS, replay, summary,
                       argv)


if __name__ == "__main__":
    sys.exit(main())
