"""Bisect over ``generate`` replays: the largest batch, and the longest prompt, whose replayed peak
stays within a budget. The ground truth for vramdoc's generate-phase solvers (issue 22, item 4).

Usage::

    python tools/hf_replay/bisect_generate.py --out tests/data/hf_generate_bisect.json

Each probe is one full ``replay_generate.replay`` (transformers' own ``generate`` on fake tensors);
the peak is the larger of the prefill's and the decoding's. vramdoc's solvers ask for the verdict
*fits*, whose high end grows with the peak and nothing else, so a card and other programs'
memory chosen for a budget make "fits" the same question as "peak ≤ budget"
(``tests/it/hf_generate_solve.rs``).
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

from catalog_runs import catalog_runs  # noqa: E402
from replay_generate import GPT2, Run, install_cuda_autocast_policy, replay  # noqa: E402

MIB = 1 << 20


def peak(run: Run, probes: list) -> int:
    e = replay(run)
    p = max(e["prefill_peak_bytes"], e["decode_peak_bytes"])
    probes.append({"batch_size": run.batch_size, "prompt_tokens": run.prompt_tokens, "peak": p})
    print(f"  b{run.batch_size} p{run.prompt_tokens}: {p / MIB:.1f} MiB", flush=True)
    return p


def largest(lo: int, hi: int, fits) -> int | None:
    """The largest x in lo..=hi with fits(x), fits holding up to a point and not after."""
    if not fits(lo):
        return None
    if fits(hi):
        return hi
    good, bad = lo, hi
    while bad - good > 1:
        mid = (good + bad) // 2
        if fits(mid):
            good = mid
        else:
            bad = mid
    return good


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    cases = []
    # The largest batch: prompts of 128 tokens, 16 new, within 1 GiB.
    base = Run("bisect-batch", **GPT2, prompt_tokens=128, max_new_tokens=16, batch_size=1,
               cache="dynamic")
    budget = 1024 * MIB
    probes: list = []
    answer = largest(1, 256, lambda b: peak(replace(base, batch_size=b), probes) <= budget)
    cases.append({"solve": "max_batch", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    # The longest prompt: 8 sequences, 16 new tokens, within 600 MiB (up to GPT-2's positions).
    base = Run("bisect-context", **GPT2, prompt_tokens=1, max_new_tokens=16, batch_size=8,
               cache="dynamic")
    budget = 600 * MIB
    probes = []
    answer = largest(1, 1025 - 16, lambda p: peak(replace(base, prompt_tokens=p), probes) <= budget)
    cases.append({"solve": "max_context", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    # A static cache with grouped heads (Llama 3.2 1B's config with 2 of its 16 layers): the
    # largest batch within 1.5 GiB and the longest prompt for 4 sequences within 1.2 GiB.
    llama = next(r for r in catalog_runs(Run) if r.model == "llama-3.2-1b")
    base = replace(llama, name="bisect-batch-static-gqa", prompt_tokens=256, max_new_tokens=16,
                   batch_size=1, cache="static")
    budget = 1536 * MIB
    probes = []
    answer = largest(1, 256, lambda b: peak(replace(base, batch_size=b), probes) <= budget)
    cases.append({"solve": "max_batch", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    base = replace(llama, name="bisect-context-static-gqa", prompt_tokens=1, max_new_tokens=16,
                   batch_size=4, cache="static")
    budget = 1200 * MIB
    probes = []
    answer = largest(1, 8192, lambda p: peak(replace(base, prompt_tokens=p), probes) <= budget)
    cases.append({"solve": "max_context", "run": asdict(base), "budget_peak_bytes": budget,
                  "answer": answer, "probes": probes})
    import torch
    import transformers

    doc = {
        "generator": "tools/hf_replay/bisect_generate.py",
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
