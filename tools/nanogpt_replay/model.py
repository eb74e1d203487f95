"""The structure of nanoGPT's model.py, rewritten for the memory replay.

This follows Karpathy's nanoGPT (github.com/karpathy/nanoGPT, model.py) module
for module and operation for operation, because the memory of a training step
depends on exactly which tensors each operation creates and keeps:

* ``LayerNorm`` with an optional bias, through ``F.layer_norm`` (eps 1e-5);
* ``CausalSelfAttention``: one fused qkv projection split into heads, then
  ``F.scaled_dot_product_attention(is_causal=True)`` when ``flash`` is on, or
  the explicit ``q @ k^T * scale``, ``masked_fill`` with the registered ``bias``
  lower-triangular buffer (fp32, one per layer), softmax, dropout, ``@ v``;
* ``MLP``: 4 * n_embd hidden units with exact GELU;
* pre-norm residual ``Block``s, learned position embeddings, a final LayerNorm,
  and an ``lm_head`` whose weight *is* the token embedding (weight tying);
* ``forward(idx, targets)`` computes logits for every position and
  ``F.cross_entropy(logits.view(-1, V), targets.view(-1), ignore_index=-1)``;
* ``configure_optimizers`` puts every parameter with ``dim() >= 2`` in the
  weight-decay group and the rest in the no-decay group, and builds a fused
  AdamW (nanoGPT asks for ``fused=True`` on CUDA). Like nanoGPT's, it leaves
  out parameters that do not require grad.

Two fine-tuning patches, which nanoGPT does not have, are here too (the ones
vramdoc's ``freeze_embeddings`` and ``lora_rank``/``lora_targets`` describe):
:func:`freeze_embeddings` (``wte``, which *is* ``lm_head.weight``, and ``wpe``
stop requiring grad) and :func:`apply_lora` (every parameter frozen, then
:class:`LoRALinear` adapters around the named Linear layers of every block,
as PEFT's ``get_peft_model`` with its defaults makes them).

Two things are parameters here rather than facts of the environment: ``flash``
(nanoGPT turns it on whenever ``F.scaled_dot_product_attention`` exists) and
the attention function itself (``sdpa``), so the replay can route it to the
kernel a CUDA GPU would run. Initialisation values are irrelevant on fake
tensors, but the same init calls are made so the op stream stays faithful.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

import torch
import torch.nn as nn
from torch.nn import functional as F


@dataclass
class GPTConfig:
    """Model hyper-parameters, named as in nanoGPT's ``GPTConfig``."""

    block_size: int = 1024
    vocab_size: int = 50304
    n_layer: int = 12
    n_head: int = 12
    n_embd: int = 768
    dropout: float = 0.0
    bias: bool = True
    flash: bool = True


class LayerNorm(nn.Module):
    """LayerNorm whose bias can be switched off (PyTorch's cannot)."""

    def __init__(self, ndim: int, bias: bool):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(ndim))
        self.bias = nn.Parameter(torch.zeros(ndim)) if bias else None

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return F.layer_norm(x, self.weight.shape, self.weight, self.bias, 1e-5)


class CausalSelfAttention(nn.Module):
    """Multi-head causal self-attention with a fused qkv projection."""

    def __init__(self, config: GPTConfig, sdpa: Callable[..., torch.Tensor]):
        super().__init__()
        assert config.n_embd % config.n_head == 0
        self.c_attn = nn.Linear(config.n_embd, 3 * config.n_embd, bias=config.bias)
        self.c_proj = nn.Linear(config.n_embd, config.n_embd, bias=config.bias)
        self.attn_dropout = nn.Dropout(config.dropout)
        self.resid_dropout = nn.Dropout(config.dropout)
        self.n_head = config.n_head
        self.n_embd = config.n_embd
        self.dropout = config.dropout
        self.flash = config.flash
        self.sdpa = sdpa
        if not self.flash:
            # nanoGPT keeps an fp32 (1, 1, block, block) causal mask per layer.
            mask = torch.tril(torch.ones(config.block_size, config.block_size))
            self.register_buffer(
                "bias", mask.view(1, 1, config.block_size, config.block_size)
            )

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(self.n_embd, dim=2)
        head = C // self.n_head
        k = k.view(B, T, self.n_head, head).transpose(1, 2)
        q = q.view(B, T, self.n_head, head).transpose(1, 2)
        v = v.view(B, T, self.n_head, head).transpose(1, 2)
        if self.flash:
            y = self.sdpa(
                q,
                k,
                v,
                attn_mask=None,
                dropout_p=self.dropout if self.training else 0,
                is_causal=True,
            )
        else:
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
            att = F.softmax(att, dim=-1)
            att = self.attn_dropout(att)
            y = att @ v
        y = y.transpose(1, 2).contiguous().view(B, T, C)
        return self.resid_dropout(self.c_proj(y))


class MLP(nn.Module):
    """Position-wise feed-forward network, 4x wide, GELU."""

    def __init__(self, config: GPTConfig):
        super().__init__()
        self.c_fc = nn.Linear(config.n_embd, 4 * config.n_embd, bias=config.bias)
        self.gelu = nn.GELU()
        self.c_proj = nn.Linear(4 * config.n_embd, config.n_embd, bias=config.bias)
        self.dropout = nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.dropout(self.c_proj(self.gelu(self.c_fc(x))))


class Block(nn.Module):
    """Pre-norm transformer block: x + attn(ln(x)), then x + mlp(ln(x))."""

    def __init__(self, config: GPTConfig, sdpa: Callable[..., torch.Tensor]):
        super().__init__()
        self.ln_1 = LayerNorm(config.n_embd, bias=config.bias)
        self.attn = CausalSelfAttention(config, sdpa)
        self.ln_2 = LayerNorm(config.n_embd, bias=config.bias)
        self.mlp = MLP(config)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class GPT(nn.Module):
    """nanoGPT's GPT: embeddings, ``n_layer`` blocks, final norm, tied head."""

    def __init__(
        self,
        config: GPTConfig,
        sdpa: Callable[..., torch.Tensor] = F.scaled_dot_product_attention,
    ):
        super().__init__()
        self.config = config
        self.transformer = nn.ModuleDict(
            dict(
                wte=nn.Embedding(config.vocab_size, config.n_embd),
                wpe=nn.Embedding(config.block_size, config.n_embd),
                drop=nn.Dropout(config.dropout),
                h=nn.ModuleList([Block(config, sdpa) for _ in range(config.n_layer)]),
                ln_f=LayerNorm(config.n_embd, bias=config.bias),
            )
        )
        self.lm_head = nn.Linear(config.n_embd, config.vocab_size, bias=False)
        # Weight tying: one tensor serves as embedding table and output matrix.
        self.transformer.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)
        for name, param in self.named_parameters():
            if name.endswith("c_proj.weight"):
                nn.init.normal_(param, mean=0.0, std=0.02 / math.sqrt(2 * config.n_layer))

    def get_num_params(self, non_embedding: bool = True) -> int:
        """Unique parameters; nanoGPT's default leaves out position embeddings."""
        n = sum(p.numel() for p in self.parameters())
        if non_embedding:
            n -= self.transformer.wpe.weight.numel()
        return n

    @staticmethod
    def _init_weights(module: nn.Module) -> None:
        if isinstance(module, nn.Linear):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx: torch.Tensor, targets: torch.Tensor | None = None):
        """Return ``(logits, loss)``; logits cover every position when training."""
        b, t = idx.size()
        assert t <= self.config.block_size
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        tok_emb = self.transformer.wte(idx)
        pos_emb = self.transformer.wpe(pos)
        x = self.transformer.drop(tok_emb + pos_emb)
        for block in self.transformer.h:
            x = block(x)
        x = self.transformer.ln_f(x)
        if targets is not None:
            logits = self.lm_head(x)
            loss = F.cross_entropy(
                logits.view(-1, logits.size(-1)), targets.view(-1), ignore_index=-1
            )
        else:
            logits = self.lm_head(x[:, [-1], :])
            loss = None
        return logits, loss

    def crop_block_size(self, block_size: int) -> None:
        """nanoGPT's model surgery: keep the first ``block_size`` positions.

        As in nanoGPT, the new position embedding and the attention masks are
        views of the old storages; ``model.to(device)`` then copies only the
        cropped part.
        """
        assert block_size <= self.config.block_size
        self.config.block_size = block_size
        self.transformer.wpe.weight = nn.Parameter(self.transformer.wpe.weight[:block_size])
        for block in self.transformer.h:
            if hasattr(block.attn, "bias"):
                block.attn.bias = block.attn.bias[:, :, :block_size, :block_size]

    def optimizer_groups(self, weight_decay: float):
        """nanoGPT's grouping: tensors with dim >= 2 decay, the others do not."""
        params = {n: p for n, p in self.named_parameters() if p.requires_grad}
        decay = [p for p in params.values() if p.dim() >= 2]
        no_decay = [p for p in params.values() if p.dim() < 2]
        return [
            {"params": decay, "weight_decay": weight_decay},
            {"params": no_decay, "weight_decay": 0.0},
        ]

    def configure_optimizers(self, weight_decay, learning_rate, betas, fused: bool):
        """AdamW over :meth:`optimizer_groups`, fused as nanoGPT does on CUDA."""
        extra = dict(fused=True) if fused else dict()
        return torch.optim.AdamW(
            self.optimizer_groups(weight_decay), lr=learning_rate, betas=betas, **extra
        )


class LoRALinear(nn.Module):
    """A Linear layer with a LoRA adapter, as PEFT's ``lora.Linear`` runs it.

    Hu et al. 2021, "LoRA: Low-Rank Adaptation of Large Language Models":
    ``h = W0 x + (alpha / r) * B A x`` with A (r x in) and B (out x r)
    trainable and W0 frozen. The forward is PEFT's (peft/tuners/lora/layer.py,
    ``Linear.forward``, with its defaults: ``lora_dropout=0`` so the dropout is
    ``nn.Identity``, no DoRA, no bias on the adapter): the base layer's
    result, then ``x`` cast to the adapter's dtype (``_cast_input_dtype``:
    ``x.to(lora_A.weight.dtype)`` when the dtypes differ; under autocast a
    16-bit input becomes an fp32 copy, which autocast casts back for the
    matmul), then ``result + lora_B(lora_A(dropout(x))) * scaling`` and a cast
    back to the result's dtype. A is initialised Kaiming-uniform and B zero
    (PEFT's ``init_lora_weights=True``).
    """

    def __init__(self, base: nn.Linear, rank: int, alpha: float = 16.0):
        super().__init__()
        self.base_layer = base
        self.lora_A = nn.Linear(base.in_features, rank, bias=False)
        self.lora_B = nn.Linear(rank, base.out_features, bias=False)
        self.lora_dropout = nn.Identity()
        self.scaling = alpha / rank
        nn.init.kaiming_uniform_(self.lora_A.weight, a=math.sqrt(5))
        nn.init.zeros_(self.lora_B.weight)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        result = self.base_layer(x)
        result_dtype = result.dtype
        dtype = self.lora_A.weight.dtype
        if x.dtype != dtype:
            x = x.to(dtype=dtype)
        result = result + self.lora_B(self.lora_A(self.lora_dropout(x))) * self.scaling
        return result.to(result_dtype)


# The Linear layers of a block a LoRA adapter can wrap, by their module paths
# inside ``Block`` (PEFT's ``target_modules`` matches such names).
LORA_TARGETS = ("attn.c_attn", "attn.c_proj", "mlp.c_fc", "mlp.c_proj")


def freeze_embeddings(model: GPT) -> None:
    """The one-line patch: ``wte`` (= ``lm_head.weight``, tied) and ``wpe`` frozen."""
    model.transformer.wte.weight.requires_grad_(False)
    model.transformer.wpe.weight.requires_grad_(False)


def apply_lora(model: GPT, rank: int, targets: tuple[str, ...]) -> None:
    """PEFT's defaults: freeze every parameter (``bias='none'``: biases and
    LayerNorms stay frozen too), then wrap ``targets`` of every block."""
    for p in model.parameters():
        p.requires_grad_(False)
    for block in model.transformer.h:
        for path in targets:
            assert path in LORA_TARGETS, path
            parent_name, name = path.split(".")
            parent = getattr(block, parent_name)
            setattr(parent, name, LoRALinear(getattr(parent, name), rank))
