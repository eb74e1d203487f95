"""``replay.py --selftest``: checks that the replay measures what it claims.

1. The tracker on a case small enough to follow by hand: a matmul, a sum, a
   backward pass, a fused AdamW step and ``zero_grad``; every live total and
   peak is derived from the tensor sizes below, not from a previous run.
2. The emulated CUDA autocast policy on fake CPU tensors produces the same
   forward op stream (op, output dtypes and shapes) as real CUDA autocast on
   fake CUDA tensors, for flash/manual attention, bf16/fp16, dropout 0/0.1;
   and per op, with the policy tables checked against the installed wheel
   (``selftest_autocast.py``).
3. nanoGPT's parameter counts for the project's cross-check configuration,
   and for GPT-2 small, medium and XL as ``GPT.from_pretrained`` builds them
   (Hugging Face's published counts).
4. Real tensors sum the tied wte/lm_head weight's two gradients out of place,
   as the fake ones do.
5. The setups of the extended runs, by hand: ``model.to(device)`` after
   ``crop_block_size``, the resume load (checkpoint, model, optimizer state
   loaded by reference), and DDP's gradient buckets.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import TorchDispatchMode

import selftest_autocast
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


def gpt2_parameter_counts() -> None:
    """GPT-2 shapes (bias, vocab 50257, block 1024): Hugging Face's counts."""
    print("GPT-2 parameter counts (GPT.from_pretrained shapes)")
    from grid import PRETRAINED
    from replay import count_params

    want = {"gpt2": 124_439_808, "gpt2-medium": 354_823_168, "gpt2-xl": 1_557_611_200}
    for name, total in want.items():
        n_layer, n_head, n_embd = PRETRAINED[name]
        cfg = GPTConfig(block_size=1024, vocab_size=50257, n_layer=n_layer, n_head=n_head,
                        n_embd=n_embd, bias=True)
        with FakeTensorMode():
            params = count_params(GPT(cfg))
        check(f"{name} total", params["total"], total)
        check(f"{name} non_embedding", params["non_embedding"], total - 1024 * n_embd)


def _tiny(flash: bool, block: int = 32) -> GPTConfig:
    return GPTConfig(block_size=block, vocab_size=97, n_layer=2, n_head=2, n_embd=16,
                     bias=True, flash=flash)


def _tiny_params(block: int) -> int:
    """Parameters of ``_tiny`` by hand: embeddings, 2 blocks, ln_f."""
    h, L = 16, 2
    per_block = 2 * 2 * h + (3 * h * h + 3 * h) + (h * h + h) + (4 * h * h + 4 * h) + (
        4 * h * h + h)
    return 97 * h + block * h + L * per_block + 2 * h


def setups_by_hand() -> None:
    """Crop + to(device), resume load and DDP buckets on a tiny model."""
    print("extended setups, by hand (fp32)")
    from replay import fake_process_group, resume_model, to_device, wrap_ddp

    L, n_tensors = 2, 2 + 2 * 12 + 2  # wte, wpe; 12 per block; ln_f weight, bias
    # from_pretrained-style: host model at block 32, cropped to 8, to(device):
    # the device holds the cropped weights and the cropped masks only.
    with FakeTensorMode(), StorageTracker("cpu") as tr:
        with tr.host_side():
            model = GPT(_tiny(flash=False), sdpa=cuda_sdpa)
        check("host model not counted", tr.total, 0)
        model.crop_block_size(8)
        to_device(model, tr)
        check("cropped model on the device", tr.total, 4 * _tiny_params(8) + L * 4 * 8 * 8)
        check("parameter count after crop", sum(p.numel() for p in model.parameters()),
              _tiny_params(8))
    # Resume: the checkpoint (weights, masks, two moments and an fp32 step per
    # tensor) and the model are on the device at once; the optimizer takes the
    # checkpoint's moments and steps by reference.
    P = _tiny_params(32)
    masks = L * 4 * 32 * 32
    with FakeTensorMode(), StorageTracker("cpu") as tr:
        model, ckpt = resume_model(_tiny(flash=False), tr)
        load = 4 * P + masks + 8 * P + 4 * n_tensors + 4 * P + masks
        check("resume: checkpoint and model", (tr.total, tr.peak), (load, load))
        opt = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), fused=True)
        opt.load_state_dict(ckpt["optimizer"])
        check("resume: optimizer.load_state_dict adds nothing", tr.total, load)
        del ckpt  # without train.py's state_dict global, only the weights go
        check("resume: checkpoint dropped, the optimizer keeps its state", tr.total,
              load - 4 * P - masks)
    # DDP: one fp32 bucket element per unique parameter; the 1 MiB / 25 MiB
    # assignment after the first iteration has the same total.
    import torch.distributed as dist

    with FakeTensorMode(), StorageTracker("cpu") as tr:
        model = GPT(_tiny(flash=True), sdpa=cuda_sdpa)
        base = tr.total
        with fake_process_group(2):
            ddp = wrap_ddp(model, 2)
            check("DDP buckets", tr.total - base, 4 * _tiny_params(32))
            params = list(reversed(list(model.parameters())))
            buckets, _ = dist._compute_bucket_assignment_by_size(params, [2**20, 25 * 2**20])
            check("rebuilt buckets hold every parameter once",
                  sum(params[i].numel() for b in buckets for i in b), _tiny_params(32))
            del ddp


class AddLog(TorchDispatchMode):
    """Records which ``add`` overloads run (``add`` makes a new tensor, ``add_`` does not)."""

    def __init__(self) -> None:
        super().__init__()
        self.adds: list[str] = []

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        if func in (torch.ops.aten.add.Tensor, torch.ops.aten.add_.Tensor):
            self.adds.append(str(func))
        return func(*args, **(kwargs or {}))


def tied_gradient_sum_on_real_tensors() -> None:
    """Real tensors sum a tied weight's two gradients out of place, like fake ones.

    The replay's fake tensors could differ here (autograd's input buffer adds in
    place only into tensors that are not subclasses); this runs the same
    backward on real CPU tensors: the two contributions (lm_head's, the
    embedding's) meet in a new tensor, which is then added into ``.grad`` in
    place when accumulating.
    """
    print("tied wte/lm_head gradients on real tensors")
    torch.manual_seed(0)
    wte = torch.nn.Embedding(50, 8)
    head = torch.nn.Linear(8, 50, bias=False)
    head.weight = wte.weight
    for step, want in enumerate([["aten.add.Tensor"], ["aten.add.Tensor", "aten.add_.Tensor"]]):
        x = torch.randint(0, 50, (2, 3))
        loss = head(wte(x)).logsumexp(-1).sum()
        log = AddLog()
        with log:
            loss.backward()
        check(f"micro-step {step + 1}: adds in backward", log.adds, want)


def run_selftest() -> int:
    """Run every check; exit status 1 if any failed."""
    tracker_by_hand()
    scratch_by_hand()
    autocast_matches_cuda()
    selftest_autocast.run(check)
    tied_gradient_sum_on_real_tensors()
    parameter_counts()
    gpt2_parameter_counts()
    setups_by_hand()
    print(f"{len(FAILURES)} failed" if FAILURES else "all checks passed")
    return 1 if FAILURES else 0
