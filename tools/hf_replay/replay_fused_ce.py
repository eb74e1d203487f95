"""Replay the Llama family's Trainer step with Liger Kernel's fused linear cross-entropy
(``apply_liger_kernel_to_llama(fused_linear_cross_entropy=True)``, its other kernels off) on
fake tensors: the ground truth for vramdoc's ``fused_cross_entropy: true`` (issue 21).

Usage::

    python tools/hf_replay/replay_fused_ce.py --out tests/data/hf_fused_ce_replay.json
    python tools/hf_replay/replay_fused_ce.py --moe --out tests/data/hf_moe_fused_ce_replay.json
    python tools/hf_replay/replay_fused_ce.py --gemma --out tests/data/hf_gemma_fused_ce_replay.json

The step is ``replay_llama.py``'s (same models, dtype policies, SDPA routing and
checkpointing; ``--moe``: ``replay_moe.py``'s Mixtral and Qwen3-MoE, the mixtures Liger
patches; ``--gemma``: ``replay_gemma.py``'s Gemma 2 and Gemma 3 runs with their released
vocabularies, whose ``lce_forward`` / ``causal_forward`` pass ``final_logit_softcapping`` to
the kernel, which applies it in place); only ``*ForCausalLM.forward`` is Liger's ``lce_forward``, whose fused head and
loss run as ``liger_fused_ce.py`` ports them (liger-kernel 0.8.5, Triton kernels replaced by
what they allocate: nothing).
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
import replay_llama  # noqa: E402
import replay_gemma  # noqa: E402
import replay_moe  # noqa: E402
from liger_fused_ce import patched  # noqa: E402
from replay_llama import (  # noqa: E402
    BF16, F32, LLAMA2_7B, LLAMA31_8B, LLAMA32_1B, MISTRAL_7B_4, PHI3_MINI, QWEN25_05B,
    QWEN3_06B, SMALL_GQA_TIED, TINY_QWEN3, run_of,
)

LIGER_VERSION = "0.8.5"


def replay(run, explain: bool = False) -> dict:
    if isinstance(run.model, replay_gemma.Model):
        family = replay_gemma
    elif isinstance(run.model, replay_moe.Model):
        family = replay_moe
    else:
        family = replay_llama
    cls = family.model_class(run.model.model_type)
    with patched(cls):
        e = replay_llama.replay_model(run, family.config(run.model), cls, explain)
    e["run"]["fused_cross_entropy"] = True
    return e


def _runs():
    out = []

    def add(*args, **kwargs) -> None:
        r = run_of(*args, **kwargs)
        out.append(type(r)(**{**r.__dict__, "name": r.name + "-liger"}))

    # Tied 152k vocabulary (Qwen2.5 0.5B, all 24 layers): the loss dominated without Liger.
    add(QWEN25_05B, 512, 2, 2, F32, BF16, "sdpa")
    add(QWEN25_05B, 512, 2, 1, BF16, F32, "sdpa")
    add(QWEN25_05B, 256, 4, 1, F32, F32, "eager", True)
    add(QWEN25_05B, 1024, 4, 1, BF16, F32, "sdpa", True)
    add(QWEN25_05B, 1024, 2, 2, BF16, F32, "eager")
    # Untied 128k and 32k heads.
    add(LLAMA31_8B, 1024, 1, 2, BF16, F32, "sdpa")
    add(LLAMA31_8B, 512, 1, 2, F32, BF16, "eager", True)
    add(LLAMA2_7B, 512, 2, 2, F32, F32, "eager")
    add(LLAMA2_7B, 1024, 1, 1, F32, BF16, "sdpa")
    add(PHI3_MINI, 1024, 1, 1, BF16, F32, "eager")
    add(MISTRAL_7B_4, 1024, 2, 1, BF16, F32, "sdpa", True)
    # Tied 128k, and Qwen3's QK-norm.
    add(LLAMA32_1B, 1024, 2, 2, F32, BF16, "sdpa")
    add(LLAMA32_1B, 512, 2, 1, F32, F32, "sdpa")
    add(QWEN3_06B, 1024, 1, 2, BF16, F32, "eager", True)
    add(QWEN3_06B, 1024, 2, 1, F32, BF16, "sdpa")
    # Small vocabularies: the blocks set the peak.
    add(TINY_QWEN3, 2048, 2, 2, BF16, F32, "sdpa")
    add(SMALL_GQA_TIED, 512, 4, 2, F32, BF16, "eager", True)
    add(SMALL_GQA_TIED, 512, 4, 1, BF16, F32, "eager")
    return out


def _moe_runs():
    out = []

    def add(*args, **kwargs) -> None:
        r = run_of(*args, **kwargs)
        out.append(type(r)(**{**r.__dict__, "name": r.name + "-liger"}))

    add(replay_moe.QWEN3_MOE, 1024, 1, 2, BF16, F32, "sdpa")
    add(replay_moe.QWEN3_MOE, 512, 2, 1, F32, BF16, "sdpa")
    add(replay_moe.MIXTRAL, 1024, 1, 1, BF16, F32, "sdpa", True)
    add(replay_moe.MIXTRAL, 512, 1, 2, F32, BF16, "eager")
    add(replay_moe.TINY_MIXTRAL, 512, 4, 2, F32, F32, "sdpa")
    add(replay_moe.TINY_QWEN3_MOE, 512, 4, 1, BF16, F32, "sdpa", True)
    return out


def _gemma_runs():
    """``replay_gemma.py``'s runs of released vocabularies (256k, 262k), renamed."""
    return [type(r)(**{**r.__dict__, "name": r.name + "-liger"}) for r in replay_gemma.RUNS
            if r.model.vocab_size > 100_000]


RUNS = _runs()
MOE_RUNS = _moe_runs()
GEMMA_RUNS = _gemma_runs()


def main(argv: list[str] | None = None) -> int:
    write = replay_common.write_document

    def with_liger(doc: dict, out) -> None:
        write({**doc, "liger_kernel": LIGER_VERSION}, out)

    argv = list(sys.argv[1:] if argv is None else argv)
    runs = RUNS
    if "--moe" in argv:
        argv.remove("--moe")
        runs = MOE_RUNS
    if "--gemma" in argv:
        argv.remove("--gemma")
        runs = GEMMA_RUNS
    replay_common.write_document = with_liger
    try:
        return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_fused_ce.py",
                                  runs, replay, argv)
    finally:
        replay_common.write_document = write


if __name__ == "__main__":
    sys.exit(main())
