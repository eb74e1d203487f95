"""Measure GPU memory on a real CUDA device: ground truth for vramdoc's replays and estimates.

Usage (README.md)::

    python3 measure.py --out gpu_measurements.json            # on a CUDA machine
    python3 measure.py --dry-run --out /tmp/dry.json          # tiny shapes, CPU, code paths only

Records, into one JSON document with sorted keys: the card (``total_memory``,
``mem_get_info``, nvidia-smi), nanoGPT training steps and sample.py runs named
as in ``tests/data/nanogpt_replay.json`` and ``nanogpt_sample_replay.json``,
Hugging Face GPT-2 training steps named as in ``hf_gpt2_replay.json``,
Hugging Face ``generate`` with dynamic and static caches, and LoRA with PEFT.
The file is rewritten after every case, so a run cut short keeps what it did.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import time
import warnings
from datetime import datetime, timezone
from pathlib import Path

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent / "nanogpt_replay"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import torch  # noqa: E402

import hf_cases  # noqa: E402
import memory  # noqa: E402
import nanogpt_cases  # noqa: E402
from memory import Memory, run_case  # noqa: E402

# The replayed configs measured by default (every one with --all): dtypes fp32/bf16/fp16,
# flash and manual attention, dropout 0/0.1/0.2, accumulation 1-4, 124M-class and small,
# GPT-2 fine-tunes with frozen embeddings and LoRA.
TRAIN = [
    "char-6x384-s256-v65-b16-bf16-flash-acc1",
    "char-6x384-s256-v65-b16-bf16-flash-acc1-drop",
    "char-6x384-s256-v65-b8-fp16-manual-acc2-bias",
    "char-6x384-s256-v65-b64-bf16-flash-acc1-drop",
    "tiny-4x128-s256-v65-b12-fp32-manual-acc1-bias",
    "6x384-s512-v50304-b8-bf16-flash-acc2",
    "6x384-s512-v50304-b8-fp32-flash-acc2",
    "6x384-s512-v50304-b8-bf16-manual-acc2",
    "6x384-s512-v50304-b4-fp16-flash-acc4",
    "6x384-s512-v50304-b8-bf16-flash-acc1-eval16",
    "6x384-s1024-v50304-b2-fp16-manual-acc2",
    "gpt2-12x768-s1024-b12-bf16-flash-acc2-bias",
    "gpt2-12x768-s1024-b8-fp32-flash-acc1-bias",
    "gpt2-12x768-s1024-b4-bf16-manual-acc2-bias",
    "gpt2-12x768-s1024-b16-bf16-flash-acc1",
    "ft-gpt2-s1024-b4-bf16-flash-acc2",
    "ft-gpt2-s512-b4-fp16-manual-acc1-frozen-emb-drop",
    "ft-gpt2-xl-s1024-b1-bf16-flash-acc2-lora8-attn",
]
SAMPLE = [
    "resume-char-6x384-s256-bf16-prompt1-new8",
    "resume-char-6x384-s256-fp32-full",
    "resume-char-6x384-s256-bf16-long-prompt-crop",
    "resume-124m-s1024-bf16-full",
    "resume-124m-s1024-fp16-full-manual-bias",
    "gpt2-bf16-full",
    "gpt2-fp32-full-manual",
    "gpt2-xl-bf16-full",
]
HF_TRAIN = [
    "gpt2-124m-s1024-b4-bf16-sdpa",
    "gpt2-124m-s1024-b4-bf16-eager",
    "gpt2-124m-s1024-b4-fp32-sdpa",
    "gpt2-124m-s512-b8-fp16-eager",
    "gpt2-medium-s1024-b2-bf16-sdpa",
    "tiny-4x128-s256-b8-bf16-eager",
]
QUICK = {
    "train": TRAIN[:1] + ["gpt2-12x768-s1024-b12-bf16-flash-acc2-bias"],
    "sample": ["resume-124m-s1024-bf16-full"],
    "hf_train": HF_TRAIN[:1],
}


def sh(cmd: list[str]) -> str | None:
    try:
        return subprocess.run(cmd, capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError) as exc:
        return f"unavailable: {exc}"


def card(dev: torch.device) -> dict:
    """What the device is, and how much memory it has, before anything runs."""
    info: dict = {"type": dev.type}
    if dev.type != "cuda":
        return info
    props = torch.cuda.get_device_properties(0)
    free, total = torch.cuda.mem_get_info()
    info.update(
        name=props.name,
        total_memory_bytes=props.total_memory,
        total_memory_gib=round(props.total_memory / 2**30, 2),
        mem_get_info_start={"free_bytes": free, "total_bytes": total},
        capability=f"{props.major}.{props.minor}",
        multi_processor_count=props.multi_processor_count,
        cuda_runtime=torch.version.cuda,
        nvidia_smi=sh(["nvidia-smi", "--query-gpu=name,memory.total,memory.used",
                       "--format=csv"]),
        driver=sh(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"]),
    )
    return info


def allocator_probes(dev: torch.device, mem: Memory) -> dict:
    """Workspaces the replays leave out, and which SDPA kernels this torch picks here."""
    out: dict = {}
    for name, make in (
        ("cublas_matmul_workspace_bytes", lambda a, w, b: a @ w),
        ("cublaslt_linear_bias_workspace_bytes", lambda a, w, b: torch.nn.functional.linear(a, w, b)),
    ):
        mem.settle()
        a = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
        w = torch.randn(256, 256, device=dev, dtype=torch.bfloat16)
        b = torch.randn(256, device=dev, dtype=torch.bfloat16)
        before = mem.allocated()
        c = make(a, w, b)
        after = mem.allocated()
        out[name] = None if before is None else after - before - c.untyped_storage().nbytes()
        del a, w, b, c
    from torch.profiler import ProfilerActivity, profile

    for dtype in ("bfloat16", "float32"):
        mem.settle()
        q = torch.randn(2, 12, 1024, 64, device=dev, dtype=getattr(torch, dtype),
                        requires_grad=True)
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            y = torch.nn.functional.scaled_dot_product_attention(q, q, q, is_causal=True)
            y.sum().backward()
        ops = sorted({e.name for e in prof.events() if "attention" in e.name})
        out[f"sdpa_ops_{dtype}"] = ops
        del q, y
    mem.settle()
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, required=True, help="write the JSON document here")
    parser.add_argument("--data", type=Path, default=None,
                        help="folder holding the replay JSON files (default: tests/data, "
                             "else ./data beside this script)")
    parser.add_argument("--only", action="append", default=[],
                        help="run only cases whose name contains this (repeatable)")
    parser.add_argument("--quick", action="store_true", help="a few cases of each kind")
    parser.add_argument("--all", action="store_true", help="every replayed config and sampling")
    parser.add_argument("--budget-s", type=float, default=330.0,
                        help="skip the cases that would start after this many seconds")
    parser.add_argument("--dry-run", action="store_true",
                        help="tiny shapes on the CPU: checks the code paths, measures nothing")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    data = args.data
    if data is None:
        data = HERE.parent.parent / "tests" / "data"
        if not (data / "nanogpt_replay.json").exists():
            data = HERE / "data"
    dev = torch.device("cpu" if args.dry_run or not torch.cuda.is_available() else "cuda")
    if dev.type == "cpu" and not args.dry_run:
        parser.error("no CUDA device: use --dry-run to check the code paths on the CPU")
    mem = Memory(dev)
    memory.DEADLINE[0] = time.monotonic() + args.budget_s
    torch.manual_seed(0)

    def log(msg: str) -> None:
        print(msg, flush=True)

    import transformers

    try:
        import peft

        peft_version = peft.__version__
    except ImportError:
        peft_version = None
    doc: dict = {
        "generator": "tools/gpu_measure/measure.py",
        "argv": sys.argv[1:] if argv is None else argv,
        "date": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "peft": peft_version,
        "python": sys.version.split()[0],
        "dry_run": args.dry_run,
        "device": card(dev),
    }

    def save() -> None:
        args.out.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")

    save()
    log(json.dumps(doc["device"], sort_keys=True))
    wanted = lambda name: not args.only or any(o in name for o in args.only)  # noqa: E731
    doc["allocator"] = allocator_probes(dev, mem)
    log(f"allocator: {doc['allocator']}")
    save()

    def pick(entries: list[dict], key: str, default: list[str], group: str) -> list[dict]:
        names = None if args.all else set(QUICK[group] if args.quick else default)
        return [e for e in entries
                if (names is None or e[key] in names) and wanted(e[key])]

    replay = json.loads((data / "nanogpt_replay.json").read_text())
    doc["nanogpt_train"] = []
    for entry in pick(replay["configs"], "name", TRAIN, "train"):
        s = nanogpt_cases.shrink(entry["scenario"]) if args.dry_run else entry["scenario"]
        rec = run_case(mem, entry["name"], lambda: nanogpt_cases.train_case(s, dev, mem), log)
        rec["scenario"] = s
        doc["nanogpt_train"].append(rec)
        save()

    sampled = json.loads((data / "nanogpt_sample_replay.json").read_text())
    doc["nanogpt_sample"] = []
    for entry in pick(sampled["samplings"], "name", SAMPLE, "sample"):
        s = nanogpt_cases.shrink(entry["scenario"]) if args.dry_run else entry["scenario"]
        rec = run_case(mem, entry["name"], lambda: nanogpt_cases.sample_case(s, dev, mem), log)
        rec["scenario"] = s
        doc["nanogpt_sample"].append(rec)
        save()

    hf = json.loads((data / "hf_gpt2_replay.json").read_text())
    doc["hf_gpt2_train"] = []
    runs = [r["run"] for r in hf["runs"]]
    for r in pick(runs, "name", HF_TRAIN, "hf_train"):
        r = hf_cases.shrink_gpt2_run(r) if args.dry_run else r
        rec = run_case(mem, r["name"], lambda: hf_cases.gpt2_train_case(r, dev, mem), log)
        rec["run"] = r
        doc["hf_gpt2_train"].append(rec)
        save()

    doc["peft_lora"] = []
    lora_runs = hf_cases.LORA_RUNS[:1] if args.quick else hf_cases.LORA_RUNS
    for name, rank, targets in lora_runs:
        if wanted(name):
            doc["peft_lora"].append(run_case(
                mem, name, lambda: hf_cases.lora_case(rank, targets, dev, mem, args.dry_run), log))
            save()

    doc["hf_generate"] = []

    def log_and_save(msg: str) -> None:
        log(msg)
        save()

    doc["hf_generate"] = hf_cases.generate_cases(
        dev, mem, args.dry_run, args.quick, args.only, log_and_save)
    sections = ("nanogpt_train", "nanogpt_sample", "hf_gpt2_train", "peft_lora", "hf_generate")
    doc["errors"] = sum(1 for key in sections for e in doc[key] if "error" in e)
    doc["skipped"] = sum(1 for key in sections for e in doc[key] if "skipped" in e)
    save()
    log(f"done: {args.out} ({doc['errors']} failed, {doc['skipped']} skipped)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
