"""Replay PEFT's LoRA and QLoRA Trainer steps of the Llama family with Liger Kernel's fused
linear cross-entropy patched in, on fake tensors: the ground truth for vramdoc's
``fused_linear_cross_entropy: true`` with ``lora_rank`` / ``load_in_4bit`` (issue 21, item 6).

Usage::

    python tools/hf_replay/replay_fused_ce_peft.py --out tests/data/hf_fused_ce_lora_replay.json
    python tools/hf_replay/replay_fused_ce_peft.py --qlora \\
        --out tests/data/hf_fused_ce_qlora_replay.json
    python tools/hf_replay/replay_fused_ce_peft.py --gemma \\
        --out tests/data/hf_gemma_fused_ce_lora_replay.json

The steps are ``replay_lora.py``'s and ``replay_qlora.py``'s (the same models, adapters, dtype
policies and checkpointing); only ``*ForCausalLM.forward`` is Liger's ``lce_forward``
(``liger_fused_ce.py``, liger-kernel 0.8.5 ported allocation for allocation), as
``Trainer(use_liger_kernel=True)`` leaves a PEFT model: ``_apply_liger_kernel_to_instance`` on
``model.get_base_model()``. The head is frozen (PEFT freezes every base parameter;
``prepare_model_for_kbit_training`` leaves QLoRA's unquantized head in float32), so
``weight.requires_grad`` is false and ``fused_linear_cross_entropy_forward`` allocates no
``grad_weight``: only ``grad_input``, ``loss_1d``, the label mask and a chunk's logits.
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
import replay_gemma_peft  # noqa: E402
import replay_llama  # noqa: E402
import replay_lora  # noqa: E402
import replay_qlora  # noqa: E402
from liger_fused_ce import patched  # noqa: E402
from replay_llama import (  # noqa: E402
    LLAMA31_8B, LLAMA32_1B, QWEN25_05B, QWEN3_06B,
)

LIGER_VERSION = "0.8.5"
F32, BF16, ALL = "float32", "bfloat16", "all-linear"


def replay(run, explain: bool = False) -> dict:
    """The run's step with ``lce_forward`` patched into its model's class."""
    lora = isinstance(run, replay_lora.Run)
    cls = replay_llama.model_class(run.model.model_type)
    with patched(cls):
        e = (replay_lora if lora else replay_qlora).replay(run, explain)
    e["run"]["fused_cross_entropy"] = True
    return e


def _liger(run):
    return dataclasses.replace(run, name=run.name + "-liger")


def _lora_runs() -> list:
    out = []
    for r in replay_lora.RUNS:
        if r.model.model_type != "gpt2":
            out.append(_liger(r))

    def add(m, s, b, acc, weights, dtype, attn, rank, targets, lora_dropout=0.0, ckpt=False):
        # replay_lora.py's naming.
        policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
                  (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
        t = "all" if targets == ALL else targets.replace(",", "+").replace("_proj", "")
        name = (f"{m.name}-r{rank}-{t}-s{s}-b{b}-acc{acc}-{policy}-{attn}"
                + (f"-ldrop{lora_dropout}" if lora_dropout else "") + ("-ckpt" if ckpt else ""))
        out.append(_liger(replay_lora.Run(name, m, s, b, acc, weights, dtype, attn, rank, targets,
                                          lora_dropout, ckpt, 0.0)))

    # The large vocabularies the fused loss is for: Qwen2.5 0.5B with all 24 layers (152k,
    # tied), Llama 3.1 8B (2 of 32 layers, 128k untied), Qwen3 0.6B (8 of 28).
    add(QWEN25_05B, 1024, 4, 1, BF16, BF16, "sdpa", 16, ALL)
    add(QWEN25_05B, 512, 2, 2, F32, BF16, "eager", 8, "q_proj,v_proj")
    add(QWEN25_05B, 1024, 2, 1, F32, F32, "sdpa", 16, ALL, ckpt=True)
    add(LLAMA31_8B, 2048, 1, 1, BF16, BF16, "sdpa", 16, ALL, ckpt=True)
    add(LLAMA31_8B, 1024, 2, 1, F32, BF16, "sdpa", 8, "q_proj,v_proj")
    add(QWEN3_06B, 1024, 2, 1, BF16, F32, "eager", 16, ALL)
    add(LLAMA32_1B, 2048, 1, 2, BF16, BF16, "sdpa", 32, "q_proj,k_proj,v_proj,o_proj", 0.05)
    return out


def _qlora_runs() -> list:
    return [_liger(r) for r in replay_qlora.RUNS
            if r.method == "qlora" and r.model.model_type != "gpt2"]


def _gemma_lora_runs() -> list:
    """``replay_gemma_peft.py``'s LoRA runs with released vocabularies (Gemma 2's and 3's
    ``lce_forward`` pass the softcap to the kernel, which applies it in place)."""
    return [_liger(r) for r in replay_gemma_peft._lora_runs() if r.model.vocab_size > 100_000]


LORA_RUNS = _lora_runs()
QLORA_RUNS = _qlora_runs()
GEMMA_LORA_RUNS = _gemma_lora_runs()


def main(argv: list[str] | None = None) -> int:
    write = replay_common.write_document

    def with_liger(doc: dict, out) -> None:
        write({**doc, "liger_kernel": LIGER_VERSION}, out)

    argv = list(sys.argv[1:] if argv is None else argv)
    runs = LORA_RUNS
    if "--qlora" in argv:
        argv.remove("--qlora")
        runs = QLORA_RUNS
    gemma = "--gemma" in argv
    if gemma:
        argv.remove("--gemma")
        runs = GEMMA_LORA_RUNS
    replay_common.write_document = with_liger
    try:
        if gemma:
            with replay_gemma_peft.gemma_models():
                return replay_common.main(__doc__.splitlines()[0],
                                          "tools/hf_replay/replay_fused_ce_peft.py", runs,
                                          replay, argv)
        return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_fused_ce_peft.py",
                                  runs, replay, argv)
    finally:
        replay_common.write_document = write


if __name__ == "__main__":
    sys.exit(main())
