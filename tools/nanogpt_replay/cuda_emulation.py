"""Make fake CPU tensors behave, for memory purposes, like tensors on a CUDA GPU.

Why not fake CUDA tensors? ``FakeTensorMode`` can create them without a GPU and
CUDA autocast then applies, but with a CUDA build of PyTorch and no driver the
autograd engine stops in ``GraphTask::stash_current_streams`` (it asks the CUDA
runtime about a device that does not exist), so no backward pass can run. The
replay therefore uses fake CPU tensors and emulates the three places where
nanoGPT's memory depends on the device:

1. **Autocast policy.** CPU and CUDA autocast differ on two ops nanoGPT uses:
   CUDA runs ``softmax``/``log_softmax`` without an explicit dtype in fp32
   (``fp32_set_opt_dtype``) and has *no* rule for ``cross_entropy_loss``, so
   its log-softmax runs in 16 bits and only ``nll_loss`` casts to fp32; CPU
   autocast casts ``cross_entropy_loss`` to fp32 up front and leaves softmax
   alone. :func:`install_cuda_autocast_policy` re-registers those AutocastCPU
   kernels with CUDA's behaviour. ``replay.py --selftest`` checks the result:
   the forward op stream (op, dtypes, shapes) under emulated CPU autocast must
   equal the one under real CUDA autocast on fake CUDA tensors (forward works
   there; only backward does not).
2. **Attention kernel.** On an Ampere/Hopper GPU, ``scaled_dot_product_attention``
   with ``is_causal=True`` and no mask picks FlashAttention for 16-bit inputs
   and the memory-efficient kernel for fp32. :func:`cuda_sdpa` calls those
   aten ops directly (their meta kernels give the true output/logsumexp sizes).
   FlashAttention-2's backward also allocates fp32 scratch that no aten op
   returns (``dq_accum`` and ``softmax_d`` in ``mha_bwd``);
   :func:`kernel_scratch_bytes` gives its size to the tracker.
3. **Dropout.** With ``0 < p < 1`` CUDA uses the fused ``native_dropout`` (a
   1-byte mask is saved); the CPU path saves a full-width noise tensor.
   :func:`cuda_dropout` calls ``native_dropout`` like the CUDA kernel choice.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
import torch.nn.functional as F
from torch.library import Library, fallthrough_kernel

_LIB: Library | None = None
_AUTOCAST_CPU = torch._C.DispatchKey.AutocastCPU


def _no_autocast() -> contextlib.AbstractContextManager:
    """What C++ autocast wrappers do before calling the real op."""
    return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(_AUTOCAST_CPU))


def _opt_dtype_fp32(x: torch.Tensor, dtype: torch.dtype | None) -> torch.dtype | None:
    """CUDA's ``fp32_set_opt_dtype``: keep an explicit dtype, else fp32."""
    if dtype is None and x.is_floating_point() and x.dtype != torch.float64:
        return torch.float32
    return dtype


def _softmax(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None):
    dtype = _opt_dtype_fp32(x, dtype)
    with _no_autocast():
        if x.dtype == torch.float16 and dtype == torch.float32:
            # CUDA's softmax takes the half_to_float kernel path: no fp32 copy.
            return torch.ops.aten._softmax.default(x, dim, True)
        return torch.ops.aten.softmax.int(x, dim, dtype)


def _log_softmax(x: torch.Tensor, dim: int, dtype: torch.dtype | None = None):
    dtype = _opt_dtype_fp32(x, dtype)
    with _no_autocast():
        if x.dtype == torch.float16 and dtype == torch.float32:
            return torch.ops.aten._log_softmax.default(x, dim, True)
        return torch.ops.aten.log_softmax.int(x, dim, dtype)


def install_cuda_autocast_policy() -> None:
    """Give AutocastCPU CUDA's rules for the ops where nanoGPT sees a difference.

    Idempotent; affects the whole process (the replay runs nothing else).
    """
    global _LIB
    if _LIB is not None:
        return
    lib = Library("aten", "IMPL")
    lib.impl("cross_entropy_loss", fallthrough_kernel, "AutocastCPU")
    lib.impl("softmax.int", _softmax, "AutocastCPU")
    lib.impl("log_softmax.int", _log_softmax, "AutocastCPU")
    _LIB = lib


def cuda_sdpa(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    attn_mask: torch.Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
) -> torch.Tensor:
    """``F.scaled_dot_product_attention`` as dispatched on an sm80+ GPU.

    Autocast first casts q, k, v to the autocast dtype (SDPA is on CUDA's
    lower-precision list); then 16-bit inputs go to FlashAttention-2 and fp32
    inputs to the memory-efficient kernel, which computes the logsumexp only
    when a backward pass will need it.
    """
    if attn_mask is not None:
        raise ValueError("nanoGPT calls SDPA without a mask; the replay only models that")
    device = q.device.type
    if torch.is_autocast_enabled(device):
        low = torch.get_autocast_dtype(device)
        q, k, v = (t.to(low) if t.dtype == torch.float32 else t for t in (q, k, v))
    head = q.size(-1)
    if q.dtype in (torch.float16, torch.bfloat16) and head % 8 == 0 and head <= 256:
        out = torch.ops.aten._scaled_dot_product_flash_attention.default(
            q, k, v, dropout_p, is_causal, False
        )
        return out[0]
    need_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (q, k, v))
    out = torch.ops.aten._scaled_dot_product_efficient_attention.default(
        q, k, v, None, need_lse, dropout_p, is_causal
    )
    return out[0]


def _round_up(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def kernel_scratch_bytes(func: object, args: tuple) -> int:
    """Bytes a CUDA kernel allocates internally while it runs (0 if none known).

    FlashAttention-2's backward (PyTorch's vendored ``mha_bwd``, not
    deterministic) allocates ``dq_accum`` of shape (batch, seqlen_q rounded
    up to 128, heads, head_dim rounded up to 32, or 64 above 128) and
    ``softmax_d`` of shape (batch, heads, seqlen_q rounded), both fp32.
    """
    if func is not torch.ops.aten._scaled_dot_product_flash_attention_backward.default:
        return 0
    q = args[1]
    batch, heads, seq_q, head = q.shape
    seq_r = _round_up(seq_q, 128)
    head_r = _round_up(head, 32 if head <= 128 else 64)
    return 4 * batch * seq_r * heads * head_r + 4 * batch * heads * seq_r


def cuda_dropout(
    x: torch.Tensor, p: float = 0.5, training: bool = True, inplace: bool = False
) -> torch.Tensor:
    """``F.dropout`` as the CUDA build runs it (fused kernel, bool mask)."""
    if inplace:
        raise ValueError("nanoGPT never uses in-place dropout")
    if training and 0.0 < p < 1.0 and x.numel() > 0:
        return torch.native_dropout(x, p, True)[0]
    if p == 0.0 or not training or x.numel() == 0:
        return x
    return _ORIGINAL_DROPOUT(x, p, training, inplace)


_ORIGINAL_DROPOUT = F.dropout


@contextlib.contextmanager
def cuda_dropout_patch() -> Iterator[None]:
    """Route ``nn.Dropout`` (which calls ``F.dropout``) to :func:`cuda_dropout`."""
    F.dropout = cuda_dropout
    try:
        yield
    finally:
        F.dropout = _ORIGINAL_DROPOUT


@contextlib.contextmanager
def autocast(dtype: torch.dtype) -> Iterator[None]:
    """train.py's ``ctx``: autocast for 16-bit dtypes, nothing for fp32.

    (train.py enters ``torch.amp.autocast('cuda', dtype=torch.float32)`` for
    fp32, which casts nothing: every op's inputs are fp32 already.)
    """
    if dtype == torch.float32:
        yield
        return
    with torch.autocast(device_type="cpu", dtype=dtype):
        yield
