"""Replay QLoRA and bitsandbytes-optimizer Trainer steps of transformers' GPT-2 and Llama-family
decoders on fake tensors and record their memory: the ground truth for vramdoc's QLoRA and
8-bit optimizers (issue 21).

Usage::

    python tools/hf_replay/replay_qlora.py --out tests/data/hf_qlora_replay.json

What runs (versions pinned in requirements.txt: torch, transformers, peft, bitsandbytes):

- ``qlora`` runs: the model built from its config with its weights in ``weights`` (what
  ``from_pretrained(dtype=…)`` loads), its linear layers quantized as
  ``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, …))`` leaves them
  (``bnb_emulation.quantize_linears``); then PEFT's ``prepare_model_for_kbit_training`` (every
  parameter frozen, the 16-bit ones cast to float32, ``enable_input_require_grads``, gradient
  checkpointing on, non-reentrant in transformers 5.24) and ``get_peft_model`` with a
  ``LoraConfig`` of the run's rank, targets and dropout (alpha 16, no bias).
- ``full`` runs: the model as ``replay_gpt2.py`` / ``replay_llama.py`` build it, every
  parameter trained.

Then two Trainer steps as ``replay_common.trainer_steps`` runs them (forward under bf16
autocast for ``dtype`` bfloat16, the loss over the accumulation steps, ``backward``,
``clip_grad_norm_``, the optimizer, ``zero_grad(set_to_none=True)``), with Trainer's
``optim``: ``adamw`` (``adamw_torch_fused``), ``adamw8bit`` (``adamw_bnb_8bit``) or
``paged_adamw8bit``, built as Trainer builds them (``bnb_emulation.bnb_adamw``). bitsandbytes'
kernels allocate what their CUDA versions allocate (``bnb_emulation.py`` cites each).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import cuda_dropout_patch  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
import replay_common  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402
from replay_llama import (  # noqa: E402
    LLAMA2_7B, LLAMA31_8B, LLAMA32_1B, MISTRAL_7B, PHI3_MINI, QWEN25_05B, QWEN25_15B, QWEN3_06B,
    Model, config, model_class,
)
from tracker import StorageTracker  # noqa: E402
import bnb_emulation  # noqa: E402

# Imported before any fake mode: bitsandbytes and PEFT make module-level tensors on import
# (bitsandbytes' 4-bit lookup tables, `backends/utils.py`; PEFT's LoHa constants), which are
# host memory, not the GPU's.
import bitsandbytes  # noqa: E402,F401
import peft  # noqa: E402,F401
from peft.tuners import loha, lora  # noqa: E402,F401

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
GPT2_124M = Model("gpt2-124m", "gpt2", 12, 768, 12, 12, 3072, 50257, True)
# Llama 3.1 8B with all its 32 layers: the 8B-on-16-GB question of QLoRA users.
LLAMA31_8B_FULL = Model("llama-3.1-8b", "llama", 32, 4096, 32, 8, 14336, 128256, False)
TINY_LLAMA = Model("tiny-llama-v1024", "llama", 4, 512, 8, 2, 1536, 1024, False)


@dataclass(frozen=True)
class Run:
    """One training setup of one model: ``method`` ``qlora`` or ``full``."""

    name: str
    model: Model
    method: str
    block_size: int
    batch_size: int
    accumulation: int
    weights: str
    dtype: str
    optim: str
    attn_implementation: str = "sdpa"
    lora_rank: int = 0
    lora_targets: tuple[str, ...] = ()
    lora_dropout: float = 0.0
    quant_type: str = "nf4"
    double_quant: bool = True
    compute_dtype: str = "bfloat16"
    grad_checkpoint: bool = False


def build(run: Run):
    """The model of ``run`` (GPT-2 without dropout, as the other families)."""
    m = run.model
    if m.model_type == "gpt2":
        from transformers import GPT2Config, GPT2LMHeadModel

        cfg = GPT2Config(n_layer=m.layers, n_head=m.heads, n_embd=m.hidden, vocab_size=m.vocab_size,
                         n_positions=max(1024, run.block_size), resid_pdrop=0.0, embd_pdrop=0.0,
                         attn_pdrop=0.0)
        cls = GPT2LMHeadModel
    else:
        cfg = config(m)
        cls = model_class(m.model_type)
    cfg._attn_implementation = run.attn_implementation
    default = torch.get_default_dtype()
    torch.set_default_dtype(DTYPES[run.weights])
    try:
        return cls(cfg)
    finally:
        torch.set_default_dtype(default)


def make_qlora(model, run: Run):
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training

    from peft.tuners.tuners_utils import BaseTunerLayer

    bnb_emulation.quantize_linears(model, run.quant_type, run.double_quant,
                                   DTYPES[run.compute_dtype])
    model = prepare_model_for_kbit_training(model)
    # PEFT moves each new adapter to its base layer's device, and to its dtype if that is a
    # float: a 4-bit base's is uint8 and the replay has one device, so the move changes
    # nothing; on fake tensors `Module.to` would swap the tensors, which they refuse.
    BaseTunerLayer._move_adapter_to_device_of_base_layer = lambda self, name, device=None: None
    to = torch.nn.Module.to

    def same_device_to(self, *args, **kwargs):
        device, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is None and (device is None or device.type == "cpu"):
            return self  # one device: PEFT's module.to(weight.device) moves nothing
        return to(self, *args, **kwargs)

    targets = list(run.lora_targets)
    lora = LoraConfig(r=run.lora_rank, lora_alpha=16, lora_dropout=run.lora_dropout, bias="none",
                      task_type="CAUSAL_LM",
                      target_modules="all-linear" if targets == ["all-linear"] else targets)
    torch.nn.Module.to = same_device_to
    try:
        return get_peft_model(model, lora)
    finally:
        torch.nn.Module.to = to


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
        model = build(run)
        if run.method == "qlora":
            model = make_qlora(model, run)
        elif run.grad_checkpoint:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        weight_bytes = tracker.total  # every storage alive: weights, quantization state, buffers
        param_bytes = unique_bytes(model.parameters())
        make = None
        if run.optim != "adamw":
            make = lambda ps: bnb_emulation.bnb_adamw(model, ps, run.optim)  # noqa: E731
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, DTYPES[run.dtype], explain, make)
    return {
        "run": asdict(run),
        "params": params,
        "trainable_params": trainable,
        "param_bytes": param_bytes,
        "model_bytes": weight_bytes,
        **steps,
    }


def _runs() -> list[Run]:
    out = []
    all_linear = ("all-linear",)
    qv = ("q_proj", "v_proj")

    def q(m, s, b, acc, optim, rank, targets, **kw):
        tag = "-".join(f"{k}{v}" for k, v in sorted(kw.items()))
        name = f"qlora-{m.name}-s{s}-b{b}-acc{acc}-r{rank}-{optim}" + (f"-{tag}" if tag else "")
        out.append(Run(name, m, "qlora", s, b, acc, "bfloat16", "bfloat16", optim, lora_rank=rank,
                       lora_targets=targets, **kw))

    def full(m, s, b, acc, weights, dtype, optim, ckpt=False):
        name = f"full-{m.name}-s{s}-b{b}-acc{acc}-{weights}w-{dtype}-{optim}" + ("-ckpt" if ckpt else "")
        out.append(Run(name, m, "full", s, b, acc, weights, dtype, optim, grad_checkpoint=ckpt))

    q(LLAMA31_8B, 1024, 2, 2, "paged_adamw8bit", 16, all_linear)
    q(LLAMA31_8B, 2048, 1, 1, "adamw", 16, qv, double_quant=False)
    q(LLAMA31_8B, 2048, 1, 2, "adamw8bit", 64, all_linear, lora_dropout=0.05)
    q(MISTRAL_7B, 1024, 2, 1, "paged_adamw8bit", 64, all_linear, quant_type="fp4")
    q(LLAMA2_7B, 2048, 1, 2, "adamw", 8, ("q_proj", "k_proj", "v_proj", "o_proj"))
    q(QWEN25_15B, 1024, 2, 2, "paged_adamw8bit", 16, all_linear)
    q(QWEN3_06B, 2048, 2, 1, "adamw", 32, all_linear, lora_dropout=0.1)
    q(PHI3_MINI, 1024, 2, 2, "paged_adamw8bit", 16, all_linear)
    q(LLAMA32_1B, 2048, 1, 2, "adamw8bit", 16, all_linear, compute_dtype="float32")
    q(TINY_LLAMA, 1024, 4, 1, "adamw", 8, all_linear)
    q(GPT2_124M, 1024, 2, 2, "adamw", 8, ("c_attn",))
    q(GPT2_124M, 512, 4, 1, "paged_adamw8bit", 16, all_linear)
    q(LLAMA31_8B_FULL, 1024, 2, 4, "paged_adamw8bit", 16, all_linear)
    q(QWEN25_05B, 1024, 4, 2, "adamw", 16, all_linear, double_quant=False)
    # High ranks on short rows: autocast's bfloat16 copies of the float32 adapters outweigh
    # the loss's s·b·V buffers, so the step peaks at the end of the loss's forward.
    q(LLAMA32_1B, 256, 1, 1, "adamw", 512, all_linear)
    q(QWEN3_06B, 256, 2, 2, "adamw8bit", 256, all_linear, lora_dropout=0.05)
    q(LLAMA31_8B, 512, 1, 2, "paged_adamw8bit", 512, all_linear)
    q(QWEN25_15B, 128, 2, 1, "adamw", 256, all_linear, double_quant=False)
    full(GPT2_124M, 1024, 4, 2, "float32", "bfloat16", "adamw8bit")
    full(GPT2_124M, 1024, 2, 1, "float32", "float32", "paged_adamw8bit")
    full(LLAMA32_1B, 1024, 2, 2, "bfloat16", "float32", "adamw8bit")
    full(QWEN3_06B, 1024, 2, 2, "float32", "bfloat16", "paged_adamw8bit")
    full(LLAMA2_7B, 1024, 1, 1, "bfloat16", "float32", "paged_adamw8bit")
    full(TINY_LLAMA, 512, 4, 2, "float32", "float32", "adamw8bit", ckpt=True)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_qlora.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
