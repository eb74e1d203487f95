"""Replays Hugging Face ``generate`` with beam search (``num_beams`` > 1) on fake tensors.

``replay_generate.py``'s machinery (its tracker, SDPA routing and prefill probe) with
``num_beams=B``, ``do_sample=False`` (greedy beams; ``num_return_sequences`` at most ``B``), no
end-of-sequence token (no beam finishes early), a dynamic cache (a static one where a name says
so): GPT-2, Llama 3.2 1B's grouped-query shape and a multi-head one, a mixture of experts, a
Mistral-like model with a sliding window, Gemma 3 1B's shape (five local layers, one global) and
Gemma 2 2B's (eager attention). Layers are reduced where a name says so (every block is the
same); ``v1k`` names a 1,024-token vocabulary, so that the cache's own moments (a layer's
concatenation, ``reorder_cache``'s copy) rather than the logits set the decoding peak.

Usage::

    python tools/hf_replay/replay_generate_beams.py --out tests/data/hf_generate_beams_replay.json
"""

import dataclasses
import sys
import warnings
from dataclasses import dataclass

import replay_generate as rg
from replay_generate_bnb import BnbRun
from replay_generate_gemma import G2, G3
from replay_generate_moe import TINY_MIXTRAL


@dataclass(frozen=True)
class BeamRun(rg.Run):
    """One beam-search ``generate`` call."""

    num_beams: int = 1
    attn_implementation: str = "sdpa"


@dataclass(frozen=True)
class BnbBeamRun(BnbRun):
    """A beam-search call on a bitsandbytes-quantized model (``replay_generate_bnb.py``)."""

    num_beams: int = 1


def _with(shape: dict, n_layer: int | None = None, **config) -> dict:
    """``shape`` with ``config`` keywords changed (and ``n_layer``, when given)."""
    cfg = dict(dict(shape["config"]), **config)
    if n_layer is not None:
        cfg["num_hidden_layers"] = n_layer
    out = dict(shape, config=tuple(cfg.items()))
    if n_layer is not None:
        out["n_layer"] = n_layer
    if "vocab_size" in config:
        out["vocab_size"] = config["vocab_size"]
    return out


LLAMA_8L_V1K = _with(rg.LLAMA, vocab_size=1024)

RUNS = [
    BeamRun("gpt2-124m-p300-n40-b2-beams2-dynamic", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="dynamic", num_beams=2),
    BeamRun("gpt2-124m-p300-n40-b2-beams4-dynamic", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="dynamic", num_beams=4),
    BeamRun("llama-1b-2l-p512-n32-b1-beams2-dynamic", **rg.LLAMA_2L, prompt_tokens=512,
            max_new_tokens=32, batch_size=1, cache="dynamic", num_beams=2),
    BeamRun("llama-1b-2l-p512-n32-b1-beams4-dynamic", **rg.LLAMA_2L, prompt_tokens=512,
            max_new_tokens=32, batch_size=1, cache="dynamic", num_beams=4),
    # Long prompts, 8 beams, more layers: a layer's concatenation and the reorder's copy of a
    # layer's keys, beside the whole cache, against the logits over the vocabulary.
    BeamRun("gpt2-124m-p900-n24-b2-beams8-dynamic", **rg.GPT2, prompt_tokens=900,
            max_new_tokens=24, batch_size=2, cache="dynamic", num_beams=8),
    BeamRun("llama-1b-8l-v1k-p1500-n8-b1-beams8-dynamic", **LLAMA_8L_V1K, prompt_tokens=1500,
            max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=8),
    BeamRun("llama-1b-2l-v1k-p2000-n16-b2-beams4-dynamic", **rg.LLAMA_2L_V1K, prompt_tokens=2000,
            max_new_tokens=16, batch_size=2, cache="dynamic", num_beams=4),
    BeamRun("llama-mha-2l-v1k-p1000-n8-b1-beams8-dynamic-fp32", **rg.MHA_2L_V1K,
            prompt_tokens=1000, max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=8,
            dtype="float32"),
    # Fewer sequences returned than beams: the same search, a smaller output crop.
    BeamRun("gpt2-124m-p300-n40-b2-beams4-r2-dynamic", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="dynamic", num_beams=4,
            num_return_sequences=2),
    BeamRun("llama-1b-2l-p64-n16-b8-beams4-r3-dynamic", **rg.LLAMA_2L, prompt_tokens=64,
            max_new_tokens=16, batch_size=8, cache="dynamic", num_beams=4,
            num_return_sequences=3),
    # Short prompts in a large batch: the first token's logits, their float32 copy and
    # log-softmax set the prefill's peak; one and two new tokens (no decoding step, one).
    BeamRun("gpt2-124m-p4-n16-b16-beams4-dynamic", **rg.GPT2, prompt_tokens=4,
            max_new_tokens=16, batch_size=16, cache="dynamic", num_beams=4),
    BeamRun("llama-1b-2l-p300-n1-b2-beams2-dynamic", **rg.LLAMA_2L, prompt_tokens=300,
            max_new_tokens=1, batch_size=2, cache="dynamic", num_beams=2),
    BeamRun("gpt2-124m-p200-n2-b1-beams3-dynamic-fp32", **rg.GPT2, prompt_tokens=200,
            max_new_tokens=2, batch_size=1, cache="dynamic", num_beams=3, dtype="float32"),
    # A mixture of experts (every expert resident, grouped_mm).
    BeamRun("tiny-mixtral-p1000-n16-b2-beams4-dynamic", **TINY_MIXTRAL, prompt_tokens=1000,
            max_new_tokens=16, batch_size=2, cache="dynamic", num_beams=4),
    # A sliding window on every layer: past it (the masked prefill, the window-capped cache) and
    # a prompt within it that decoding carries past it.
    BeamRun("mistral-like-2l-sw512-p1000-n8-b1-beams4-dynamic", **rg.SW512, prompt_tokens=1000,
            max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=4),
    BeamRun("mistral-like-2l-sw512-p500-n30-b2-beams2-dynamic", **rg.SW512, prompt_tokens=500,
            max_new_tokens=30, batch_size=2, cache="dynamic", num_beams=2),
    # A static cache: `reorder_cache` replaces each layer's preallocated keys and values by an
    # `index_select` copy of the whole slots, one at a time beside the full cache.
    BeamRun("gpt2-124m-p300-n40-b2-beams4-static", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="static", num_beams=4),
    BeamRun("llama-1b-2l-v1k-p1000-n16-b2-beams4-static", **rg.LLAMA_2L_V1K, prompt_tokens=1000,
            max_new_tokens=16, batch_size=2, cache="static", num_beams=4),
    BeamRun("llama-1b-2l-p512-n32-b1-beams2-static", **rg.LLAMA_2L, prompt_tokens=512,
            max_new_tokens=32, batch_size=1, cache="static", num_beams=2),
    BeamRun("gpt2-124m-p200-n20-b1-beams2-static-fp32", **rg.GPT2, prompt_tokens=200,
            max_new_tokens=20, batch_size=1, cache="static", num_beams=2, dtype="float32"),
    # A static cache with a sliding window on every layer: its full slots roll and reorder.
    BeamRun("mistral-like-2l-sw512-p1000-n8-b2-beams2-static", **rg.SW512, prompt_tokens=1000,
            max_new_tokens=8, batch_size=2, cache="static", num_beams=2),
    BeamRun("mistral-like-2l-sw512-p500-n30-b2-beams2-static", **rg.SW512, prompt_tokens=500,
            max_new_tokens=30, batch_size=2, cache="static", num_beams=2),
    # bitsandbytes weights: 4-bit NF4 on GPT-2, LLM.int8() on Llama 3.2 1B's shape (2 layers).
    BnbBeamRun("gpt2-124m-nf4-p512-n16-b2-beams4-dynamic", **rg.GPT2, prompt_tokens=512,
               max_new_tokens=16, batch_size=2, cache="dynamic", num_beams=4),
    BnbBeamRun("llama-1b-2l-int8-p300-n8-b2-beams2-dynamic", **rg.LLAMA_2L, prompt_tokens=300,
               max_new_tokens=8, batch_size=2, cache="dynamic", num_beams=2,
               weights_quant="int8"),
    # Gemma 3 (five sliding-window layers, one global).
    BeamRun("gemma-3-1b-6l-p256-n16-b1-beams2-dynamic", **G3, prompt_tokens=256,
            max_new_tokens=16, batch_size=1, cache="dynamic", num_beams=2),
    BeamRun("gemma-3-1b-6l-p1024-n8-b1-beams4-dynamic", **G3, prompt_tokens=1024,
            max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=4),
    # Their static caches: each layer's slots copied whole by `reorder_cache`.
    BeamRun("gemma-3-1b-6l-p600-n16-b1-beams2-static", **G3, prompt_tokens=600,
            max_new_tokens=16, batch_size=1, cache="static", num_beams=2),
    BeamRun("gemma-2-2b-4l-p512-n16-b1-beams2-static", **G2, prompt_tokens=512,
            max_new_tokens=16, batch_size=1, cache="static", num_beams=2),
    # Gemma 2 (eager attention, a local and a global layer twice), within and past its window.
    BeamRun("gemma-2-2b-4l-p512-n16-b1-beams2-dynamic", **G2, prompt_tokens=512,
            max_new_tokens=16, batch_size=1, cache="dynamic", num_beams=2),
    BeamRun("gemma-2-2b-4l-p4200-n8-b1-beams2-dynamic", **G2, prompt_tokens=4200,
            max_new_tokens=8, batch_size=1, cache="dynamic", num_beams=2),
]


def versus_sampling() -> int:
    """Prints each beam run's peaks and cache minus those of sampling as many sequences
    (``num_return_sequences = num_beams``), the decoding vramdoc computes."""
    warnings.filterwarnings("ignore")
    rg.install_cuda_autocast_policy()
    for run in RUNS:
        fields = {k: v for k, v in dataclasses.asdict(run).items()
                  if k != "num_beams"}
        sampling = type(run)(**dict(fields, num_return_sequences=run.num_beams, num_beams=1))
        beam, samp = rg.replay(run), rg.replay(sampling)
        diff = {k: beam[k] - samp[k] for k in
                ("prefill_peak_bytes", "decode_peak_bytes", "kv_cache_bytes")}
        print(f"{run.name}: beams − sampling: prefill {diff['prefill_peak_bytes']:+d} B of "
              f"{beam['prefill_peak_bytes']}, decode {diff['decode_peak_bytes']:+d} B of "
              f"{beam['decode_peak_bytes']}, cache {diff['kv_cache_bytes']:+d} B", flush=True)
    return 0


if __name__ == "__main__":
    if sys.argv[1:] == ["--versus-sampling"]:
        sys.exit(versus_sampling())
    sys.exit(rg.main(runs=RUNS, generator="tools/hf_replay/replay_generate_beams.py"))
