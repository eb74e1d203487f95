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


class Gemm4bitCuda(TorchDispatchMode):
    """Runs ``bitsandbytes::gemm_4bit`` as the CUDA backend does, in aten ops the tracker
    below this mode sees: above :data:`FUSED_MAX_ROWS` rows the dequantize-then-linear
    fallback; at most that many, the fused kernel (its output only; which kernel runs there
    depends on the GPU, and the replays do not run such sizes)."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        import bitsandbytes  # noqa: F401  (defines the op namespace)

        kwargs = kwargs or {}
        if func is torch.ops.bitsandbytes.gemm_4bit.default:
            return gemm_4bit_cuda(*args, **kwargs)
        return func(*args, **kwargs)


def gemm_4bit_cuda(A, B, shapeB, absmax, blocksize, quant_type, bias=None, absmax_8bit=None,
                   absmax_code=None, absmax_offset=None):
    """``backends/cuda/ops.py`` 934-1000 with ``_dequant_linear_fallback`` (904-918)."""
    rows = A.numel() // A.shape[-1]
    if rows <= FUSED_MAX_ROWS:
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
    leaves: ``replace_with_bnb_linear`` (``integrations/bitsandbytes.py``) turns every
    ``nn.Linear`` and ``Conv1D`` outside ``get_keys_to_not_convert`` (the output embeddings,
    tied weights, the last parameter) into ``bnb.nn.Linear4bit``, and each loaded weight is
    quantized on the device as ``Params4bit(value, …).to(device)`` (a ``Conv1D`` weight
    transposed first). Biases stay in the weights' dtype."""
    import bitsandbytes as bnb
    from transformers import BitsAndBytesConfig
    from transformers.integrations.bitsandbytes import replace_with_bnb_linear
    from transformers.quantizers.base import get_keys_to_not_convert

    qc = BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type=quant_type,
                            bnb_4bit_use_double_quant=double_quant,
                            bnb_4bit_compute_dtype=compute_dtype)
    skip = get_keys_to_not_convert(model)
    old = {name: m for name, m in model.named_modules()}
    # The new modules are built on "meta" (replace_with_bnb_linear does so); outside the fake
    # mode, since a Params4bit cannot wrap a fake tensor.
    from torch._subclasses.fake_tensor import unset_fake_temporarily

    with unset_fake_temporarily():
        replace_with_bnb_linear(model, skip, qc)
    for name, module in model.named_modules():
        if not isinstance(module, bnb.nn.Linear4bit):
            continue
        src = old[name]
        value = src.weight.data
        if getattr(module, "source_cls", None) is not None and module.source_cls.__name__ == "Conv1D":
            value = value.T
        module.weight = packed_weight(value, module.weight)
        if src.bias is not None:
            module.bias = torch.nn.Parameter(src.bias.data, requires_grad=False)
        del src, value
    del old
    model.is_loaded_in_4bit = True
    model.is_quantized = True
    model.quantization_method = "bitsandbytes"
    return model


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
