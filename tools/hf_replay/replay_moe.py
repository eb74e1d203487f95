"""Replay a Trainer training step of transformers' mixture-of-experts decoders
(``MixtralForCausalLM``, ``Qwen2MoeForCausalLM``, ``Qwen3MoeForCausalLM``, each from its own
``modeling_*.py``) on fake tensors and record its memory: the ground truth for vramdoc's MoE
family (issue 21).

Usage::

    python tools/hf_replay/replay_moe.py --out tests/data/hf_moe_replay.json

The step is ``replay_llama.py``'s (``replay_llama.replay_model``: the model built from its config
on the device in float32 or bfloat16, ``model(input_ids=X, labels=X)`` under bf16 autocast or
none, ``backward``, ``clip_grad_norm_(1.0)``, fused AdamW, ``zero_grad(set_to_none=True)``,
``gradient_checkpointing_enable(use_reentrant=False)`` where a run says so).

How the experts run: transformers 5.24 stores each layer's experts as two 3-D parameters
(``gate_up_proj`` ``(E, 2·I, h)``, ``down_proj`` ``(E, h, I)``) and, with no
``experts_implementation`` given, runs them through ``grouped_mm_experts_forward``
(``integrations/moe.py``): the ``T·k`` (token, expert) pairs the router picks are sorted by
expert, gathered into one ``(T·k, h)`` tensor and multiplied by ``torch._grouped_mm`` with the
per-expert offsets. Every tensor's shape is fixed by ``T·k``; only the offsets' values depend on
the routing. So the memory does not depend on which experts the router picks, and the replay needs
no routing patch: fake tensors give the same storages for any routing (an even spread, or every
token on the same experts). The eager per-expert loop (``experts_implementation="eager"``) is the
one whose tensors depend on the routing; it is not replayed.

Router: the configs' defaults (the released configs' too): ``output_router_logits`` false, so no
auxiliary load-balancing loss; no router jitter; ``norm_topk_prob`` as the released model
(Qwen3-MoE true, Qwen1.5-MoE false; Mixtral always normalizes).
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
from replay_llama import BF16, F32, Run, replay_model, run_of  # noqa: E402


@dataclass(frozen=True)
class Model:
    """A released MoE config's shape, reduced where the name says (fewer layers, experts or a
    narrower expert; ``full_*`` keep the released values)."""

    name: str
    model_type: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    experts: int
    top_k: int
    expert_intermediate: int
    vocab_size: int
    shared_intermediate: int = 0
    head_dim: int = 0
    norm_topk_prob: bool = False
    full_layers: int = 0


def config(m: Model):
    """The transformers config of ``m``."""
    import transformers

    common = dict(
        num_hidden_layers=m.layers,
        hidden_size=m.hidden,
        num_attention_heads=m.heads,
        num_key_value_heads=m.kv_heads,
        num_experts_per_tok=m.top_k,
        vocab_size=m.vocab_size,
        tie_word_embeddings=False,
        max_position_embeddings=8192,
    )
    if m.head_dim:
        common["head_dim"] = m.head_dim
    if m.model_type == "mixtral":
        return transformers.MixtralConfig(
            num_local_experts=m.experts, intermediate_size=m.expert_intermediate,
            sliding_window=None, **common)
    moe = dict(num_experts=m.experts, moe_intermediate_size=m.expert_intermediate,
               norm_topk_prob=m.norm_topk_prob, decoder_sparse_step=1, mlp_only_layers=[])
    if m.model_type == "qwen2_moe":
        return transformers.Qwen2MoeConfig(
            shared_expert_intermediate_size=m.shared_intermediate, **moe, **common)
    return transformers.Qwen3MoeConfig(**moe, **common)


def model_class(model_type: str):
    import transformers

    return {
        "mixtral": transformers.MixtralForCausalLM,
        "qwen2_moe": transformers.Qwen2MoeForCausalLM,
        "qwen3_moe": transformers.Qwen3MoeForCausalLM,
    }[model_type]


def replay(run: Run, explain: bool = False) -> dict:
    cfg = config(run.model)
    entry = replay_model(run, cfg, model_class(run.model.model_type), explain)
    entry["experts_implementation"] = cfg._experts_implementation
    return entry


# Released shapes (config.json), layers reduced (every block is the same; fewer replay the same
# per-layer terms faster on 2 CPU cores).
MIXTRAL = Model("mixtral-8x7b-2layers", "mixtral", 2, 4096, 32, 8, 8, 2, 14336, 32000,
                full_layers=32)
QWEN15_MOE = Model("qwen1.5-moe-a2.7b-2layers", "qwen2_moe", 2, 2048, 16, 16, 60, 4, 1408,
                   151936, shared_intermediate=5632, full_layers=24)
QWEN3_MOE = Model("qwen3-30b-a3b-2layers", "qwen3_moe", 2, 2048, 32, 4, 128, 8, 768, 151936,
                  head_dim=128, norm_topk_prob=True, full_layers=48)
# Released models with all their layers (the catalog's mixtral-8x7b, qwen1.5-moe-a2.7b,
# qwen3-30b-a3b).
MIXTRAL_FULL = Model("mixtral-8x7b", "mixtral", 32, 4096, 32, 8, 8, 2, 14336, 32000)
QWEN15_MOE_FULL = Model("qwen1.5-moe-a2.7b", "qwen2_moe", 24, 2048, 16, 16, 60, 4, 1408, 151936,
                        shared_intermediate=5632)
QWEN3_MOE_FULL = Model("qwen3-30b-a3b", "qwen3_moe", 48, 2048, 32, 4, 128, 8, 768, 151936,
                       head_dim=128, norm_topk_prob=True)
# Small vocabularies: the blocks, not the loss, set the peak.
TINY_MIXTRAL = Model("tiny-mixtral-v512", "mixtral", 4, 512, 8, 2, 8, 2, 1024, 512)
TINY_QWEN2_MOE = Model("tiny-qwen2-moe-v512", "qwen2_moe", 4, 384, 6, 6, 16, 4, 256, 512,
                       shared_intermediate=1024)
TINY_QWEN3_MOE = Model("tiny-qwen3-moe-v1024", "qwen3_moe", 4, 256, 4, 2, 32, 8, 128, 1024,
                       head_dim=64, norm_topk_prob=True)


def _runs() -> list[Run]:
    out = []

    def add(*args) -> None:
        out.append(run_of(*args))

    add(TINY_MIXTRAL, 512, 4, 2, F32, F32, "sdpa")
    add(TINY_MIXTRAL, 512, 4, 2, F32, BF16, "sdpa")
    add(TINY_MIXTRAL, 512, 4, 1, BF16, F32, "sdpa")
    add(TINY_MIXTRAL, 512, 4, 1, F32, BF16, "eager", True)
    add(TINY_QWEN2_MOE, 512, 4, 2, F32, BF16, "sdpa")
    add(TINY_QWEN2_MOE, 512, 4, 1, BF16, F32, "eager")
    add(TINY_QWEN2_MOE, 512, 4, 2, F32, F32, "sdpa", True)
    add(TINY_QWEN3_MOE, 1024, 2, 2, BF16, F32, "sdpa")
    add(TINY_QWEN3_MOE, 512, 4, 1, F32, BF16, "eager")
    add(TINY_QWEN3_MOE, 512, 4, 1, BF16, F32, "sdpa", True)
    add(TINY_MIXTRAL, 512, 4, 2, BF16, BF16, "eager")
    add(TINY_MIXTRAL, 1024, 2, 1, F32, F32, "eager")
    add(TINY_MIXTRAL, 512, 4, 2, BF16, F32, "sdpa", True)
    add(TINY_QWEN2_MOE, 512, 4, 1, F32, BF16, "sdpa", True)
    add(TINY_QWEN2_MOE, 512, 4, 2, BF16, F32, "sdpa", True)
    add(TINY_QWEN2_MOE, 1024, 2, 2, F32, F32, "eager")
    add(TINY_QWEN3_MOE, 512, 4, 2, F32, F32, "eager", True)
    add(TINY_QWEN3_MOE, 1024, 2, 1, F32, BF16, "sdpa", True)
    add(TINY_QWEN3_MOE, 512, 4, 2, F32, BF16, "sdpa")
    add(MIXTRAL, 1024, 1, 2, BF16, F32, "sdpa")
    add(MIXTRAL, 512, 2, 1, F32, BF16, "sdpa")
    add(MIXTRAL, 1024, 1, 1, BF16, F32, "sdpa", True)
    add(QWEN15_MOE, 1024, 1, 2, BF16, F32, "sdpa")
    add(QWEN15_MOE, 512, 2, 1, F32, BF16, "eager")
    add(QWEN15_MOE, 512, 2, 1, F32, F32, "sdpa", True)
    add(QWEN3_MOE, 1024, 1, 2, BF16, F32, "sdpa")
    add(QWEN3_MOE, 512, 2, 1, F32, BF16, "sdpa")
    add(QWEN3_MOE, 1024, 2, 1, BF16, F32, "eager", True)
    add(MIXTRAL, 512, 1, 2, F32, BF16, "eager")
    add(QWEN15_MOE, 1024, 1, 2, F32, BF16, "sdpa", True)
    add(MIXTRAL_FULL, 1024, 1, 1, BF16, F32, "sdpa", True)
    add(QWEN15_MOE_FULL, 1024, 2, 1, BF16, F32, "sdpa")
    add(QWEN3_MOE_FULL, 2048, 1, 1, BF16, F32, "sdpa", True)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_moe.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
