"""Bisect over ``generate`` replays of a mixture of experts: the largest batch, and the longest
prompt, whose replayed peak stays within a budget (``bisect_generate.py``'s bisection on
``replay_generate_moe.py``'s tiny Mixtral: 4 layers, 8 experts, 2 per token). The ground truth for
vramdoc's generate-phase solvers on MoE models (issue 22, item 4; ``tests/it/hf_moe_generate.rs``).

Usage::

    python tools/hf_replay/bisect_generate_moe.py --out tests/data/hf_moe_generate_bisect.json
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from dataclasses import asdict, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

from bisect_generate import MIB, largest, peak  # noqa: E402
from replay_generate import Run, install_cuda_autocast_policy  # noqa: E402
from replay_generate_moe import TINY_MIXTRAL  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    cases = []
    # The largest batch: prompts of 256 tokens, 16 new, within 400 MiB.
    base = Run("bisect-moe-batch", **TINY_MIXTRAL, prompt_tokens=256, max_new_tokens=16,
               batch_size=1, cache="dynamic")
    budget = 400 * MIB
    probes: list = []
    answer = largest(1, 256, lambda b: peak(replace(base, batch_size=b), probes) <= budget)
    cases.append({"solve": "max_batch", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    # The longest prompt: 8 sequences, 16 new tokens, within 300 MiB.
    base = Run("bisect-moe-context", **TINY_MIXTRAL, prompt_tokens=1, max_new_tokens=16,
               batch_size=8, cache="dynamic")
    budget = 300 * MIB
    probes = []
    answer = largest(1, 4096 - 16, lambda p: peak(replace(base, prompt_tokens=p), probes) <= budget)
    cases.append({"solve": "max_context", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    import torch
    import transformers

    doc = {
        "generator": "tools/hf_replay/bisect_generate_moe.py",
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        "cases": cases,
    }
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
