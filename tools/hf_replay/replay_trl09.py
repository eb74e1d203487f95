"""Replay QLoRA training steps as TRL 0.9's SFTTrainer prepares them, on fake tensors, and record
their memory: the ground truth for vramdoc's ``trainer: trl-0.9`` (issue 21).

Usage::

    python tools/hf_replay/replay_trl09.py --out tests/data/hf_trl09_replay.json

TRL 0.9.6's ``SFTTrainer.__init__`` (``trl/trainer/sft_trainer.py`` lines 207-272 of the
0.9.6 wheel) prepares a 4-bit model in three calls, where TRL 0.29.1 (``replay_trl.py``) calls
neither PEFT's preparation nor this cast:

1. PEFT's ``prepare_model_for_kbit_training`` (every parameter frozen, each 16-bit one that is
   not 4-bit cast to float32, gradient checkpointing on), exactly as ``replay_qlora.py``'s
   plain ``Trainer`` runs do;
2. ``get_peft_model`` (float32 adapters);
3. with ``bf16=True``, TRL's ``peft_module_casting_to_bf16`` (``trl/trainer/utils.py`` lines
   765-772), copied below: every module whose name contains ``norm`` goes to float32 (they
   already are), and every module whose name contains ``lm_head``, ``embed_tokens``, ``wte`` or
   ``wpe`` and whose weight is float32 goes back to bfloat16.

So the only difference from ``replay_qlora.py`` is step 3: the head and the embeddings in
bfloat16. TRL 0.9.6 does not override ``compute_loss``: the step is ``Trainer``'s,
``replay_common.trainer_steps`` as ``replay_qlora.py`` runs it. The model code is transformers
5.24's (TRL 0.9.6 itself ran on transformers 4.4x, whose loss and checkpointing differ: the
README of vramdoc and ``tests/data/VALIDATION.md`` say how).
"""

from __future__ import annotations

import dataclasses
import sys
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
import replay_qlora  # noqa: E402
from replay_llama import LLAMA31_8B, LLAMA32_1B, QWEN25_15B, QWEN3_06B  # noqa: E402
from replay_qlora import LLAMA31_8B_FULL, Run  # noqa: E402


def peft_module_casting_to_bf16(model):
    """TRL 0.9.6's ``trl.trainer.utils.peft_module_casting_to_bf16``, verbatim."""
    for name, module in model.named_modules():
        if isinstance(module, torch.nn.LayerNorm) or "norm" in name:
            module = module.to(torch.float32)
        elif any(x in name for x in ["lm_head", "embed_tokens", "wte", "wpe"]):
            if hasattr(module, "weight"):
                if module.weight.dtype == torch.float32:
                    module = module.to(torch.bfloat16)


_make_qlora = replay_qlora.make_qlora


def _to_dtype_in_place(self, dtype):
    """``Module.to(dtype)`` as it runs on CUDA tensors: ``param.data = param.data.to(dtype)`` for
    every floating-point parameter and buffer (``Module._apply`` without swapping). Fake tensors
    would take the swapping path, which the tracker's weak references refuse."""
    for t in list(self.parameters()) + list(self.buffers()):
        if t.is_floating_point():
            t.data = t.data.to(dtype)
    return self


def make_trl09_qlora(model, run: Run):
    """``replay_qlora.make_qlora`` (PEFT's preparation and ``get_peft_model``), then TRL 0.9's
    cast (``SFTConfig(bf16=True)`` on a 4-bit model that is not sharded)."""
    model = _make_qlora(model, run)
    if run.dtype == "bfloat16":
        to = torch.nn.Module.to
        torch.nn.Module.to = _to_dtype_in_place
        try:
            peft_module_casting_to_bf16(model)
        finally:
            torch.nn.Module.to = to
    return model


def replay(run: Run, explain: bool = False) -> dict:
    if not run.name.startswith("trl09-"):
        # The control: the same run as Trainer prepares it (replay_qlora.py unchanged).
        return {**replay_qlora.replay(run, explain), "trainer": "transformers"}
    replay_qlora.make_qlora = make_trl09_qlora
    try:
        return {**replay_qlora.replay(run, explain), "trainer": "trl-0.9"}
    finally:
        replay_qlora.make_qlora = _make_qlora


def _runs() -> list[Run]:
    out = []
    all_linear = ("all-linear",)

    def q(m, s, b, acc, optim, rank, targets, **kw):
        tag = "-".join(f"{k}{v}" for k, v in sorted(kw.items()))
        name = f"trl09-qlora-{m.name}-s{s}-b{b}-acc{acc}-r{rank}-{optim}" + (f"-{tag}" if tag else "")
        out.append(Run(name, m, "qlora", s, b, acc, "bfloat16", "bfloat16", optim, lora_rank=rank,
                       lora_targets=targets, **kw))

    # Philipp Schmid's Llama 3.1 8B QLoRA on an L4 (rank 256, all-linear, 2,048 packed tokens),
    # with all its layers; and, as the control, the same run as Trainer's recipe prepares it.
    q(LLAMA31_8B_FULL, 2048, 1, 2, "adamw", 256, all_linear, lora_dropout=0.05)
    out.append(dataclasses.replace(out[-1], name=out[-1].name.removeprefix("trl09-")))
    q(LLAMA31_8B, 2048, 1, 1, "adamw", 16, ("q_proj", "v_proj"), double_quant=False)
    # Tied embeddings: the one tensor is cast once.
    q(LLAMA32_1B, 2048, 1, 2, "paged_adamw8bit", 64, all_linear, quant_type="fp4")
    q(QWEN25_15B, 1024, 2, 2, "adamw8bit", 16, all_linear, lora_dropout=0.1)
    q(QWEN3_06B, 2048, 2, 1, "adamw", 32, all_linear)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_trl09.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
