"""CUDA caching-allocator readings shared by every measured case.

On CUDA every reading is ``torch.cuda``'s own counter (bytes handed out by the
caching allocator, so each block is already rounded up to a multiple of 512
bytes). On the CPU (``--dry-run``) there is no allocator to read: every
reading is ``None`` and only the code paths run.
"""

from __future__ import annotations

import gc
import time
from contextlib import contextmanager, nullcontext

import torch

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


class Memory:
    """The allocator's counters for one device, with a clean slate between cases."""

    def __init__(self, device: torch.device):
        self.device = device
        self.cuda = device.type == "cuda"

    def settle(self) -> None:
        """Free everything a finished case left in the cache, cuBLAS workspaces included.

        cuBLAS keeps one workspace per (handle, stream) allocated through the
        caching allocator; clearing it makes every case pay for its own, as a
        fresh train.py process does.
        """
        gc.collect()
        if not self.cuda:
            return
        torch.cuda.synchronize()
        clear = getattr(torch._C, "_cuda_clearCublasWorkspaces", None)
        if clear is not None:
            clear()
        torch.cuda.empty_cache()
        torch.cuda.reset_peak_memory_stats()

    def reset_peak(self) -> None:
        """Start a new peak window at the bytes allocated now."""
        if self.cuda:
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()

    def allocated(self) -> int | None:
        if not self.cuda:
            return None
        torch.cuda.synchronize()
        return torch.cuda.memory_allocated()

    def peak(self) -> int | None:
        if not self.cuda:
            return None
        torch.cuda.synchronize()
        return torch.cuda.max_memory_allocated()

    def peak_reserved(self) -> int | None:
        if not self.cuda:
            return None
        return torch.cuda.max_memory_reserved()


def train_ctx(device: torch.device, dtype: torch.dtype):
    """nanoGPT train.py's ``ctx``: autocast on CUDA for every dtype, nothing on the CPU.

    (train.py enters ``torch.amp.autocast('cuda', dtype=torch.float32)`` for
    fp32 too; it casts nothing.)
    """
    if device.type == "cpu":
        return nullcontext()
    return torch.amp.autocast(device_type=device.type, dtype=dtype)


def trainer_ctx(device: torch.device, dtype: torch.dtype):
    """Hugging Face ``Trainer``'s mixed precision: autocast for bf16/fp16, none for fp32."""
    if dtype == torch.float32 or device.type == "cpu":
        return nullcontext()
    return torch.autocast(device_type=device.type, dtype=dtype)


@contextmanager
def timed(entry: dict):
    """Record the wall time of a case (seconds, three decimals) into ``entry``."""
    start = time.perf_counter()
    try:
        yield
    finally:
        entry["seconds"] = round(time.perf_counter() - start, 3)


# time.monotonic() after which cases are skipped (set by measure.py's --budget-s).
DEADLINE: list[float] = [float("inf")]


def run_case(mem: Memory, name: str, body, log) -> dict:
    """Run one case on a clean allocator; an exception is recorded, not raised.

    A case that would start after ``DEADLINE`` is recorded as skipped.
    """
    if time.monotonic() > DEADLINE[0]:
        log(f"{name}: skipped (time budget)")
        return {"name": name, "skipped": "time budget"}
    mem.settle()
    entry: dict = {"name": name, "baseline_allocated_bytes": mem.allocated()}
    with timed(entry):
        try:
            entry.update(body())
        except Exception as exc:  # noqa: BLE001 - every failure is data here
            entry["error"] = f"{type(exc).__name__}: {exc}"[:2000]
    mem.settle()
    shown = {k: v for k, v in entry.items() if k.endswith("peak_bytes") or k == "error"}
    log(f"{name}: {shown} ({entry['seconds']} s)")
    return entry
