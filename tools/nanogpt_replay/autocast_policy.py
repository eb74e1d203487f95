"""CUDA autocast's cast policy, installed on the AutocastCPU dispatch key.

The op lists are PyTorch 2.15.0's (git d0f2af8b) and come from two places:
``torch/include/ATen/autocast_mode.h`` of the installed wheel (the
``AT_FORALL_LOWER_PRECISION_FP``, ``AT_FORALL_FP32``,
``AT_FORALL_FP32_SET_OPT_DTYPE``, ``AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE``
and ``AT_FORALL_PROMOTE`` macros, which ``aten/src/ATen/autocast_mode.cpp``
expands for CUDA), plus the few ops ``autocast_mode.cpp`` registers for CUDA
one by one (:data:`CUDA_EXTRA`). CPU's own lists live only in
``autocast_mode.cpp`` (``TORCH_LIBRARY_IMPL(aten, AutocastCPU, m)``); the
dispatcher tells which ops have an AutocastCPU kernel, and the policies of the
ops on both lists were read from that file and checked by running them under
both autocasts on fake tensors. ``replay.py --selftest`` re-derives all of
this from the installed wheel (header, dispatcher, op streams) and fails if
the tables below drift from it.

How each policy casts (``cached_cast`` and ``WrapFunction_`` in
``autocast_mode.{h,cpp}``): only floating, non-float64 tensors on the
autocast's device are eligible, tensors inside lists included.

- ``lower_precision_fp``: eligible tensors to the autocast dtype; the cast of
  an fp32 leaf that requires grad (a weight) is cached until autocast exits.
- ``fp32``: eligible tensors to float32.
- ``fp32_set_opt_dtype``: if the first argument is eligible, an unset
  ``dtype`` argument becomes float32 (the op upcasts internally, no copy).
- ``fp32_append_dtype``: ``norm`` is redispatched to its ``dtype`` overload
  with float32.
- ``promote``: every eligible tensor to the widest eligible dtype, starting
  from the autocast dtype.
- banned: ``binary_cross_entropy`` raises.
"""

from __future__ import annotations

import weakref
from typing import Callable

import torch
from torch.library import Library, fallthrough_kernel

AUTOCAST_CPU = torch._C.DispatchKey.AutocastCPU

# autocast_mode.h, AT_FORALL_LOWER_PRECISION_FP, plus CUDA_EXTRA below.
CUDA_LOWER_PRECISION_FP = (
    "_convolution.deprecated _convolution conv1d conv2d conv3d conv_tbc conv_transpose1d "
    "conv_transpose2d.input conv_transpose3d.input convolution prelu addmm addmv addr matmul "
    "einsum mm mv linalg_vecdot linear addbmm baddbmm bmm chain_matmul linalg_multi_dot "
    "_thnn_fused_lstm_cell _thnn_fused_gru_cell lstm_cell gru_cell rnn_tanh_cell rnn_relu_cell "
    "_scaled_dot_product_flash_attention scaled_dot_product_attention "
    "cudnn_convolution cudnn_convolution_transpose"
).split()
# autocast_mode.h, AT_FORALL_FP32, plus CUDA_EXTRA below.
CUDA_FP32 = (
    "acos asin cosh erfinv exp expm1 log log10 log2 log1p reciprocal rsqrt sinh tan "
    "pow.Tensor_Scalar pow.Tensor_Tensor pow.Scalar softplus layer_norm native_layer_norm "
    "rms_norm group_norm frobenius_norm.dim nuclear_norm nuclear_norm.dim cosine_similarity "
    "poisson_nll_loss cosine_embedding_loss nll_loss nll_loss2d hinge_embedding_loss kl_div "
    "l1_loss smooth_l1_loss huber_loss mse_loss margin_ranking_loss multilabel_margin_loss "
    "soft_margin_loss triplet_margin_loss multi_margin_loss binary_cross_entropy_with_logits "
    "dist pdist cdist renorm logsumexp upsample_nearest1d _upsample_nearest_exact1d "
    "upsample_nearest2d _upsample_nearest_exact2d upsample_nearest3d _upsample_nearest_exact3d "
    "upsample_linear1d upsample_bilinear2d _upsample_bilinear2d_aa upsample_trilinear3d "
    "upsample_bicubic2d _upsample_bicubic2d_aa linalg_matrix_sqrth"
).split()
# autocast_mode.h, AT_FORALL_FP32_SET_OPT_DTYPE.
CUDA_FP32_SET_OPT_DTYPE = (
    "prod prod.dim_int softmax.int log_softmax.int cumprod cumsum linalg_vector_norm "
    "linalg_matrix_norm linalg_matrix_norm.str_ord sum sum.dim_IntList"
).split()
# autocast_mode.h, AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE: op -> its dtype overload.
CUDA_FP32_APPEND_DTYPE = {
    "norm.Scalar": "norm.ScalarOpt_dtype",
    "norm.ScalarOpt_dim": "norm.ScalarOpt_dim_dtype",
}
# autocast_mode.h, AT_FORALL_PROMOTE.
CUDA_PROMOTE = (
    "addcdiv addcmul atan2 bilinear cross dot vdot grid_sampler index_put tensordot scatter_add"
).split()
CUDA_BANNED = ["binary_cross_entropy"]
# Registered for CUDA outside the macros: cudnn_convolution{,_transpose}
# (lower_precision_fp) and linalg_matrix_sqrth (fp32) in autocast_mode.cpp,
# binary_cross_entropy (banned) there too, and _cudnn_rnn in AutocastRNN.cpp,
# which CPU never reaches (CPU's nn.LSTM/GRU do not call it): not emulated.
CUDA_EXTRA = [
    "cudnn_convolution",
    "cudnn_convolution_transpose",
    "linalg_matrix_sqrth",
    "binary_cross_entropy",
    "_cudnn_rnn",
]
CUDA_NOT_EMULATED = ["_cudnn_rnn"]

# AutocastCPU kernels whose policy equals CUDA's for the same op (lower
# precision on both: the matmul and convolution family and SDPA; fp32 on both:
# the losses, cdist, linalg_matrix_sqrth). These keep PyTorch's C++ kernel,
# and with it the shared weight-cast cache.
CPU_SAME_AS_CUDA = (
    "_convolution.deprecated addbmm addmm baddbmm bmm conv1d conv2d conv3d conv_tbc "
    "conv_transpose1d conv_transpose2d.input conv_transpose3d.input linalg_vecdot linear matmul "
    "mm prelu scaled_dot_product_attention binary_cross_entropy_with_logits cdist "
    "cosine_embedding_loss hinge_embedding_loss huber_loss kl_div l1_loss linalg_matrix_sqrth "
    "margin_ranking_loss mse_loss multi_margin_loss multilabel_margin_loss nll_loss nll_loss2d "
    "poisson_nll_loss smooth_l1_loss soft_margin_loss triplet_margin_loss"
).split()

# Cache of lower-precision casts of weights made by the Python kernels below
# (the C++ kernels keep their own); cleared when the replay's autocast exits.
_WEIGHT_CASTS: dict[int, tuple[weakref.ref, torch.Tensor]] = {}


def clear_weight_casts() -> None:
    """``torch.clear_autocast_cache`` for the emulated kernels' casts."""
    _WEIGHT_CASTS.clear()


def _eligible(t: object) -> bool:
    return (
        isinstance(t, torch.Tensor)
        and t.device.type == "cpu"
        and t.is_floating_point()
        and t.dtype != torch.float64
    )


def _cast(to: torch.dtype, t: object) -> object:
    """``cached_cast``: one argument (a tensor, a list of them, or anything else)."""
    if isinstance(t, (list, tuple)):
        return type(t)(_cast(to, x) for x in t)
    if not _eligible(t) or t.dtype == to:
        return t
    low = torch.get_autocast_dtype("cpu")
    cacheable = (
        to == low and t.dtype == torch.float32 and t.requires_grad and t.is_leaf
        and not t._is_view()
    )
    if not cacheable:
        return t.to(to)
    hit = _WEIGHT_CASTS.get(id(t))
    if hit is not None and hit[0]() is t:
        return hit[1]
    cast = t.to(to)
    _WEIGHT_CASTS[id(t)] = (weakref.ref(t), cast)
    return cast


def _promoted(args: tuple, kwargs: dict) -> torch.dtype:
    """``promote_type``: float32 wins over the autocast dtype; float64 is ignored."""
    dtype = torch.get_autocast_dtype("cpu")
    flat: list = []
    for a in (*args, *kwargs.values()):
        flat.extend(a if isinstance(a, (list, tuple)) else [a])
    for t in flat:
        if _eligible(t) and torch.float32 in (dtype, t.dtype):
            dtype = torch.float32
    return dtype


def _no_autocast() -> torch._C._ExcludeDispatchKeyGuard:
    """What C++ autocast wrappers do before calling the real op."""
    return torch._C._ExcludeDispatchKeyGuard(torch._C.DispatchKeySet(AUTOCAST_CPU))


def _overload(name: str) -> torch._ops.OpOverload:
    op, _, overload = name.partition(".")
    return getattr(getattr(torch.ops.aten, op), overload or "default")


def _casting_kernel(name: str, target: Callable[[tuple, dict], torch.dtype]) -> Callable:
    op = _overload(name)

    def kernel(*args, **kwargs):
        to = target(args, kwargs)
        # C++ evaluates the casts of a call's arguments last to first (GCC);
        # the order only shows in the op stream, not in the bytes.
        kwargs = dict(reversed([(k, _cast(to, v)) for k, v in reversed(kwargs.items())]))
        args = tuple(reversed([_cast(to, a) for a in reversed(args)]))
        with _no_autocast():
            return op(*args, **kwargs)

    return kernel


def _lower_precision(name: str) -> Callable:
    return _casting_kernel(name, lambda a, k: torch.get_autocast_dtype("cpu"))


def _fp32(name: str) -> Callable:
    return _casting_kernel(name, lambda a, k: torch.float32)


def _promote(name: str) -> Callable:
    return _casting_kernel(name, _promoted)


def _set_opt_dtype(name: str) -> Callable:
    op = _overload(name)
    names = [a.name for a in op._schema.arguments]
    index = names.index("dtype")

    def kernel(*args, **kwargs):
        if not args or not _eligible(args[0]):
            with _no_autocast():
                return op(*args, **kwargs)
        given = args[index] if index < len(args) else kwargs.get("dtype")
        if given is None:
            if index < len(args):
                args = (*args[:index], torch.float32, *args[index + 1:])
            else:
                kwargs = {**kwargs, "dtype": torch.float32}
        x = args[0]
        with _no_autocast():
            if name in ("softmax.int", "log_softmax.int") and x.dtype == torch.float16 \
                    and (given or torch.float32) == torch.float32:
                # CUDA's (log_)softmax takes the half_to_float kernel path: no fp32 copy.
                fused = torch.ops.aten._softmax if name == "softmax.int" else \
                    torch.ops.aten._log_softmax
                return fused.default(x, args[1], True)
            return op(*args, **kwargs)

    return kernel


def _with_defaults(op: torch._ops.OpOverload, args: tuple) -> tuple:
    """Positional arguments with the schema's defaults filled in (boxed calls drop them)."""
    positional = [a for a in op._schema.arguments if not a.kwarg_only]
    return (*args, *(a.default_value for a in positional[len(args):]))


def _append_dtype(name: str, with_dtype: str) -> Callable:
    op, redispatch = _overload(name), _overload(with_dtype)

    def kernel(*args, **kwargs):
        with _no_autocast():
            if args and _eligible(args[0]):
                return redispatch(*_with_defaults(op, args), **kwargs, dtype=torch.float32)
            return op(*args, **kwargs)

    return kernel


def _banned(*args, **kwargs):
    raise RuntimeError(
        "torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss are unsafe to autocast "
        "(CUDA autocast refuses them)."
    )


def cuda_kernels() -> dict[str, Callable]:
    """The AutocastCPU kernel each CUDA-listed op needs, except where CPU's equals CUDA's."""
    kernels: dict[str, Callable] = {}
    for name in CUDA_LOWER_PRECISION_FP:
        kernels[name] = _lower_precision(name)
    for name in CUDA_FP32:
        kernels[name] = _fp32(name)
    for name in CUDA_FP32_SET_OPT_DTYPE:
        kernels[name] = _set_opt_dtype(name)
    for name, with_dtype in CUDA_FP32_APPEND_DTYPE.items():
        kernels[name] = _append_dtype(name, with_dtype)
    for name in CUDA_PROMOTE:
        kernels[name] = _promote(name)
    for name in CUDA_BANNED:
        kernels[name] = _banned
    for name in CPU_SAME_AS_CUDA:
        kernels.pop(name)
    return kernels


def cuda_listed_ops() -> set[str]:
    """Every op CUDA autocast has a kernel for, by the tables above."""
    return {
        *CUDA_LOWER_PRECISION_FP, *CUDA_FP32, *CUDA_FP32_SET_OPT_DTYPE,
        *CUDA_FP32_APPEND_DTYPE, *CUDA_PROMOTE, *CUDA_BANNED, *CUDA_NOT_EMULATED,
    }


def ops_with_kernel(key: str) -> set[str]:
    """aten ops (``name.overload``) with a kernel of their own for dispatch key ``key``."""
    found = set()
    for full in torch._C._dispatch_get_all_op_names():
        if full.startswith("aten::") and torch._C._dispatch_has_kernel_for_dispatch_key(full, key):
            found.add(full.removeprefix("aten::"))
    return found


def install(lib: Library) -> None:
    """Make AutocastCPU follow CUDA autocast's policy for every aten op.

    CPU-only kernels fall through (CUDA has no rule: the op runs in its inputs'
    dtypes); CUDA-listed ops get CUDA's policy unless CPU already has it.
    """
    for name in sorted(ops_with_kernel("AutocastCPU") - cuda_listed_ops()):
        lib.impl(name, fallthrough_kernel, "AutocastCPU")
    for name, kernel in sorted(cuda_kernels().items()):
        lib.impl(name, kernel, "AutocastCPU")
