"""Replay nanoGPT training steps on fake tensors and record their memory.

Usage (see README.md)::

    python tools/nanogpt_replay/replay.py --selftest
    python tools/nanogpt_replay/replay.py --out tests/data/nanogpt_replay.json

Each scenario builds nanoGPT's GPT (``model.py``) under ``FakeTensorMode`` at
full size (shapes and dtypes only, no arithmetic, no GPU) and runs train.py's
loop for two iterations: at iteration 0 ``estimate_loss()`` (eval mode,
``no_grad``, train and val splits, two batches each), then per iteration
``gradient_accumulation_steps`` micro-steps of forward under autocast,
``loss / accum``, prefetch of the next int64 batch, backward (through the
GradScaler for fp16), unscale + ``clip_grad_norm_(1.0)``, fused AdamW step,
scaler update and ``zero_grad(set_to_none=True)``. The ``logits`` and ``loss``
variables live on between micro-steps exactly as in train.py. The device-
specific behaviour of CUDA is emulated as explained in ``cuda_emulation.py``.

Recorded per scenario: the peak of live bytes over the second iteration's
training step (Adam state exists by then), the peak over ``estimate_loss()``
at iteration 0, and the unique bytes saved for backward by one micro-step
(activations and autocast weight copies; parameters and buffers excluded).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

sys.path.insert(0, str(Path(__file__).resolve().parent))

from cuda_emulation import (  # noqa: E402
    autocast,
    cuda_dropout_patch,
    cuda_sdpa,
    install_cuda_autocast_policy,
    kernel_scratch_bytes,
)
from grid import GRID, Scenario  # noqa: E402
from model import GPT, GPTConfig  # noqa: E402
from tracker import SavedTensorCounter, StorageTracker  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
EVAL_ITERS = 2  # the memory of eval batch k >= 1 repeats; two show it
GRAD_CLIP = 1.0


@dataclass
class Result:
    """What one replay measured; serialised as one entry of ``configs``."""

    name: str
    scenario: dict
    params: dict
    train_peak_bytes: int
    eval_peak_bytes: int
    saved_for_backward_bytes: int
    notes: str
    extra: dict = field(default_factory=dict)


def count_params(model: GPT) -> dict:
    """nanoGPT's parameter figures: unique total, non-embedding, optimizer groups."""
    decay, no_decay = (g["params"] for g in model.optimizer_groups(0.1))
    total = sum(p.numel() for p in model.parameters())
    return {
        "total": total,
        "non_embedding": model.get_num_params(non_embedding=True),
        "decay": sum(p.numel() for p in decay),
        "no_decay": sum(p.numel() for p in no_decay),
        "decay_tensors": len(decay),
        "no_decay_tensors": len(no_decay),
    }


def replay(sc: Scenario, explain: bool = False) -> Result:
    """Run train.py's loop for ``sc`` on fake tensors and measure it.

    With ``explain``, ``Result.extra`` lists the live storages at the train
    and eval peaks (``train_live``, ``eval_live``: (bytes, "phase: op")).
    """
    dtype = DTYPES[sc.dtype]
    cfg = GPTConfig(
        block_size=sc.block_size,
        vocab_size=sc.vocab_size,
        n_layer=sc.n_layer,
        n_head=sc.n_head,
        n_embd=sc.n_embd,
        dropout=sc.dropout,
        bias=sc.bias,
        flash=sc.flash,
    )
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=kernel_scratch_bytes))
        stack.enter_context(cuda_dropout_patch())

        def get_batch(batch: int):
            # train.py: int64 tokens copied to the GPU (pinned host copies
            # are not GPU memory).
            x = torch.empty((batch, sc.block_size), dtype=torch.long)
            y = torch.empty((batch, sc.block_size), dtype=torch.long)
            return x, y

        model = GPT(cfg, sdpa=cuda_sdpa)
        model.train()
        params = count_params(model)
        scaler = torch.amp.GradScaler("cpu", enabled=(dtype == torch.float16))
        optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), fused=True)

        def estimate_loss() -> None:
            with torch.no_grad():
                model.eval()
                for _split in ("train", "val"):
                    for _k in range(EVAL_ITERS):
                        X, Y = get_batch(sc.eval_batch_size)
                        with autocast(dtype):
                            logits, loss = model(X, Y)
                        # losses[k] = loss.item(): a host copy, no GPU memory.
                model.train()

        X, Y = get_batch(sc.batch_size)
        peaks = {}
        for iter_num in range(2):
            if iter_num == 0:
                tracker.phase = "eval"
                tracker.reset_peak()
                estimate_loss()
                peaks["eval"] = (tracker.peak, tracker.peak_phase)
                eval_live = tracker.peak_live
            tracker.phase = "forward 1"
            tracker.reset_peak()
            for micro in range(sc.gradient_accumulation_steps):
                tracker.phase = f"forward {micro + 1}"
                with autocast(dtype):
                    logits, loss = model(X, Y)
                    loss = loss / sc.gradient_accumulation_steps
                X, Y = get_batch(sc.batch_size)
                tracker.phase = f"backward {micro + 1}"
                scaler.scale(loss).backward()
            tracker.phase = "clip"
            scaler.unscale_(optimizer)
            torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
            tracker.phase = "optimizer step"
            scaler.step(optimizer)
            scaler.update()
            tracker.phase = "zero_grad"
            optimizer.zero_grad(set_to_none=True)
            peaks[f"train{iter_num}"] = (tracker.peak, tracker.peak_phase)
            train_live = tracker.peak_live
        steady = tracker.total

        # One more micro-step, only to list what autograd saves (hooks can
        # keep saved outputs alive longer, so this comes after the peaks).
        persistent = list(model.parameters()) + list(model.buffers())
        with SavedTensorCounter(exclude=persistent) as saved:
            with autocast(dtype):
                logits, loss = model(X, Y)
                loss = loss / sc.gradient_accumulation_steps
        saved_bytes = saved.total
        scaler.scale(loss).backward()
        optimizer.zero_grad(set_to_none=True)

    train_peak, train_phase = peaks["train1"]
    eval_peak, _ = peaks["eval"]
    first_peak, first_phase = peaks["train0"]
    notes = (
        f"train peak during {train_phase} of iteration 2; "
        f"iteration 1 peak {first_peak} B (during {first_phase}); "
        f"live between steps {steady} B"
    )
    return Result(
        name=sc.name,
        scenario=sc.as_json(),
        params=params,
        train_peak_bytes=train_peak,
        eval_peak_bytes=eval_peak,
        saved_for_backward_bytes=saved_bytes,
        notes=notes,
        extra={"train_live": train_live, "eval_live": eval_live},
    )


def explain(result: Result, key: str, top: int = 25) -> str:
    """The largest groups of live storages at a peak, as text."""
    groups: dict[tuple[str, int], int] = {}
    for nbytes, origin in result.extra[key]:
        groups[(origin, nbytes)] = groups.get((origin, nbytes), 0) + 1
    rows = sorted(groups.items(), key=lambda kv: -kv[0][1] * kv[1])[:top]
    lines = [f"{key} (largest {top} groups: total bytes, count x bytes, created in)"]
    for (origin, nbytes), n in rows:
        lines.append(f"{n * nbytes:>14} {n:>4} x {nbytes:>12}  {origin}")
    return "\n".join(lines)


def document(results: list[Result]) -> dict:
    """The JSON document written to ``tests/data/nanogpt_replay.json``."""
    configs = []
    for r in results:
        entry = asdict(r)
        entry.pop("extra")
        configs.append(entry)
    return {
        "generator": "tools/nanogpt_replay/replay.py",
        "torch": torch.__version__.split("+")[0],
        "configs": configs,
    }


def main(argv: list[str] | None = None) -> int:
    """Command line: ``--selftest``, or replay the grid into ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--selftest", action="store_true", help="check the tracker and emulation")
    parser.add_argument("--out", type=Path, help="write the JSON document here")
    parser.add_argument("--only", action="append", default=[], help="replay only this scenario")
    parser.add_argument(
        "--explain", action="store_true", help="list the live storages at each peak"
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore", category=UserWarning)
    install_cuda_autocast_policy()
    if args.selftest:
        from selftest import run_selftest

        return run_selftest()
    grid = [sc for sc in GRID if not args.only or sc.name in args.only]
    if args.only and len(grid) != len(args.only):
        known = ", ".join(sc.name for sc in GRID)
        parser.error(f"unknown scenario in --only; known: {known}")
    results = []
    for sc in grid:
        r = replay(sc, explain=args.explain)
        print(
            f"{r.name}: train {r.train_peak_bytes / 2**20:.1f} MiB, "
            f"eval {r.eval_peak_bytes / 2**20:.1f} MiB, "
            f"saved {r.saved_for_backward_bytes / 2**20:.1f} MiB ({r.notes})",
            flush=True,
        )
        if args.explain:
            print(explain(r, "train_live"), explain(r, "eval_live"), sep="\n")
        results.append(r)
    text = json.dumps(document(results), indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
