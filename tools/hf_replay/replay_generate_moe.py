"""Replay Hugging Face ``generate`` on transformers' mixture-of-experts decoders (Mixtral,
Qwen1.5-MoE, Qwen3-MoE) on fake tensors: ``replay_generate.py``'s replay (its module doc says what
runs and how the values ``generate`` reads are answered) on these configs, the ground truth for
vramdoc's MoE generate estimate (issue 22).

Usage::

    python tools/hf_replay/replay_generate_moe.py --out tests/data/hf_moe_generate_replay.json

The experts run as transformers 5.24 runs them by default (``grouped_mm``: the ``T·k`` token-expert
pairs gathered into one tensor), so the memory does not depend on which experts the router picks
(``replay_moe.py``'s doc); every expert's weights are resident. Layers are reduced where a name
says so (every block is the same).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_generate  # noqa: E402
from replay_generate import Run  # noqa: E402


def _config(**kw) -> tuple:
    return tuple(kw.items())


MIXTRAL_4L = dict(
    n_layer=4, n_head=32, n_embd=4096, vocab_size=32000, n_positions=32768, family="mixtral",
    config=_config(hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
                   num_attention_heads=32, num_key_value_heads=8, num_local_experts=8,
                   num_experts_per_tok=2, vocab_size=32000, max_position_embeddings=32768,
                   tie_word_embeddings=False, sliding_window=None),
)
QWEN15_MOE_4L = dict(
    n_layer=4, n_head=16, n_embd=2048, vocab_size=151936, n_positions=8192, family="qwen2_moe",
    config=_config(hidden_size=2048, intermediate_size=5632, moe_intermediate_size=1408,
                   shared_expert_intermediate_size=5632, num_hidden_layers=4,
                   num_attention_heads=16, num_key_value_heads=16, num_experts=60,
                   num_experts_per_tok=4, vocab_size=151936, max_position_embeddings=8192,
                   tie_word_embeddings=False, use_sliding_window=False),
)
QWEN3_MOE_4L = dict(
    n_layer=4, n_head=32, n_embd=2048, vocab_size=151936, n_positions=40960, family="qwen3_moe",
    config=_config(hidden_size=2048, intermediate_size=6144, moe_intermediate_size=768,
                   num_hidden_layers=4, num_attention_heads=32, num_key_value_heads=4,
                   head_dim=128, num_experts=128, num_experts_per_tok=8, norm_topk_prob=True,
                   vocab_size=151936, max_position_embeddings=40960, tie_word_embeddings=False,
                   use_sliding_window=False),
)
TINY_MIXTRAL = dict(
    n_layer=4, n_head=8, n_embd=512, vocab_size=512, n_positions=4096, family="mixtral",
    config=_config(hidden_size=512, intermediate_size=1024, num_hidden_layers=4,
                   num_attention_heads=8, num_key_value_heads=2, num_local_experts=8,
                   num_experts_per_tok=2, vocab_size=512, max_position_embeddings=4096,
                   tie_word_embeddings=False, sliding_window=None),
)

RUNS = [
    Run("mixtral-8x7b-4l-p512-n128-b1-dynamic", **MIXTRAL_4L, prompt_tokens=512,
        max_new_tokens=128, batch_size=1, cache="dynamic"),
    Run("mixtral-8x7b-4l-p2048-n64-b4-dynamic", **MIXTRAL_4L, prompt_tokens=2048,
        max_new_tokens=64, batch_size=4, cache="dynamic"),
    Run("mixtral-8x7b-4l-p256-n32-b16-dynamic", **MIXTRAL_4L, prompt_tokens=256,
        max_new_tokens=32, batch_size=16, cache="dynamic"),
    Run("qwen1.5-moe-4l-p1024-n64-b2-dynamic", **QWEN15_MOE_4L, prompt_tokens=1024,
        max_new_tokens=64, batch_size=2, cache="dynamic"),
    Run("qwen1.5-moe-4l-p512-n64-b4-static", **QWEN15_MOE_4L, prompt_tokens=512,
        max_new_tokens=64, batch_size=4, cache="static"),
    Run("qwen3-30b-a3b-4l-p2048-n128-b2-dynamic", **QWEN3_MOE_4L, prompt_tokens=2048,
        max_new_tokens=128, batch_size=2, cache="dynamic"),
    Run("qwen3-30b-a3b-4l-p128-n64-b32-dynamic", **QWEN3_MOE_4L, prompt_tokens=128,
        max_new_tokens=64, batch_size=32, cache="dynamic"),
    Run("tiny-mixtral-p1500-n100-b8-dynamic", **TINY_MIXTRAL, prompt_tokens=1500,
        max_new_tokens=100, batch_size=8, cache="dynamic"),
    Run("tiny-mixtral-p300-n40-b4-dynamic-fp32", **TINY_MIXTRAL, prompt_tokens=300,
        max_new_tokens=40, batch_size=4, cache="dynamic", dtype="float32"),
]


def main(argv: list[str] | None = None) -> int:
    return replay_generate.main(argv, RUNS, "tools/hf_replay/replay_generate_moe.py")


if __name__ == "__main__":
    sys.exit(main())
