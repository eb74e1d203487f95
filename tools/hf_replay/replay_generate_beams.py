"""Replays Hugging Face ``generate`` with beam search (``num_beams`` > 1) on fake tensors.

``replay_generate.py``'s machinery (its tracker, SDPA routing and prefill probe) with
``num_beams=B``, ``do_sample=False``: GPT-2 and a grouped-query Llama-family shape, dynamic cache.
"""

import dataclasses
import sys
import warnings
from dataclasses import dataclass

import replay_generate as rg


@dataclass(frozen=True)
class BeamRun(rg.Run):
    """One beam-search ``generate`` call."""

    num_beams: int = 1


RUNS = [
    BeamRun("gpt2-124m-p300-n40-b2-beams2-dynamic", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="dynamic", num_beams=2),
    BeamRun("gpt2-124m-p300-n40-b2-beams4-dynamic", **rg.GPT2, prompt_tokens=300,
            max_new_tokens=40, batch_size=2, cache="dynamic", num_beams=4),
    BeamRun("llama-1b-2l-p512-n32-b1-beams2-dynamic", **rg.LLAMA_2L, prompt_tokens=512,
            max_new_tokens=32, batch_size=1, cache="dynamic", num_beams=2),
    BeamRun("llama-1b-2l-p512-n32-b1-beams4-dynamic", **rg.LLAMA_2L, prompt_tokens=512,
            max_new_tokens=32, batch_size=1, cache="dynamic", num_beams=4),
]


def versus_sampling() -> int:
    """Prints each beam run's peaks and cache minus those of sampling as many sequences
    (``num_return_sequences = num_beams``), the decoding vramdoc computes."""
    warnings.filterwarnings("ignore")
    rg.install_cuda_autocast_policy()
    for run in RUNS:
        fields = {k: v for k, v in dataclasses.asdict(run).items() if k != "num_beams"}
        sampling = rg.Run(**dict(fields, num_return_sequences=run.num_beams))
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
