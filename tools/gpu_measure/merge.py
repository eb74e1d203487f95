"""Merge measure.py runs on the same card into one document (the committed data file).

Usage::

    python3 merge.py FIRST.json SECOND.json ... --out tests/data/gpu_measurements.json

The first run is the base. A case the first run skipped (time budget) or lacks is taken from
the first later run that measured it; a case measured twice keeps the first run's figures, and
the two are compared: a difference is printed (the allocator is deterministic for the same
program, so none is expected). Every run must come from the same card, torch and
transformers. Case names of ``hf_generate`` are recomputed from the recorded prompt, new
tokens, batch and cache (measure.py before the fix named GPT-2's 768-token prompts "p2048").
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

SECTIONS = ("nanogpt_train", "nanogpt_sample", "hf_gpt2_train", "peft_lora", "hf_generate")
SAME = ("torch", "transformers", "peft")


def generate_name(entry: dict) -> str:
    model = entry["name"].split("-p")[0]
    return (f"{model}-p{entry['prompt_tokens']}-n{entry['max_new_tokens']}"
            f"-b{entry['batch_size']}-{entry['cache']}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("runs", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    docs = [json.loads(p.read_text()) for p in args.runs]
    base = docs[0]
    for doc, path in zip(docs[1:], args.runs[1:]):
        for key in SAME:
            if doc[key] != base[key]:
                sys.exit(f"{path}: {key} {doc[key]} differs from {base[key]}")
        if doc["device"].get("name") != base["device"].get("name"):
            sys.exit(f"{path}: another card ({doc['device'].get('name')})")
    for doc in docs:
        for entry in doc.get("hf_generate", []):
            if "prompt_tokens" in entry:
                entry["name"] = generate_name(entry)
    merged = dict(base)
    merged["card"] = base["device"].get("name")
    merged["runs"] = [{"argv": d["argv"], "date": d["date"]} for d in docs]
    for key in SECTIONS:
        order: list[str] = []
        chosen: dict[str, dict] = {}
        for doc in docs:
            for entry in doc.get(key, []):
                name = entry["name"]
                if name not in order:
                    order.append(name)
                if "skipped" in entry:
                    continue
                if name in chosen:
                    old = {k: v for k, v in chosen[name].items() if k.endswith("_bytes")}
                    new = {k: v for k, v in entry.items() if k.endswith("_bytes")}
                    print(f"{key}/{name}: measured twice, "
                          f"{'identical' if old == new else f'differs: {old} vs {new}'}")
                    continue
                chosen[name] = entry
        merged[key] = [chosen.get(n, {"name": n, "skipped": "time budget"}) for n in order]
    merged["errors"] = sum(1 for k in SECTIONS for e in merged[k] if "error" in e)
    merged["skipped"] = sum(1 for k in SECTIONS for e in merged[k] if "skipped" in e)
    args.out.write_text(json.dumps(merged, indent=2, sort_keys=True) + "\n")
    print(f"{args.out}: {merged['errors']} failed, {merged['skipped']} skipped")
    return 0


if __name__ == "__main__":
    sys.exit(main())
