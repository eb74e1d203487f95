"""Replay a Hugging Face GPT-2 training step (transformers' own ``modeling_gpt2``) on fake
tensors and record its memory: the ground truth for modelling HF's GPT-2 (issue 21).

Usage::

    python tools/hf_replay/replay_gpt2.py --out tests/data/hf_gpt2_replay.json

What runs, as ``Trainer`` runs a step (transformers pinned in requirements.txt): a
``GPT2LMHeadModel`` built from a ``GPT2Config`` with float32 weights on the device; per
micro-step ``model(input_ids=X, labels=X)`` under autocast (``bf16=True``/``fp16=True``; float32
is no autocast), the loss divided by the accumulation steps, ``backward``; then
``clip_grad_norm_(1.0)``, the fused AdamW step (``optim="adamw_torch_fused"``, Trainer's default
with torch >= 2.8) and ``zero_grad(set_to_none=True)``. HF GPT-2 keeps its config's dropouts (0.1)
in training. The CUDA behaviour of autocast, SDPA and dropout is emulated as for nanoGPT
(``tools/nanogpt_replay/cuda_emulation.py``); SDPA calls are routed to the kernels CUDA would pick.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import (  # noqa: E402
    cuda_dropout_patch,
    cuda_sdpa,
    kernel_scratch_bytes,
)
from tracker import StorageTracker  # noqa: E402

import replay_common  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class Run:
    """One HF GPT-2 training setup."""

    name: str
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    block_size: int
    batch_size: int
    accumulation: int
    dtype: str
    attn_implementation: str
    dropout: float = 0.1
    n_positions: int = 0
    grad_checkpoint: bool = False


def hf_sdpa(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
            enable_gqa=False):
    """``F.scaled_dot_product_attention`` as HF calls it, routed to the CUDA kernel choice."""
    if attn_mask is not None:
        raise ValueError("the replay runs unpadded batches: SDPA gets no mask")
    return cuda_sdpa(query, key, value, None, dropout_p, is_causal)


def replay(run: Run, explain: bool = False) -> dict:
    from transformers import GPT2Config, GPT2LMHeadModel

    dtype = DTYPES[run.dtype]
    cfg = GPT2Config(
        n_layer=run.n_layer,
        n_head=run.n_head,
        n_embd=run.n_embd,
        vocab_size=run.vocab_size,
        n_positions=run.n_positions or run.block_size,
        resid_pdrop=run.dropout,
        embd_pdrop=run.dropout,
        attn_pdrop=run.dropout,
    )
    cfg._attn_implementation = run.attn_implementation
    original_sdpa = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=kernel_scratch_bytes))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = hf_sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        model = GPT2LMHeadModel(cfg)
        if run.grad_checkpoint:
            # Trainer's gradient_checkpointing=True with use_reentrant=False.
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = sum(p.numel() for p in model.parameters())
        param_bytes = unique_bytes(model.parameters())
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, dtype, explain)
    return {
        "run": asdict(run),
        "params": params,
        "train_peak_bytes": steps["train_peak_bytes"],
        "first_step_peak_bytes": steps["first_step_peak_bytes"],
        "train_peak_phase": steps["train_peak_phase"],
        "param_bytes": param_bytes,
        "grad_bytes": steps["grad_bytes"],
        "optimizer_bytes": steps["optimizer_bytes"],
    }

RUNS = [
    Run("gpt2-124m-s1024-b4-bf16-sdpa", 12, 12, 768, 50257, 1024, 4, 2, "bfloat16", "sdpa"),
    Run("gpt2-124m-s1024-b4-bf16-eager", 12, 12, 768, 50257, 1024, 4, 2, "bfloat16", "eager"),
    Run("gpt2-124m-s1024-b4-fp32-eager", 12, 12, 768, 50257, 1024, 4, 2, "float32", "eager"),
    Run("gpt2-124m-s1024-b4-fp32-sdpa", 12, 12, 768, 50257, 1024, 4, 2, "float32", "sdpa"),
    Run("gpt2-124m-s512-b8-fp16-eager", 12, 12, 768, 50257, 512, 8, 1, "float16", "eager"),
    Run("gpt2-124m-s1024-b4-bf16-eager-nodrop", 12, 12, 768, 50257, 1024, 4, 2, "bfloat16",
        "eager", dropout=0.0),
    Run("gpt2-124m-s256-b16-bf16-sdpa-acc1", 12, 12, 768, 50257, 256, 16, 1, "bfloat16", "sdpa"),
    Run("gpt2-medium-s1024-b2-bf16-sdpa", 24, 16, 1024, 50257, 1024, 2, 2, "bfloat16", "sdpa"),
    Run("gpt2-medium-s512-b2-fp32-eager", 24, 16, 1024, 50257, 512, 2, 2, "float32", "eager"),
    Run("tiny-4x128-s256-b8-bf16-eager", 4, 4, 128, 50257, 256, 8, 2, "bfloat16", "eager"),
    # Added for the estimator's Hugging Face GPT-2 family: fp16 under SDPA, no dropout under
    # SDPA and in float32 eager, pretrained GPT-2's 1024 positions trained on shorter sequences,
    # the large and XL shapes (reduced to fewer layers where noted), gradient checkpointing.
    Run("gpt2-124m-s1024-b4-fp16-sdpa", 12, 12, 768, 50257, 1024, 4, 2, "float16", "sdpa"),
    Run("gpt2-124m-s1024-b8-bf16-sdpa-nodrop", 12, 12, 768, 50257, 1024, 8, 4, "bfloat16",
        "sdpa", dropout=0.0),
    Run("gpt2-124m-s512-b4-fp32-eager-nodrop-acc1", 12, 12, 768, 50257, 512, 4, 1, "float32",
        "eager", dropout=0.0),
    Run("gpt2-124m-pos1024-s512-b8-bf16-sdpa", 12, 12, 768, 50257, 512, 8, 2, "bfloat16", "sdpa",
        n_positions=1024),
    Run("gpt2-124m-pos1024-s128-b32-fp16-eager-acc1", 12, 12, 768, 50257, 128, 32, 1,
        "float16", "eager", n_positions=1024),
    Run("gpt2-large-s1024-b1-bf16-sdpa", 36, 20, 1280, 50257, 1024, 1, 2, "bfloat16", "sdpa"),
    Run("gpt2-xl-12layers-s1024-b2-bf16-eager", 12, 25, 1600, 50257, 1024, 2, 2, "bfloat16",
        "eager"),
    Run("gpt2-124m-s1024-b8-bf16-eager-ckpt", 12, 12, 768, 50257, 1024, 8, 2, "bfloat16",
        "eager", grad_checkpoint=True),
    # A small vocabulary (a character-level model): the loss is no longer the largest moment.
    Run("small-vocab-12x768-v512-s1024-b4-bf16-eager", 12, 12, 768, 512, 1024, 4, 2, "bfloat16",
        "eager"),
    Run("small-vocab-12x768-v512-s1024-b4-fp32-sdpa-acc1", 12, 12, 768, 512, 1024, 4, 1,
        "float32", "sdpa"),
    Run("small-vocab-12x768-v512-s1024-b8-bf16-sdpa", 12, 12, 768, 512, 1024, 8, 2, "bfloat16",
        "sdpa"),
    Run("small-vocab-12x768-v512-s1024-b4-bf16-eager-ckpt", 12, 12, 768, 512, 1024, 4, 2,
        "bfloat16", "eager", grad_checkpoint=True),
    Run("small-vocab-12x768-v512-s128-b64-bf16-eager-ckpt", 12, 12, 768, 512, 128, 64, 2,
        "bfloat16", "eager", grad_checkpoint=True),
    Run("small-vocab-12x768-v512-s128-b64-fp32-eager-ckpt-acc1", 12, 12, 768, 512, 128, 64, 1,
        "float32", "eager", dropout=0.0, grad_checkpoint=True),
    # Micro-batch 1 on short sequences, where the weights and their gradients outweigh the
    # activations and the end of backward can peak; a long sequence; another width and vocabulary.
    Run("small-vocab-12x768-v512-s64-b1-bf16-sdpa-acc1", 12, 12, 768, 512, 64, 1, 1, "bfloat16",
        "sdpa"),
    Run("small-vocab-12x768-v512-s64-b1-fp32-eager-acc1", 12, 12, 768, 512, 64, 1, 1, "float32",
        "eager"),
    Run("small-vocab-12x768-v512-s64-b1-bf16-eager", 12, 12, 768, 512, 64, 1, 2, "bfloat16",
        "eager"),
    Run("small-6x512-v512-s32-b2-fp16-eager-ckpt-acc1", 6, 8, 512, 512, 32, 2, 1, "float16",
        "eager", grad_checkpoint=True),
    Run("gpt2-124m-pos2048-s2048-b1-bf16-sdpa-acc4", 12, 12, 768, 50257, 2048, 1, 4, "bfloat16",
        "sdpa"),
    Run("h1024-6x8-v8000-s512-b6-fp32-sdpa-nodrop-acc1", 6, 8, 1024, 8000, 512, 6, 1, "float32",
        "sdpa", dropout=0.0),
    Run("gpt2-124m-s1024-b4-fp32-eager-ckpt-acc1", 12, 12, 768, 50257, 1024, 4, 1, "float32",
        "eager", grad_checkpoint=True),
]


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_gpt2.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
