"""Replay PEFT's LoRA and QLoRA and bitsandbytes' 8-bit AdamW on transformers' mixture-of-experts
decoders (Mixtral, Qwen1.5-MoE, Qwen3-MoE) on fake tensors and record their memory: the ground
truth for vramdoc's MoE fine-tunes (issue 21, items 4 to 6).

Usage::

    python tools/hf_replay/replay_moe_peft.py --out tests/data/hf_moe_peft_replay.json

The models are ``replay_moe.py``'s (transformers' own ``modeling_*.py``, released shapes with
fewer layers, or tiny ones); the steps are ``replay_common.trainer_steps``. Three methods:

- ``lora``: the model loaded in ``weights``, ``get_peft_model(model, LoraConfig(r,
  lora_alpha=2r, target_modules))`` as ``replay_lora.py`` runs it, adapters in float32, fused
  AdamW. What PEFT 0.21.2 does with an MoE under transformers 5.24 (found by this replay and
  ``peft/utils/transformers_weight_conversion.py``): for ``mixtral`` and ``qwen3_moe`` (whose
  checkpoints transformers converts) the names of transformers 4 (``w1``/``w3``/``w2`` and
  ``gate`` for Mixtral; ``gate_proj``/``up_proj``/``down_proj`` and ``gate`` for Qwen3-MoE, and
  ``all-linear``) become ``target_parameters``: the experts' 3-D ``gate_up_proj`` (rank ``2r``,
  alpha ``2·alpha``) and ``down_proj`` and the router's ``gate.weight``, each wrapped by
  ``lora.ParamWrapper``, which on every forward registers a parametrization that returns
  ``baddbmm(W, B, A)``: a whole merged copy of the parameter. For ``qwen2_moe`` (Qwen1.5-MoE)
  nothing is converted: ``all-linear`` and the MLP names reach only the shared expert's Linears
  and its gate.
- ``qlora``: ``replay_qlora.make_qlora``: ``nn.Linear`` layers quantized as
  ``BitsAndBytesConfig(load_in_4bit=True)`` leaves them (the experts' 3-D parameters and the
  routers are not ``nn.Linear``: they stay in 16 bits), then ``prepare_model_for_kbit_training``
  (every 16-bit parameter that is not 4-bit cast to float32: the experts too), checkpointing on.
- ``full``: every parameter trained, Trainer's ``adamw_bnb_8bit`` or ``paged_adamw_8bit``
  (``bnb_emulation.bnb_adamw``).
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import asdict, dataclass, replace
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
import replay_moe as M  # noqa: E402
from replay_lora import fake_module_to  # noqa: E402
from tracker import StorageTracker  # noqa: E402
import bnb_emulation  # noqa: E402

import bitsandbytes  # noqa: E402,F401
import peft  # noqa: E402,F401
from peft.tuners import loha, lora  # noqa: E402,F401

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}
F32, BF16 = "float32", "bfloat16"


@dataclass(frozen=True)
class Run:
    """One fine-tune of one MoE model: ``method`` ``lora``, ``qlora`` or ``full``."""

    name: str
    model: M.Model
    method: str
    block_size: int
    batch_size: int
    accumulation: int
    weights: str
    dtype: str
    optim: str
    lora_rank: int = 0
    lora_targets: str = ""
    grad_checkpoint: bool = False
    attn_implementation: str = "sdpa"
    double_quant: bool = True


def build(run: Run):
    cfg = M.config(run.model)
    cfg._attn_implementation = run.attn_implementation
    default = torch.get_default_dtype()
    torch.set_default_dtype(DTYPES[run.weights])
    try:
        return M.model_class(run.model.model_type)(cfg)
    finally:
        torch.set_default_dtype(default)


def targets(run: Run):
    return "all-linear" if run.lora_targets == "all-linear" else run.lora_targets.split(",")


def make_lora(model, run: Run):
    from peft import LoraConfig, get_peft_model

    if run.grad_checkpoint:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.enable_input_require_grads()
    cfg = LoraConfig(r=run.lora_rank, lora_alpha=2 * run.lora_rank, target_modules=targets(run),
                     task_type="CAUSAL_LM")
    with fake_module_to():
        return get_peft_model(model, cfg)


def make_qlora(model, run: Run):
    """``replay_qlora.make_qlora``. ``lora.ParamWrapper`` moves its adapters to the wrapped
    parameter's device and dtype with ``Module.to``, which fake tensors refuse; the experts are
    float32 by then (``prepare_model_for_kbit_training``), as the adapters are, and the replay
    has one device: the move changes nothing and is skipped."""
    import replay_qlora

    lora.ParamWrapper._move_adapter_to_device_of_base_layer = (
        lambda self, name, device=None: None)

    q = replay_qlora.Run(run.name, run.model, "qlora", run.block_size, run.batch_size,
                         run.accumulation, run.weights, run.dtype, run.optim,
                         lora_rank=run.lora_rank, lora_targets=tuple(
                             ["all-linear"] if run.lora_targets == "all-linear"
                             else run.lora_targets.split(",")),
                         double_quant=run.double_quant)
    return replay_qlora.make_qlora(model, q)


def adapted(model) -> list[str]:
    """Each adapted module or parameter by its path inside a block."""
    out = set()
    for name, mod in model.named_modules():
        if not (hasattr(mod, "lora_A") and len(mod.lora_A) > 0):
            continue
        parts = name.split(".")
        i = next(i for i, p in enumerate(parts) if p.isdigit())
        path = ".".join(p for p in parts[i + 1:] if p != "base_layer")
        param = getattr(mod, "parameter_name", None)
        out.add(f"{path}.{param}" if param else path)
    return sorted(out)


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
        base_params = sum(p.numel() for p in model.parameters())
        if run.method == "lora":
            model = make_lora(model, run)
        elif run.method == "qlora":
            model = make_qlora(model, run)
        elif run.grad_checkpoint:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        trainable_bytes = unique_bytes(p for p in model.parameters() if p.requires_grad)
        param_bytes = unique_bytes(model.parameters())
        model_bytes = tracker.total
        modules = adapted(model) if run.method != "full" else []
        make = None
        if run.optim != "adamw":
            make = lambda ps: bnb_emulation.bnb_adamw(model, ps, run.optim)  # noqa: E731
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, DTYPES[run.dtype], explain, make)
    return {
        "run": asdict(run),
        "base_params": base_params,
        "params": params,
        "trainable_params": trainable,
        "trainable_bytes": trainable_bytes,
        "param_bytes": param_bytes,
        "model_bytes": model_bytes,
        "adapted_modules": modules,
        **steps,
    }


# Three layers: a middle block between the first and the last recomputed ones.
MIXTRAL_3 = replace(M.MIXTRAL, name="mixtral-8x7b-3layers", layers=3)
QWEN3_MOE_3 = replace(M.QWEN3_MOE, name="qwen3-30b-a3b-3layers", layers=3)


def _runs() -> list[Run]:
    out = []

    def add(m, method, s, b, acc, weights, dtype, optim, rank=0, t="", ckpt=False, **kw):
        policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
                  (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
        tag = "" if not t else "-r%d-%s" % (rank, "all" if t == "all-linear"
                                             else t.replace(",", "+").replace("_proj", ""))
        name = (f"{method}-{m.name}{tag}-s{s}-b{b}-acc{acc}-{policy}-{optim}"
                + ("-eager" if kw.get("attn_implementation") == "eager" else "")
                + ("-ckpt" if ckpt else "") + ("-nodq" if kw.get("double_quant") is False else ""))
        out.append(Run(name, m, method, s, b, acc, weights, dtype, optim, rank, t, ckpt, **kw))

    attn = "q_proj,k_proj,v_proj,o_proj"
    # LoRA on 16-bit weights.
    add(M.MIXTRAL, "lora", 1024, 1, 2, BF16, BF16, "adamw", 16, attn)
    add(M.MIXTRAL, "lora", 1024, 1, 1, BF16, BF16, "adamw", 16, "q_proj,v_proj", ckpt=True)
    add(M.QWEN15_MOE, "lora", 1024, 1, 2, BF16, BF16, "adamw", 16, "all-linear")
    add(M.QWEN15_MOE, "lora", 1024, 2, 1, BF16, BF16, "adamw", 8, attn, ckpt=True)
    add(M.QWEN3_MOE, "lora", 1024, 1, 2, BF16, BF16, "adamw", 16, attn)
    add(M.MIXTRAL, "lora", 1024, 1, 1, BF16, BF16, "adamw", 8, "all-linear")
    add(M.MIXTRAL, "lora", 1024, 1, 1, BF16, BF16, "adamw", 8, "all-linear", ckpt=True)
    add(M.QWEN3_MOE, "lora", 2048, 1, 1, BF16, BF16, "adamw", 16, "all-linear", ckpt=True)
    add(M.QWEN3_MOE, "lora", 1024, 1, 1, BF16, BF16, "adamw", 16, attn, attn_implementation="eager")
    add(M.MIXTRAL, "lora", 1024, 1, 2, BF16, BF16, "adamw", 8, "all-linear", ckpt=True,
        attn_implementation="eager")
    # Small vocabularies: the blocks, not the loss, can set the peak.
    add(M.TINY_MIXTRAL, "lora", 512, 4, 1, BF16, BF16, "adamw", 8, attn, ckpt=True)
    add(M.TINY_QWEN3_MOE, "lora", 1024, 2, 2, BF16, BF16, "adamw", 8, attn)
    add(M.TINY_QWEN2_MOE, "lora", 512, 4, 1, BF16, BF16, "adamw", 8, "all-linear", ckpt=True)
    add(M.TINY_MIXTRAL, "lora", 512, 4, 1, BF16, BF16, "adamw", 8, "all-linear")
    # Released models with all their layers.
    add(M.MIXTRAL_FULL, "lora", 1024, 1, 1, BF16, BF16, "adamw", 16, attn, ckpt=True)
    add(M.QWEN15_MOE_FULL, "lora", 1024, 2, 1, BF16, BF16, "adamw", 16, "all-linear")
    # QLoRA.
    add(M.MIXTRAL, "qlora", 1024, 1, 2, BF16, BF16, "paged_adamw8bit", 16, attn)
    add(M.QWEN15_MOE, "qlora", 1024, 2, 1, BF16, BF16, "adamw", 16, "all-linear")
    add(M.QWEN3_MOE, "qlora", 2048, 1, 2, BF16, BF16, "adamw8bit", 16, attn, double_quant=False)
    add(M.MIXTRAL, "qlora", 1024, 1, 1, BF16, BF16, "adamw", 8, "all-linear")
    add(M.MIXTRAL, "qlora", 2048, 1, 1, BF16, BF16, "adamw", 16, "q_proj,v_proj")
    add(M.QWEN3_MOE, "qlora", 1024, 2, 1, BF16, BF16, "paged_adamw8bit", 8, "all-linear")
    add(M.TINY_QWEN3_MOE, "qlora", 1024, 4, 1, BF16, BF16, "adamw", 8, attn)
    add(M.TINY_QWEN2_MOE, "qlora", 512, 4, 2, BF16, BF16, "adamw", 8, "all-linear")
    add(M.TINY_MIXTRAL, "qlora", 512, 4, 1, BF16, BF16, "adamw", 8, "all-linear")
    # QLoRA where a recomputed block's float32 experts, not the loss, set the peak (and two
    # loss-led runs beside them): Mixtral's and Qwen3-30B-A3B's shapes with 2 and 3 layers.
    add(M.MIXTRAL, "qlora", 512, 1, 1, BF16, BF16, "adamw", 16, "all-linear")
    add(M.MIXTRAL, "qlora", 4096, 1, 1, BF16, BF16, "adamw", 8, "w2")
    add(M.MIXTRAL, "qlora", 4096, 1, 1, BF16, BF16, "paged_adamw8bit", 16, "q_proj,v_proj",
        double_quant=False)
    add(MIXTRAL_3, "qlora", 1024, 2, 2, BF16, BF16, "adamw", 8, "w1,w3")
    add(M.QWEN3_MOE, "qlora", 512, 1, 1, BF16, BF16, "adamw", 16, "all-linear")
    add(QWEN3_MOE_3, "qlora", 1024, 1, 1, BF16, BF16, "adamw8bit", 8,
        "gate_proj,up_proj,down_proj")
    add(QWEN3_MOE_3, "qlora", 1024, 1, 2, BF16, BF16, "adamw", 16, "down_proj")
    add(M.QWEN3_MOE, "qlora", 256, 2, 1, BF16, BF16, "adamw", 8, "q_proj,v_proj")
    # The catalog's Mixtral 8x7B and Qwen3-30B-A3B with all their layers.
    add(M.MIXTRAL_FULL, "qlora", 1024, 1, 1, BF16, BF16, "adamw", 16, "all-linear")
    add(M.QWEN3_MOE_FULL, "qlora", 1024, 1, 1, BF16, BF16, "adamw", 16, "q_proj,v_proj")
    # Full fine-tunes with bitsandbytes' 8-bit AdamW.
    add(M.MIXTRAL, "full", 1024, 1, 2, BF16, F32, "adamw8bit")
    add(M.QWEN15_MOE, "full", 1024, 1, 1, F32, BF16, "paged_adamw8bit", ckpt=True)
    add(M.QWEN3_MOE, "full", 1024, 1, 2, BF16, F32, "paged_adamw8bit")
    add(M.QWEN3_MOE, "full", 2048, 1, 1, BF16, F32, "adamw8bit", ckpt=True)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_moe_peft.py",
                              RUNS, replay, argv)


if __name__ == "__main__":
    sys.exit(main())
