"""Replay nanochat's own training step (``scripts/base_train.py`` at the pinned commit) on fake
tensors and record its memory: the ground truth for vramdoc's nanochat estimate (issue 21).

Usage::

    git -C NANOCHAT_CLONE archive 92d63d4e8bb4df75c3b71618f31ddde2378b2bcd nanochat | tar -x -C DIR
    python tools/nanochat_replay/replay_nanochat.py --nanochat DIR --out tests/data/nanochat_replay.json

What runs is nanochat's code itself, imported from ``DIR/nanochat`` (``gpt.py``, ``optim.py``,
``flash_attention.py``, ``common.py``), as ``base_train.py`` drives it:

- the model built as ``build_model_meta`` configures it (``model_dim = ceil(depth·aspect_ratio / head_dim)
  · head_dim``, ``n_head = n_kv_head = model_dim / head_dim``, the tokenizer's 32,768 tokens),
  directly on the (fake) device rather than on the meta device and ``to_empty`` (the same
  storages), then ``init_weights`` (which casts ``wte`` and the value
  embeddings to the compute dtype);
- ``setup_optimizer``'s ``MuonAdamW`` (AdamW for the head, embeddings and scalars; Muon for the
  block matrices, one group per shape);
- two optimizer steps of ``grad_accum_steps`` micro-steps each: ``loss = model(x, y)``,
  ``loss / grad_accum_steps``, ``backward``; then ``optimizer.step()`` and
  ``model.zero_grad(set_to_none=True)``.

``COMPUTE_DTYPE`` is bfloat16 (what ``common.py`` picks on an sm80+ GPU; ``NANOCHAT_DTYPE``
set before the import) or float32 (pre-Ampere GPUs). Attention runs nanochat's SDPA fallback
(``flash_attention.py`` with ``USE_FA3`` false: FA3's kernels are not available to a replay),
routed to the kernel CUDA picks (``hf_sdpa.py``), and ``F.rms_norm`` to the memory of CUDA's
fused kernel (:class:`CudaRmsNorm`): full-context layers call SDPA causal without a
mask (FlashAttention-2 in bf16), sliding-window layers pass the explicit boolean mask that
``_sdpa_attention`` builds (the memory-efficient kernel with an additive mask).

Not replayed, and said so wherever the numbers are used: ``torch.compile`` (base_train.py
compiles the model, and ``optim.py`` compiles the two fused optimizer steps: under fake tensors
they run eagerly, ``TORCHDYNAMO_DISABLE=1``), FP8, evaluation, sampling and checkpointing.
With ``nproc_per_node > 1`` the replay is rank 0 of that many: ``torch.distributed`` is replaced
by a stand-in whose collectives return at once (what rank 0 allocates around them is nanochat's
own code: gradient slices, stacked Muon buffers), so the optimizer's sharded state is measured.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

os.environ["TORCHDYNAMO_DISABLE"] = "1"

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
from torch._subclasses.fake_tensor import FakeTensorMode  # noqa: E402

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "hf_replay"))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import install_cuda_autocast_policy  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
from replay_common import step_end, unique_bytes, write_document  # noqa: E402
from tracker import StorageTracker  # noqa: E402

NANOCHAT_COMMIT = "92d63d4e8bb4df75c3b71618f31ddde2378b2bcd"
VOCAB = 32768


@dataclass(frozen=True)
class Run:
    """One base_train.py command line (its flags; the rest at their defaults)."""

    name: str
    depth: int
    device_batch_size: int
    max_seq_len: int
    window_pattern: str = "SSSL"
    grad_accum_steps: int = 1
    nproc_per_node: int = 1
    dtype: str = "bfloat16"
    aspect_ratio: int = 64
    head_dim: int = 128


class _Work:
    """What an async collective hands back: a future that is already done."""

    def get_future(self):
        return self

    def wait(self):
        return None


class FakeDist:
    """``torch.distributed`` as rank 0 of ``world`` sees it, with collectives that move nothing."""

    def __init__(self, world: int):
        self.world = world
        self.ReduceOp = torch.distributed.ReduceOp

    def is_available(self):
        return True

    def is_initialized(self):
        return self.world > 1

    def get_rank(self):
        return 0

    def get_world_size(self):
        return self.world

    def all_reduce(self, *a, **k):
        return _Work()

    def reduce_scatter_tensor(self, *a, **k):
        return _Work()

    def all_gather_into_tensor(self, *a, **k):
        return _Work()


def load_nanochat(root: Path, dtype: str):
    """nanochat's ``gpt`` and ``optim`` modules from ``root`` with ``COMPUTE_DTYPE`` = ``dtype``."""
    os.environ["NANOCHAT_DTYPE"] = dtype
    if str(root) not in sys.path:
        sys.path.insert(0, str(root))
    for name in [m for m in sys.modules if m == "nanochat" or m.startswith("nanochat.")]:
        del sys.modules[name]
    gpt = importlib.import_module("nanochat.gpt")
    optim = importlib.import_module("nanochat.optim")
    fa = importlib.import_module("nanochat.flash_attention")
    assert not fa.USE_FA3
    return gpt, optim


@contextlib.contextmanager
def param_data_assignment():
    """``Module.to(dtype=...)`` as on real tensors: ``param.data = param.to(dtype)``, the old
    storage freed. On fake tensors ``Module._apply`` would ``swap_tensors``, which the tracker's
    weak references forbid; the storages are the same either way."""
    original = torch.nn.Module.to

    def to(module, *args, **kwargs):
        dtype = kwargs.get("dtype")
        if args or set(kwargs) != {"dtype"}:
            raise ValueError("the replay converts modules by dtype only")
        for p in module.parameters():
            p.data = p.data.to(dtype)
        return module

    torch.nn.Module.to = to
    try:
        yield
    finally:
        torch.nn.Module.to = original


class CudaRmsNorm(torch.autograd.Function):
    """``F.rms_norm`` without a weight as CUDA runs it: ``rms_norm`` calls ``_fused_rms_norm``
    (ATen's ``layer_norm.cpp``), whose CUDA kernel returns the result in the input's dtype and
    ``rstd`` in float32 (one per row), and whose autograd node saves ``input`` and ``rstd``
    (``derivatives.yaml``); the backward kernel returns ``grad_input``. CPU has no such kernel
    and decomposes into float32 copies, which the GPU never makes: this stands in for the
    kernel with outputs of the kernel's sizes (the values do not matter on fake tensors)."""

    @staticmethod
    def forward(ctx, x):
        rstd = torch.empty((*x.shape[:-1], 1), dtype=torch.float32)
        ctx.save_for_backward(x, rstd)
        return torch.empty_like(x, memory_format=torch.contiguous_format)

    @staticmethod
    def backward(ctx, grad):
        x, _rstd = ctx.saved_tensors
        return torch.empty_like(x, memory_format=torch.contiguous_format)


def cuda_rms_norm(x, normalized_shape, weight=None, eps=None):
    if weight is not None or list(normalized_shape) != [x.size(-1)]:
        raise ValueError("nanochat's norm() is F.rms_norm over the last dimension, no weight")
    return CudaRmsNorm.apply(x)


def config_of(gpt, run):
    """``build_model_meta(depth)`` of base_train.py: ``model_dim = ceil(depth·aspect_ratio /
    head_dim)·head_dim``, as many heads (and key/value heads) of ``head_dim``, the tokenizer's
    vocabulary; ``run`` has ``depth``, ``aspect_ratio``, ``head_dim``, ``max_seq_len`` and
    ``window_pattern``."""
    base_dim = run.depth * run.aspect_ratio
    model_dim = (base_dim + run.head_dim - 1) // run.head_dim * run.head_dim
    heads = model_dim // run.head_dim
    return gpt.GPTConfig(sequence_len=run.max_seq_len, vocab_size=VOCAB, n_layer=run.depth,
                         n_head=heads, n_kv_head=heads, n_embd=model_dim,
                         window_pattern=run.window_pattern)


def fake_gpu(stack: contextlib.ExitStack, gpt, tracker):
    """Enters fake tensors and ``tracker`` on ``stack``, with SDPA routed to the kernel CUDA
    picks and ``F.rms_norm`` to CUDA's fused kernel (both restored when ``stack`` closes);
    returns ``tracker``."""
    original_sdpa = F.scaled_dot_product_attention
    stack.enter_context(FakeTensorMode())
    stack.enter_context(tracker)
    F.scaled_dot_product_attention = hf_sdpa
    stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
    original_rms = gpt.F.rms_norm
    gpt.F.rms_norm = cuda_rms_norm
    stack.callback(lambda: setattr(gpt.F, "rms_norm", original_rms))
    return tracker


def replay(run: Run, root: Path, explain: bool = False) -> dict:
    gpt, optim = load_nanochat(root, run.dtype)
    optim.dist = FakeDist(run.nproc_per_node)
    config = config_of(gpt, run)
    model_dim, heads = config.n_embd, config.n_head
    with contextlib.ExitStack() as stack:
        tracker = fake_gpu(stack, gpt, StorageTracker("cpu", snapshot=explain,
                                                      scratch=scratch_bytes))
        # base_train.py builds on the meta device and calls to_empty(): the same storages as
        # building on the device directly, which fake tensors allow (to_empty cannot swap them).
        model = gpt.GPT(config)
        with param_data_assignment():
            model.init_weights()
        counts = model.num_scaling_params()
        param_bytes = unique_bytes(model.parameters())
        buffer_bytes = unique_bytes(model.buffers())
        opt = model.setup_optimizer(weight_decay=0.28)
        shape = (run.device_batch_size, run.max_seq_len)
        x = torch.empty(shape, dtype=torch.long)
        y = torch.empty(shape, dtype=torch.long)
        peaks, phases = [], []
        for step in range(2):
            tracker.reset_peak()
            for micro in range(run.grad_accum_steps):
                tracker.phase = f"forward {micro + 1}"
                loss = model(x, y)
                loss = loss / run.grad_accum_steps
                tracker.phase = f"backward {micro + 1}"
                loss.backward()
                del loss
            tracker.phase = "optimizer step"
            opt.step()
            # MuonAdamW.zero_grad(set_to_none=True) is base_train.py's model.zero_grad(...).
            grad_bytes, optimizer_bytes = step_end(model, opt, tracker, step, explain)
            peaks.append(tracker.peak)
            phases.append(tracker.peak_phase)
    return {
        "run": asdict(run),
        "model_dim": model_dim,
        "n_head": heads,
        "params": counts["total"],
        "param_counts": counts,
        "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes,
        "grad_bytes": grad_bytes,
        "optimizer_bytes": optimizer_bytes,
        "train_peak_bytes": peaks[1],
        "first_step_peak_bytes": peaks[0],
        "train_peak_phase": phases[1],
        "first_step_peak_phase": phases[0],
    }


# Depths are nanochat's miniseries (d20 is the speedrun's model); the deep ones replay with the
# full layer count, which takes longest, so most runs use small depths: every block is built
# the same, and depth also sets the width (64 per layer).
RUNS = [
    Run("d4-b8-s512-L", 4, 8, 512, "L"),
    Run("d4-b8-s512-SSSL", 4, 8, 512, "SSSL"),
    Run("d4-b4-s1024-SL-acc2", 4, 4, 1024, "SL", grad_accum_steps=2),
    Run("d6-b4-s512-SSSL-fp32", 6, 4, 512, "SSSL", dtype="float32"),
    Run("d8-b2-s2048-L", 8, 2, 2048, "L"),
    Run("d8-b2-s2048-SSSL", 8, 2, 2048, "SSSL"),
    Run("d8-b1-s256-SSSL", 8, 1, 256, "SSSL"),
    Run("d12-b4-s1024-SSSL-ddp8", 12, 4, 1024, "SSSL", nproc_per_node=8),
    Run("d12-b4-s1024-L-ddp2", 12, 4, 1024, "L", nproc_per_node=2),
    Run("d12-b8-s2048-L", 12, 8, 2048, "L"),
    Run("d20-b2-s2048-SSSL", 20, 2, 2048, "SSSL"),
    Run("d20-b1-s2048-L-ddp8", 20, 1, 2048, "L", nproc_per_node=8),
    # 500 tokens: the mask's columns padded to 512, the memory-efficient kernel's log-sum-exp
    # rounded up to 512; 6 layers over 4 ranks: Muon's chunks of 2 padded to 8 matrices.
    Run("d6-b2-s500-SSSL-ddp4", 6, 2, 500, "SSSL", nproc_per_node=4),
    Run("d6-b1-s1024-L-fp32-acc2-ddp2", 6, 1, 1024, "L", grad_accum_steps=2, nproc_per_node=2,
        dtype="float32"),
    # 128 tokens: the short window (128) is the whole sequence, so no layer builds a mask.
    Run("d10-b8-s128-SSSL", 10, 8, 128, "SSSL"),
]


def run_replays(description: str, generator: str, runs: list, replay_run, summary,
                argv: list[str] | None = None) -> int:
    """The command line both nanochat replays share (``--nanochat``, ``--out``, ``--only``,
    ``--explain``): replays each of ``runs`` with ``replay_run(run, root, explain=...)``, prints
    ``summary(entry)`` and writes the JSON document."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--nanochat", type=Path, required=True,
                        help=f"a directory holding nanochat/ at commit {NANOCHAT_COMMIT}")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--explain", action="store_true", help="list the live storages at the peak")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    entries = []
    for run in runs:
        if args.only and run.name not in args.only:
            continue
        e = replay_run(run, args.nanochat.resolve(), explain=args.explain)
        print(f"{run.name}: {summary(e)}", flush=True)
        entries.append(e)
    doc = {
        "generator": generator,
        "nanochat_commit": NANOCHAT_COMMIT,
        "torch": torch.__version__.split("+")[0],
        "runs": entries,
    }
    write_document(doc, args.out)
    return 0


def main(argv: list[str] | None = None) -> int:
    return run_replays(
        __doc__.splitlines()[0], "tools/nanochat_replay/replay_nanochat.py", RUNS, replay,
        lambda e: f"train peak {e['train_peak_bytes'] / 2**20:.1f} MiB "
                  f"({e['train_peak_phase']})",
        argv)


if __name__ == "__main__":
    sys.exit(main())
