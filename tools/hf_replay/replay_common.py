"""What the Hugging Face replays share: storage sums, the ``--explain`` listing and the command
line (``--out``, ``--only NAME``, ``--explain``) that replays each run and writes the JSON."""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path
from typing import Callable, Sequence

import torch

from cuda_emulation import install_cuda_autocast_policy


def unique_bytes(tensors) -> int:
    """Bytes of the distinct storages among ``tensors`` (a tied weight counted once)."""
    seen: dict[int, int] = {}
    for t in tensors:
        st = t.untyped_storage()
        seen[st._cdata] = st.nbytes()
    return sum(seen.values())


def print_live(live: list[tuple[int, str]]) -> None:
    """The storages alive at a peak, grouped by phase, op and size, largest total first."""
    groups: dict[tuple[str, int], int] = {}
    for nbytes, origin in live:
        groups[(origin, nbytes)] = groups.get((origin, nbytes), 0) + 1
    for (origin, nbytes), n in sorted(groups.items(), key=lambda kv: -kv[0][1] * kv[1]):
        print(f"{n * nbytes:>14} {n:>4} x {nbytes:>12}  {origin}")


def main(description: str, generator: str, runs: Sequence, replay: Callable[..., dict],
         argv: list[str] | None = None) -> int:
    """Replays ``runs`` (those named by ``--only``) and writes the document to ``--out``."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--explain", action="store_true", help="list the live storages at the peak")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    import transformers

    entries = []
    for run in runs:
        if args.only and run.name not in args.only:
            continue
        e = replay(run, explain=args.explain)
        print(f"{run.name}: train peak {e['train_peak_bytes'] / 2**20:.1f} MiB", flush=True)
        entries.append(e)
    doc = {
        "generator": generator,
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        **({"peft": sys.modules["peft"].__version__} if "peft" in sys.modules else {}),
        "runs": entries,
    }
    write_document(doc, args.out)
    return 0


def write_document(doc: dict, out: Path | None) -> None:
    """The replay's JSON document, sorted and indented, to ``out`` or standard output."""
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if out:
        out.write_text(text)
    else:
        sys.stdout.write(text)


def step_end(model, opt, tracker, step: int, explain: bool) -> tuple[int, int]:
    """After ``opt.step()``: the gradient and optimizer-state bytes (state on the host, such as
    a paged optimizer's, left out), then
    ``zero_grad(set_to_none=True)`` and, with ``explain``, the step's peak and live storages."""
    grad_bytes = unique_bytes(p.grad for p in model.parameters() if p.grad is not None)
    optimizer_bytes = unique_bytes(
        t for state in opt.state.values() for t in state.values()
        if isinstance(t, torch.Tensor) and not tracker.is_host(t)
    )
    opt.zero_grad(set_to_none=True)
    if explain:
        print(f"step {step + 1}: peak {tracker.peak} in {tracker.peak_phase}")
        print_live(tracker.peak_live)
    return grad_bytes, optimizer_bytes


def trainer_steps(model, tracker, batch: torch.Tensor, accumulation: int, dtype: torch.dtype,
                  explain: bool = False, make_optimizer=None, after_forward=None,
                  inputs: dict | None = None) -> dict:
    """Two Trainer steps of ``model`` on ``batch`` (``input_ids`` and labels), as the module
    docs of the replays say: per micro-step the forward under ``autocast(dtype)`` (none for
    float32), the loss over ``accumulation``, ``backward``; then ``clip_grad_norm_(1.0)``,
    fused AdamW's step and ``zero_grad(set_to_none=True)``. Each step's peak and its phase, and
    the gradient and optimizer bytes of the last. ``make_optimizer(trainable)`` replaces fused
    AdamW (the bitsandbytes optimizers of ``replay_qlora.py``); its state's device storages
    are counted (a paged state's host storages are not). ``after_forward(outputs)`` runs after
    each forward, outside autocast, before the loss is taken (TRL's ``compute_loss`` metrics).
    ``inputs`` are further keyword arguments of every forward (a batch layout's
    ``attention_mask`` or ``position_ids``, ``use_cache``: ``replay_batches.py``)."""
    from cuda_emulation import autocast

    trainable = [p for p in model.parameters() if p.requires_grad]
    if make_optimizer is None:
        opt = torch.optim.AdamW(trainable, lr=5e-5, fused=True)
    else:
        opt = make_optimizer(trainable)
    peaks, phases = [], []
    for step in range(2):
        tracker.reset_peak()
        for micro in range(accumulation):
            tracker.phase = f"forward {micro + 1}"
            with autocast(dtype):
                out = model(input_ids=batch, labels=batch, **(inputs or {}))
            if after_forward is not None:
                after_forward(out)
            loss = out.loss / accumulation
            del out
            tracker.phase = f"backward {micro + 1}"
            loss.backward()
        tracker.phase = "clip"
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        tracker.phase = "optimizer step"
        opt.step()
        grad_bytes, optimizer_bytes = step_end(model, opt, tracker, step, explain)
        peaks.append(tracker.peak)
        phases.append(tracker.peak_phase)
    return {
        "train_peak_bytes": peaks[1],
        "first_step_peak_bytes": peaks[0],
        "train_peak_phase": phases[1],
        "first_step_peak_phase": phases[0],
        "grad_bytes": grad_bytes,
        "optimizer_bytes": optimizer_bytes,
    }
