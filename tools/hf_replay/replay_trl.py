"""Replay QLoRA training steps as TRL's SFTTrainer runs them on fake tensors and record their
memory: the ground truth for vramdoc's ``trainer: trl`` (issue 21).

Usage::

    python tools/hf_replay/replay_trl.py --out tests/data/hf_trl_replay.json

What differs from ``replay_qlora.py``'s plain ``Trainer`` runs (trl 0.29.1 pinned in
requirements.txt; ``trl/trainer/sft_trainer.py`` and ``sft_config.py`` / ``base_config.py``):

- ``SFTTrainer.__init__`` does not call PEFT's ``prepare_model_for_kbit_training``: the model
  built with its weights in bfloat16 and its linear layers quantized as ``from_pretrained``
  leaves them (``bnb_emulation.quantize_linears``, ``is_loaded_in_4bit`` set as transformers'
  4-bit quantizer sets it) goes straight to ``get_peft_model``; the head, the embeddings and the
  norms stay bfloat16.
- Then it runs its own block that casts every trainable parameter of a 4-bit or 8-bit model to
  bfloat16 (the QLoRA paper's adapters): this replay runs that block of TRL's source itself,
  taken from ``SFTTrainer.__init__`` with ``ast``.
- ``SFTConfig.gradient_checkpointing`` defaults to True (``base_config.py``) and transformers
  5.24 checkpoints non-reentrantly when no kwargs are given
  (``activation_checkpointing_enable``); with PEFT, SFTTrainer calls
  ``enable_input_require_grads``. ``bf16`` defaults to True: the forward runs under bfloat16
  autocast (accelerate wraps ``forward`` only).
- ``SFTTrainer.compute_loss`` runs, after the forward and outside autocast, TRL's
  ``entropy_from_logits`` on the logits (in 128-row chunks) and the token accuracy, which copies
  the shifted logits (``outputs.logits[..., :-1, :].contiguous()``) and takes their argmax.

The two steps are ``replay_common.trainer_steps``' (``clip_grad_norm_``, the optimizer,
``zero_grad(set_to_none=True)``), with Trainer's ``optim`` built as ``replay_qlora.py`` builds it.
"""

from __future__ import annotations

import ast
import contextlib
import inspect
import sys
import textwrap
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

import replay_common  # noqa: E402
import bnb_emulation  # noqa: E402
from cuda_emulation import cuda_dropout_patch  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402
from replay_llama import LLAMA31_8B, MISTRAL_7B, QWEN25_15B, QWEN3_06B  # noqa: E402
from replay_qlora import DTYPES, LLAMA31_8B_FULL, Run, build  # noqa: E402
from tracker import StorageTracker  # noqa: E402

import peft  # noqa: E402,F401  (module-level tensors made before any fake mode)
import trl  # noqa: E402
from trl import SFTTrainer  # noqa: E402
from trl.trainer.utils import entropy_from_logits  # noqa: E402


def _trl_block(marker: str) -> ast.Module:
    """The top-level statement of ``SFTTrainer.__init__`` whose source contains ``marker``,
    compiled on its own (a changed TRL without it stops the replay)."""
    source = textwrap.dedent(inspect.getsource(SFTTrainer.__init__))
    body = ast.parse(source).body[0].body
    found = [s for s in body if marker in ast.get_source_segment(source, s)]
    if len(found) != 1:
        raise SystemExit(f"trl {trl.__version__}: no single statement with {marker!r} in "
                         "SFTTrainer.__init__; the replay follows trl 0.29.1")
    return ast.Module(body=found, type_ignores=[])


QLORA_CAST = compile(_trl_block('getattr(model, "is_loaded_in_4bit"'), "sft_trainer.py", "exec")
COMPUTE_LOSS = inspect.getsource(SFTTrainer.compute_loss)
for _line in ("entropy_from_logits(outputs.logits)",
              "shift_logits = outputs.logits[..., :-1, :].contiguous()",
              "predictions = shift_logits.argmax(dim=-1)"):
    if _line not in COMPUTE_LOSS:
        raise SystemExit(f"trl {trl.__version__}: SFTTrainer.compute_loss no longer has {_line!r}")
if "prepare_model_for_kbit_training" in inspect.getsource(SFTTrainer):
    raise SystemExit(f"trl {trl.__version__} calls prepare_model_for_kbit_training: not replayed")


def make_trl_qlora(model, run: Run):
    """The 4-bit model, ``get_peft_model`` and SFTTrainer's own cast, as the module docs say."""
    from peft import LoraConfig, get_peft_model
    from peft.tuners.tuners_utils import BaseTunerLayer

    bnb_emulation.quantize_linears(model, run.quant_type, run.double_quant,
                                   DTYPES[run.compute_dtype])
    model.is_loaded_in_4bit = True  # transformers' Bnb4BitHfQuantizer sets it
    # One device: PEFT's moves of the adapters change nothing (replay_qlora.make_qlora).
    BaseTunerLayer._move_adapter_to_device_of_base_layer = lambda self, name, device=None: None
    targets = list(run.lora_targets)
    lora = LoraConfig(r=run.lora_rank, lora_alpha=16, lora_dropout=run.lora_dropout, bias="none",
                      task_type="CAUSAL_LM",
                      target_modules="all-linear" if targets == ["all-linear"] else targets)
    to = torch.nn.Module.to

    def same_device_to(self, *args, **kwargs):
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is None and (device is None or device.type == "cpu"):
            return self
        return to(self, *args, **kwargs)

    torch.nn.Module.to = same_device_to
    try:
        model = get_peft_model(model, lora)
    finally:
        torch.nn.Module.to = to
    exec(QLORA_CAST, {"torch": torch, "getattr": getattr}, {"model": model})
    # SFTConfig's gradient_checkpointing=True: enable_input_require_grads (sft_trainer.py), then
    # Trainer's activation_checkpointing_enable with no kwargs (non-reentrant).
    model.enable_input_require_grads()
    model.gradient_checkpointing_enable()
    return model


def compute_loss_metrics(out, labels: torch.Tensor) -> None:
    """What ``SFTTrainer.compute_loss`` computes beside the loss (no liger kernel, no prompt
    tuning, padded batches with an attention mask), its ``.item()`` calls left out: the
    entropy by TRL's own ``entropy_from_logits``, then the token accuracy's shifted copy of
    the logits and its argmax."""
    attention_mask = torch.ones_like(labels)
    with torch.no_grad():
        per_token_entropy = entropy_from_logits(out.logits)
        entropy = torch.sum(per_token_entropy * attention_mask) / attention_mask.sum()
        del per_token_entropy, entropy
        shift_logits = out.logits[..., :-1, :].contiguous()
        shift_labels = labels[..., 1:].contiguous()
        predictions = shift_logits.argmax(dim=-1)
        mask = shift_labels != -100
        correct_predictions = (predictions == shift_labels) & mask
        total_tokens, correct_tokens = mask.sum(), correct_predictions.sum()
        del shift_logits, shift_labels, predictions, mask, correct_predictions
        del total_tokens, correct_tokens


def replay(run: Run, explain: bool = False) -> dict:
    original_sdpa = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=scratch_bytes))
        stack.enter_context(bnb_emulation.Gemm4bitCuda())
        stack.enter_context(bnb_emulation.dynamic_maps())
        stack.enter_context(bnb_emulation.paged_state_on_host(tracker))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = hf_sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        model = make_trl_qlora(build(run), run)
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        weight_bytes = tracker.total
        param_bytes = unique_bytes(model.parameters())
        make = None
        if run.optim != "adamw":
            make = lambda ps: bnb_emulation.bnb_adamw(model, ps, run.optim)  # noqa: E731
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, DTYPES[run.dtype], explain, make,
                              after_forward=lambda out: compute_loss_metrics(out, X))
    return {
        "run": asdict(run),
        "trainer": "trl",
        "params": params,
        "trainable_params": trainable,
        "param_bytes": param_bytes,
        "model_bytes": weight_bytes,
        **steps,
    }


def _runs() -> list[Run]:
    out = []
    all_linear = ("all-linear",)

    def q(m, s, b, acc, optim, rank, targets, **kw):
        tag = "-".join(f"{k}{v}" for k, v in sorted(kw.items()))
        name = f"trl-qlora-{m.name}-s{s}-b{b}-acc{acc}-r{rank}-{optim}" + (f"-{tag}" if tag else "")
        out.append(Run(name, m, "qlora", s, b, acc, "bfloat16", "bfloat16", optim, lora_rank=rank,
                       lora_targets=targets, grad_checkpoint=True, **kw))

    # Philipp Schmid's Llama 3.1 8B QLoRA (rank 256, all-linear, 2,048 packed tokens), all layers.
    q(LLAMA31_8B_FULL, 2048, 1, 2, "adamw", 256, all_linear, lora_dropout=0.05)
    q(LLAMA31_8B, 1024, 2, 2, "paged_adamw8bit", 16, all_linear)
    q(LLAMA31_8B, 2048, 1, 1, "adamw", 16, ("q_proj", "v_proj"), double_quant=False)
    q(MISTRAL_7B, 1024, 2, 1, "adamw8bit", 64, all_linear, quant_type="fp4")
    q(QWEN25_15B, 1024, 2, 2, "adamw", 16, all_linear, lora_dropout=0.1)
    q(QWEN3_06B, 2048, 2, 1, "paged_adamw8bit", 32, all_linear)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_trl.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
