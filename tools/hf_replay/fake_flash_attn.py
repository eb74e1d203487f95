"""flash-attn 2's ``flash_attn_func`` and ``flash_attn_varlen_func`` on fake tensors: what they
allocate and save (``flash_attn/flash_attn_interface.py`` and ``csrc/flash_attn/flash_api.cpp``,
flash-attn 2.8), not what they compute.

- Forward (``mha_fwd`` / ``mha_varlen_fwd``): the output like the queries, a float32
  ``softmax_lse`` of ``(b, h, s)`` (varlen: ``(h, total)``) and a ``(2,)`` int64 ``rng_state``;
  ``FlashAttnFunc`` saves ``q, k, v, out, softmax_lse, rng_state`` (grouped keys and values as
  they are: the kernel reads ``h / h_k`` query heads per key head).
- Backward (``mha_bwd`` / ``mha_varlen_bwd``): ``dq, dk, dv`` like ``q, k, v``; a float32
  ``softmax_d`` of ``(b, h, s rounded up to 128)`` (varlen: ``(h, total + 128·b)``); a float32
  ``dq_accum`` of ``(b, s rounded up to 128, h, d rounded)`` (varlen:
  ``(total + 128·b, h, d rounded)``), ``d`` rounded up to 32 (to 64 above 128); with grouped
  heads ``dk_expanded`` and ``dv_expanded`` at the query heads' count, summed into ``dk``, ``dv``.

:func:`installed` routes transformers 5.24's ``flash_attention_2`` to these and answers, for the
batch layout being replayed, the helpers that read a tensor's values (which a FakeTensor has
not): ``_is_packed_sequence`` and ``prepare_fa_kwargs_from_position_ids``.
"""

from __future__ import annotations

import contextlib

import torch


def _round(n: int, m: int) -> int:
    return (n + m - 1) // m * m


def _head_rounded(d: int) -> int:
    return _round(d, 32) if d <= 128 else _round(d, 64)


def _contiguous_last(t: torch.Tensor) -> torch.Tensor:
    return t if t.stride(-1) == 1 else t.contiguous()


class _FlashAttn(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v):
        q, k, v = (_contiguous_last(t) for t in (q, k, v))
        b, s, h, _ = q.shape
        out = torch.empty_like(q)
        lse = q.new_empty((b, h, s), dtype=torch.float32)
        rng = q.new_empty((2,), dtype=torch.int64)
        ctx.save_for_backward(q, k, v, out, lse, rng)
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, rng = ctx.saved_tensors
        dout = _contiguous_last(dout)
        b, s, h, d = q.shape
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        softmax_d = q.new_empty((b, h, _round(s, 128)), dtype=torch.float32)
        dq_accum = q.new_empty((b, _round(s, 128), h, _head_rounded(d)), dtype=torch.float32)
        expanded = []
        if k.size(2) != h:
            expanded = [q.new_empty((b, k.size(1), h, d)) for _ in range(2)]
        del softmax_d, dq_accum, expanded
        return dq, dk, dv


class _FlashAttnVarlen(torch.autograd.Function):
    @staticmethod
    def forward(ctx, q, k, v, sequences):
        q, k, v = (_contiguous_last(t) for t in (q, k, v))
        total, h, _ = q.shape
        out = torch.empty_like(q)
        lse = q.new_empty((h, total), dtype=torch.float32)
        rng = q.new_empty((2,), dtype=torch.int64)
        ctx.save_for_backward(q, k, v, out, lse, rng)
        ctx.sequences = sequences
        return out

    @staticmethod
    def backward(ctx, dout):
        q, k, v, out, lse, rng = ctx.saved_tensors
        dout = _contiguous_last(dout)
        total, h, d = q.shape
        padded = total + 128 * ctx.sequences
        dq, dk, dv = torch.empty_like(q), torch.empty_like(k), torch.empty_like(v)
        softmax_d = q.new_empty((h, padded), dtype=torch.float32)
        dq_accum = q.new_empty((padded, h, _head_rounded(d)), dtype=torch.float32)
        expanded = []
        if k.size(1) != h:
            expanded = [q.new_empty((k.size(0), h, d)) for _ in range(2)]
        del softmax_d, dq_accum, expanded
        return dq, dk, dv, None


def flash_attn_func(q, k, v, dropout_p=0.0, softmax_scale=None, causal=False,
                    window_size=(-1, -1), softcap=0.0, alibi_slopes=None, deterministic=False,
                    return_attn_probs=False):
    if dropout_p:
        raise ValueError("replayed without attention dropout")
    return _FlashAttn.apply(q, k, v)


def flash_attn_varlen_func(q, k, v, cu_seqlens_q, cu_seqlens_k, max_seqlen_q, max_seqlen_k,
                           dropout_p=0.0, softmax_scale=None, causal=False, window_size=(-1, -1),
                           softcap=0.0, alibi_slopes=None, deterministic=False,
                           return_attn_probs=False, block_table=None):
    if dropout_p:
        raise ValueError("replayed without attention dropout")
    return _FlashAttnVarlen.apply(q, k, v, cu_seqlens_q.size(0) - 1)


@contextlib.contextmanager
def installed(rows: int, length: int, packed: bool):
    """transformers' ``flash_attention_2`` on the fakes above, for ``rows`` rows of ``length``
    tokens (``packed``: one row of ``rows`` sequences, padding-free)."""
    import transformers.modeling_flash_attention_utils as fa
    from transformers.modeling_utils import PreTrainedModel

    # The package check a real installation passes (flash-attn's metadata, a CUDA device).
    check = PreTrainedModel._flash_attn_import_error
    PreTrainedModel._flash_attn_import_error = lambda self, *args, **kwargs: None
    saved = {n: getattr(fa, n) for n in ("_lazy_imports", "_is_packed_sequence",
                                         "prepare_fa_kwargs_from_position_ids")}
    fa._loaded_implementation = None

    def lazy_imports(implementation, attention_wrapper=None, allow_all_kernels=False):
        return flash_attn_func, flash_attn_varlen_func, None, fa._pad_input, fa._unpad_input

    def from_position_ids(position_ids):
        cu = torch.arange(0, rows * length + 1, length, dtype=torch.int32,
                          device=position_ids.device)
        return (cu, cu), (length, length)

    fa._lazy_imports = lazy_imports
    fa._is_packed_sequence = lambda position_ids, batch_size: packed
    fa.prepare_fa_kwargs_from_position_ids = from_position_ids
    try:
        yield
    finally:
        for n, f in saved.items():
            setattr(fa, n, f)
        PreTrainedModel._flash_attn_import_error = check
        fa._loaded_implementation = None
