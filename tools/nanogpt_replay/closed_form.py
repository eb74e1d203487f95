"""Compare the replay with the closed forms of the project's estimator notes.

``python tools/nanogpt_replay/closed_form.py [tests/data/nanogpt_replay.json]``
prints a Markdown table (used in ``tests/data/README.md``): every scenario's
replayed train and eval peaks next to the notes' formulas, with the
difference in percent. Needs no PyTorch. The formulas, in bytes, with P the
unique parameters, P_lin the weights of all Linear layers (lm_head included),
sbh = block * batch * n_embd, sbV = block * batch * vocab:

* train, autocast: 16P + 2 P_lin + L*36 sbh + 6 sbh + 14 sbV
* train, fp32:     16P + L*64 sbh + 8 sbh + 16 sbV
* accumulation 1: 12P instead of 16P
* manual attention: + L * n_head * s^2 * b * (6, fp32: 8) + 4 s^2
* dropout > 0: + L * 2 sbh (+ L * n_head * s^2 * b for manual attention)
* eval: 4P + 2 P_lin + 12 sbV at the eval batch
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def linear_weights(sc: dict) -> int:
    """P_lin: lm_head (tied to wte) plus four weight matrices per layer."""
    h = sc["n_embd"]
    return sc["vocab_size"] * h + sc["n_layer"] * 12 * h * h


def notes_train_peak(sc: dict, total_params: int) -> int:
    """The notes' training-step peak for one scenario."""
    L, a, h = sc["n_layer"], sc["n_head"], sc["n_embd"]
    s, b, V = sc["block_size"], sc["batch_size"], sc["vocab_size"]
    sbh, sbv = s * b * h, s * b * V
    fp32 = sc["dtype"] == "float32"
    states = (16 if sc["gradient_accumulation_steps"] > 1 else 12) * total_params
    if fp32:
        peak = states + L * 64 * sbh + 8 * sbh + 16 * sbv
    else:
        peak = states + 2 * linear_weights(sc) + L * 36 * sbh + 6 * sbh + 14 * sbv
    if not sc["flash"]:
        peak += L * a * s * s * b * (8 if fp32 else 6) + 4 * s * s
    if sc["dropout"] > 0:
        peak += L * 2 * sbh + (0 if sc["flash"] else L * a * s * s * b)
    return peak


def notes_eval_peak(sc: dict, total_params: int) -> int:
    """The notes' evaluation peak (eval batch size)."""
    sbv = sc["block_size"] * sc["eval_batch_size"] * sc["vocab_size"]
    copies = 0 if sc["dtype"] == "float32" else 2 * linear_weights(sc)
    return 4 * total_params + copies + 12 * sbv


def pct(model: int, truth: int) -> str:
    """Signed difference of ``model`` from ``truth`` in percent."""
    return f"{100.0 * (model - truth) / truth:+.1f} %"


def table(doc: dict) -> str:
    """Markdown table of replay vs. notes for every scenario."""
    mib = 2**20
    rows = [
        "| scenario | train replay (MiB) | train notes (MiB) | diff | "
        "eval replay (MiB) | eval notes (MiB) | diff |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in doc["configs"]:
        sc, p = c["scenario"], c["params"]["total"]
        tr, ev = c["train_peak_bytes"], c["eval_peak_bytes"]
        nt, ne = notes_train_peak(sc, p), notes_eval_peak(sc, p)
        rows.append(
            f"| {c['name']} | {tr / mib:.1f} | {nt / mib:.1f} | {pct(nt, tr)} | "
            f"{ev / mib:.1f} | {ne / mib:.1f} | {pct(ne, ev)} |"
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    """Print the table for the data file named in ``argv`` (or the default)."""
    default = Path(__file__).resolve().parents[2] / "tests/data/nanogpt_replay.json"
    path = Path(argv[0]) if argv else default
    print(table(json.loads(path.read_text())))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
