"""Replay a Trainer training step of transformers' Llama-family decoders (``LlamaForCausalLM``,
``MistralForCausalLM``, ``Qwen2ForCausalLM``, ``Qwen3ForCausalLM``, ``Phi3ForCausalLM``, each
from its own ``modeling_*.py``) on fake tensors and record its memory: the ground truth for
vramdoc's Llama family (issue 21).

Usage::

    python tools/hf_replay/replay_llama.py --out tests/data/hf_llama_replay.json

What runs (transformers pinned in requirements.txt): the model built from its config (no
weights) on the device, in float32 or loaded in bfloat16 (``weights`` of a run); per micro-step
``model(input_ids=X, labels=X)`` under bf16 autocast or none (``dtype``), the loss divided by
the accumulation steps, ``backward``; then ``clip_grad_norm_(1.0)``, the fused AdamW step
(``adamw_torch_fused``) and ``zero_grad(set_to_none=True)``; ``gradient_checkpointing_enable``
with ``use_reentrant=False`` where a run says so. The configs' defaults are kept (``use_cache``
true, no dropout). Autocast and the CUDA kernels are emulated as for GPT-2 (``replay_gpt2.py``);
SDPA goes to the kernel CUDA picks (``hf_sdpa.py``).
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
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import cuda_dropout_patch  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
import replay_common  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402
from tracker import StorageTracker  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class Model:
    """A config's shape (a released model's, with ``layers`` reduced where the name says)."""

    name: str
    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    intermediate: int
    vocab_size: int
    tied: bool
    head_dim: int = 0
    full_layers: int = 0


@dataclass(frozen=True)
class Run:
    """One training setup of one model."""

    name: str
    model: Model
    block_size: int
    batch_size: int
    accumulation: int
    weights: str
    dtype: str
    attn_implementation: str
    grad_checkpoint: bool = False


def config(m: Model):
    """The transformers config of ``m`` (the released model's other settings kept default)."""
    import transformers

    common = dict(
        num_hidden_layers=m.layers,
        hidden_size=m.hidden,
        num_attention_heads=m.heads,
        num_key_value_heads=m.kv_heads,
        intermediate_size=m.intermediate,
        vocab_size=m.vocab_size,
        tie_word_embeddings=m.tied,
        max_position_embeddings=8192,
    )
    if m.head_dim:
        common["head_dim"] = m.head_dim
    cls = {
        "llama": transformers.LlamaConfig,
        "mistral": transformers.MistralConfig,
        "qwen2": transformers.Qwen2Config,
        "qwen3": transformers.Qwen3Config,
        "phi3": transformers.Phi3Config,
    }[m.model_type]
    if m.model_type == "mistral":
        common["sliding_window"] = None
    if m.model_type == "phi3":
        common["pad_token_id"] = min(32000, m.vocab_size - 1)
    return cls(**common)


def model_class(model_type: str):
    import transformers

    return {
        "llama": transformers.LlamaForCausalLM,
        "mistral": transformers.MistralForCausalLM,
        "qwen2": transformers.Qwen2ForCausalLM,
        "qwen3": transformers.Qwen3ForCausalLM,
        "phi3": transformers.Phi3ForCausalLM,
    }[model_type]


def replay(run: Run, explain: bool = False) -> dict:
    return replay_model(run, config(run.model), model_class(run.model.model_type), explain)


def replay_model(run, cfg, cls, explain: bool = False) -> dict:
    """The Trainer steps of ``cls(cfg)`` under ``run``'s settings (``block_size``,
    ``batch_size``, ``accumulation``, ``weights``, ``dtype``, ``attn_implementation``,
    ``grad_checkpoint``): what ``replay_moe.py`` shares with this replay."""
    cfg._attn_implementation = run.attn_implementation
    autocast_dtype = DTYPES[run.dtype]
    original_sdpa = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=scratch_bytes))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = hf_sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        # from_pretrained(dtype=torch.bfloat16) builds the model under that default dtype:
        # every weight in bf16 (the rotary inv_freq is made in float32 explicitly).
        default = torch.get_default_dtype()
        torch.set_default_dtype(DTYPES[run.weights])
        try:
            model = cls(cfg)
        finally:
            torch.set_default_dtype(default)
        if run.grad_checkpoint:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        param_bytes = unique_bytes(model.parameters())
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, autocast_dtype, explain)
        buffer_bytes = unique_bytes(model.buffers())
    return {
        "run": asdict(run),
        "params": params,
        "trainable_params": trainable,
        "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes,
        **steps,
    }


# Released shapes (their config.json), layers reduced where `full_layers` says how many the
# released model has: every block is the same, so fewer blocks replay the same per-layer terms
# faster on 2 CPU cores.
LLAMA2_7B = Model("llama-2-7b-2layers", "llama", 2, 4096, 32, 32, 11008, 32000, False,
                  full_layers=32)
LLAMA32_1B = Model("llama-3.2-1b-4layers", "llama", 4, 2048, 32, 8, 8192, 128256, True,
                   full_layers=16)
LLAMA31_8B = Model("llama-3.1-8b-2layers", "llama", 2, 4096, 32, 8, 14336, 128256, False,
                   full_layers=32)
MISTRAL_7B = Model("mistral-7b-v0.3-2layers", "mistral", 2, 4096, 32, 8, 14336, 32768, False,
                   full_layers=32)
QWEN25_05B = Model("qwen2.5-0.5b", "qwen2", 24, 896, 14, 2, 4864, 151936, True)
QWEN25_15B = Model("qwen2.5-1.5b-4layers", "qwen2", 4, 1536, 12, 2, 8960, 151936, True,
                   full_layers=28)
QWEN3_06B = Model("qwen3-0.6b-8layers", "qwen3", 8, 1024, 16, 8, 3072, 151936, True,
                  head_dim=128, full_layers=28)
QWEN3_4B = Model("qwen3-4b-2layers", "qwen3", 2, 2560, 32, 8, 9728, 151936, True, head_dim=128,
                 full_layers=36)
PHI3_MINI = Model("phi-3-mini-2layers", "phi3", 2, 3072, 32, 32, 8192, 32064, False,
                  full_layers=32)
# Released models with all their layers.
LLAMA32_1B_FULL = Model("llama-3.2-1b", "llama", 16, 2048, 32, 8, 8192, 128256, True)
QWEN3_06B_FULL = Model("qwen3-0.6b", "qwen3", 28, 1024, 16, 8, 3072, 151936, True,
                       head_dim=128)
PHI3_MINI_FULL = Model("phi-3-mini", "phi3", 32, 3072, 32, 32, 8192, 32064, False)
MISTRAL_7B_FULL = Model("mistral-7b-v0.3", "mistral", 32, 4096, 32, 8, 14336, 32768, False)
# Small vocabularies: the blocks, not the loss, set the peak.
TINY_MQA = Model("tiny-llama-mqa-v512", "llama", 4, 512, 8, 1, 1408, 512, False)
TINY_QWEN3 = Model("tiny-qwen3-v1024", "qwen3", 4, 256, 4, 2, 768, 1024, True, head_dim=64)
TINY_QWEN2 = Model("tiny-qwen2-v512", "qwen2", 6, 384, 6, 2, 1024, 512, True)
# Checkpointed blocks with a small vocabulary: a recomputed block's backward sets the peak.
SMALL_GQA = Model("small-llama-gqa-v1024", "llama", 4, 512, 8, 2, 1536, 1024, False)
SMALL_GQA_TIED = Model("small-llama-gqa-tied-v1024", "llama", 4, 512, 8, 2, 1536, 1024, True)
MISTRAL_7B_4 = Model("mistral-7b-v0.3-4layers", "mistral", 4, 4096, 32, 8, 14336, 32768, False,
                     full_layers=32)

F32, BF16 = "float32", "bfloat16"


def run_of(m, s: int, b: int, acc: int, weights: str, dtype: str, attn: str,
           ckpt: bool = False) -> Run:
    """The run of model ``m``, named after its settings (``replay_moe.py`` names its runs so)."""
    policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
              (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
    name = f"{m.name}-s{s}-b{b}-acc{acc}-{policy}-{attn}" + ("-ckpt" if ckpt else "")
    return Run(name, m, s, b, acc, weights, dtype, attn, ckpt)


def _runs() -> list[Run]:
    out = []

    def add(*args, **kwargs) -> None:
        out.append(run_of(*args, **kwargs))

    add(LLAMA2_7B, 1024, 1, 2, F32, BF16, "sdpa")
    add(LLAMA2_7B, 1024, 1, 1, BF16, F32, "sdpa")
    add(LLAMA2_7B, 512, 2, 2, F32, F32, "eager")
    add(LLAMA32_1B, 1024, 2, 2, F32, BF16, "sdpa")
    add(LLAMA32_1B, 1024, 2, 1, BF16, F32, "eager")
    add(LLAMA32_1B, 512, 2, 2, F32, F32, "sdpa")
    add(LLAMA32_1B, 2048, 1, 2, F32, BF16, "sdpa", True)
    add(LLAMA31_8B, 1024, 1, 2, BF16, F32, "sdpa")
    add(LLAMA31_8B, 512, 1, 2, F32, BF16, "eager", True)
    add(MISTRAL_7B, 1024, 1, 2, F32, BF16, "sdpa")
    add(MISTRAL_7B, 1024, 2, 1, BF16, F32, "sdpa", True)
    add(QWEN25_05B, 512, 2, 2, F32, BF16, "sdpa")
    add(QWEN25_05B, 512, 2, 2, BF16, F32, "eager")
    add(QWEN25_05B, 256, 4, 1, F32, F32, "eager", True)
    add(QWEN25_15B, 1024, 1, 2, F32, BF16, "eager")
    add(QWEN25_15B, 1024, 2, 2, BF16, F32, "sdpa")
    add(QWEN3_06B, 1024, 2, 2, F32, BF16, "sdpa")
    add(QWEN3_06B, 512, 2, 1, F32, F32, "sdpa")
    add(QWEN3_06B, 1024, 1, 2, BF16, F32, "eager", True)
    # bf16 weights under bf16 autocast (Trainer's bf16=True on a bf16 model): the same
    # memory as without autocast, every op already runs in the dtype autocast would pick.
    add(QWEN3_06B, 512, 2, 2, BF16, BF16, "sdpa")
    add(QWEN3_4B, 1024, 1, 2, BF16, F32, "sdpa")
    add(QWEN3_4B, 512, 2, 2, F32, BF16, "eager")
    add(PHI3_MINI, 1024, 1, 2, F32, BF16, "sdpa")
    add(PHI3_MINI, 1024, 1, 1, BF16, F32, "eager")
    add(PHI3_MINI, 512, 2, 2, F32, F32, "sdpa", True)
    add(TINY_MQA, 1024, 4, 2, F32, BF16, "sdpa")
    add(TINY_MQA, 1024, 4, 2, F32, BF16, "eager")
    add(TINY_MQA, 512, 8, 1, F32, F32, "sdpa", True)
    add(TINY_MQA, 512, 2, 2, BF16, BF16, "eager")
    add(TINY_QWEN3, 2048, 2, 2, BF16, F32, "sdpa")
    add(TINY_QWEN3, 1024, 4, 1, F32, BF16, "eager", True)
    add(TINY_QWEN2, 1024, 4, 2, F32, F32, "eager")
    add(TINY_QWEN2, 64, 1, 1, F32, BF16, "sdpa")
    add(LLAMA32_1B_FULL, 2048, 1, 1, BF16, F32, "sdpa")
    add(LLAMA32_1B_FULL, 1024, 4, 4, F32, BF16, "sdpa", True)
    add(QWEN3_06B_FULL, 1024, 2, 2, F32, BF16, "eager")
    add(QWEN3_06B_FULL, 2048, 2, 1, BF16, F32, "sdpa", True)
    add(QWEN25_05B, 1024, 4, 1, F32, BF16, "sdpa", True)
    add(PHI3_MINI_FULL, 2048, 1, 1, BF16, F32, "sdpa", True)
    add(MISTRAL_7B_FULL, 512, 1, 2, BF16, F32, "eager")
    add(MISTRAL_7B_FULL, 1024, 2, 1, BF16, F32, "sdpa", True)
    # float32 SDPA with grouped heads: CUDA's math fallback (hf_sdpa.py).
    add(LLAMA32_1B, 512, 4, 2, F32, F32, "sdpa")
    add(SMALL_GQA, 512, 4, 2, F32, F32, "sdpa")
    add(SMALL_GQA, 512, 4, 1, F32, F32, "sdpa")
    add(SMALL_GQA, 512, 4, 1, F32, F32, "sdpa", True)
    add(SMALL_GQA, 512, 4, 1, F32, BF16, "sdpa", True)
    add(SMALL_GQA, 512, 4, 1, BF16, F32, "sdpa", True)
    add(SMALL_GQA, 512, 4, 1, F32, F32, "eager", True)
    add(SMALL_GQA_TIED, 512, 4, 2, F32, BF16, "eager", True)
    add(SMALL_GQA_TIED, 512, 4, 2, BF16, F32, "eager", True)
    add(SMALL_GQA_TIED, 512, 4, 2, F32, BF16, "sdpa", True)
    add(MISTRAL_7B_4, 1024, 2, 1, BF16, F32, "sdpa", True)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_llama.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
