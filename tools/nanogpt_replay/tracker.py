"""Live-storage accounting on fake tensors: the replay's ``memory_allocated``.

:class:`StorageTracker` is a ``TorchDispatchMode`` pushed on top of
``FakeTensorMode``: every aten op (after composite ops have decomposed, as on a
GPU) passes through it, and every storage an op hands back on the tracked
device is counted once, by its ``nbytes``, from the first op that returns it
until the storage is freed (a weakref callback on the untyped storage; PyTorch
keeps a storage's Python object alive as long as the storage lives). Views,
in-place ops and outputs that alias inputs add nothing. ``peak`` is the
maximum of the live total, sampled after every op, i.e. whenever it can grow;
``peak_phase`` is the caller-set ``phase`` label current when it was reached.

A real CUDA kernel may also allocate scratch memory for the duration of one
op; an optional ``scratch(func, args) -> bytes`` callback adds such memory to
the live total while that op runs (the replay uses it for FlashAttention-2's
backward). What it cannot see otherwise: other kernels' scratch (cuBLAS
workspaces, the memory-efficient attention backward's), the caching
allocator's rounding of every block up to 512 bytes, and memory held by the
allocator but not by a tensor (nvidia-smi's view).

:class:`SavedTensorCounter` sums the unique storages autograd saves for
backward (``torch.autograd.graph.saved_tensors_hooks``), leaving out given
storages (the model's parameters and buffers, which live anyway).
"""

from __future__ import annotations

import contextlib
import weakref
from typing import Any, Callable, Iterable, Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def storage_key(t: torch.Tensor) -> int:
    """Identity of a tensor's storage while it is alive."""
    return t.untyped_storage()._cdata


class StorageTracker(TorchDispatchMode):
    """Counts live bytes of storages created on ``device``; keeps the peak."""

    def __init__(
        self,
        device: str = "cpu",
        snapshot: bool = False,
        scratch: Callable[[Any, tuple], int] | None = None,
    ):
        super().__init__()
        self.scratch = scratch
        self.snapshot = snapshot
        self.origin: dict[int, str] = {}
        self.peak_live: list[tuple[int, str]] = []
        self._op = "?"
        self.device = torch.device(device)
        self.live: dict[int, int] = {}
        self.total = 0
        self.peak = 0
        self.phase = "setup"
        self.peak_phase = "setup"
        self._refs: dict[int, weakref.ref] = {}
        self._host_mode = False
        self._host: dict[int, weakref.ref] = {}

    @contextlib.contextmanager
    def host_side(self) -> Iterator[None]:
        """Storages created inside are host (CPU) memory: not counted.

        train.py builds the model on the CPU for ``init_from='resume'`` and
        ``'gpt2*'`` and then calls ``model.to(device)``; :meth:`is_host` tells
        the replay which tensors that call has to copy.
        """
        self._host_mode = True
        try:
            yield
        finally:
            self._host_mode = False

    def is_host(self, t: torch.Tensor) -> bool:
        """Whether ``t``'s storage was created under :meth:`host_side`."""
        return storage_key(t) in self._host

    def _free(self, key: int) -> None:
        self.total -= self.live.pop(key, 0)
        self._refs.pop(key, None)
        self.origin.pop(key, None)

    def track(self, t: torch.Tensor) -> None:
        """Count ``t``'s storage if it is on the tracked device and new."""
        if t.device.type != self.device.type:
            return
        st = t.untyped_storage()
        key = st._cdata
        if key in self.live or key in self._host:
            return
        if self._host_mode:
            self._host[key] = weakref.ref(st, lambda _r, k=key: self._host.pop(k, None))
            return
        nbytes = st.nbytes()
        self.live[key] = nbytes
        self.total += nbytes
        self._refs[key] = weakref.ref(st, lambda _r, k=key: self._free(k))
        if self.snapshot:
            self.origin[key] = f"{self.phase}: {self._op}"
        if self.total > self.peak:
            self.peak = self.total
            self.peak_phase = self.phase
            if self.snapshot:
                self.peak_live = [(n, self.origin.get(k, "?")) for k, n in self.live.items()]

    def reset_peak(self) -> None:
        """Start a new measurement window at the current live total."""
        self.peak = self.total
        self.peak_phase = self.phase
        if self.snapshot:
            self.peak_live = [(n, self.origin.get(k, "?")) for k, n in self.live.items()]

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        self._op = str(func)
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                self.track(leaf)
        extra = self.scratch(func, args) if self.scratch else 0
        if extra and self.total + extra > self.peak:
            # Scratch lives while the kernel runs, beside inputs and outputs.
            self.peak = self.total + extra
            self.peak_phase = f"{self.phase} ({func} scratch)"
            if self.snapshot:
                live = [(n, self.origin.get(k, "?")) for k, n in self.live.items()]
                self.peak_live = live + [(extra, f"{self.phase}: {func} scratch")]
        return out


class SavedTensorCounter:
    """Unique bytes saved for backward while the context is active."""

    def __init__(self, exclude: Iterable[torch.Tensor] = ()):
        self.exclude = {storage_key(t) for t in exclude}
        self.seen: dict[int, int] = {}
        self._hooks: Any = None

    @property
    def total(self) -> int:
        """Sum of the distinct saved storages' sizes."""
        return sum(self.seen.values())

    def _pack(self, t: torch.Tensor) -> torch.Tensor:
        st = t.untyped_storage()
        key = st._cdata
        if key not in self.exclude and key not in self.seen:
            self.seen[key] = st.nbytes()
        return t

    @staticmethod
    def _unpack(t: torch.Tensor) -> torch.Tensor:
        return t

    def __enter__(self) -> "SavedTensorCounter":
        self._hooks = torch.autograd.graph.saved_tensors_hooks(self._pack, self._unpack)
        self._hooks.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        self._hooks.__exit__(*exc)
