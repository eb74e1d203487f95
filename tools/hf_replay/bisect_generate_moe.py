"""Bisect over ``generate`` replays of a mixture of experts: the largest batch, and the longest
prompt, whose replayed peak stays within a budget (``bisect_generate.py``'s bisection on
``replay_generate_moe.py``'s tiny Mixtral: 4 layers, 8 experts, 2 per token). The ground truth for
vramdoc's generate-phase solvers on MoE models (issue 22, item 4; ``tests/it/hf_moe_generate.rs``).

Usage::

    python tools/hf_replay/bisect_generate_moe.py --out tests/data/hf_moe_generate_bisect.json
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bisect_generate  # noqa: E402
from bisect_generate import MIB  # noqa: E402
from replay_generate import Run  # noqa: E402
from replay_generate_moe import TINY_MIXTRAL  # noqa: E402

CASES = [
    # The largest batch: prompts of 256 tokens, 16 new, within 400 MiB.
    ("max_batch", Run("bisect-moe-batch", **TINY_MIXTRAL, prompt_tokens=256, max_new_tokens=16,
                      batch_size=1, cache="dynamic"), 400 * MIB, 256),
    # The longest prompt: 8 sequences, 16 new tokens, within 300 MiB.
    ("max_context", Run("bisect-moe-context", **TINY_MIXTRAL, prompt_tokens=1, max_new_tokens=16,
                        batch_size=8, cache="dynamic"), 300 * MIB, 4096 - 16),
]


def main(argv: list[str] | None = None) -> int:
    return bisect_generate.main(argv, CASES, "tools/hf_replay/bisect_generate_moe.py")


if __name__ == "__main__":
    sys.exit(main())
