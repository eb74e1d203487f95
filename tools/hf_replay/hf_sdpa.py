"""``F.scaled_dot_product_attention`` as Hugging Face's decoders call it, routed to the kernel an
sm80+ CUDA GPU picks (PyTorch 2.15's ``sdp_utils.cpp`` priority: FlashAttention-2, then the
memory-efficient kernel, then the math composite), on fake CPU tensors.

- No mask, 16-bit inputs, ``head_dim`` a multiple of 8 up to 256: FlashAttention-2, grouped-query
  keys and values as they are (flash supports ``enable_gqa``).
- No mask, float32, as many key/value heads as query heads: the memory-efficient kernel
  (``cuda_emulation.cuda_sdpa``).
- No mask, float32, fewer key/value heads (``enable_gqa=True``): the memory-efficient kernel does
  not take grouped heads (``check_batch_size_and_num_heads_dense<false>``) and float32 has no
  flash or cuDNN kernel, so the math composite runs
  (``aten::_scaled_dot_product_attention_math``: keys and values ``repeat_interleave``'d, the
  causal mask, scores and softmax materialized).
- A mask (transformers passes one under gradient checkpointing): a boolean mask becomes an
  additive one in the query dtype (``convert_boolean_attn_mask``: ``zeros_like`` then
  ``masked_fill_`` of its ``logical_not``), its last dimension is padded to a multiple of 16
  (``preprocess_mask``), and the memory-efficient kernel runs with it as its bias.

FlashAttention-2's backward scratch (``mha_bwd``) is ``kernel_scratch_bytes`` of
``cuda_emulation`` plus, for grouped heads, ``dk_expanded`` and ``dv_expanded`` of shape
(batch, seqlen_k, heads, head_dim) in the inputs' dtype, summed into the grouped gradients at
the end (:func:`scratch_bytes`).
"""

from __future__ import annotations

import torch

from cuda_emulation import cuda_sdpa, kernel_scratch_bytes


def _autocast(*tensors):
    """Autocast's cast of SDPA's floating inputs (SDPA is on CUDA's lower-precision list)."""
    device = "cpu"
    if not torch.is_autocast_enabled(device):
        return tensors
    low = torch.get_autocast_dtype(device)
    return tuple(
        t.to(low) if t is not None and t.dtype == torch.float32 else t for t in tensors
    )


def hf_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False):
    """``F.scaled_dot_product_attention`` as routed on an sm80+ GPU (module doc)."""
    if dropout_p != 0.0:
        raise ValueError("the Llama replays run without attention dropout")
    query, key, value, attn_mask = _autocast(query, key, value, attn_mask)
    grouped = key.size(1) != query.size(1)
    if attn_mask is None:
        if query.dtype == torch.float32 and grouped:
            return torch.ops.aten._scaled_dot_product_attention_math.default(
                query, key, value, None, 0.0, is_causal, None, scale=scale, enable_gqa=True
            )[0]
        return cuda_sdpa(query, key, value, None, dropout_p, is_causal)
    if grouped:
        raise ValueError("transformers repeats grouped keys and values before a masked SDPA")
    if attn_mask.dtype == torch.bool:
        additive = torch.zeros_like(attn_mask, dtype=query.dtype)
        additive.masked_fill_(attn_mask.logical_not(), float("-inf"))
        attn_mask = additive
    last = attn_mask.size(-1)
    if last % 16:
        pad = 16 - last % 16
        attn_mask = torch.nn.functional.pad(attn_mask, (0, pad))[..., :last]
    bias = attn_mask.expand(query.size(0), query.size(1), query.size(2), key.size(2))
    need_lse = torch.is_grad_enabled() and any(t.requires_grad for t in (query, key, value))
    return torch.ops.aten._scaled_dot_product_efficient_attention.default(
        query, key, value, bias, need_lse, 0.0, False, scale=scale
    )[0]


def scratch_bytes(func: object, args: tuple) -> int:
    """A kernel's internal scratch: FlashAttention-2's backward, grouped heads included."""
    extra = kernel_scratch_bytes(func, args)
    if func is torch.ops.aten._scaled_dot_product_flash_attention_backward.default:
        q, k = args[1], args[2]
        if k.size(1) != q.size(1):
            batch, heads, _, head = q.shape
            head8 = (head + 7) // 8 * 8
            extra += 2 * batch * k.size(2) * heads * head8 * q.element_size()
    return extra
