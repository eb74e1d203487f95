"""Bisect over replays of nanochat's ``build_model`` and ``Engine.generate``: the largest
``num_samples``, and the longest prompt, whose replayed peak stays within a budget. The ground
truth for vramdoc's ``--solve max_batch`` and ``--solve max_context`` on nanochat (issue 22).

Usage::

    python tools/nanochat_replay/bisect_nanochat_generate.py --nanochat DIR \\
        --out tests/data/nanochat_generate_bisect.json

Each probe is one full ``replay_nanochat_generate.replay``; its peak is the largest of the load's,
the prefill's and the decoding's (what ``torch.cuda.max_memory_allocated`` reports for a script
that loads and generates). As for Hugging Face (``tools/hf_replay/bisect_generate.py``), a card
and other programs' memory chosen for a budget make vramdoc's "fits" the same question as
"peak ≤ budget" (``tests/it/nanochat_generate_solve.rs``). The prompt is searched up to the rotary
tables' ``10 × sequence_len`` rows less the new tokens: past them nanochat's forward fails.
"""

from __future__ import annotations

import argparse
import sys
import warnings
from dataclasses import asdict, replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "hf_replay"))

# First: it puts nanoGPT's replay tools (cuda_emulation, tracker) on the path.
from replay_nanochat_generate import NANOCHAT_COMMIT, Run, replay  # noqa: E402, I001

from bisect_generate import largest  # noqa: E402
from cuda_emulation import install_cuda_autocast_policy  # noqa: E402
from replay_common import write_document  # noqa: E402

MIB = 1 << 20


def cases() -> list:
    """(solver, the run it varies, the peak budget, the largest value tried)."""
    return [
        # The most rows of a 256-token prompt, 8 new tokens each, within 400 MiB.
        ("max_batch", Run("bisect-batch", 4, 256, 8, 1), 400 * MIB, 512),
        # The longest prompt for 2 rows, 8 new tokens, within 1 GiB.
        ("max_context", Run("bisect-context", 6, 1, 8, 2), 1024 * MIB, 10 * 2048 - 8),
        # sequence_len 512: the rotary tables (5,120 rows), not the 2 GiB, end the search.
        ("max_context", Run("bisect-context-rotary", 4, 1, 16, 1, max_seq_len=512),
         2048 * MIB, 10 * 512 - 16),
    ]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanochat", type=Path, required=True,
                        help=f"a directory holding nanochat/ at commit {NANOCHAT_COMMIT}")
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    root = args.nanochat.resolve()
    out = []
    for solve, base, budget, hi in cases():
        field = "num_samples" if solve == "max_batch" else "prompt_tokens"
        probes: list = []

        def fits(x: int) -> bool:
            e = replay(replace(base, **{field: x}), root)
            peak = max(e["load_peak_bytes"], e["prefill_peak_bytes"], e["decode_peak_bytes"])
            probes.append({field: x, "peak": peak})
            print(f"  {base.name} {field}={x}: {peak / MIB:.1f} MiB", flush=True)
            return peak <= budget

        answer = largest(1, hi, fits)
        out.append({"solve": solve, "run": asdict(base), "budget_peak_bytes": budget,
                    "answer": answer, "probes": probes})
    import torch

    write_document({
        "generator": "tools/nanochat_replay/bisect_nanochat_generate.py",
        "nanochat_commit": NANOCHAT_COMMIT,
        "torch": torch.__version__.split("+")[0],
        "cases": out,
    }, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
