"""Replay Hugging Face ``generate`` with bitsandbytes-quantized weights (4-bit NF4/FP4 and
LLM.int8()) on fake tensors: ``replay_generate.py``'s replay (its module doc says what runs and
how the values ``generate`` reads are answered) on models loaded as
``from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, …))`` or
``(load_in_8bit=True)`` leaves them; the ground truth for vramdoc's quantized generate estimate
(``src/estimate/bnb_generate.rs``, issue 22).

Usage::

    python tools/hf_replay/replay_generate_bnb.py --out tests/data/hf_generate_bnb_replay.json

bitsandbytes' kernels allocate what their CUDA versions allocate (``bnb_emulation.py`` cites
each): 4-bit ``gemm_4bit`` runs the fused kernel (its output only) for at most 4 rows (every
GPU does) and the dequantize-then-``F.linear`` fallback above (the most any GPU allocates: between
5 and 1536 rows some GPUs run the fused kernel); LLM.int8() runs its fast inference path with the
default outlier threshold 6.0 and ``bnb_emulation.OUTLIER_COLUMNS`` outlier columns per call.

The runs: every Llama-family catalog model (``catalog_runs.catalog_models``: Llama, Mistral,
Qwen2, Qwen3, Phi-3) with 2 of its layers, in NF4 with double quantization and a bfloat16
compute dtype (the common QLoRA-style load), and in LLM.int8(); GPT-2 124M in NF4, FP4 and int8;
Llama 3.2 1B's shape with the other 4-bit settings (FP4, no double quantization, the float32
compute dtype transformers defaults to) and with decoding batches of at most 4 rows (the fused
kernel) and above.
"""

from __future__ import annotations

import contextlib
import sys
from dataclasses import dataclass
from pathlib import Path

import torch

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

# Imported before any fake mode: bitsandbytes makes module-level tensors on import.
import bitsandbytes  # noqa: E402,F401

import bnb_emulation  # noqa: E402
import replay_generate  # noqa: E402
from catalog_runs import LAYERS, catalog_models  # noqa: E402
from replay_generate import GPT2, LLAMA, Run  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass(frozen=True)
class BnbRun(Run):
    """A ``generate`` call on a bitsandbytes-quantized model."""

    weights_quant: str = "nf4"  # "nf4", "fp4" or "int8"
    double_quant: bool = True
    compute_dtype: str = "bfloat16"
    attn_implementation: str = "sdpa"

    def prepare(self, model, stack: contextlib.ExitStack):
        """Quantizes ``model``'s Linears as ``from_pretrained`` does and enters the CUDA
        emulation of bitsandbytes' kernels."""
        stack.enter_context(bnb_emulation.dynamic_maps())
        if self.weights_quant == "int8":
            bnb_emulation.quantize_linears_int8(model)
            # The new modules are built in training mode (`Linear8bitLt.forward` passes
            # `self.training` on to `MatMul8bitLt`): back to eval, as `from_pretrained` leaves them.
            model.eval()
            stack.enter_context(bnb_emulation.Int8Cuda())
            return model
        bnb_emulation.quantize_linears(model, self.weights_quant, self.double_quant,
                                       DTYPES[self.compute_dtype])
        for module in model.modules():
            if isinstance(module, bitsandbytes.nn.Linear4bit):
                # The fake tensors' "cpu" stands for the GPU: no AVX512 CPU repacking.
                module.support_avx512bf16_for_cpu = False
        model.eval()
        stack.enter_context(bnb_emulation.Gemm4bitCuda(
            fused_max_rows=bnb_emulation.FUSED_ALWAYS_ROWS))
        return model


def _runs() -> list[BnbRun]:
    runs = []
    for m in catalog_models():
        config = dict(m["config"])
        family = config.pop("model_type")
        config["num_hidden_layers"] = LAYERS
        shape = dict(n_layer=LAYERS, n_head=config["num_attention_heads"],
                     n_embd=config["hidden_size"], vocab_size=config["vocab_size"],
                     n_positions=config["max_position_embeddings"], family=family,
                     config=tuple(config.items()), model=m["id"])
        for quant, p, n, b in [("nf4", 320, 6, 2), ("int8", 192, 6, 3)]:
            runs.append(BnbRun(f"{m['id']}-{LAYERS}l-{quant}-p{p}-n{n}-b{b}-dynamic", **shape,
                               prompt_tokens=p, max_new_tokens=n, batch_size=b, cache="dynamic",
                               weights_quant=quant))
    g = dict(GPT2, prompt_tokens=512, max_new_tokens=16, cache="dynamic")
    runs += [
        BnbRun("gpt2-124m-nf4-p512-n16-b4-dynamic", **g, batch_size=4),
        BnbRun("gpt2-124m-fp4-p512-n16-b8-dynamic-nodq", **g, batch_size=8, weights_quant="fp4",
               double_quant=False),
        BnbRun("gpt2-124m-nf4-p256-n16-b2-dynamic-fp32compute", **dict(g, prompt_tokens=256),
               batch_size=2, compute_dtype="float32"),
        BnbRun("gpt2-124m-int8-p512-n16-b4-dynamic", **g, batch_size=4, weights_quant="int8"),
        BnbRun("gpt2-124m-int8-p512-n16-b2-static-fp16", **g, batch_size=2, weights_quant="int8",
               dtype="float16"),
    ]
    ll = dict(LLAMA, n_layer=2, config=tuple(dict(dict(LLAMA["config"]),
                                                  num_hidden_layers=2).items()))
    runs += [
        BnbRun("llama-3.2-1b-shape-2l-nf4-p2048-n8-b1-dynamic-fp32compute", **ll,
               prompt_tokens=2048, max_new_tokens=8, batch_size=1, cache="dynamic",
               compute_dtype="float32"),
        BnbRun("llama-3.2-1b-shape-2l-fp4-p512-n8-b8-dynamic-nodq", **ll, prompt_tokens=512,
               max_new_tokens=8, batch_size=8, cache="dynamic", weights_quant="fp4",
               double_quant=False),
        BnbRun("llama-3.2-1b-shape-2l-nf4-p1024-n32-b4-static", **ll, prompt_tokens=1024,
               max_new_tokens=32, batch_size=4, cache="static"),
        BnbRun("llama-3.2-1b-shape-2l-int8-p1024-n32-b16-dynamic", **ll, prompt_tokens=1024,
               max_new_tokens=32, batch_size=16, cache="dynamic", weights_quant="int8"),
        BnbRun("llama-3.2-1b-shape-2l-int8-p300-n8-b1-dynamic-fp32", **ll, prompt_tokens=300,
               max_new_tokens=8, batch_size=1, cache="dynamic", weights_quant="int8",
               dtype="float32"),
    ]
    return runs


def _other_families() -> list[BnbRun]:
    """Gemma 2 (eager) and Gemma 3 with their sliding layers, and the mixtures of experts, whose
    experts (3-D parameters, not ``nn.Linear``) transformers leaves unquantized."""
    from replay_generate_gemma import G2, G3
    from replay_generate_moe import MIXTRAL_4L, QWEN15_MOE_4L, QWEN3_MOE_4L, TINY_MIXTRAL

    runs = []
    for quant in ("nf4", "int8"):
        runs += [
            BnbRun(f"gemma-3-1b-6l-{quant}-p600-n16-b2-dynamic", **G3, prompt_tokens=600,
                   max_new_tokens=16, batch_size=2, cache="dynamic", weights_quant=quant),
            BnbRun(f"gemma-2-2b-4l-{quant}-p512-n16-b8-dynamic", **G2, prompt_tokens=512,
                   max_new_tokens=16, batch_size=8, cache="dynamic", weights_quant=quant),
            BnbRun(f"mixtral-8x7b-4l-{quant}-p512-n16-b2-dynamic", **MIXTRAL_4L,
                   prompt_tokens=512, max_new_tokens=16, batch_size=2, cache="dynamic",
                   weights_quant=quant),
            BnbRun(f"qwen1.5-moe-4l-{quant}-p256-n16-b8-dynamic", **QWEN15_MOE_4L,
                   prompt_tokens=256, max_new_tokens=16, batch_size=8, cache="dynamic",
                   weights_quant=quant),
            BnbRun(f"qwen3-30b-a3b-4l-{quant}-p512-n16-b2-dynamic", **QWEN3_MOE_4L,
                   prompt_tokens=512, max_new_tokens=16, batch_size=2, cache="dynamic",
                   weights_quant=quant),
            BnbRun(f"tiny-mixtral-{quant}-p1500-n40-b8-dynamic", **TINY_MIXTRAL,
                   prompt_tokens=1500, max_new_tokens=40, batch_size=8, cache="dynamic",
                   weights_quant=quant),
        ]
    return runs


RUNS = _runs() + _other_families()


def main(argv: list[str] | None = None) -> int:
    return replay_generate.main(argv, RUNS, "tools/hf_replay/replay_generate_bnb.py")


if __name__ == "__main__":
    sys.exit(main())
