"""Hugging Face cases on a real device: GPT-2 training steps, ``generate``, LoRA with PEFT.

Every model is built from a config with random weights (no download): memory
does not depend on values. Models are built directly on the device.
"""

from __future__ import annotations

import torch

from memory import DTYPES, Memory, trainer_ctx

# --- GPT-2 training, as tools/hf_replay/replay_gpt2.py replays it -----------------------


def shrink_gpt2_run(r: dict) -> dict:
    """A tiny stand-in of an ``hf_gpt2_replay.json`` run for ``--dry-run``."""
    r = dict(r)
    r.update(n_layer=2, n_head=2, n_embd=32, vocab_size=97, block_size=32, batch_size=2)
    return r


def gpt2_train_case(r: dict, dev: torch.device, mem: Memory) -> dict:
    """Two steps of ``Trainer``'s loop over ``GPT2LMHeadModel`` (fp32 weights, fused AdamW)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    dtype = DTYPES[r["dtype"]]
    cfg = GPT2Config(
        n_layer=r["n_layer"],
        n_head=r["n_head"],
        n_embd=r["n_embd"],
        vocab_size=r["vocab_size"],
        n_positions=r["block_size"],
        resid_pdrop=r["dropout"],
        embd_pdrop=r["dropout"],
        attn_pdrop=r["dropout"],
    )
    cfg._attn_implementation = r["attn_implementation"]
    with torch.device(dev):
        model = GPT2LMHeadModel(cfg)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=dev.type == "cuda")
    X = torch.randint(r["vocab_size"], (r["batch_size"], r["block_size"]), device=dev)
    out: dict = {"weights_allocated_bytes": mem.allocated()}
    peaks = []
    for _step in range(2):
        mem.reset_peak()
        for _micro in range(r["accumulation"]):
            with trainer_ctx(dev, dtype):
                res = model(input_ids=X, labels=X)
            loss = res.loss / r["accumulation"]
            del res
            loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        peaks.append(mem.peak())
    out["first_step_peak_bytes"], out["train_peak_bytes"] = peaks
    out["allocated_after_step_bytes"] = mem.allocated()
    out["max_reserved_bytes"] = mem.peak_reserved()
    out["params_total"] = sum(p.numel() for p in model.parameters())
    out["attn_implementation"] = model.config._attn_implementation
    return out


# --- generate -------------------------------------------------------------------------

# Model shapes: GPT-2 124M as published; Llama 3.2 1B's shape (GQA 32/8, head 64, vocabulary
# 128256, tied) with 8 of its 16 layers; Mistral 7B's layer shape (GQA 32/8, 14336 MLP) with 4
# of its 32 layers and a 1024-token sliding window; Gemma 2 2B's shape (8 heads, 4 KV heads,
# head_dim 256, vocabulary 256000, alternating sliding/global layers) with 6 of its 26 layers
# and a 1024-token window. The windows are cut so that 2048-token prompts exceed them.
GENERATE_MODELS = {
    "gpt2-124m": ("gpt2", dict()),
    "llama-3.2-1b-shape-8l": (
        "llama",
        dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=8,
             num_attention_heads=32, num_key_value_heads=8, head_dim=64, vocab_size=128256,
             max_position_embeddings=4096, tie_word_embeddings=True),
    ),
    "mistral-7b-shape-4l-sw1024": (
        "mistral",
        dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=4,
             num_attention_heads=32, num_key_value_heads=8, head_dim=128, vocab_size=32000,
             max_position_embeddings=4096, sliding_window=1024),
    ),
    "gemma2-2b-shape-6l-sw1024": (
        "gemma2",
        dict(hidden_size=2304, intermediate_size=9216, num_hidden_layers=6,
             num_attention_heads=8, num_key_value_heads=4, head_dim=256, vocab_size=256000,
             max_position_embeddings=8192, sliding_window=1024),
    ),
}

# (prompt tokens, new tokens, batch, cache). GPT-2 has 1024 positions: 768 + 256 instead of
# 2048 + 256 (the name says which ran).
GENERATE_RUNS = [
    (512, 512, 1, "dynamic"),
    (512, 512, 8, "dynamic"),
    (2048, 256, 1, "dynamic"),
    (2048, 256, 8, "dynamic"),
    (512, 512, 8, "static"),
    (2048, 256, 8, "static"),
]
QUICK_RUNS = [(512, 64, 8, "dynamic"), (2048, 32, 8, "static")]
DRY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, head_dim=16, vocab_size=97, max_position_embeddings=256)


def hf_config(family: str, kw: dict, dry: bool):
    """The model's config and the keyword arguments it was made from (shrunk for ``--dry-run``)."""
    from transformers import AutoConfig, GPT2Config

    kw = dict(kw)
    if family == "gpt2":
        if dry:
            kw = dict(n_layer=2, n_head=2, n_embd=32, vocab_size=97, n_positions=256)
        return GPT2Config(**kw), kw
    if dry:
        kw.update(DRY)
        if "sliding_window" in kw:
            kw["sliding_window"] = 16
    return AutoConfig.for_model(family, **kw), kw


def cache_bytes(cache) -> dict:
    """The KV cache's tensor bytes (unique storages) and its classes."""
    seen: set[int] = set()
    total = 0
    layer_kinds: list[str] = []

    def visit(obj) -> None:
        nonlocal total
        if isinstance(obj, torch.Tensor):
            ptr = obj.untyped_storage().data_ptr()
            if ptr not in seen:
                seen.add(ptr)
                total += obj.untyped_storage().nbytes()
        elif isinstance(obj, (list, tuple)):
            for o in obj:
                visit(o)

    layers = getattr(cache, "layers", None)
    if layers is not None:
        for layer in layers:
            layer_kinds.append(type(layer).__name__)
            for value in vars(layer).values():
                visit(value)
    else:  # older caches: key_cache / value_cache lists, or legacy tuples
        for value in (vars(cache) if not isinstance(cache, tuple) else {"t": cache}).values():
            visit(value)
    kinds = sorted(set(layer_kinds))
    return {"kv_cache_bytes": total, "cache_class": type(cache).__name__, "cache_layers": kinds}


def generate_cases(dev: torch.device, mem: Memory, dry: bool, quick: bool, only, log):
    """Every (model, run) pair: one entry each; the model is built once per family."""
    from transformers import AutoModelForCausalLM, LogitsProcessor, LogitsProcessorList

    from memory import run_case

    class PrefillProbe(LogitsProcessor):
        """Called once per generated token, after the forward: at the first call the
        peak so far is the prefill's; the window is then reset for the decoding steps."""

        def __init__(self):
            self.calls = 0
            self.prefill_peak = None
            self.after_prefill = None

        def __call__(self, input_ids, scores):
            if self.calls == 0:
                self.prefill_peak = mem.peak()
                self.after_prefill = mem.allocated()
                mem.reset_peak()
            self.calls += 1
            return scores

    runs = QUICK_RUNS if quick else GENERATE_RUNS
    if dry:
        runs = [(24, 6, 1, "dynamic"), (24, 6, 2, "static")]
    entries = []
    for model_name, (family, kw) in GENERATE_MODELS.items():
        cfg, kw = hf_config(family, kw, dry)
        model_runs = [
            # GPT-2 has n_positions (1024) positions: the prompt is cut to fit the run.
            (min(p, cfg.n_positions - n) if family == "gpt2" else p, n, b, c)
            for p, n, b, c in runs
        ]
        names = [f"{model_name}-p{p}-n{n}-b{b}-{c}" for p, n, b, c in model_runs]
        if only and not any(o in n for o in only for n in names):
            continue
        mem.settle()
        with torch.device(dev):
            model = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        model.eval()
        weights = mem.allocated()
        params = sum(p.numel() for p in model.parameters())
        for (prompt, new, batch, cache), name in zip(model_runs, names):
            if only and not any(o in name for o in only):
                continue

            def body(prompt=prompt, new=new, batch=batch, cache=cache):
                probe = PrefillProbe()
                ids = torch.randint(cfg.vocab_size, (batch, prompt), device=dev)
                extra = {"cache_implementation": "static"} if cache == "static" else {}
                # transformers compiles the forward on CUDA when the cache is static;
                # eager is what is measured here (and what the replays replay).
                mem.reset_peak()
                out = model.generate(
                    input_ids=ids, attention_mask=torch.ones_like(ids), do_sample=False,
                    max_new_tokens=new, min_new_tokens=new, pad_token_id=0,
                    logits_processor=LogitsProcessorList([probe]),
                    return_dict_in_generate=True, disable_compile=True, **extra,
                )
                decode_peak = mem.peak()
                rec = {
                    "family": family,
                    "config": kw,
                    "compiled": False,
                    "weights_dtype": "bfloat16",
                    "params_total": params,
                    "weights_allocated_bytes": weights,
                    "prompt_tokens": prompt,
                    "max_new_tokens": new,
                    "batch_size": batch,
                    "cache": cache,
                    "attn_implementation": model.config._attn_implementation,
                    "prefill_peak_bytes": probe.prefill_peak,
                    "allocated_after_prefill_bytes": probe.after_prefill,
                    "decode_peak_bytes": decode_peak,
                    "allocated_after_generate_bytes": mem.allocated(),
                    "max_reserved_bytes": mem.peak_reserved(),
                    "tokens_out": int(out.sequences.size(1)),
                }
                if rec["prefill_peak_bytes"] is not None:
                    rec["peak_bytes"] = max(rec["prefill_peak_bytes"], decode_peak)
                rec.update(cache_bytes(out.past_key_values))
                return rec

            entries.append(run_case(mem, name, body, log))
        del model
    return entries


# --- LoRA with PEFT -------------------------------------------------------------------

LORA_BASE = dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=8,
                 num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                 vocab_size=128256, max_position_embeddings=4096, tie_word_embeddings=True)
LORA_RUNS = [
    ("lora-llama-1b-shape-8l-r8-qv-b4-s1024", 8, ["q_proj", "v_proj"]),
    ("lora-llama-1b-shape-8l-r64-qv-b4-s1024", 64, ["q_proj", "v_proj"]),
    ("lora-llama-1b-shape-8l-r8-all-linear-b4-s1024", 8, "all-linear"),
    ("lora-llama-1b-shape-8l-r64-all-linear-b4-s1024", 64, "all-linear"),
]


def lora_case(rank: int, targets, dev: torch.device, mem: Memory, dry: bool) -> dict:
    """``get_peft_model`` on bf16 weights, then two steps as ``Trainer(bf16=True)`` runs them."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoConfig, AutoModelForCausalLM

    kw = dict(LORA_BASE, **(DRY if dry else {}))
    batch, seq = (2, 32) if dry else (4, 1024)
    cfg = AutoConfig.for_model("llama", **kw)
    with torch.device(dev):
        base = AutoModelForCausalLM.from_config(cfg, dtype=torch.bfloat16)
        weights = mem.allocated()
        model = get_peft_model(
            base, LoraConfig(r=rank, lora_alpha=16, target_modules=targets, task_type="CAUSAL_LM")
        )
    model.train()
    trainable = [p for p in model.parameters() if p.requires_grad]
    opt = torch.optim.AdamW(trainable, lr=1e-4, fused=dev.type == "cuda")
    X = torch.randint(cfg.vocab_size, (batch, seq), device=dev)
    out: dict = {
        "config": kw,
        "weights_dtype": "bfloat16",
        "lora_rank": rank,
        "lora_alpha": 16,
        "lora_targets": targets if isinstance(targets, str) else ",".join(targets),
        "batch_size": batch,
        "seq_len": seq,
        "autocast": "bfloat16",
        "weights_allocated_bytes": weights,
        "with_adapters_allocated_bytes": mem.allocated(),
        "params_total": sum(p.numel() for p in model.parameters()),
        "params_trainable": sum(p.numel() for p in trainable),
        "adapter_dtypes": sorted({str(p.dtype).replace("torch.", "") for p in trainable}),
    }
    peaks = []
    for _step in range(2):
        mem.reset_peak()
        with trainer_ctx(dev, torch.bfloat16):
            res = model(input_ids=X, labels=X)
        loss = res.loss
        del res
        loss.backward()
        torch.nn.utils.clip_grad_norm_(trainable, 1.0)
        opt.step()
        opt.zero_grad(set_to_none=True)
        peaks.append(mem.peak())
    out["first_step_peak_bytes"], out["train_peak_bytes"] = peaks
    out["allocated_after_step_bytes"] = mem.allocated()
    out["max_reserved_bytes"] = mem.peak_reserved()
    return out
