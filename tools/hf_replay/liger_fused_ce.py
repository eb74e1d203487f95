"""Liger Kernel's fused linear cross-entropy (liger-kernel 0.8.5,
``liger_kernel/ops/fused_linear_cross_entropy.py`` and ``transformers/model/llama.py``'s
``lce_forward``), ported allocation for allocation so the fake-tensor replay can run it on CPU.

``apply_liger_kernel_to_llama(fused_linear_cross_entropy=True)`` (and ``_to_mistral``,
``_to_qwen2``, ``_to_qwen3``, ``_to_phi3``) replaces ``*ForCausalLM.forward`` with
``lce_forward``: the decoder runs, and in training the head and the loss become one
``LigerFusedLinearCrossEntropyFunction``, which never builds the ``s·b·V`` logits. Its forward
(``fused_linear_cross_entropy_forward``) computes the loss *and the gradients* chunk by chunk:

- ``chunk_size = next_power_of_2(cdiv(BT, cdiv(V, H)))``, at most ``BT`` (``BT = s·b`` tokens,
  ``H`` the hidden width, ``V`` the vocabulary; ``chunk_mem_const`` 1), so one chunk's logits
  hold about ``BT·H`` elements;
- ``grad_input`` (``zeros_like(input)``), ``grad_weight`` (``zeros_like(weight)`` when the head
  is trained) and ``loss_1d`` (float32, ``BT``) live through the whole loop;
- per chunk, the logits in the matmul's dtype: a persistent ``(chunk, V)`` buffer written by
  ``torch.mm(out=)`` when the input and weight share the autocast (or no-autocast) dtype
  (``_can_use_mm_out``), else a new ``input_chunk @ weight.t()`` (under autocast bf16, the
  weight's cast cached); the Triton kernel ``liger_cross_entropy_kernel`` writes the loss into
  ``loss_1d`` and the logits' gradient over the logits in place (it allocates nothing);
- the input's gradient ``grad_logits @ weight`` (``mm(out=)`` into ``grad_input``, or a new
  product copied in); the weight's gradient accumulated by ``addmm(out=grad_weight)`` on sm80+
  with torch ≥ 2.8 (float32 accumulator with 16-bit logits: ``out_dtype``; matching 16-bit
  dtypes: plain ``addmm``), else ``grad_weight += mm(grad_logits.t(), input_chunk).float()``
  (a ``V·H`` temporary per chunk: float32 logits, as in float32 training).

It saves ``grad_input`` and ``grad_weight`` for backward, which only scales them in place
(``element_mul_kernel``). The port keeps every allocation and drops the arithmetic a fake
tensor has no use for: the Triton kernel (in place), the ``.item()`` of the token count (a
host value), and the in-place ``mm``/``addmm`` into existing buffers.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F

# The autocast device of the CUDA emulation (``cuda_emulation.autocast``).
AUTOCAST_DEVICE = "cpu"


def cdiv(a: int, b: int) -> int:
    return -(-a // b)


def next_power_of_2(n: int) -> int:
    return 1 if n <= 1 else 1 << (n - 1).bit_length()


def chunking(bt: int, hidden: int, vocab: int) -> tuple[int, int]:
    """``fused_linear_cross_entropy_forward``'s chunk size and count (``chunk_mem_const`` 1)."""
    inc_factor = cdiv(vocab, hidden)
    chunk_size = min(next_power_of_2(cdiv(bt, inc_factor)), bt)
    return chunk_size, cdiv(bt, chunk_size)


def _can_use_mm_out(x: torch.Tensor, weight: torch.Tensor) -> bool:
    """``_can_use_mm_out`` on a CUDA device (not HIP): grad mode is off inside the
    Function's forward; the input and weight share a 16- or 32-bit dtype, the autocast
    dtype when autocast is on."""
    if torch.is_grad_enabled() or x.dtype != weight.dtype:
        return False
    if x.dtype not in (torch.float16, torch.bfloat16, torch.float32):
        return False
    if torch.is_autocast_enabled(AUTOCAST_DEVICE):
        return x.dtype == torch.get_autocast_dtype(AUTOCAST_DEVICE)
    return True


def forward_buffers(x: torch.Tensor, weight: torch.Tensor, target: torch.Tensor,
                    ignore_index: int = -100):
    """``fused_linear_cross_entropy_forward`` (reduction mean or sum, no bias, no class
    weights, no z-loss, no token scaling): the loss, ``grad_input`` and ``grad_weight``."""
    bt, hidden = x.shape
    vocab = weight.shape[0]
    chunk_size, num_chunks = chunking(bt, hidden, vocab)
    grad_input = torch.zeros_like(x)
    grad_weight = torch.zeros_like(weight) if weight.requires_grad else None
    loss_1d = torch.zeros(bt, dtype=torch.float32)
    # Alive to the end of the forward, as in Liger; its sum is read on the host (.item()).
    target_mask = target != ignore_index
    _ = target_mask.sum()
    use_mm_out = _can_use_mm_out(x, weight)
    logits_storage = torch.empty((chunk_size, vocab), dtype=x.dtype) if use_mm_out else None
    for chunk_id in range(num_chunks):
        start, end = chunk_id * chunk_size, min((chunk_id + 1) * chunk_size, bt)
        x_chunk = x[start:end]
        if logits_storage is not None:
            logits_chunk = logits_storage[: end - start]  # torch.mm(x_chunk, weight.t(), out=)
        else:
            logits_chunk = x_chunk @ weight.t()
        logits_chunk = logits_chunk.contiguous()
        # liger_cross_entropy_kernel: loss into loss_1d, gradient over the logits, in place.
        grad_logits = logits_chunk
        del logits_chunk
        if not (use_mm_out and grad_logits.dtype == grad_input.dtype):
            grad_input[start:end] = grad_logits @ weight
        if grad_weight is not None:
            grad_logits_t = grad_logits.t()
            low = (torch.float16, torch.bfloat16)
            if grad_logits_t.dtype in low and grad_weight.dtype in (torch.float32, grad_logits_t.dtype):
                # addmm(grad_weight, grad_logits_t, input_chunk, out=grad_weight) on sm80+
                # (out_dtype=float32 for a float32 accumulator): the input chunk cast to the
                # logits' dtype first.
                x_cast = x_chunk.to(grad_logits_t.dtype) if x_chunk.dtype != grad_logits_t.dtype else x_chunk
                del x_cast
            else:
                grad_weight += torch.mm(grad_logits_t, x_chunk).float()
            del grad_logits_t
        del grad_logits, x_chunk
    del logits_storage
    loss = torch.sum(loss_1d)
    if grad_weight is not None:
        grad_weight = grad_weight.to(weight.dtype)
    return loss, grad_input, grad_weight


class FusedLinearCrossEntropy(torch.autograd.Function):
    """``LigerFusedLinearCrossEntropyFunction`` (``amp_custom_fwd``: autocast stays as it was
    on entry): the gradients computed in the forward and saved; the backward scales them in
    place (``element_mul_kernel``) and returns them."""

    @staticmethod
    @torch.amp.custom_fwd(device_type=AUTOCAST_DEVICE)
    def forward(ctx, x, weight, target):
        loss, grad_input, grad_weight = forward_buffers(x, weight, target)
        ctx.save_for_backward(grad_input.detach(),
                              grad_weight.detach() if grad_weight is not None else None)
        return loss

    @staticmethod
    @torch.amp.custom_bwd(device_type=AUTOCAST_DEVICE)
    def backward(ctx, grad_output):
        grad_input, grad_weight = ctx.saved_tensors
        return grad_input, grad_weight, None


def lce_forward(self, input_ids=None, labels=None, **kwargs):
    """Liger's ``lce_forward`` in training (``skip_logits``): the decoder, then
    ``LigerForCausalLMLoss``: labels padded by one ``ignore_index`` and shifted
    (``pad(labels, (0, 1))[..., 1:].contiguous()``), the hidden states viewed as ``(BT, H)``,
    and the fused head and loss."""
    from transformers.modeling_outputs import CausalLMOutputWithPast

    outputs = self.model(input_ids=input_ids, **kwargs)
    hidden_states = outputs[0]
    kept = hidden_states[:, slice(0, None), :]
    # LigerForCausalLMLoss keeps the padded labels (its local `labels`) until it returns.
    padded = F.pad(labels, (0, 1), value=-100)
    shift_labels = padded[..., 1:].contiguous()
    hidden = kept.view(-1, self.config.hidden_size)
    loss = FusedLinearCrossEntropy.apply(hidden, self.lm_head.weight, shift_labels.view(-1))
    return CausalLMOutputWithPast(loss=loss, logits=None, cache=outputs.cache)


@contextlib.contextmanager
def patched(cls):
    """``apply_liger_kernel_to_<model_type>(rope=False, rms_norm=False, swiglu=False,
    fused_linear_cross_entropy=True)`` for ``cls``: its forward is ``lce_forward`` (the other
    Liger kernels left off: vramdoc models the loss only)."""
    original = cls.forward
    cls.forward = lce_forward
    try:
        yield
    finally:
        cls.forward = original
