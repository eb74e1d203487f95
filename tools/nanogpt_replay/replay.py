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

train.py's other ways to start and run are replayed too (``grid.RUNS`` and
the GPT-2 fine-tunes): ``init_from='gpt2*'`` (model built on the host,
cropped, moved to the device), ``eval_only`` (stop after the first
``estimate_loss()``), ``init_from='resume'`` (checkpoint loaded onto the
device; ``resume_load_peak_bytes``) and DDP on a fake process group
(``ddp_bucket_bytes``). README.md explains each.

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
from dataclasses import asdict, dataclass, field, replace
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
from grid import GRID, RUNS, Scenario  # noqa: E402
from model import GPT, GPTConfig, apply_lora, freeze_embeddings  # noqa: E402
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
    train_peak_bytes: int | None
    eval_peak_bytes: int
    saved_for_backward_bytes: int | None
    notes: str
    resume_load_peak_bytes: int | None = None
    ddp_bucket_bytes: int | None = None
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


def to_device(model: GPT, tracker: StorageTracker) -> None:
    """``model.to(device)`` for a model built on the host: copy host tensors.

    Tensors already on the device are kept, as ``Tensor.to`` does (the tied
    wte/lm_head weight is copied once). A cropped view is copied compactly.
    """
    # Module._apply swaps fake parameters (swap_tensors), which refuses
    # tensors with weak references; ``.data`` replacement is what it does for
    # real tensors.
    with torch.no_grad():
        for module in model.modules():
            for p in module._parameters.values():
                if p is not None and tracker.is_host(p):
                    p.data = p.data.clone()
            for name, buf in module._buffers.items():
                if buf is not None and tracker.is_host(buf):
                    module._buffers[name] = buf.clone()


def torch_load(obj, memo: dict | None = None):
    """``torch.load(ckpt, map_location=device)``: a device copy of every tensor.

    Tensors that shared a storage when saved share one after loading (the
    tied wte/lm_head weight is one tensor in the checkpoint).
    """
    memo = {} if memo is None else memo
    if isinstance(obj, torch.Tensor):
        key = obj.untyped_storage()._cdata
        if key not in memo:
            memo[key] = obj.clone()
        assert memo[key].shape == obj.shape, "shared storages are whole tensors here"
        return memo[key]
    if isinstance(obj, dict):
        return {k: torch_load(v, memo) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return type(obj)(torch_load(v, memo) for v in obj)
    return obj


def resume_model(cfg: GPTConfig, tracker: StorageTracker) -> tuple[GPT, dict]:
    """train.py's ``init_from='resume'`` up to ``model.to(device)``.

    The checkpoint is what the previous run saved: ``raw_model.state_dict()``
    (persistent buffers included) and the fused AdamW's ``state_dict()`` (two
    fp32 moments and an fp32 ``step`` per parameter). That run is another
    process, so it is built on the host; ``torch.load(map_location=device)``
    then puts every tensor on the device. The model is built on the host,
    loads the state dict (copies to the host) and is moved to the device.
    Returns the model and the loaded checkpoint.
    """
    with tracker.host_side():
        prev = GPT(cfg, sdpa=cuda_sdpa)
        prev_opt = prev.configure_optimizers(0.1, 6e-4, (0.9, 0.95), fused=True)
        for p in prev.parameters():
            p.grad = torch.zeros_like(p)
        prev_opt.step()
        prev_opt.zero_grad(set_to_none=True)
        saved = {"model": prev.state_dict(), "optimizer": prev_opt.state_dict()}
        del prev, prev_opt
    tracker.phase = "resume load"
    tracker.reset_peak()
    checkpoint = torch_load(saved)
    del saved
    with tracker.host_side():
        model = GPT(cfg, sdpa=cuda_sdpa)
    model.load_state_dict(checkpoint["model"])
    to_device(model, tracker)
    return model, checkpoint


class _KeepBuckets:
    """The DDP reducer, minus its bucket rebuild after the first iteration.

    ``Reducer._rebuild_buckets`` broadcasts the new layout as a tensor's data,
    which fake tensors do not have. The replay keeps the initial layout: all
    gradients in one bucket (DDP's initial assignment without
    ``find_unused_parameters``). The bucket storage is the same in total: one
    fp32 element per unique parameter.
    """

    def __init__(self, reducer):
        self._reducer = reducer

    def _rebuild_buckets(self) -> bool:
        return False

    def __getattr__(self, name: str):
        return getattr(self._reducer, name)


@contextlib.contextmanager
def fake_process_group(world_size: int):
    """Rank 0 of a ``world_size`` process group that does not communicate."""
    import torch.distributed as dist
    import torch.nn.parallel.distributed as ddp_module
    from torch.testing._internal.distributed.fake_pg import FakeStore

    verify = ddp_module._verify_param_shape_across_processes
    # It compares parameter shapes across ranks by reading tensor data; with
    # one process and fake tensors there is nothing to compare.
    ddp_module._verify_param_shape_across_processes = lambda *a, **k: None
    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()
        ddp_module._verify_param_shape_across_processes = verify


def wrap_ddp(model: GPT, world_size: int):
    """``DDP(model)`` with train.py's defaults (25 MiB buckets, no bucket views).

    The fake process group's all-reduce has no result, so the comm hook is
    DDP's default all-reduce hook restated: divide the bucket by the world
    size in place and return it (NCCL reduces in place; no extra memory).
    """
    from torch.nn.parallel import DistributedDataParallel as DDP

    ddp = DDP(model)

    def allreduce(_state, bucket):
        buf = bucket.buffer()
        buf.div_(world_size)
        fut = torch.futures.Future()
        fut.set_result(buf)
        return fut

    ddp.register_comm_hook(None, allreduce)
    ddp.reducer = _KeepBuckets(ddp.reducer)
    return ddp


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

        if sc.ddp_world_size > 1:
            stack.enter_context(fake_process_group(sc.ddp_world_size))
        load_peak = None
        if sc.init_from == "scratch":
            model = GPT(cfg, sdpa=cuda_sdpa)
        elif sc.init_from == "resume":
            model, checkpoint_state = resume_model(cfg, tracker)
            load_peak = tracker.peak
        else:
            # GPT.from_pretrained: a model with GPT-2's shapes (block 1024) on
            # the CPU, filled from the Hugging Face weights (host memory),
            # cropped if block_size < 1024, then model.to(device).
            with tracker.host_side():
                model = GPT(replace(cfg, block_size=1024), sdpa=cuda_sdpa)
            if sc.block_size < 1024:
                model.crop_block_size(sc.block_size)
            to_device(model, tracker)
        # The fine-tuning patches, between model.to(device) and
        # configure_optimizers (which leaves frozen parameters out). The
        # adapters are made on the device, as PEFT moves them to their base
        # layer's device.
        if sc.freeze_embeddings:
            freeze_embeddings(model)
        if sc.lora_rank:
            apply_lora(model, sc.lora_rank, sc.lora_targets)
        model.train()
        params = count_params(model)
        scaler = torch.amp.GradScaler("cpu", enabled=(dtype == torch.float16))
        optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), fused=True)
        resume_note = ""
        if sc.init_from == "resume":
            tracker.phase = "resume load"
            optimizer.load_state_dict(checkpoint_state["optimizer"])
            load_peak = max(load_peak, tracker.peak)
            # checkpoint = None; train.py's module-level ``state_dict`` still
            # holds checkpoint['model'] (the checkpoint's own GPU tensors).
            state_dict = checkpoint_state["model"]  # noqa: F841
            del checkpoint_state
            resume_note = f"; live after checkpoint = None {tracker.total} B"
        bucket_bytes = None
        if sc.ddp_world_size > 1:
            before = tracker.total
            model = wrap_ddp(model, sc.ddp_world_size)
            bucket_bytes = tracker.total - before

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
        setup_live = tracker.total
        peaks = {}
        train_live = []
        for iter_num in range(2):
            if iter_num == 0:
                # At iteration 0, and on resume at the saved iter_num (a
                # multiple of eval_interval), estimate_loss() runs first.
                tracker.phase = "eval"
                tracker.reset_peak()
                estimate_loss()
                peaks["eval"] = (tracker.peak, tracker.peak_phase)
                eval_live = tracker.peak_live
                if sc.eval_only:
                    break  # if iter_num == 0 and eval_only: break
            tracker.phase = "forward 1"
            tracker.reset_peak()
            for micro in range(sc.gradient_accumulation_steps):
                if sc.ddp_world_size > 1:
                    model.require_backward_grad_sync = (
                        micro == sc.gradient_accumulation_steps - 1
                    )
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

        saved_bytes = None
        if not sc.eval_only:
            # One more micro-step, only to list what autograd saves (hooks
            # can keep saved outputs alive longer, so this comes after the
            # peaks).
            persistent = list(model.parameters()) + list(model.buffers())
            with SavedTensorCounter(exclude=persistent) as saved:
                with autocast(dtype):
                    logits, loss = model(X, Y)
                    loss = loss / sc.gradient_accumulation_steps
            saved_bytes = saved.total
            scaler.scale(loss).backward()
            optimizer.zero_grad(set_to_none=True)

    eval_peak, _ = peaks["eval"]
    if sc.eval_only:
        return Result(
            name=sc.name,
            scenario=sc.as_json(),
            params=params,
            train_peak_bytes=None,
            eval_peak_bytes=eval_peak,
            saved_for_backward_bytes=None,
            notes=f"eval_only: no training step; live after setup {setup_live} B",
            extra={"train_live": [], "eval_live": eval_live},
        )
    train_peak, train_phase = peaks["train1"]
    first_peak, first_phase = peaks["train0"]
    notes = (
        f"train peak during {train_phase} of iteration 2; "
        f"iteration 1 peak {first_peak} B (during {first_phase}); "
        f"live between steps {steady} B"
    ) + resume_note
    return Result(
        name=sc.name,
        scenario=sc.as_json(),
        params=params,
        train_peak_bytes=train_peak,
        eval_peak_bytes=eval_peak,
        saved_for_backward_bytes=saved_bytes,
        notes=notes,
        resume_load_peak_bytes=load_peak,
        ddp_bucket_bytes=bucket_bytes,
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


def document(results: list[Result], runs: list[Result] = ()) -> dict:
    """The JSON document written to ``tests/data/nanogpt_replay.json``.

    ``configs`` are plain training runs; ``runs`` (present when replayed) the
    eval-only, resume and DDP runs. Fields that do not apply are left out.
    """

    def entries(rs: list[Result]) -> list[dict]:
        out = []
        for r in rs:
            entry = {k: v for k, v in asdict(r).items() if v is not None}
            entry.pop("extra")
            out.append(entry)
        return out

    doc = {
        "generator": "tools/nanogpt_replay/replay.py",
        "torch": torch.__version__.split("+")[0],
        "configs": entries(results),
    }
    if runs:
        doc["runs"] = entries(runs)
    return doc


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
    every = GRID + RUNS
    grid = [sc for sc in every if not args.only or sc.name in args.only]
    if args.only and len(grid) != len(args.only):
        known = ", ".join(sc.name for sc in every)
        parser.error(f"unknown scenario in --only; known: {known}")
    results, runs = [], []
    for sc in grid:
        r = replay(sc, explain=args.explain)
        figures = {
            "train": r.train_peak_bytes,
            "eval": r.eval_peak_bytes,
            "saved": r.saved_for_backward_bytes,
            "resume load": r.resume_load_peak_bytes,
            "buckets": r.ddp_bucket_bytes,
        }
        shown = ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in figures.items() if v is not None)
        print(f"{r.name}: {shown} ({r.notes})", flush=True)
        if args.explain:
            print(explain(r, "train_live"), explain(r, "eval_live"), sep="\n")
        (results if sc in GRID else runs).append(r)
    text = json.dumps(document(results, runs), indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
