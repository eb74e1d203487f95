"""Replay PEFT's LoRA, QLoRA and bitsandbytes' 8-bit AdamW on transformers' Gemma 2 and Gemma 3
text decoders on fake tensors and record their memory: the ground truth for vramdoc's Gemma
fine-tunes (issue 21, items 4-6).

Usage::

    python tools/hf_replay/replay_gemma_peft.py --lora-out tests/data/hf_gemma_lora_replay.json \
        --qlora-out tests/data/hf_gemma_qlora_replay.json

Nothing Gemma-specific is replayed here: the LoRA runs are ``replay_lora.replay`` (PEFT's
``get_peft_model`` over the base model, fused AdamW over the adapters) and the QLoRA and 8-bit
runs ``replay_qlora.replay`` (``bnb_emulation``'s 4-bit layers, PEFT's
``prepare_model_for_kbit_training``, Trainer's bitsandbytes optimizers), on the Gemma configs of
``replay_gemma.py``. Those scripts build their models through ``replay_llama.config`` and
``model_class``; :func:`gemma_models` routes a Gemma ``Model`` to ``replay_gemma``'s instead.
Each document has the format of ``hf_lora_replay.json`` and ``hf_qlora_replay.json``.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
import replay_gemma  # noqa: E402
import replay_llama  # noqa: E402
import replay_lora  # noqa: E402
import replay_qlora  # noqa: E402
from replay_gemma import (  # noqa: E402
    GEMMA2_27B, GEMMA2_2B, GEMMA2_2B_FULL, GEMMA2_9B, GEMMA3_1B, GEMMA3_1B_FULL, GEMMA3_270M,
    TINY_GEMMA2, TINY_GEMMA3, Model,
)

GEMMA2_9B_FULL = Model("gemma-2-9b", "gemma2", 42, 3584, 16, 8, 256, 14336, 256000, 4096, 256)


@contextlib.contextmanager
def gemma_models():
    """``replay_lora`` and ``replay_qlora`` build a non-GPT-2 model with ``replay_llama``'s
    ``config(m)`` and ``model_class(model_type)``: a Gemma ``Model`` goes to
    ``replay_gemma``'s."""
    saved = (replay_llama.config, replay_llama.model_class, replay_qlora.config,
             replay_qlora.model_class)

    def config(m):
        return replay_gemma.config(m) if isinstance(m, Model) else saved[0](m)

    def model_class(model_type: str):
        if model_type.startswith("gemma"):
            return replay_gemma.model_class(model_type)
        return saved[1](model_type)

    replay_llama.config = replay_qlora.config = config
    replay_llama.model_class = replay_qlora.model_class = model_class
    try:
        yield
    finally:
        (replay_llama.config, replay_llama.model_class, replay_qlora.config,
         replay_qlora.model_class) = saved


F32, BF16 = "float32", "bfloat16"
ALL = "all-linear"
QV = "q_proj,v_proj"
ATTN = "q_proj,k_proj,v_proj,o_proj"
MLP = "gate_proj,up_proj,down_proj"


def _lora_runs() -> list:
    out = []

    def add(m, s, b, acc, weights, dtype, attn, rank, targets, lora_dropout=0.0, ckpt=False):
        policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
                  (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
        t = "all" if targets == ALL else targets.replace(",", "+").replace("_proj", "")
        name = (f"{m.name}-r{rank}-{t}-s{s}-b{b}-acc{acc}-{policy}-{attn}"
                + (f"-ldrop{lora_dropout}" if lora_dropout else "") + ("-ckpt" if ckpt else ""))
        out.append(replay_lora.Run(name, m, s, b, acc, weights, dtype, attn, rank, targets,
                                   lora_dropout, ckpt, 0.0))

    # Gemma 2: eager attention (transformers has no SDPA for its softcapping); the 4096-token
    # window crossed at 4608 tokens.
    add(GEMMA2_2B, 1024, 2, 2, BF16, BF16, "eager", 16, QV)
    add(GEMMA2_9B, 1024, 1, 2, BF16, BF16, "eager", 16, ALL, 0.05)
    add(GEMMA2_2B, 1024, 1, 1, F32, BF16, "eager", 8, ALL, ckpt=True)
    add(GEMMA2_27B, 512, 1, 1, BF16, F32, "eager", 32, ATTN, 0.1)
    add(GEMMA2_2B, 4608, 1, 1, BF16, BF16, "eager", 16, MLP)
    add(GEMMA2_2B_FULL, 1024, 1, 2, BF16, BF16, "eager", 16, QV, ckpt=True)
    # Gemma 3: SDPA and eager, below and beyond the 512-token window.
    add(GEMMA3_1B, 1024, 2, 1, BF16, BF16, "sdpa", 16, ALL)
    add(GEMMA3_1B, 256, 4, 2, F32, F32, "sdpa", 8, QV)
    add(GEMMA3_1B, 1024, 1, 2, BF16, BF16, "sdpa", 16, ALL, 0.05, ckpt=True)
    add(GEMMA3_1B, 768, 2, 1, F32, BF16, "eager", 8, ATTN)
    add(GEMMA3_270M, 512, 4, 1, BF16, F32, "sdpa", 16, ALL, 0.1)
    add(GEMMA3_1B_FULL, 2048, 1, 1, BF16, BF16, "sdpa", 16, ALL, ckpt=True)
    # 1024-token vocabularies: a block's backward, not the loss, can set the peak (refused).
    add(TINY_GEMMA2, 512, 4, 1, BF16, BF16, "eager", 8, ALL)
    add(TINY_GEMMA3, 512, 4, 1, F32, BF16, "sdpa", 8, ALL, ckpt=True)
    return out


def _qlora_runs() -> list:
    out = []
    all_linear = ("all-linear",)
    qv = ("q_proj", "v_proj")
    Run = replay_qlora.Run

    def q(m, s, b, acc, optim, rank, targets, attn="sdpa", **kw):
        tag = "-".join(f"{k}{v}" for k, v in sorted(kw.items()))
        name = (f"qlora-{m.name}-s{s}-b{b}-acc{acc}-r{rank}-{optim}-{attn}"
                + (f"-{tag}" if tag else ""))
        out.append(Run(name, m, "qlora", s, b, acc, BF16, BF16, optim, attn, lora_rank=rank,
                       lora_targets=targets, **kw))

    def full(m, s, b, acc, weights, dtype, optim, attn, ckpt=False):
        name = (f"full-{m.name}-s{s}-b{b}-acc{acc}-{weights}w-{dtype}-{optim}-{attn}"
                + ("-ckpt" if ckpt else ""))
        out.append(Run(name, m, "full", s, b, acc, weights, dtype, optim, attn,
                       grad_checkpoint=ckpt))

    # QLoRA (bitsandbytes' 4-bit matmul dequantizes above 1536 rows: s·b ≥ 2048 throughout).
    q(GEMMA2_9B, 1024, 2, 2, "paged_adamw8bit", 16, all_linear, "eager")
    q(GEMMA2_9B, 2048, 1, 1, "adamw", 16, qv, "eager", double_quant=False)
    q(GEMMA2_2B_FULL, 2048, 1, 2, "adamw8bit", 16, all_linear, "eager", lora_dropout=0.05)
    q(GEMMA2_27B, 2048, 1, 1, "adamw", 16, all_linear, "eager", quant_type="fp4")
    q(GEMMA2_9B_FULL, 2048, 1, 4, "paged_adamw8bit", 16, all_linear, "eager")
    q(GEMMA3_1B, 1024, 2, 1, "adamw", 16, all_linear, "sdpa")
    q(GEMMA3_1B, 2048, 2, 2, "paged_adamw8bit", 64, qv, "eager", lora_dropout=0.1)
    q(GEMMA3_270M, 2048, 1, 1, "adamw8bit", 8, all_linear, "sdpa", compute_dtype="float32")
    # A 1024-token vocabulary: a recomputed block's backward sets the peak (refused).
    q(TINY_GEMMA3, 1024, 2, 1, "adamw", 8, all_linear, "sdpa")
    # Full fine-tunes with bitsandbytes' 8-bit AdamW.
    full(GEMMA3_1B, 1024, 2, 2, F32, BF16, "adamw8bit", "sdpa")
    full(GEMMA2_2B, 1024, 1, 1, BF16, F32, "paged_adamw8bit", "eager")
    full(GEMMA3_270M, 512, 4, 1, F32, F32, "paged_adamw8bit", "eager")
    full(GEMMA2_2B, 1024, 1, 2, F32, BF16, "adamw8bit", "eager", ckpt=True)
    return out


LORA_RUNS = _lora_runs()
QLORA_RUNS = _qlora_runs()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lora-out", type=Path)
    parser.add_argument("--qlora-out", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--explain", action="store_true", help="list the live storages at the peak")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    rest = [a for o in args.only for a in ("--only", o)] + (["--explain"] if args.explain else [])
    with gemma_models():
        for runs, replay, out, generator in [
            (LORA_RUNS, replay_lora.replay, args.lora_out, "lora"),
            (QLORA_RUNS, replay_qlora.replay, args.qlora_out, "qlora"),
        ]:
            if args.only and not any(r.name in args.only for r in runs):
                continue
            replay_common.main(__doc__.splitlines()[0],
                               f"tools/hf_replay/replay_gemma_peft.py ({generator})", runs,
                               replay, rest + (["--out", str(out)] if out else []))
    return 0


if __name__ == "__main__":
    sys.exit(main())
