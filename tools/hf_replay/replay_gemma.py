"""Replay a Trainer training step of transformers' Gemma 2 and Gemma 3 text decoders
(``Gemma2ForCausalLM`` from ``modeling_gemma2.py``, ``Gemma3ForCausalLM`` from
``modeling_gemma3.py``) on fake tensors and record its memory: the ground truth for vramdoc's
Gemma family (issue 21).

Usage::

    python tools/hf_replay/replay_gemma.py --out tests/data/hf_gemma_replay.json

The step is the Llama family's (``replay_llama.py``: the model built from its config, float32
or bfloat16 weights, bf16 autocast or none, ``model(input_ids=X, labels=X)``, ``backward``,
``clip_grad_norm_(1.0)``, fused AdamW, ``zero_grad(set_to_none=True)``, non-reentrant
checkpointing where a run says so). What Gemma adds: the embedding scaled by √hidden, four
``(1 + w)`` RMSNorms per block, a ``gelu_pytorch_tanh`` gated MLP, ``query_pre_attn_scalar``,
sliding-window layers (their mask differs once the sequence reaches the window), Gemma 2's
attention and final logit softcapping (eager attention only: transformers 5.24 gives Gemma 2 no
SDPA) and Gemma 3's QK-norm.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from replay_llama import BF16, F32, replay_model, run_of  # noqa: E402  (puts nanogpt_replay/ on the path)
import replay_common  # noqa: E402


@dataclass(frozen=True)
class Model:
    """A Gemma config's shape (a released model's, with ``layers`` reduced where the name says;
    ``layer_types`` gives Gemma 3's pattern explicitly where the released 5 + 1 does not fit)."""

    name: str
    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab_size: int
    sliding_window: int
    query_pre_attn_scalar: int
    layer_types: tuple[str, ...] = ()
    full_layers: int = 0


def config(m: Model):
    """The transformers config of ``m`` (the released model's other settings kept default:
    Gemma 2's softcapping 50 and 30, Gemma 3's none, tied head, no dropout)."""
    import transformers

    common = dict(
        num_hidden_layers=m.layers,
        hidden_size=m.hidden,
        num_attention_heads=m.heads,
        num_key_value_heads=m.kv_heads,
        head_dim=m.head_dim,
        intermediate_size=m.intermediate,
        vocab_size=m.vocab_size,
        sliding_window=m.sliding_window,
        query_pre_attn_scalar=m.query_pre_attn_scalar,
        max_position_embeddings=8192,
    )
    if m.layer_types:
        common["layer_types"] = list(m.layer_types)
    cls = {"gemma2": transformers.Gemma2Config, "gemma3_text": transformers.Gemma3TextConfig}
    return cls[m.model_type](**common)


def model_class(model_type: str):
    import transformers

    return {
        "gemma2": transformers.Gemma2ForCausalLM,
        "gemma3_text": transformers.Gemma3ForCausalLM,
    }[model_type]


def replay(run, explain: bool = False) -> dict:
    return replay_model(run, config(run.model), model_class(run.model.model_type), explain)


L, G = "sliding_attention", "full_attention"
# Released shapes (config.json), layers reduced where `full_layers` gives the released count:
# every block of a span is the same, so a local and a global block replay the per-layer terms.
GEMMA2_2B = Model("gemma-2-2b-2layers", "gemma2", 2, 2304, 8, 4, 256, 9216, 256000, 4096, 256,
                  full_layers=26)
GEMMA2_9B = Model("gemma-2-9b-2layers", "gemma2", 2, 3584, 16, 8, 256, 14336, 256000, 4096, 256,
                  full_layers=42)
GEMMA3_1B = Model("gemma-3-1b-6layers", "gemma3_text", 6, 1152, 4, 1, 256, 6912, 262144, 512, 256,
                  full_layers=26)
GEMMA2_27B = Model("gemma-2-27b-2layers", "gemma2", 2, 4608, 32, 16, 128, 36864, 256000, 4096,
                   144, full_layers=46)
GEMMA3_270M = Model("gemma-3-270m", "gemma3_text", 18, 640, 4, 1, 256, 2048, 262144, 512, 256)
# Released models with all their layers.
GEMMA2_2B_FULL = Model("gemma-2-2b", "gemma2", 26, 2304, 8, 4, 256, 9216, 256000, 4096, 256)
GEMMA3_1B_FULL = Model("gemma-3-1b", "gemma3_text", 26, 1152, 4, 1, 256, 6912, 262144, 512, 256)
# Small vocabularies and windows: the blocks, not the loss, set the peak, and the window is
# crossed at a few hundred tokens.
TINY_GEMMA2 = Model("tiny-gemma2-v1024-w128", "gemma2", 4, 256, 4, 2, 64, 1024, 1024, 128, 64)
TINY_GEMMA3 = Model("tiny-gemma3-v1024-w128", "gemma3_text", 4, 256, 4, 2, 64, 768, 1024, 128, 64,
                    layer_types=(L, L, L, G))


def _runs() -> list:
    out = []

    def add(*args, **kwargs) -> None:
        out.append(run_of(*args, **kwargs))

    # Gemma 2: eager attention (softcapping), below and beyond the 4096-token window.
    add(GEMMA2_2B, 1024, 1, 2, F32, BF16, "eager")
    add(GEMMA2_2B, 1024, 1, 1, BF16, F32, "eager")
    add(GEMMA2_2B, 512, 2, 2, F32, F32, "eager")
    add(GEMMA2_2B, 4608, 1, 1, BF16, F32, "eager")
    add(GEMMA2_2B, 1024, 2, 1, F32, BF16, "eager", True)
    add(GEMMA2_2B, 4608, 1, 2, BF16, F32, "eager", True)
    add(GEMMA2_9B, 1024, 1, 1, BF16, F32, "eager")
    add(GEMMA2_27B, 1024, 1, 2, F32, BF16, "eager")
    add(GEMMA2_2B_FULL, 1024, 1, 1, BF16, F32, "eager")
    add(GEMMA2_2B_FULL, 2048, 1, 2, BF16, F32, "eager", True)
    add(TINY_GEMMA2, 512, 4, 2, F32, BF16, "eager")
    add(TINY_GEMMA2, 96, 4, 1, BF16, F32, "eager", True)
    add(TINY_GEMMA2, 512, 4, 1, BF16, F32, "eager")
    add(TINY_GEMMA2, 256, 4, 2, F32, F32, "eager")
    # Gemma 3: SDPA and eager, below and beyond the 512-token window.
    add(GEMMA3_1B, 256, 2, 2, F32, BF16, "sdpa")
    add(GEMMA3_1B, 1024, 1, 1, BF16, F32, "sdpa")
    add(GEMMA3_1B, 256, 4, 1, F32, F32, "sdpa")
    add(GEMMA3_1B, 1024, 2, 2, F32, BF16, "eager")
    add(GEMMA3_1B, 1024, 1, 2, BF16, F32, "sdpa", True)
    add(GEMMA3_1B, 384, 2, 1, F32, BF16, "eager", True)
    add(GEMMA3_1B, 512, 2, 1, BF16, BF16, "sdpa")
    add(GEMMA3_270M, 1024, 2, 1, BF16, F32, "sdpa")
    add(GEMMA3_270M, 512, 2, 2, F32, F32, "eager")
    add(GEMMA3_1B_FULL, 2048, 1, 1, F32, BF16, "sdpa")
    add(GEMMA3_1B_FULL, 4096, 1, 1, BF16, F32, "sdpa", True)
    add(TINY_GEMMA3, 512, 4, 2, F32, BF16, "sdpa")
    add(TINY_GEMMA3, 96, 4, 2, BF16, F32, "sdpa")
    add(TINY_GEMMA3, 512, 4, 1, F32, F32, "eager", True)
    add(TINY_GEMMA3, 512, 4, 2, F32, F32, "eager")
    add(TINY_GEMMA3, 1024, 2, 1, BF16, F32, "sdpa")
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_gemma.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
