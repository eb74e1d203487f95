"""Replay a Llama-family Trainer step in the batch layouts of TRL 0.29's SFTTrainer other than
full rows (issue 21, item 3) on fake tensors and record its memory: the ground truth for
vramdoc's ``batch_layout`` key (``src/estimate/hf_llama/layout.rs``).

Usage::

    python tools/hf_replay/replay_batches.py --out tests/data/hf_batch_layout_replay.json
    python tools/hf_replay/replay_batches.py --moe --out tests/data/hf_moe_batch_layout_replay.json
    python tools/hf_replay/replay_batches.py --trl --out tests/data/hf_trl_batch_layout_replay.json

``--moe`` replays the mixtures of experts (``replay_moe.py``'s configs) instead; ``--trl``
replays QLoRA as TRL's SFTTrainer runs it (``replay_trl.py``'s step, whose ``compute_loss``
already passes ``use_cache=False``) in each layout.

The step is ``replay_llama.py``'s (the model from its modeling file, bf16 weights, bf16
autocast or float32, fused AdamW, SDPA routed to the kernel CUDA picks), with the batch of a
layout:

- ``padded``: ``batch_size`` rows of ``block_size`` tokens with an ``attention_mask`` that has
  padding (``DataCollatorWithPadding``, TRL's default ``packing=False``: every row padded to the
  longest in the batch, so ``block_size`` is that longest row);
- ``padding_free``: one row of ``batch_size·block_size`` tokens with ``position_ids`` that
  restart at every packed sequence and no mask (TRL's ``padding_free=True``, or ``packing=True``
  with its default ``bfd`` strategy; transformers' ``DataCollatorWithFlattening``).

Both pass ``use_cache=False``: TRL's ``compute_loss`` sets it, and transformers 5.24's
``Trainer`` sets ``model.config.use_cache`` to ``TrainingArguments.use_cache``, ``False`` by
default. Under fake tensors transformers cannot read a mask's values (``is_tracing`` is true for
a FakeTensor), so it keeps the padding mask (a real batch with padding keeps it too) and builds
the packed-sequence mask (a real row of several sequences gets it too).
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
import fake_flash_attn  # noqa: E402
import replay_llama as L  # noqa: E402
import replay_moe as M  # noqa: E402
import replay_qlora as Q  # noqa: E402
import replay_trl as T  # noqa: E402
import bnb_emulation  # noqa: E402
from replay_common import trainer_steps, unique_bytes  # noqa: E402
from tracker import StorageTracker  # noqa: E402


@dataclass(frozen=True)
class Run:
    """One training setup: ``replay_llama.Run``'s fields and the batch layout."""

    name: str
    model: L.Model | M.Model
    block_size: int
    batch_size: int
    accumulation: int
    weights: str
    dtype: str
    attn_implementation: str
    batch_layout: str
    grad_checkpoint: bool = False


def layout_inputs(run: Run) -> tuple[torch.Tensor, dict]:
    """The ``input_ids`` (also the labels) and the other forward arguments of ``run``'s layout."""
    b, s = run.batch_size, run.block_size
    if run.batch_layout == "full":
        return torch.empty((b, s), dtype=torch.long), {}
    if run.batch_layout == "padding_free":
        ids = torch.empty((1, b * s), dtype=torch.long)
        return ids, {"position_ids": torch.empty((1, b * s), dtype=torch.long), "use_cache": False}
    if run.batch_layout == "padded":
        ids = torch.empty((b, s), dtype=torch.long)
        return ids, {"attention_mask": torch.empty((b, s), dtype=torch.long), "use_cache": False}
    raise ValueError(f"unknown layout {run.batch_layout}")


def replay(run: Run, explain: bool = False) -> dict:
    moe = isinstance(run.model, M.Model)
    cfg = (M if moe else L).config(run.model)
    cfg._attn_implementation = run.attn_implementation
    cls = (M if moe else L).model_class(run.model.model_type)
    original_sdpa = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=explain, scratch=scratch_bytes))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = hf_sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        if run.attn_implementation == "flash_attention_2":
            stack.enter_context(fake_flash_attn.installed(
                run.batch_size, run.block_size, run.batch_layout == "padding_free"))
        default = torch.get_default_dtype()
        torch.set_default_dtype(L.DTYPES[run.weights])
        try:
            model = cls(cfg)
        finally:
            torch.set_default_dtype(default)
        if run.grad_checkpoint:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        param_bytes = unique_bytes(model.parameters())
        ids, inputs = layout_inputs(run)
        steps = trainer_steps(model, tracker, ids, run.accumulation, L.DTYPES[run.dtype], explain,
                              inputs=inputs)
        buffer_bytes = unique_bytes(model.buffers())
    extra = {"experts_implementation": cfg._experts_implementation} if moe else {}
    return {
        **extra,
        "run": asdict(run),
        "params": params,
        "trainable_params": trainable,
        "param_bytes": param_bytes,
        "buffer_bytes": buffer_bytes,
        **steps,
    }


F32, BF16 = L.F32, L.BF16


def run_of(m, s: int, b: int, acc: int, weights: str, dtype: str, attn: str, layout: str,
           ckpt: bool = False) -> Run:
    policy = {(F32, F32): "fp32", (F32, BF16): "autocast", (BF16, F32): "bf16w",
              (BF16, BF16): "bf16w-autocast"}[(weights, dtype)]
    name = f"{m.name}-s{s}-b{b}-acc{acc}-{policy}-{attn}-{layout}" + ("-ckpt" if ckpt else "")
    return Run(name, m, s, b, acc, weights, dtype, attn, layout, ckpt)


def _runs() -> list[Run]:
    out = []

    def add(*args, **kwargs) -> None:
        out.append(run_of(*args, **kwargs))

    # probe_batches.py's shape: Qwen3 0.6B with 8 of its 28 layers, bf16 weights.
    for attn in ("sdpa", "eager"):
        for layout in ("padded", "padding_free"):
            add(L.QWEN3_06B, 1024, 2, 1, BF16, F32, attn, layout)
    add(L.QWEN3_06B, 2048, 4, 2, BF16, F32, "sdpa", "padded")
    add(L.QWEN3_06B, 2048, 2, 1, BF16, F32, "sdpa", "padding_free")
    add(L.QWEN3_06B, 1024, 2, 1, BF16, F32, "sdpa", "padding_free", True)
    add(L.QWEN3_06B, 1024, 2, 2, BF16, F32, "eager", "padded", True)
    # Llama 3.2 1B (4 of 16 layers), float32 weights under bf16 autocast.
    add(L.LLAMA32_1B, 1024, 2, 2, F32, BF16, "sdpa", "padded")
    add(L.LLAMA32_1B, 1024, 2, 2, F32, BF16, "sdpa", "padding_free")
    add(L.LLAMA32_1B, 512, 2, 1, F32, BF16, "eager", "padding_free")
    # Phi-3 mini (2 of 32 layers): as many key/value heads as query heads, nothing repeated.
    add(L.PHI3_MINI, 1024, 1, 1, BF16, F32, "sdpa", "padded")
    add(L.PHI3_MINI, 512, 2, 2, F32, BF16, "eager", "padded")
    add(L.PHI3_MINI, 512, 2, 1, BF16, F32, "sdpa", "padding_free")
    # Mistral 7B v0.3 (2 of 32 layers).
    add(L.MISTRAL_7B, 1024, 1, 1, BF16, F32, "sdpa", "padded")
    # Small vocabularies in float32: the blocks, not the loss, set the peak.
    add(L.TINY_QWEN2, 1024, 4, 2, F32, F32, "eager", "padded")
    add(L.TINY_QWEN2, 512, 4, 1, F32, F32, "sdpa", "padded")
    add(L.SMALL_GQA, 512, 4, 1, BF16, F32, "sdpa", "padded")
    add(L.SMALL_GQA, 512, 4, 2, F32, BF16, "sdpa", "padding_free")
    add(L.SMALL_GQA, 512, 4, 1, BF16, F32, "eager", "padding_free")
    add(L.SMALL_GQA_TIED, 512, 4, 2, F32, BF16, "sdpa", "padded", True)
    # Lengths that are no multiple of 16 or 32 (the kernel's bias and logsumexp are padded).
    add(L.SMALL_GQA, 1000, 2, 1, BF16, F32, "sdpa", "padded")
    add(L.SMALL_GQA, 500, 3, 1, F32, F32, "sdpa", "padding_free")
    add(L.TINY_QWEN3, 1500, 2, 2, BF16, F32, "sdpa", "padded")
    # float32 with grouped heads and a mask: the memory-efficient kernel on repeated keys.
    add(L.SMALL_GQA, 512, 4, 2, F32, F32, "sdpa", "padded")
    add(L.SMALL_GQA, 512, 4, 1, F32, F32, "eager", "padded", True)
    add(L.SMALL_GQA, 512, 2, 1, F32, F32, "sdpa", "padding_free", True)
    add(L.SMALL_GQA_TIED, 512, 4, 1, BF16, F32, "eager", "padding_free", True)
    add(L.TINY_QWEN3, 1024, 4, 1, F32, BF16, "eager", "padded")
    # Multi-query: eager only (a masked SDPA's repeat_kv of one head is a view, refused).
    add(L.TINY_MQA, 512, 4, 2, BF16, F32, "eager", "padded")
    add(L.TINY_MQA, 512, 4, 1, BF16, F32, "sdpa", "padded")
    # Released models with all their layers.
    add(L.QWEN3_06B_FULL, 1024, 2, 1, BF16, F32, "sdpa", "padded")
    add(L.LLAMA32_1B_FULL, 1024, 2, 1, BF16, F32, "sdpa", "padding_free")
    # flash-attn 2 (fake_flash_attn.py): full rows, and padding-free rows through its varlen
    # kernel (no mask); 16-bit only (flash-attn refuses float32).
    fa2 = "flash_attention_2"
    add(L.QWEN3_06B, 1024, 2, 1, BF16, F32, fa2, "full")
    add(L.QWEN3_06B, 2048, 4, 1, BF16, F32, fa2, "padding_free")
    add(L.LLAMA32_1B, 1024, 2, 2, F32, BF16, fa2, "full")
    add(L.LLAMA32_1B, 1024, 2, 2, F32, BF16, fa2, "padding_free")
    add(L.SMALL_GQA, 512, 4, 1, BF16, F32, fa2, "full")
    add(L.SMALL_GQA, 512, 4, 2, F32, BF16, fa2, "padding_free")
    add(L.SMALL_GQA, 512, 4, 1, BF16, F32, fa2, "padding_free", True)
    add(L.SMALL_GQA_TIED, 512, 4, 2, F32, BF16, fa2, "full", True)
    add(L.TINY_MQA, 512, 4, 1, BF16, F32, fa2, "padding_free")
    add(L.TINY_QWEN3, 1500, 2, 1, BF16, F32, fa2, "padding_free")
    add(L.PHI3_MINI, 1024, 1, 1, BF16, F32, fa2, "padding_free")
    add(L.MISTRAL_7B, 1024, 2, 1, BF16, F32, fa2, "full", True)
    add(L.LLAMA32_1B_FULL, 2048, 2, 1, BF16, F32, fa2, "padding_free")
    return out


RUNS = _runs()


@dataclass(frozen=True)
class TrlRun(Q.Run):
    """``replay_qlora.Run`` (as ``replay_trl.py`` fills it) and the batch layout."""

    batch_layout: str = "full"


def replay_trl(run: TrlRun, explain: bool = False) -> dict:
    """``replay_trl.replay`` with the batch of ``run``'s layout."""
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
        model = T.make_trl_qlora(Q.build(run), run)
        model.train()
        params = sum(p.numel() for p in model.parameters())
        trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
        weight_bytes = tracker.total
        param_bytes = unique_bytes(model.parameters())
        make = None
        if run.optim != "adamw":
            make = lambda ps: bnb_emulation.bnb_adamw(model, ps, run.optim)  # noqa: E731
        ids, inputs = layout_inputs(run)
        steps = trainer_steps(model, tracker, ids, run.accumulation, Q.DTYPES[run.dtype], explain,
                              make, after_forward=lambda out: T.compute_loss_metrics(out, ids),
                              inputs=inputs)
    return {
        "run": asdict(run),
        "trainer": "trl",
        "params": params,
        "trainable_params": trainable,
        "param_bytes": param_bytes,
        "model_bytes": weight_bytes,
        **steps,
    }


def _trl_runs() -> list[TrlRun]:
    out = []
    all_linear = ("all-linear",)

    def q(m, s, b, acc, optim, rank, targets, layout, **kw):
        tag = "-".join(f"{k}{v}" for k, v in sorted(kw.items()))
        name = (f"trl-qlora-{m.name}-s{s}-b{b}-acc{acc}-r{rank}-{optim}-{layout}"
                + (f"-{tag}" if tag else ""))
        out.append(TrlRun(name, m, "qlora", s, b, acc, "bfloat16", "bfloat16", optim,
                          lora_rank=rank, lora_targets=targets, grad_checkpoint=True,
                          batch_layout=layout, **kw))

    q(L.QWEN3_06B, 2048, 2, 1, "paged_adamw8bit", 32, all_linear, "padded")
    q(L.QWEN3_06B, 1024, 4, 1, "adamw", 16, all_linear, "padding_free")
    q(L.QWEN25_15B, 1024, 2, 2, "adamw", 16, all_linear, "padding_free", lora_dropout=0.1)
    q(L.LLAMA31_8B, 1024, 2, 2, "paged_adamw8bit", 16, all_linear, "padded")
    q(L.LLAMA31_8B, 2048, 2, 1, "adamw", 16, ("q_proj", "v_proj"), "padding_free",
      double_quant=False)
    # Philipp Schmid's Llama 3.1 8B QLoRA with all its layers, as TRL's default padded rows.
    q(Q.LLAMA31_8B_FULL, 2048, 1, 2, "adamw", 256, all_linear, "padded", lora_dropout=0.05)
    return out


def _moe_runs() -> list[Run]:
    out = []

    def add(*args, **kwargs) -> None:
        out.append(run_of(*args, **kwargs))

    add(M.TINY_MIXTRAL, 512, 4, 1, BF16, F32, "sdpa", "padded")
    add(M.TINY_MIXTRAL, 512, 4, 2, F32, BF16, "eager", "padding_free")
    add(M.TINY_MIXTRAL, 512, 4, 2, F32, F32, "sdpa", "padding_free", True)
    add(M.TINY_QWEN2_MOE, 512, 4, 2, F32, BF16, "sdpa", "padded")
    add(M.TINY_QWEN2_MOE, 512, 4, 1, BF16, F32, "eager", "padded", True)
    add(M.TINY_QWEN2_MOE, 512, 2, 1, BF16, F32, "sdpa", "padding_free")
    add(M.TINY_QWEN3_MOE, 1024, 2, 2, BF16, F32, "sdpa", "padded")
    add(M.TINY_QWEN3_MOE, 512, 4, 1, F32, BF16, "eager", "padding_free")
    add(M.TINY_QWEN3_MOE, 512, 4, 1, BF16, F32, "sdpa", "padded", True)
    add(M.MIXTRAL, 1024, 1, 1, BF16, F32, "sdpa", "padded")
    add(M.QWEN15_MOE, 512, 2, 1, BF16, F32, "sdpa", "padding_free")
    add(M.QWEN3_MOE, 1024, 2, 1, BF16, F32, "sdpa", "padded")
    add(M.TINY_MIXTRAL, 512, 4, 1, BF16, F32, "flash_attention_2", "padding_free")
    add(M.TINY_QWEN3_MOE, 1024, 2, 2, F32, BF16, "flash_attention_2", "full")
    return out


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    runs, fn = RUNS, replay
    if "--moe" in argv:
        argv.remove("--moe")
        runs = _moe_runs()
    if "--trl" in argv:
        argv.remove("--trl")
        runs, fn = _trl_runs(), replay_trl
    return replay_common.main(__doc__.splitlines()[0], "tools/hf_replay/replay_batches.py",
                              runs, fn, argv)


if __name__ == "__main__":
    sys.exit(main())
