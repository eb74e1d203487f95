"""Bisect over beam-search ``generate`` replays: the largest batch, and the longest prompt, whose
replayed peak stays within a budget, the ground truth for vramdoc's solvers with ``num_beams``.

Usage::

    python tools/hf_replay/bisect_generate_beams.py --out tests/data/hf_generate_beams_bisect.json

``bisect_generate.py``'s bisection (each probe one full replay, the peak the larger of the
prefill's and the decoding's) over ``replay_generate_beams.py``'s runs.
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import bisect_generate  # noqa: E402
import replay_generate as rg  # noqa: E402
from replay_generate_beams import BeamRun  # noqa: E402

MIB = bisect_generate.MIB

CASES = [
    # The largest batch of 128-token prompts, 4 beams, 16 new tokens, within 1 GiB (GPT-2).
    ("max_batch", BeamRun("bisect-beams-batch", **rg.GPT2, prompt_tokens=128, max_new_tokens=16,
                          batch_size=1, cache="dynamic", num_beams=4), 1024 * MIB, 128),
    # The longest prompt for 2 prompts of 4 beams, 16 new tokens, within 700 MiB (up to GPT-2's
    # positions).
    ("max_context", BeamRun("bisect-beams-context", **rg.GPT2, prompt_tokens=1, max_new_tokens=16,
                            batch_size=2, cache="dynamic", num_beams=4), 700 * MIB, 1025 - 16),
    # The longest prompt for one prompt of 8 beams on Llama 3.2 1B's grouped-query shape (2
    # layers, a 1,024-token vocabulary), 8 new tokens, within 600 MiB.
    ("max_context", BeamRun("bisect-beams-context-gqa", **rg.LLAMA_2L_V1K, prompt_tokens=1,
                            max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=8),
     600 * MIB, 16384),
]

if __name__ == "__main__":
    sys.exit(bisect_generate.main(cases=CASES,
                                  generator="tools/hf_replay/bisect_generate_beams.py"))
