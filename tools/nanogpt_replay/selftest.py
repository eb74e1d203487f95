"""``replay.py --selftest``: checks that the replay measures what it claims.

1. The tracker on a case small enough to follow by hand: a matmul, a sum, a
   backward pass, a fused AdamW step and ``zero_grad``; every live total and
   peak is derived from the tensor sizes below, not from a previous run.
2. The emulated CUDA autocast policy on fake CPU tensors produces the same
   forward op stream (op, output dtypes and shapes) as real CUDA autocast on
   fake CUDA tensors, for flash/manual attention, bf16/fp16, dropout 0/0.1.
3. nanoGPT's parameter counts for the project's cross-check configuration.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

from cuda_emulation import autocast, cuda_dropout_patch, cuda_sdpa
from model import GPT, GPTConfig
from tracker import SavedTensorCounter, StorageTracker

FAILURES: list[str] = []


def check(label: str, got: object, want: object) -> None:
    """Record and print one comparison."""
    ok = got == want
    print(f"  {'ok ' if ok else 'FAIL'} {label}: got {got}, want {want}")
    if not ok:
        FAILURES.append(label)


def tracker_by_hand() -> None:
    """Live bytes through forward, backward, AdamW and zero_grad of x @ W."""
    print("tracker, by hand (fp32: 4 bytes per element)")
    B, I, O = 64, 256, 128
    w_b, x_b, y_b, scalar = 4 * I * O, 4 * B * I, 4 * B * O, 4
    with FakeTensorMode(), StorageTracker("cpu") as tr:
        W = torch.empty(I, O, requires_grad=True)
        x = torch.empty(B, I)
        base = w_b + x_b
        check("W and x", tr.total, base)
        st = W.untyped_storage()
        del st  # dropping the Python storage object must not count as a free
        check("after dropping a storage handle", tr.total, base)
        tr.reset_peak()
        with SavedTensorCounter() as saved:
            loss = (x @ W).sum()
        # y = x @ W lives until sum() returns; autograd keeps only x (for dW).
        check("forward peak", tr.peak, base + y_b + scalar)
        check("after forward", tr.total, base + scalar)
        check("saved for backward", saved.total, x_b)
        tr.reset_peak()
        loss.backward()
        # Root gradient (a scalar) plus dW = x^T @ dy, which becomes W.grad.
        check("backward peak", tr.peak, base + scalar + scalar + w_b)
        check("after backward", tr.total, base + scalar + w_b)
        opt = torch.optim.AdamW([W], fused=True)
        opt.step()
        # Two fp32 moments and the fused optimizer's fp32 step counter.
        check("after AdamW step", tr.total, base + scalar + w_b + 2 * w_b + scalar)
        opt.zero_grad(set_to_none=True)
        del loss
        check("after zero_grad, loss dropped", tr.total, base + 2 * w_b + scalar)


def scratch_by_hand() -> None:
    """A kernel's scratch counts toward the peak only while that op runs."""
    print("tracker, kernel scratch")
    B, I, O, extra = 64, 256, 128, 1000
    mm = torch.ops.aten.mm.default

    def scratch(func: object, args: tuple) -> int:
        return extra if func is mm else 0

    with FakeTensorMode(), StorageTracker("cpu", scratch=scratch) as tr:
        x, w = torch.empty(B, I), torch.empty(I, O)
        base = 4 * B * I + 4 * I * O
        tr.reset_peak()
        y = x @ w
        check("peak with scratch", tr.peak, base + 4 * B * O + extra)
        check("live after the op", tr.total, base + 4 * B * O)
        del y


class OpLog(TorchDispatchMode):
    """Records (op, output dtypes and shapes) for every aten op."""

    def __init__(self) -> None:
        super().__init__()
        self.ops: list[tuple] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if func is not torch.ops.prim.device.default:
            outs = out if isinstance(out, (tuple, list)) else [out]
            shapes = tuple(
                (o.dtype, tuple(o.shape)) for o in outs if isinstance(o, torch.Tensor)
            )
            self.ops.append((str(func), shapes))
        return out


@contextlib.contextmanager
def real_cuda_autocast(dtype: torch.dtype) -> Iterator[None]:
    """``torch.autocast('cuda')`` minus its check for a driver (state only)."""
    torch.set_autocast_enabled("cuda", True)
    torch.set_autocast_dtype("cuda", dtype)
    torch.autocast_increment_nesting()
    torch.set_autocast_cache_enabled(True)
    try:
        yield
    finally:
        if torch.autocast_decrement_nesting() == 0:
            torch.clear_autocast_cache()
        torch.set_autocast_enabled("cuda", False)


def forward_ops(device: str, flash: bool, dtype: torch.dtype, dropout: float,
                grad: bool = True) -> tuple:
    """Op stream, peak and final live bytes of one forward of a small GPT."""
    cfg = GPTConfig(block_size=32, vocab_size=97, n_layer=2, n_head=2, n_embd=16,
                    dropout=dropout, bias=True, flash=flash)
    emulate = device == "cpu"
    with FakeTensorMode(), torch.device(device), StorageTracker(device) as tr:
        model = GPT(cfg, sdpa=cuda_sdpa)
        x = torch.zeros(3, 32, dtype=torch.long)
        ctx = autocast(dtype) if emulate else real_cuda_autocast(dtype)
        patch = cuda_dropout_patch() if emulate else contextlib.nullcontext()
        log = OpLog()
        tr.reset_peak()
        with patch, torch.set_grad_enabled(grad):
            with log, ctx:
                out = model(x, x)
        return log.ops, tr.peak, tr.total, out is not None


def autocast_matches_cuda() -> None:
    """Emulated policy on CPU == real CUDA policy: ops, peak and live bytes."""
    print("emulated CUDA autocast/dropout vs real CUDA autocast (forward on fake tensors)")
    for flash in (True, False):
        for dtype in (torch.bfloat16, torch.float16, torch.float32):
            for dropout in (0.0, 0.1):
                for grad in (True, False):
                    cuda = forward_ops("cuda", flash, dtype, dropout, grad)
                    cpu = forward_ops("cpu", flash, dtype, dropout, grad)
                    label = (f"flash={flash} {dtype} dropout={dropout} grad={grad}: "
                             f"{len(cuda[0])} ops, peak {cuda[1]} B, after {cuda[2]} B")
                    check(label, cpu == cuda, True)


def parameter_counts() -> None:
    """nanoGPT 6/6/384, vocab 50304, block 512, no bias."""
    print("parameter counts (6 layers, 6 heads, 384 wide, vocab 50304, block 512)")
    from replay import count_params

    cfg = GPTConfig(block_size=512, vocab_size=50304, n_layer=6, n_head=6, n_embd=384,
                    bias=False)
    with FakeTensorMode():
        params = count_params(GPT(cfg))
    check("non_embedding", params["non_embedding"], 29_938_560)
    check("decay", (params["decay"], params["decay_tensors"]), (30_130_176, 26))
    check("no_decay", (params["no_decay"], params["no_decay_tensors"]), (4_992, 13))


def run_selftest() -> int:
    """Run every check; exit status 1 if any failed."""
    tracker_by_hand()
    scratch_by_hand()
    autocast_matches_cuda()
    parameter_counts()
    print(f"{len(FAILURES)} failed" if FAILURES else "all checks passed")
    return 1 if FAILURES else 0
