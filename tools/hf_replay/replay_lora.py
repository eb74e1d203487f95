"""Replay a Trainer step of PEFT's LoRA (``peft.get_peft_model(model, LoraConfig(...))``) on
transformers' GPT-2 and Llama-family decoders, on fake tensors, and record its memory: the ground
truth for vramdoc's LoRA estimate of those families (issue 21, item 4).

Usage::

    python tools/hf_replay/replay_lora.py --out tests/data/hf_lora_replay.json

What runs (transformers and peft pinned in requirements.txt): the base model built from its
config (no weights) as ``replay_gpt2.py`` and ``replay_llama.py`` build it (float32, or loaded in
bfloat16), then, as a LoRA fine-tune with ``Trainer`` does it:

- with gradient checkpointing, ``gradient_checkpointing_enable(use_reentrant=False)`` first and
  ``enable_input_require_grads()`` (what ``get_peft_model`` calls on a checkpointed model, and
  transformers' own ``gradient_checkpointing_enable`` on a PEFT model: the embedding's output
  requires grad, so checkpointed blocks have an input that carries a gradient);
- ``get_peft_model(model, LoraConfig(r, lora_alpha=2r, lora_dropout, target_modules))``, PEFT's
  defaults otherwise (``bias='none'``; ``autocast_adapter_dtype=True``: adapters in float32 over
  bf16 weights); every base parameter frozen;
- the Trainer step of ``replay_common.trainer_steps``: ``model(input_ids=X, labels=X)`` under bf16
  autocast or none, backward, ``clip_grad_norm_(1.0)``, fused AdamW over the parameters that
  require grad (the adapters), ``zero_grad(set_to_none=True)``.
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

from cuda_emulation import cuda_dropout_patch, kernel_scratch_bytes  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
import replay_common  # noqa: E402
import replay_gpt2  # noqa: E402
import replay_llama  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402
from replay_llama import Model  # noqa: E402
from tracker import StorageTracker  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16}


@dataclass(frozen=True)
class Run:
    """One LoRA fine-tune: a base model (GPT-2 when ``model.model_type`` is ``gpt2``: ``layers``,
    ``heads``, ``hidden``, ``vocab_size`` and 1024 positions; GPT-2's dropouts 0.1 unless
    ``dropout`` says otherwise), the run, and the adapters."""

    name: str
    model: Model
    block_size: int
    batch_size: int
    accumulation: int
    weights: str
    dtype: str
    attn_implementation: str
    rank: int
    targets: str
    lora_dropout: float = 0.0
    grad_checkpoint: bool = False
    dropout: float = 0.1


def base_model(run: Run):
    """The base model of ``run`` as transformers builds it, in its weights' dtype."""
    import transformers

    m = run.model
    if m.model_type == "gpt2":
        cfg = transformers.GPT2Config(
            n_layer=m.layers, n_head=m.heads, n_embd=m.hidden, vocab_size=m.vocab_size,
            n_positions=1024, resid_pdrop=run.dropout, embd_pdrop=run.dropout,
            attn_pdrop=run.dropout,
        )
        cls = transformers.GPT2LMHeadModel
    else:
        cfg = replay_llama.config(m)
        cls = replay_llama.model_class(m.model_type)
    cfg._attn_implementation = run.attn_implementation
    default = torch.get_default_dtype()
    torch.set_default_dtype(DTYPES[run.weights])
    try:
        return cls(cfg)
    finally:
        torch.set_default_dtype(default)


@contextlib.contextmanager
def fake_module_to():
    """``get_peft_model`` moves each new adapter to its base layer's device and dtype with
    ``Module.to``; torch 2.15's ``Module._apply`` swaps fake parameters (``swap_tensors``), which
    fake tensors refuse. On the replay's one device a move is the dtype cast alone: done here by
    replacing each floating parameter whose dtype differs, as PEFT's own ``cast_adapter_dtype``
    replaces them (the same tensors in the same dtype, before the step starts)."""
    original = torch.nn.Module.to

    def to(self, *args, **kwargs):
        _, dtype, _, _ = torch._C._nn._parse_to(*args, **kwargs)
        if dtype is None:
            return self
        for owner in self.modules():
            for name, p in list(owner.named_parameters(recurse=False)):
                if p.dtype.is_floating_point and p.dtype != dtype:
                    setattr(owner, name, torch.nn.Parameter(p.detach().to(dtype),
                                                            requires_grad=p.requires_grad))
        return self

    torch.nn.Module.to = to
    try:
        yield
    finally:
        torch.nn.Module.to = original


def replay(run: Run, explain: bool = False) -> dict:
    from peft import LoraConfig, get_peft_model

    gpt2 = run.model.model_type == "gpt2"
    sdpa = replay_gpt2.hf_sdpa if gpt2 else hf_sdpa
    scratch = kernel_scratch_bytes if gpt2 else scratch_bytes
    original_sdpa = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=scratch))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        model = base_model(run)
        base_params = sum(p.numel() for p in model.parameters())
        if run.grad_checkpoint:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
            model.enable_input_require_grads()
        targets = "all-linear" if run.targets == "all-linear" else run.targets.split(",")
        lora = LoraConfig(r=run.rank, lora_alpha=2 * run.rank, lora_dropout=run.lora_dropout,
                          target_modules=targets, task_type="CAUSAL_LM",
                          fan_in_fan_out=gpt2)
        with fake_module_to():
            model = get_peft_model(model, lora)
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        trainable_bytes = unique_bytes(p for p in model.parameters() if p.requires_grad)
        param_bytes = unique_bytes(model.parameters())
        # Each adapted module by its path inside a block (`self_attn.q_proj`, `attn.c_attn`).
        adapted = sorted({
            ".".join(name.split(".")[next(i for i, p in enumerate(name.split(".")) if p.isdigit()) + 1:])
            for name, mod in model.named_modules()
            if hasattr(mod, "lora_A") and len(mod.lora_A) > 0
        })
        X = torch.empty((run.batch_size, run.block_size), dtype=torch.long)
        steps = trainer_steps(model, tracker, X, run.accumulation, DTYPES[run.dtype], explain)
        buffer_bytes = unique_bytes(model.buffers())
    return {
        "run": asdict(run),
        "base_params": base_params,
        "params": params,
        "trainable_params": trainable,
        "trainable_bytes": trainable_bytes,
        "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes,
        "adapted_modules": adapted,
        **steps,
    }


# GPT-2's shapes (GPT2LMHeadModel, 1024 positions): `heads` and `kv_heads` alike.
GPT2_124M = Model("gpt2-124m", "gpt2", 12, 768, 12, 12, 3072, 50257, True)
GPT2_MEDIUM_6 = Model("gpt2-medium-6layers", "gpt2", 6, 1024, 16, 16, 4096, 50257, True,
                      full_layers=24)
L = replay_llama

F32, BF16 = "float32", "bfloat16"
ALL = "all-linear"


def _runs() -> list[Run]:
    out = []

    def add(m: Model, s: int, b: int, acc: int, weights: str, dtype: str, attn: str, rank: int,
            targets: str, lora_dropout: float = 0.0, ckpt: bool = False,
            dropout: float = 0.1) -> None:
        policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
                  (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
        t = "all" if targets == ALL else targets.replace(",", "+")
        if m.model_type != "gpt2":
            t = t.replace("_proj", "")
        name = (f"{m.name}-r{rank}-{t}-s{s}-b{b}-acc{acc}-{policy}-{attn}"
                + (f"-ldrop{lora_dropout}" if lora_dropout else "") + ("-ckpt" if ckpt else "")
                + ("-nodrop" if m.model_type == "gpt2" and dropout == 0 else ""))
        out.append(Run(name, m, s, b, acc, weights, dtype, attn, rank, targets, lora_dropout,
                       ckpt, dropout))

    # GPT-2: PEFT's default target (c_attn), all-linear (its Conv1D layers), both projections.
    add(GPT2_124M, 1024, 4, 2, F32, BF16, "sdpa", 8, "c_attn")
    add(GPT2_124M, 1024, 4, 2, F32, BF16, "eager", 16, ALL, 0.05)
    add(GPT2_124M, 512, 4, 1, F32, F32, "sdpa", 8, "c_attn,c_proj", 0.1)
    add(GPT2_124M, 1024, 4, 2, F32, BF16, "eager", 8, "c_attn", ckpt=True)
    add(GPT2_MEDIUM_6, 1024, 2, 2, F32, BF16, "sdpa", 64, ALL, dropout=0.0)
    # The Llama family: PEFT's default (q_proj, v_proj), all-linear, attention only, MLP only.
    add(L.LLAMA32_1B, 1024, 2, 2, BF16, F32, "sdpa", 8, "q_proj,v_proj")
    add(L.LLAMA32_1B, 1024, 2, 2, BF16, BF16, "sdpa", 16, ALL, 0.05)
    add(L.LLAMA32_1B, 1024, 2, 1, F32, BF16, "eager", 8, "q_proj,k_proj,v_proj,o_proj")
    add(L.LLAMA31_8B, 1024, 1, 2, BF16, BF16, "sdpa", 16, ALL)
    add(L.LLAMA31_8B, 1024, 1, 2, BF16, BF16, "sdpa", 64, "q_proj,k_proj,v_proj,o_proj", 0.1,
        ckpt=True)
    add(L.QWEN25_15B, 1024, 2, 2, F32, BF16, "eager", 8, "q_proj,v_proj")
    add(L.QWEN3_06B, 1024, 2, 2, BF16, BF16, "sdpa", 32, ALL, 0.05, ckpt=True)
    add(L.PHI3_MINI, 1024, 1, 2, BF16, BF16, "sdpa", 16, "qkv_proj,o_proj")
    add(L.PHI3_MINI, 512, 2, 1, F32, F32, "eager", 8, ALL, 0.1)
    add(L.MISTRAL_7B, 1024, 2, 1, BF16, F32, "sdpa", 16, ALL, ckpt=True)
    add(L.TINY_MQA, 1024, 4, 2, F32, BF16, "eager", 8, ALL)
    add(L.SMALL_GQA, 512, 4, 1, BF16, F32, "eager", 4, "gate_proj,up_proj,down_proj", 0.05,
        ckpt=True)
    return out


RUNS = _runs()


def main(argv: list[str] | None = None) -> int:
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_lora.py", RUNS,
                              replay, argv)


if __name__ == "__main__":
    sys.exit(main())
