"""Replay Hugging Face ``generate`` on Gemma 2 and Gemma 3 text models (transformers' own
``modeling_gemma2`` and ``modeling_gemma3``) on fake tensors: the ground truth for vramdoc's
Gemma generate estimate (issue 22, items 2 and 4).

Usage::

    python tools/hf_replay/replay_generate_gemma.py --out tests/data/hf_generate_gemma_replay.json

``replay_generate.py``'s machinery runs each call (``AutoModelForCausalLM.from_config`` with the
weights in the run's dtype, ``eval()``, greedy ``generate`` with ``disable_compile=True``, the
prefill marked by a logits processor, SDPA routed to the CUDA kernel); what this file adds is
the Gemma runs: the ``DynamicCache`` transformers 5.24 builds for them (sliding layers keep the
last ``sliding_window − 1`` tokens) and the static cache (sliding layers sized to the window),
prompts below and beyond the window and generations that cross it. Gemma 2 runs with eager
attention (transformers has no SDPA for its softcapping), Gemma 3 with SDPA. Gemma 3's static
decoding steps pack their one query per key/value head (``pack_gqa``), as Llama's do in 5.24.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import replay_generate  # noqa: E402
from replay_generate import Run  # noqa: E402


@dataclass(frozen=True)
class GemmaRun(Run):
    """A ``generate`` call with the attention implementation it uses."""

    attn_implementation: str = "sdpa"


# Gemma 3 1B's config.json with 6 of its 26 layers (five local, one global: the pattern once),
# and Gemma 3 270M's whole.
GEMMA3_1B_6L = tuple(dict(hidden_size=1152, intermediate_size=6912, num_hidden_layers=6,
                          num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                          vocab_size=262144, sliding_window=512, query_pre_attn_scalar=256,
                          max_position_embeddings=32768).items())
GEMMA3_270M = tuple(dict(hidden_size=640, intermediate_size=2048, num_hidden_layers=18,
                         num_attention_heads=4, num_key_value_heads=1, head_dim=256,
                         vocab_size=262144, sliding_window=512, query_pre_attn_scalar=256,
                         max_position_embeddings=32768).items())
# Gemma 2 2B's config.json with 4 of its 26 layers (local, global, twice).
GEMMA2_2B_4L = tuple(dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=4,
                          num_attention_heads=8, num_key_value_heads=4, head_dim=256,
                          vocab_size=256000, sliding_window=4096, query_pre_attn_scalar=256,
                          max_position_embeddings=8192).items())
G3 = dict(n_layer=6, n_head=4, n_embd=1152, vocab_size=262144, n_positions=32768,
          family="gemma3_text", config=GEMMA3_1B_6L)
G3_270M = dict(n_layer=18, n_head=4, n_embd=640, vocab_size=262144, n_positions=32768,
               family="gemma3_text", config=GEMMA3_270M)
G2 = dict(n_layer=4, n_head=8, n_embd=2304, vocab_size=256000, n_positions=8192,
          family="gemma2", config=GEMMA2_2B_4L, attn_implementation="eager")

RUNS = [
    GemmaRun("gemma-3-1b-6l-p256-n32-b1-dynamic", **G3, prompt_tokens=256, max_new_tokens=32,
             batch_size=1, cache="dynamic"),
    GemmaRun("gemma-3-1b-6l-p1024-n48-b2-dynamic", **G3, prompt_tokens=1024, max_new_tokens=48,
             batch_size=2, cache="dynamic"),
    GemmaRun("gemma-3-1b-6l-p480-n64-b1-dynamic", **G3, prompt_tokens=480, max_new_tokens=64,
             batch_size=1, cache="dynamic"),
    GemmaRun("gemma-3-1b-6l-p256-n32-b4-static", **G3, prompt_tokens=256, max_new_tokens=32,
             batch_size=4, cache="static"),
    GemmaRun("gemma-3-1b-6l-p1024-n32-b1-static", **G3, prompt_tokens=1024, max_new_tokens=32,
             batch_size=1, cache="static"),
    GemmaRun("gemma-3-1b-6l-p300-n40-b4-dynamic-fp32", **G3, prompt_tokens=300,
             max_new_tokens=40, batch_size=4, cache="dynamic", dtype="float32"),
    GemmaRun("gemma-3-270m-p600-n40-b2-dynamic", **G3_270M, prompt_tokens=600,
             max_new_tokens=40, batch_size=2, cache="dynamic"),
    GemmaRun("gemma-2-2b-4l-p512-n32-b1-dynamic", **G2, prompt_tokens=512, max_new_tokens=32,
             batch_size=1, cache="dynamic"),
    GemmaRun("gemma-2-2b-4l-p4200-n16-b1-dynamic", **G2, prompt_tokens=4200, max_new_tokens=16,
             batch_size=1, cache="dynamic"),
    GemmaRun("gemma-2-2b-4l-p512-n32-b2-static", **G2, prompt_tokens=512, max_new_tokens=32,
             batch_size=2, cache="static"),
    GemmaRun("gemma-2-2b-4l-p4090-n24-b1-static", **G2, prompt_tokens=4090, max_new_tokens=24,
             batch_size=1, cache="static"),
    GemmaRun("gemma-2-2b-4l-p700-n20-b2-static-fp32", **G2, prompt_tokens=700, max_new_tokens=20,
             batch_size=2, cache="static", dtype="float32"),
    GemmaRun("gemma-2-2b-4l-p4000-n200-b1-dynamic", **G2, prompt_tokens=4000, max_new_tokens=200,
             batch_size=1, cache="dynamic"),
]


def main(argv: list[str] | None = None) -> int:
    return replay_generate.main(argv, runs=RUNS,
                                generator="tools/hf_replay/replay_generate_gemma.py")


if __name__ == "__main__":
    sys.exit(main())
