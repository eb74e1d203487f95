"""bitsandbytes on fake tensors, allocating what its CUDA backend allocates (bitsandbytes
0.50.2, pinned in requirements.txt).

bitsandbytes 0.50 registers fake implementations for its ops (``bitsandbytes/_ops.py``). For
every op a QLoRA step or an 8-bit optimizer uses, the fake allocates what the CUDA kernel's
Python wrapper allocates (``bitsandbytes/backends/cuda/ops.py``) except one:

- ``quantize_4bit`` (``_ops.py`` 221-236, CUDA 384-392): the packed ``(n+1)//2`` uint8 weight
  and one float32 absmax per 64-element block. Same.
- ``quantize_blockwise`` (``_ops.py`` 339-350, CUDA 299-311, double quantization's second
  level): a uint8 per value and a float32 absmax per 256 values. Same.
- ``dequantize_4bit`` (``_ops.py`` 168-184, CUDA 423-433, MatMul4Bit's backward): the whole
  weight in the dtype it was quantized from. Same.
- ``dequantize_blockwise`` (``_ops.py`` 304-312, CUDA 335-339): the absmax in float32. Same.
- ``optimizer_update_8bit_blockwise`` / ``optimizer_update_32bit`` (``_ops.py`` 415-470, CUDA
  1059-1212): in place, nothing allocated. Same.
- ``gemm_4bit`` (``_ops.py`` 246-295: the output only). Different: the CUDA op (``ops.py``
  934-1000) runs a fused kernel (output only) for at most 1536 rows, with a per-architecture
  rule, and above 1536 rows ``_dequant_linear_fallback`` (``ops.py`` 904-918): the second-level
  absmax dequantized to float32 and the offset added (two ``blocks`` float32 tensors) when
  double-quantized, the whole weight dequantized to the input's dtype, then ``F.linear``.
  :class:`Gemm4bitCuda` replaces the fake by that fallback above 1536 rows; the replays run
  more than 1536 tokens per micro-batch, where no architecture rule applies.

Paged optimizers (``PagedAdamW8bit``, Trainer's ``paged_adamw_8bit``): ``get_state_buffer``
(``optim/optimizer.py`` 374-390) gives a tensor of at least 100 000 elements its state from
``F.get_paged`` (``functional.py`` 91-100: ``cudaMallocManaged`` memory wrapped by
``torch.frombuffer``), outside PyTorch's caching allocator, which the driver moves to host
memory when the GPU runs short; smaller tensors get ordinary ``torch.zeros_like``.
:func:`paged_state_on_host` makes those buffers host storages the tracker does not count,
as ``torch.cuda.memory_allocated`` does not.
"""

from __future__ import annotations

import contextlib
from typing import Iterator

import torch
from torch.utils._python_dispatch import TorchDispatchMode

# `_gemm_4bit_custom_max_m` (backends/cuda/ops.py): above this many rows the CUDA op always
# dequantizes the weight and calls F.linear.
FUSED_MAX_ROWS = 1536


# `_GEMM_4BIT_CUSTOM_FLOOR_M` (backends/cuda/ops.py 921, read by `_gemm_4bit_use_custom_cuda`
# 600-601): at most this many rows the CUDA op runs the fused kernel on every GPU.
FUSED_ALWAYS_ROWS = 4


class Gemm4bitCuda(TorchDispatchMode):
    """Runs ``bitsandbytes::gemm_4bit`` as the CUDA backend does, in aten ops the tracker
    below this mode sees: above ``fused_max_rows`` rows the dequantize-then-linear fallback; at
    most that many, the fused kernel (its output only). Between 5 and 1536 rows the CUDA op asks
    a per-GPU rule (``_gemm_4bit_use_custom_cuda``, ``ops.py`` 584-700: compute capability, SM
    count, the weight's shape); the training replays run more than 1536 rows (the default bound
    changes nothing there), and the generate replays pass ``fused_max_rows=4``: the fused kernel
    where every GPU runs it, the fallback, the most a GPU allocates, everywhere else."""

    def __init__(self, fused_max_rows: int = FUSED_MAX_ROWS):
        super().__init__()
        self.fused_max_rows = fused_max_rows

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        import bitsandbytes  # noqa: F401  (defines the op namespace)

        kwargs = kwargs or {}
        if func is torch.ops.bitsandbytes.gemm_4bit.default:
            return gemm_4bit_cuda(*args, fused_max_rows=self.fused_max_rows, **kwargs)
        return func(*args, **kwargs)


def gemm_4bit_cuda(A, B, shapeB, absmax, blocksize, quant_type, bias=None, absmax_8bit=None,
                   absmax_code=None, absmax_offset=None, fused_max_rows=FUSED_MAX_ROWS):
    """``backends/cuda/ops.py`` 934-1000 with ``_dequant_linear_fallback`` (904-918)."""
    rows = A.numel() // A.shape[-1]
    if rows <= fused_max_rows:
        # _gemm_4bit_kernel_impl (846-901): A made contiguous, the output.
        A = A.contiguous()
        return torch.empty((*A.shape[:-1], shapeB[0]), dtype=A.dtype, device=A.device)
    if absmax_8bit is not None:
        absmax_dq = torch.empty_like(absmax_8bit, dtype=torch.float32)
        absmax = absmax_dq + absmax_offset  # both alive until the function returns
    b_dq = torch.empty(tuple(shapeB), dtype=A.dtype, device=A.device)
    return torch.nn.functional.linear(A, b_dq, bias)


@contextlib.contextmanager
def paged_state_on_host(tracker) -> Iterator[None]:
    """``Optimizer8bit.get_state_buffer`` with paging as on CUDA: state of a tensor of at
    least 100 000 elements made under ``tracker.host_side()`` (uncounted), the rest as
    before."""
    from bitsandbytes.optim.optimizer import Optimizer8bit

    original = Optimizer8bit.get_state_buffer

    def get_state_buffer(self, p, dtype=torch.float32):
        if not self.is_paged or p.numel() < 1e5:
            return torch.zeros_like(p, dtype=dtype, device=p.device)
        with tracker.host_side():
            return torch.zeros_like(p, dtype=dtype, device=p.device)

    Optimizer8bit.get_state_buffer = get_state_buffer
    try:
        yield
    finally:
        Optimizer8bit.get_state_buffer = original


def bnb_adamw(model, params, optim: str):
    """Trainer's ``adamw_bnb_8bit`` / ``paged_adamw_8bit`` (``trainer_optimizer.py``
    ``_get_bitsandbytes_optimizer``: ``bitsandbytes.optim.AdamW`` with ``optim_bits=8``,
    ``is_paged`` for the paged one), with ``Trainer.create_optimizer``'s override: every
    ``nn.Embedding`` weight keeps 32-bit state (``register_module_override(module, "weight",
    {"optim_bits": 32})``)."""
    import bitsandbytes

    manager = bitsandbytes.optim.GlobalOptimManager.get_instance()
    manager.initialize()
    opt = bitsandbytes.optim.AdamW(params, lr=5e-5, optim_bits=8, is_paged=optim == "paged_adamw8bit")
    for module in model.modules():
        if isinstance(module, torch.nn.Embedding):
            manager.register_module_override(module, "weight", {"optim_bits": 32})
    return opt


def quantize_linears(model, quant_type: str, double_quant: bool, compute_dtype: torch.dtype):
    """What ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, …))``
    leaves: every ``nn.Linear`` and ``Conv1D`` outside ``get_keys_to_not_convert`` turned into
    ``bnb.nn.Linear4bit`` (:func:`replace_linears`), each loaded weight quantized on the device as
    ``Params4bit(value, …).to(device)`` (:func:`packed_weight`)."""
    import bitsandbytes as bnb
    from transformers import BitsAndBytesConfig

    qc = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant_type,
                            bnb_4bit_use_double_quant=double_quant,
                            bnb_4bit_compute_dtype=compute_dtype)
    replace_linears(model, qc, bnb.nn.Linear4bit, lambda value, module: packed_weight(value, module.weight))
    model.is_loaded_in_4bit = True
    return model


def replace_linears(model, qc, cls, make_weight) -> None:
    """``replace_with_bnb_linear`` (``integrations/bitsandbytes.py`` 162-236): every
    ``nn.Linear`` and ``Conv1D`` outside ``get_keys_to_not_convert`` (the output embeddings, tied
    weights) becomes a ``cls`` module built on "meta", outside the fake mode (a bitsandbytes
    parameter cannot wrap a fake tensor); each old weight (a ``Conv1D``'s transposed first) is
    then given to ``make_weight(value, module)`` for the new module's weight, and biases stay in
    the weights' dtype."""
    from transformers.integrations.bitsandbytes import replace_with_bnb_linear
    from transformers.quantizers.base import get_keys_to_not_convert
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    skip = get_keys_to_not_convert(model)
    old = {name: m for name, m in model.named_modules()}
    with unset_fake_temporarily():
        replace_with_bnb_linear(model, skip, qc)
    for name, module in model.named_modules():
        if not isinstance(module, cls):
            continue
        src = old[name]
        value = src.weight.data
        if getattr(module, "source_cls", None) is not None and module.source_cls.__name__ == "Conv1D":
            value = value.T
        module.weight = make_weight(value, module)
        if src.bias is not None:
            module.bias = torch.nn.Parameter(src.bias.data, requires_grad=False)
        del src, value
    del old
    model.is_quantized = True
    model.quantization_method = "bitsandbytes"


def packed_weight(value: torch.Tensor, meta) -> torch.nn.Parameter:
    """``Params4bit._quantize`` (``nn/modules.py`` 381-395) of ``value``: bitsandbytes' own
    ``functional.quantize_4bit`` on the device, its packed uint8 tensor kept with the
    ``QuantState`` beside it. A ``Params4bit`` cannot wrap a fake tensor
    (``Tensor._make_subclass`` refuses one), so the packed tensor is kept in a plain frozen
    ``nn.Parameter`` carrying the same attributes (``quant_state``, ``blocksize``,
    ``quant_type``, ``bnb_quantized``); ``Linear4bit.forward`` and ``matmul_4bit`` read only
    those, and the storage is the one ``Params4bit`` would hold."""
    import bitsandbytes as bnb

    packed, state = bnb.functional.quantize_4bit(
        value.contiguous(), blocksize=meta.blocksize, compress_statistics=meta.compress_statistics,
        quant_type=meta.quant_type, quant_storage=meta.quant_storage)
    weight = torch.nn.Parameter(packed, requires_grad=False)
    weight.quant_state = state
    weight.blocksize = meta.blocksize
    weight.compress_statistics = meta.compress_statistics
    weight.quant_type = meta.quant_type
    weight.quant_storage = meta.quant_storage
    weight.bnb_quantized = True
    if meta.module is not None:
        meta.module.quant_state = state
    return weight


@contextlib.contextmanager
def dynamic_maps() -> Iterator[None]:
    """bitsandbytes' 256-entry float32 quantization maps (``create_dynamic_map``), made without
    their values, which fake tensors do not hold: an empty tensor of the same size, where and
    when bitsandbytes makes one (double quantization's, once on the weights' device, in
    ``quantize_blockwise``; the 8-bit optimizers' two in ``fill_qmap``, moved to the
    parameters' device in ``init_state``)."""
    import bitsandbytes.functional as bf

    original = bf.create_dynamic_map
    bf.create_dynamic_map = lambda *args, **kwargs: torch.empty(256, dtype=torch.float32)
    try:
        yield
    finally:
        bf.create_dynamic_map = original
        bf.name2qmap.clear()


# LLM.int8() inference (`load_in_8bit=True`): `Linear8bitLt.forward` (`nn/modules.py` 1180-1194)
# calls `bnb.matmul` → `MatMul8bitLt.forward` (`autograd/_functions.py` 103-199), which under
# `torch.no_grad()` takes the fast path: `int8_vectorwise_quant(A.to(torch.float16),
# threshold)` then `int8_mixed_scaled_mm` (threshold > 0, transformers' default 6.0).
#
# Outlier columns: the CUDA `int8_vectorwise_quant` lists the input columns holding a value of at
# least the threshold (`torch.argwhere(outliers.any(dim=0))`), a count fake tensors cannot know.
# The replays take OUTLIER_COLUMNS per call, present in every layer (LLM.int8()'s paper finds
# fewer than ten systematic outlier dimensions per layer in 6.7B+ models): the larger case, since
# with none `int8_mixed_scaled_mm` makes no outlier product and no second output.
OUTLIER_COLUMNS = 64


class Int8Cuda(TorchDispatchMode):
    """Runs bitsandbytes' int8 ops as bitsandbytes 0.50.2 runs them on CUDA, in aten ops the
    tracker below this mode sees (their fake implementations, ``_ops.py`` 16-140, allocate a
    dynamic-size outlier list fake tensors refuse):

    - ``int8_vectorwise_quant`` (CUDA, ``backends/cuda/ops.py`` 213-254): row scales (float32 per
      row) and the int8 copy; with a threshold, ``A.abs() >= threshold`` (the 16-bit ``abs``
      freed once compared, the boolean kept to the return), ``outliers.any()``,
      ``outliers.any(dim=0)`` (a boolean per column) and ``argwhere`` of it (``outlier_columns``
      int64 indices); with more than one row the outlier columns of the int8 copy are zeroed in
      place.
    - ``int8_mixed_scaled_mm`` (no CUDA kernel: the default one runs, ``backends/default/ops.py``
      64-100): the outlier columns of the input (``A[:, cols].contiguous()``) and of ``CB``,
      those weight columns dequantized (``int8_vectorwise_dequant``'s default, 57-59: two float32
      products) and cast to the input's dtype, ``int8_scaled_mm``, then ``output.addmm(subA,
      subB)``: a second output while the first is alive.
    - ``int8_scaled_mm`` (default, 103-119): ``int8_linear_matmul`` (CUDA 78-81: an int32
      output) then ``int8_mm_dequant`` (CUDA 171-210: a float16 output, the bias added in place
      unless float16, then ``.to(dtype)``).
    """

    def __init__(self, outlier_columns: int = OUTLIER_COLUMNS):
        super().__init__()
        self.outlier_columns = outlier_columns

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        import bitsandbytes  # noqa: F401

        kwargs = kwargs or {}
        ops = torch.ops.bitsandbytes
        if func is ops.int8_vectorwise_quant.default:
            return self.vectorwise_quant(*args, **kwargs)
        if func is ops.int8_mixed_scaled_mm.default:
            return mixed_scaled_mm(*args, **kwargs)
        if func is ops.int8_scaled_mm.default:
            return scaled_mm(*args, **kwargs)
        return func(*args, **kwargs)

    def vectorwise_quant(self, A, threshold=0.0):
        rows = A.numel() // A.shape[-1]
        row_stats = torch.empty(rows, dtype=torch.float32, device=A.device)
        out_row = torch.empty(A.shape, dtype=torch.int8, device=A.device)
        cols = None
        if threshold > 0.0:
            outliers = A.abs() >= threshold
            outliers.any()
            per_column = outliers.any(dim=0)
            cols = torch.empty((self.outlier_columns, 1), dtype=torch.int64,
                               device=A.device).view(-1)
            del per_column
            if rows > 1:
                out_row[:, cols] = 0
            del outliers
        return out_row, row_stats, cols


def mixed_scaled_mm(A, CA, CB, SCA, SCB, outlier_cols=None, bias=None):
    """``backends/default/ops.py`` 64-100."""
    subB = None
    if outlier_cols is not None and outlier_cols.numel():
        subA = A[:, outlier_cols].contiguous()
        cb = CB[:, outlier_cols].contiguous()
        subB = (cb * SCB.view(-1, 1) * 7.874015718698502e-3).to(A.dtype).t()
        del cb
    else:
        subA = torch.empty(0, device=A.device, dtype=A.dtype)
    output = scaled_mm(CA, CB, SCA, SCB, bias=bias, dtype=A.dtype)
    if subB is not None:
        output = output.addmm(subA, subB)
    return output, subA


def scaled_mm(A, B, row_stats, col_stats, bias=None, dtype=None):
    """``int8_scaled_mm`` (default 103-119) with the CUDA ``int8_linear_matmul`` (78-81) and
    ``int8_mm_dequant`` (171-210)."""
    out_i32 = torch.empty((*A.shape[:-1], B.shape[0]), dtype=torch.int32, device=A.device)
    out = torch.empty_like(out_i32, dtype=torch.float16)
    if bias is not None and bias.dtype != torch.float16:
        out.add_(bias)
    return out.to(dtype or torch.float16)


def quantize_linears_int8(model, threshold: float = 6.0):
    """What ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_8bit=True))``
    leaves: :func:`replace_linears` with ``Linear8bitLt`` (``has_fp16_weights=False``,
    ``threshold=llm_int8_threshold``), each weight as :func:`int8_weight` makes it."""
    import bitsandbytes as bnb
    from transformers import BitsAndBytesConfig

    qc = BitsAndBytesConfig(load_in_8bit=True, llm_int8_threshold=threshold)
    replace_linears(model, qc, bnb.nn.Linear8bitLt, lambda value, module: int8_weight(value))
    model.is_loaded_in_8bit = True
    return model


def int8_weight(value: torch.Tensor) -> torch.nn.Parameter:
    """``Int8Params._quantize`` (``nn/modules.py`` 737-748) of ``value``: the weight cast to
    float16, then ``int8_vectorwise_quant`` without threshold: ``CB`` (int8, the weight's shape)
    and ``SCB`` (one float32 per row). An ``Int8Params`` cannot wrap a fake tensor, so ``CB`` is
    kept in a plain frozen ``nn.Parameter`` carrying ``CB``/``SCB``/``has_fp16_weights`` (what
    ``Linear8bitLt.forward`` and ``init_8bit_state`` read)."""
    half = value.contiguous().to(dtype=torch.float16)
    CB = torch.empty(half.shape, dtype=torch.int8)
    SCB = torch.empty(half.shape[0], dtype=torch.float32)
    del half
    weight = torch.nn.Parameter(CB, requires_grad=False)
    weight.CB, weight.SCB, weight.has_fp16_weights = CB, SCB, False
    return weight
