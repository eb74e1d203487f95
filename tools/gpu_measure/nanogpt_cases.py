"""nanoGPT's train.py steps and sample.py runs on a real device, named as in the replays.

Each case takes its settings from an entry of ``tests/data/nanogpt_replay.json``
(``configs``) or ``tests/data/nanogpt_sample_replay.json`` (``samplings``) and
runs what the replay replays (``tools/nanogpt_replay/replay.py`` and
``sample_replay.py``), with ``tools/nanogpt_replay/model.py``'s GPT, on real
tensors: same loop, same variables kept alive, same order.

Two things are built directly on the device instead of on the host and moved:
the live tensors at the end are the same (a GPT-2 fine-tune's model cropped to
``block_size`` is a GPT of that block size; with flash attention it has no
masks, with manual attention ``model.to(device)`` copies the cropped s × s
masks), and the host-side temporaries are not GPU memory anyway. For
``init_from='resume'`` sampling the checkpoint (``raw_model.state_dict()`` and
the fused AdamW's state: two fp32 moments and an fp32 ``step`` per parameter
tensor) is made on the device as ``torch.load(map_location=device)`` leaves it.
Weights are random: memory does not depend on values.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from memory import DTYPES, Memory, train_ctx
from model import GPT, GPTConfig, apply_lora, freeze_embeddings

EVAL_ITERS = 2  # as the replay: two batches per split
GRAD_CLIP = 1.0


def shrink(s: dict) -> dict:
    """A tiny stand-in of a scenario for ``--dry-run`` on the CPU (code paths only)."""
    s = dict(s)
    s.update(n_layer=2, n_head=2, n_embd=32, vocab_size=min(s["vocab_size"], 97))
    s["block_size"] = min(s["block_size"], 32)
    for key in ("batch_size", "eval_batch_size"):
        if key in s:
            s[key] = min(s[key], 2)
    if "prompt_tokens" in s:
        s["prompt_tokens"] = min(s["prompt_tokens"], 40)
        s["max_new_tokens"] = min(s["max_new_tokens"], 3)
    return s


def gpt_config(s: dict, dropout: float) -> GPTConfig:
    return GPTConfig(
        block_size=s["block_size"],
        vocab_size=s["vocab_size"],
        n_layer=s["n_layer"],
        n_head=s["n_head"],
        n_embd=s["n_embd"],
        dropout=dropout,
        bias=s["bias"],
        flash=s["flash"],
    )


def train_case(s: dict, dev: torch.device, mem: Memory) -> dict:
    """train.py for two iterations (evaluation at iteration 0); peaks as the replay takes them."""
    dtype = DTYPES[s["dtype"]]
    with torch.device(dev):
        model = GPT(gpt_config(s, s["dropout"]))
        if s.get("freeze_embeddings"):
            freeze_embeddings(model)
        if s.get("lora_rank"):
            # PEFT makes the adapters on the base layer's device.
            apply_lora(model, s["lora_rank"], tuple(s["lora_targets"].split(",")))
    model.train()
    scaler = torch.amp.GradScaler(dev.type, enabled=dtype == torch.float16)
    optimizer = model.configure_optimizers(0.1, 6e-4, (0.9, 0.95), fused=dev.type == "cuda")
    ctx = train_ctx(dev, dtype)
    vocab, block = s["vocab_size"], s["block_size"]
    accum = s["gradient_accumulation_steps"]

    def get_batch(batch: int):
        x = torch.randint(vocab, (batch, block), device=dev)
        y = torch.randint(vocab, (batch, block), device=dev)
        return x, y

    def estimate_loss() -> None:
        # train.py's estimate_loss(): its tensors die when it returns.
        with torch.no_grad():
            model.eval()
            for _split in ("train", "val"):
                for _k in range(EVAL_ITERS):
                    xb, yb = get_batch(s["eval_batch_size"])
                    with ctx:
                        _logits, loss = model(xb, yb)
                    loss.item()
            model.train()

    X, Y = get_batch(s["batch_size"])
    out: dict = {"setup_allocated_bytes": mem.allocated()}
    for iter_num in range(2):
        if iter_num == 0:
            mem.reset_peak()
            estimate_loss()
            out["eval_peak_bytes"] = mem.peak()
        mem.reset_peak()
        for _micro in range(accum):
            with ctx:
                logits, loss = model(X, Y)
                loss = loss / accum
            X, Y = get_batch(s["batch_size"])
            scaler.scale(loss).backward()
        scaler.unscale_(optimizer)
        torch.nn.utils.clip_grad_norm_(model.parameters(), GRAD_CLIP)
        scaler.step(optimizer)
        scaler.update()
        optimizer.zero_grad(set_to_none=True)
        key = "train_peak_bytes" if iter_num == 1 else "first_iteration_peak_bytes"
        out[key] = mem.peak()
    out["allocated_after_step_bytes"] = mem.allocated()
    out["max_reserved_bytes"] = mem.peak_reserved()
    out["params_total"] = sum(p.numel() for p in model.parameters())
    out["loss"] = float(loss.item())
    return out


def checkpoint_on_device(model: GPT) -> dict:
    """What ``torch.load(ckpt_path, map_location=device)`` leaves for a train.py checkpoint.

    The model's state dict (persistent mask buffers included; the tied
    wte/lm_head weight stored once) and the fused AdamW's state per parameter
    tensor: ``exp_avg`` and ``exp_avg_sq`` in fp32 and an fp32 ``step`` tensor.
    """
    memo: dict[int, torch.Tensor] = {}
    state = {}
    for key, t in model.state_dict().items():
        ptr = t.untyped_storage().data_ptr()
        if ptr not in memo:
            memo[ptr] = t.detach().clone()
        state[key] = memo[ptr]
    moments = {}
    for i, p in enumerate(q for g in model.optimizer_groups(0.1) for q in g["params"]):
        moments[i] = {
            "step": torch.tensor(1.0, dtype=torch.float32, device=p.device),
            "exp_avg": torch.zeros_like(p, dtype=torch.float32),
            "exp_avg_sq": torch.zeros_like(p, dtype=torch.float32),
        }
    return {"model": state, "optimizer": {"state": moments}}


@torch.no_grad()
def generate(model: GPT, idx, max_new_tokens: int, temperature: float = 1.0, top_k=None):
    """nanoGPT's ``GPT.generate``, line for line (no KV cache; context cropped to block_size)."""
    for _ in range(max_new_tokens):
        block = model.config.block_size
        idx_cond = idx if idx.size(1) <= block else idx[:, -block:]
        logits, _ = model(idx_cond)
        logits = logits[:, -1, :] / temperature
        if top_k is not None:
            v, _ = torch.topk(logits, min(top_k, logits.size(-1)))
            logits[logits < v[:, [-1]]] = -float("Inf")
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


def sample_case(s: dict, dev: torch.device, mem: Memory) -> dict:
    """sample.py: load (checkpoint kept for ``resume``), then ``num_samples`` generations."""
    dtype = DTYPES[s["dtype"]]
    with torch.device(dev):
        model = GPT(gpt_config(s, 0.0))
        checkpoint = checkpoint_on_device(model) if s["init_from"] == "resume" else None
    model.eval()
    out: dict = {"load_bytes": mem.allocated()}
    x = torch.randint(s["vocab_size"], (1, s["prompt_tokens"]), device=dev)
    mem.reset_peak()
    with torch.no_grad():
        with train_ctx(dev, dtype):
            for _k in range(s["num_samples"]):
                y = generate(model, x, s["max_new_tokens"], temperature=0.8, top_k=s["top_k"])
    out["peak_bytes"] = mem.peak()
    out["allocated_after_bytes"] = mem.allocated()
    out["max_reserved_bytes"] = mem.peak_reserved()
    out["params_total"] = sum(p.numel() for p in model.parameters())
    out["tokens_out"] = int(y.size(1))
    del checkpoint
    return out
