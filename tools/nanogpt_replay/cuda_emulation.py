"""Make fake CPU tensors behave, for memory purposes, like tensors on a CUDA GPU.

Why not fake CUDA tensors? ``FakeTensorMode`` can create them without a GPU and
CUDA autocast then applies, but with a CUDA build of PyTorch and no driver the
autograd engine stops in ``GraphTask::stash_current_streams`` (it asks the CUDA
runtime about a device that does not exist), so no backward pass can run. The
replay therefore uses fake CPU tensors and emulates the three places where
nanoGPT's memory depends on the device:

1. **Autocast policy.** CPU and CUDA autocast have different op lists
   (``aten/src/ATen/autocast_mode.cpp`` and ``autocast_mode.h`` of PyTorch
   2.15.0). :func:`install_cuda_autocast_policy` re-registers the AutocastCPU
   kernels so that every op gets CUDA's policy (``autocast_policy.py`` holds
   the tables and how each policy casts). The ops that differ:

   - *lower precision on CUDA, no rule on CPU*: ``_convolution``,
     ``convolution``, ``cudnn_convolution``, ``cudnn_convolution_transpose``,
     ``addmv``, ``addr``, ``mv``, ``einsum``, ``chain_matmul``,
     ``linalg_multi_dot``, ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``,
     ``rnn_relu_cell``, ``_thnn_fused_lstm_cell``, ``_thnn_fused_gru_cell``,
     ``_scaled_dot_product_flash_attention``.
   - *fp32 on CUDA, no rule on CPU*: ``acos``, ``asin``, ``cosh``, ``sinh``,
     ``tan``, ``erfinv``, ``exp``, ``expm1``, ``log``, ``log10``, ``log2``,
     ``log1p``, ``reciprocal``, ``rsqrt``, ``pow`` (all three overloads: this
     is what makes Hugging Face's ``gelu_new`` keep fp32 intermediates),
     ``softplus``, ``layer_norm``, ``native_layer_norm``, ``rms_norm``,
     ``group_norm``, ``frobenius_norm.dim``, ``nuclear_norm`` (both),
     ``cosine_similarity``, ``dist``, ``pdist``, ``renorm``, ``logsumexp``,
     the ``upsample_*`` family.
   - *fp32 for an unset ``dtype`` on CUDA* (``fp32_set_opt_dtype``): ``softmax``,
     ``log_softmax``, ``sum`` (both), ``cumsum``, ``cumprod``,
     ``linalg_vector_norm``, ``linalg_matrix_norm`` (both) with no CPU rule;
     ``prod`` (both), which CPU instead casts to fp32 (a copy).
   - ``norm.Scalar``/``norm.ScalarOpt_dim``: CUDA redispatches with
     ``dtype=float32``; CPU has no rule.
   - *promote on CUDA, no rule on CPU*: ``addcdiv``, ``addcmul``, ``atan2``,
     ``bilinear``, ``cross``, ``dot``, ``vdot``, ``index_put``, ``tensordot``,
     ``scatter_add``; ``grid_sampler``, which CPU casts to fp32.
   - ``binary_cross_entropy``: CUDA refuses it, CPU casts to fp32.
   - *a rule on CPU, none on CUDA* (fall through, the op runs in its inputs'
     dtypes): ``cross_entropy_loss`` (fp32 on CPU: on CUDA its log-softmax
     runs in 16 bits and only ``nll_loss`` casts to fp32), ``cat``, ``stack``,
     ``index_copy`` (promote on CPU), ``_addmm_activation``, the
     ``conv*.padding`` overloads, ``_native_multi_head_attention``,
     ``mkldnn_rnn_layer`` (lower precision on CPU), and the fp32 ops
     ``avg_pool3d``, ``max_pool3d``, ``adaptive_avg_pool3d``,
     ``adaptive_max_pool3d``, ``fractional_max_pool2d``/``3d``,
     ``max_unpool2d``/``3d``, ``reflection_pad1d``/``2d``,
     ``replication_pad1d``/``2d``/``3d``, ``grid_sampler_2d``/``3d``,
     ``_grid_sampler_2d_cpu_fallback``, ``polar``, ``view_as_complex``,
     ``quantile``, ``nanquantile``, ``stft``, the ``fft_*`` family, ``trace``,
     ``cholesky_inverse``, ``cholesky_solve``, ``inverse``, ``lu_solve``,
     ``_lu_with_info``, ``orgqr``, ``ormqr``, ``geqrf``, ``pinverse``, ``svd``,
     ``triangular_solve``, the ``linalg_*`` decompositions and solvers
     (``cholesky``, ``cholesky_ex``, ``cond``, ``eig``, ``eigh``, ``eigvals``,
     ``eigvalsh``, ``householder_product``, ``inv``, ``inv_ex``, ``lstsq``,
     ``matrix_rank``, ``qr``, ``solve``, ``svd``, ``svdvals``, ``tensorinv``,
     ``tensorsolve``), ``ctc_loss``, ``multilabel_margin_loss_forward``,
     ``fake_quantize_per_tensor_affine``.

   ``_cudnn_rnn`` (CUDA, ``AutocastRNN.cpp``) is not emulated: CPU never
   calls it. ``replay.py --selftest`` checks the tables against the installed
   wheel (its header's op lists, the dispatcher's AutocastCPU/AutocastCUDA
   kernels), the op stream of each differing op against real CUDA autocast on
   fake CUDA tensors, and a whole nanoGPT forward the same way (forward works
   on fake CUDA tensors; only backward does not).
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
from torch.library import Library

import autocast_policy

_LIB: Library | None = None


def install_cuda_autocast_policy() -> None:
    """Give AutocastCPU CUDA autocast's rules for every aten op (see module doc).

    Idempotent; affects the whole process (the replay runs nothing else).
    """
    global _LIB
    if _LIB is not None:
        return
    lib = Library("aten", "IMPL")
    autocast_policy.install(lib)
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
    try:
        with torch.autocast(device_type="cpu", dtype=dtype):
            yield
    finally:
        autocast_policy.clear_weight_casts()
