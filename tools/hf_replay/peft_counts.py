"""PEFT's own LoRA parameter counts for every model of vramdoc's catalog whose family the
estimator computes LoRA for (GPT-2, the Llama family, Gemma 2 and Gemma 3): the ground truth of
`tests/it/hf_lora.rs`'s trainable counts.

Usage::

    python tools/hf_replay/peft_counts.py --out tests/data/peft_lora_counts.json
    python tools/hf_replay/peft_counts.py --moe --out tests/data/peft_moe_lora_counts.json

``--moe``: the mixtures of experts instead (Mixtral, Qwen1.5-MoE, Qwen3-MoE), where PEFT has no
default targets and converts the expert names of transformers 4 to the experts' 3-D parameters
(``lora.ParamWrapper``): ``all-linear``, the attention's projections, and the router with the
experts (Qwen1.5-MoE: the shared expert and its gate). Adapted: each module, or parameter of a
``ParamWrapper``, by its path in a block.

Each catalog entry's ``config`` (``data/models/*.yaml``) is given to transformers'
``AutoConfig.for_model``; the model is built on the meta device (no memory, no weights) by
``AutoModelForCausalLM.from_config`` and wrapped by ``peft.get_peft_model`` with
``LoraConfig(r, target_modules)`` for a few ranks and targets: PEFT's default for the
``model_type`` (none for Phi-3, where PEFT raises), ``all-linear``, and the attention's
projections. Recorded: the parameters with adapters, the trainable ones, and the modules PEFT
adapted in one block.
"""

from __future__ import annotations

import argparse
import json
import sys
import warnings
from pathlib import Path

import torch
import yaml

ROOT = Path(__file__).resolve().parents[2]
COMPUTED = {"gpt2", "llama", "mistral", "qwen2", "qwen3", "phi3"}
COMPUTED |= {"gemma2", "gemma3_text"}
MOE = {"mixtral", "qwen2_moe", "qwen3_moe"}
# The router and experts by the names PEFT takes for each mixture of experts.
MOE_MLP = {
    "mixtral": ["gate", "w1", "w3", "w2"],
    "qwen3_moe": ["gate", "gate_proj", "up_proj", "down_proj"],
    "qwen2_moe": ["gate_proj", "up_proj", "down_proj", "shared_expert_gate"],
}
# The attention's projections as each model_type names them.
ATTENTION = {"gpt2": ["c_attn", "c_proj"], "phi3": ["qkv_proj", "o_proj"]}
LLAMA_ATTENTION = ["q_proj", "k_proj", "v_proj", "o_proj"]


def catalog(types=COMPUTED) -> list[dict]:
    """The catalog entries of the families ``types``, in file order."""
    out = []
    for path in sorted((ROOT / "data" / "models").glob("*.yaml")):
        for entry in yaml.safe_load(path.read_text())["models"]:
            if entry["config"]["model_type"] in types:
                out.append(entry)
    return out


def count(entry: dict, rank: int, targets) -> dict:
    """PEFT's counts for one entry, rank and targets (``None``: PEFT's default)."""
    import transformers
    from peft import LoraConfig, get_peft_model

    cfg = dict(entry["config"])
    model_type = cfg.pop("model_type")
    config = transformers.AutoConfig.for_model(model_type, **cfg)
    with torch.device("meta"):
        model = transformers.AutoModelForCausalLM.from_config(config)
    lora = LoraConfig(r=rank, lora_alpha=2 * rank, target_modules=targets,
                      fan_in_fan_out=model_type == "gpt2", task_type="CAUSAL_LM")
    model = get_peft_model(model, lora)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    total = sum(p.numel() for p in model.parameters())
    adapted = sorted({
        block_path(name, mod)
        for name, mod in model.named_modules()
        if (".layers.0." in name or ".h.0." in name) and hasattr(mod, "lora_A")
        and len(mod.lora_A) > 0
    })
    return {"rank": rank, "targets": targets if isinstance(targets, str) else
            (",".join(targets) if targets else None),
            "params": total, "trainable": trainable, "adapted": adapted}


def block_path(name: str, mod) -> str:
    """A module's path inside its block; a ``ParamWrapper``'s with its parameter (nested
    wrappers of one module are one path each, ``base_layer`` dropped)."""
    path = name.split(".layers.0.", 1)[-1].split(".h.0.", 1)[-1]
    path = ".".join(p for p in path.split(".") if p != "base_layer")
    param = getattr(mod, "parameter_name", None)
    return f"{path}.{param}" if param else path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--moe", action="store_true", help="the mixtures of experts")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import peft
    import transformers

    models = []
    for entry in catalog(MOE if args.moe else COMPUTED):
        model_type = entry["config"]["model_type"]
        attention = ATTENTION.get(model_type, LLAMA_ATTENTION)
        combos = [(16, "all-linear"), (64, attention)]
        if model_type in MOE:
            combos.append((8, MOE_MLP[model_type]))
        elif model_type != "phi3":
            combos.insert(0, (8, None))
        counts = [count(entry, r, t) for r, t in combos]
        print(f"{entry['id']}: {[c['trainable'] for c in counts]}", flush=True)
        models.append({"id": entry["id"], "model_type": model_type, "counts": counts})
    doc = {
        "generator": "tools/hf_replay/peft_counts.py",
        "transformers": transformers.__version__,
        "peft": peft.__version__,
        "models": models,
    }
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
