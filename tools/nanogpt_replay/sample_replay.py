"""Replay nanoGPT's ``sample.py`` on fake tensors and record its memory.

Usage::

    python tools/nanogpt_replay/sample_replay.py --out tests/data/nanogpt_sample_replay.json

What sample.py does, step by step, as replayed here (nanoGPT at commit
3adf61e, ``sample.py`` and ``model.py``'s ``generate``):

1. ``init_from='resume'``: ``checkpoint = torch.load(ckpt_path,
   map_location=device)`` puts every tensor of the checkpoint train.py saved
   (``raw_model.state_dict()`` and the fused AdamW's ``state_dict()``) on the
   GPU; a model is built on the host, ``load_state_dict`` copies the weights
   into it, and ``model.to(device)`` moves it. ``checkpoint`` is a module-level
   name that sample.py reads again later (``'config' in checkpoint``) and never
   deletes, so the checkpoint stays on the GPU until the script ends.
   ``init_from='gpt2*'``: ``GPT.from_pretrained`` builds GPT-2 (block 1024,
   vocabulary 50257, biases) on the host, then ``model.to(device)``.
2. ``x``: the prompt's token ids, int64, shape ``(1, prompt_tokens)``.
3. Under ``torch.no_grad()`` and the autocast context, ``num_samples`` times
   ``model.generate(x, max_new_tokens, temperature, top_k)``: each new token
   runs the model on the sequence cropped to ``block_size`` (no KV cache), takes
   the logits of the last position only, divides by the temperature, masks all
   but the ``top_k`` largest, softmax, ``torch.multinomial``, and appends the
   token with ``torch.cat``.

Recorded per scenario: ``load_bytes`` (live after the model is on the GPU,
before generation), ``peak_bytes`` (the peak over the whole generation) and
``params``. The CUDA behaviour of autocast, SDPA and dropout is emulated as for
the training replay (``cuda_emulation.py``). ``logits[logits < v[:, [-1]]] =
-inf`` is a boolean-mask ``index_put_``, which needs data (``nonzero``) that
fake tensors do not have; the replay counts the mask it makes and the int64
index tensor ``nonzero`` would return, ``(vocab − top_k) × 2`` elements,
while the in-place fill runs.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from dataclasses import asdict, dataclass, replace
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuda_emulation import (  # noqa: E402
    autocast,
    cuda_dropout_patch,
    cuda_sdpa,
    install_cuda_autocast_policy,
    kernel_scratch_bytes,
)
from model import GPT, GPTConfig  # noqa: E402
from replay import DTYPES, count_params, resume_model, to_device  # noqa: E402
from tracker import StorageTracker  # noqa: E402

GPT2_SHAPES = {
    "gpt2": (12, 12, 768),
    "gpt2-medium": (24, 16, 1024),
    "gpt2-large": (36, 20, 1280),
    "gpt2-xl": (48, 25, 1600),
}


@dataclass(frozen=True)
class Sampling:
    """One ``python sample.py ...`` run, in sample.py's and model.py's vocabulary."""

    name: str
    init_from: str
    dtype: str
    prompt_tokens: int
    max_new_tokens: int
    num_samples: int = 2
    top_k: int | None = 200
    flash: bool = True
    # The checkpoint's model_args (init_from='resume' only).
    n_layer: int = 0
    n_head: int = 0
    n_embd: int = 0
    vocab_size: int = 0
    block_size: int = 0
    bias: bool = False

    def config(self) -> GPTConfig:
        if self.init_from == "resume":
            return GPTConfig(
                block_size=self.block_size,
                vocab_size=self.vocab_size,
                n_layer=self.n_layer,
                n_head=self.n_head,
                n_embd=self.n_embd,
                dropout=0.0,
                bias=self.bias,
                flash=self.flash,
            )
        n_layer, n_head, n_embd = GPT2_SHAPES[self.init_from]
        return GPTConfig(
            block_size=1024,
            vocab_size=50257,
            n_layer=n_layer,
            n_head=n_head,
            n_embd=n_embd,
            dropout=0.0,
            bias=True,
            flash=self.flash,
        )

    def as_json(self) -> dict:
        cfg = self.config()
        return {
            "init_from": self.init_from,
            "n_layer": cfg.n_layer,
            "n_head": cfg.n_head,
            "n_embd": cfg.n_embd,
            "vocab_size": cfg.vocab_size,
            "block_size": cfg.block_size,
            "bias": cfg.bias,
            "dtype": self.dtype,
            "flash": self.flash,
            "prompt_tokens": self.prompt_tokens,
            "max_new_tokens": self.max_new_tokens,
            "num_samples": self.num_samples,
            "top_k": self.top_k,
        }


def generate(model: GPT, idx: torch.Tensor, max_new_tokens: int, temperature: float,
             top_k: int | None) -> torch.Tensor:
    """nanoGPT's ``GPT.generate``, line by line (see the module docstring for the mask)."""
    block = model.config.block_size
    for _ in range(max_new_tokens):
        idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            mask = logits < v[:, [-1]]
            hits = logits.size(-1) - min(top_k, logits.size(-1))
            index = torch.empty((hits, 2), dtype=torch.long)  # what nonzero(mask) returns
            logits.masked_fill_(mask, -float("Inf"))
            del mask, index
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def replay(sc: Sampling, explain: bool = False) -> dict:
    """Run sample.py for ``sc`` on fake tensors; return its data entry."""
    dtype = DTYPES[sc.dtype]
    cfg = sc.config()
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=kernel_scratch_bytes))
        stack.enter_context(cuda_dropout_patch())
        tracker.phase = "load"
        if sc.init_from == "resume":
            model, checkpoint = resume_model(cfg, tracker)  # noqa: F841 (kept, as sample.py does)
        else:
            with tracker.host_side():
                model = GPT(cfg, sdpa=cuda_sdpa)
            to_device(model, tracker)
        model.eval()
        params = count_params(model)
        load_bytes = tracker.total
        x = torch.empty((1, sc.prompt_tokens), dtype=torch.long)
        tracker.phase = "generate"
        tracker.reset_peak()
        with torch.no_grad():
            with autocast(dtype):
                for _k in range(sc.num_samples):
                    # sample.py keeps `y` until the next sample replaces it.
                    y = generate(model, x, sc.max_new_tokens, 0.8, sc.top_k)  # noqa: F841
        if explain:
            groups: dict[tuple[str, int], int] = {}
            for nbytes, origin in tracker.peak_live:
                groups[(origin, nbytes)] = groups.get((origin, nbytes), 0) + 1
            for (origin, nbytes), n in sorted(groups.items(), key=lambda kv: -kv[0][1] * kv[1]):
                print(f"{n * nbytes:>14} {n:>4} x {nbytes:>12}  {origin}")
        return {
            "name": sc.name,
            "scenario": sc.as_json(),
            "params": params,
            "load_bytes": load_bytes,
            "peak_bytes": tracker.peak,
            "notes": f"peak during {tracker.peak_phase}; live at the end {tracker.total} B",
        }


def _r(name: str, shape: tuple[int, int, int, int, int], dtype: str, prompt: int, new: int,
       **kw) -> Sampling:
    n_layer, n_head, n_embd, vocab, block = shape
    return Sampling(name, "resume", dtype, prompt, new, n_layer=n_layer, n_head=n_head,
                    n_embd=n_embd, vocab_size=vocab, block_size=block, **kw)


CHAR = (6, 6, 384, 65, 256)
SMALL = (12, 12, 768, 50304, 1024)

# Long sequences reach block_size within a few tokens: a prompt of block_size − 1 and 3 new
# tokens run the longest forward twice (the crop keeps the sequence at block_size).
SAMPLINGS: list[Sampling] = [
    # nanoGPT's README: python sample.py --out_dir=out-shakespeare-char (prompt "\n").
    _r("resume-char-6x384-s256-bf16-prompt1-new8", CHAR, "bfloat16", 1, 8),
    _r("resume-char-6x384-s256-bf16-full", CHAR, "bfloat16", 255, 3),
    _r("resume-char-6x384-s256-fp32-full", CHAR, "float32", 255, 3),
    _r("resume-char-6x384-s256-fp16-full-manual", CHAR, "float16", 255, 3, flash=False),
    _r("resume-char-6x384-s256-bf16-full-topk-none", CHAR, "bfloat16", 255, 3, top_k=None),
    _r("resume-124m-s1024-bf16-full", SMALL, "bfloat16", 1023, 3),
    _r("resume-124m-s1024-bf16-half", SMALL, "bfloat16", 500, 2),
    _r("resume-124m-s1024-fp16-full-manual-bias", SMALL, "float16", 1023, 3, flash=False,
       bias=True),
    _r("resume-124m-s1024-bf16-full-manual", SMALL, "bfloat16", 1023, 3, flash=False),
    _r("resume-char-6x384-s256-fp32-one-token", CHAR, "float32", 1, 1, num_samples=1),
    _r("resume-char-6x384-s256-bf16-long-prompt-crop", CHAR, "bfloat16", 600, 3, top_k=5),
    _r("resume-tiny-4x128-s64-bf16-vocab-heavy", (4, 4, 128, 50304, 64), "bfloat16", 63, 3),
    # nanoGPT's README: python sample.py --init_from=gpt2-xl --start="..." --num_samples=5
    # --max_new_tokens=100.
    Sampling("gpt2-xl-bf16-prompt12-new100", "gpt2-xl", "bfloat16", 12, 4, num_samples=1),
    Sampling("gpt2-xl-bf16-full", "gpt2-xl", "bfloat16", 1023, 2, num_samples=1),
    Sampling("gpt2-bf16-full", "gpt2", "bfloat16", 1023, 3),
    Sampling("gpt2-fp32-full", "gpt2", "float32", 1023, 3),
    Sampling("gpt2-fp32-full-manual", "gpt2", "float32", 1023, 2, flash=False),
    Sampling("gpt2-medium-fp16-full-manual", "gpt2-medium", "float16", 1023, 2, flash=False),
    Sampling("gpt2-large-bf16-prompt100", "gpt2-large", "bfloat16", 100, 2),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, help="write the JSON document here")
    parser.add_argument("--only", action="append", default=[], help="replay only this run")
    parser.add_argument("--explain", action="store_true", help="list the live storages at the peak")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    install_cuda_autocast_policy()
    runs = [sc for sc in SAMPLINGS if not args.only or sc.name in args.only]
    entries = []
    for sc in runs:
        entry = replay(sc, explain=args.explain)
        print(f"{entry['name']}: load {entry['load_bytes'] / 2**20:.1f} MiB, "
              f"peak {entry['peak_bytes'] / 2**20:.1f} MiB ({entry['notes']})", flush=True)
        entries.append(entry)
    doc = {
        "generator": "tools/nanogpt_replay/sample_replay.py",
        "torch": torch.__version__.split("+")[0],
        "samplings": entries,
    }
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
