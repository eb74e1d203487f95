"""The ``generate`` runs of every Llama-family catalog model (``data/models/llama.yaml``,
``mistral.yaml``, ``qwen.yaml``, ``phi3.yaml``): each model's own config, as the catalog writes
it, with 2 of its layers (every block is the same, so the per-layer terms are the full model's),
generating with a dynamic and with a static cache; and, for the models with a sliding window,
a context that ends exactly at the window (``prompt + new = sliding_window``: the last step's
keys still fit the window, so transformers still passes SDPA no mask) and a prompt half a window
past it (both caches: the prefill's SDPA gets the sliding mask).

``tests/it/hf_generate_catalog.rs`` finds each model's runs by ``model``, checks the config is
the catalog's, and holds vramdoc's estimate of that config (``--model config.json``) to them.
"""

from __future__ import annotations

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
FILES = ["llama.yaml", "mistral.yaml", "qwen.yaml", "phi3.yaml"]
LAYERS = 2


def catalog_models() -> list[dict]:
    """Every model of the Llama-family catalog files, in file order."""
    models = []
    for name in FILES:
        models += yaml.safe_load((ROOT / "data" / "models" / name).read_text())["models"]
    return models


def catalog_runs(Run) -> list:
    """The runs, as ``replay_generate.Run`` values (passed in: that module imports this one)."""
    runs = []
    for m in catalog_models():
        config = dict(m["config"])
        family = config.pop("model_type")
        config["num_hidden_layers"] = LAYERS
        heads = config["num_attention_heads"]
        shape = dict(n_layer=LAYERS, n_head=heads, n_embd=config["hidden_size"],
                     vocab_size=config["vocab_size"],
                     n_positions=config["max_position_embeddings"], family=family,
                     config=tuple(config.items()), model=m["id"])
        settings = [(320, 6, 2, "dynamic"), (192, 6, 3, "static")]
        window = config.get("sliding_window")
        if window and window <= config["max_position_embeddings"]:
            settings += [(window - 7, 7, 1, "dynamic"), (window - 7, 7, 1, "static")]
            # A prompt half a window past it (the prefill masked, the cache cut to the window).
            settings += [(window + window // 2, 4, 2, cache) for cache in ("dynamic", "static")]
        for p, n, b, cache in settings:
            runs.append(Run(f"{m['id']}-{LAYERS}l-p{p}-n{n}-b{b}-{cache}", **shape,
                            prompt_tokens=p, max_new_tokens=n, batch_size=b, cache=cache))
    return runs
