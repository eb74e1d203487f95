"""Compare the replay with the closed forms of the original estimator notes.

``python tools/nanogpt_replay/closed_form.py [tests/data/nanogpt_replay.json]``
prints a Markdown table (used in ``tests/data/README.md``): every scenario's
replayed train and eval peaks next to the notes' formulas, with the
difference in percent. Needs no PyTorch. The formulas, in bytes, with P the
unique parameters, P_lin the weights of all Linear layers (lm_head included),
sbh = block * batch * n_embd, sbV = block * batch * vocab (docs/memory-model.md
has the corrected forms and says what these got wrong):

* train, autocast: 16P + 2 P_lin + L*36 sbh + 6 sbh + 14 sbV
* train, fp32:     16P + L*64 sbh + 8 sbh + 16 sbV
* accumulation 1: 12P instead of 16P
* manual attention: + L * n_head * s^2 * b * (6, fp32: 8) + 4 s^2
* dropout > 0: + L * 2 sbh (+ L * n_head * s^2 * b for manual attention)
* eval: 4P + 2 P_lin + 12 sbV at the eval batch

``replay_train_peak`` / ``replay_eval_peak`` are closed forms derived from the
replay's own breakdowns (``replay.py --explain``): the peak is the largest of
a few moments of the step (end of forward, loss backward, last block's
backward, end of backward; for evaluation the loss tail, the last MLP, the
score matrices), each a sum of named tensors. They are documented term by
term in ``tests/data/README.md``.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def linear_weights(sc: dict) -> int:
    """P_lin: lm_head (tied to wte) plus four weight matrices per layer."""
    h = sc["n_embd"]
    return sc["vocab_size"] * h + sc["n_layer"] * 12 * h * h


def notes_train_peak(sc: dict, total_params: int) -> int:
    """The notes' training-step peak for one scenario."""
    L, a, h = sc["n_layer"], sc["n_head"], sc["n_embd"]
    s, b, V = sc["block_size"], sc["batch_size"], sc["vocab_size"]
    sbh, sbv = s * b * h, s * b * V
    fp32 = sc["dtype"] == "float32"
    states = (16 if sc["gradient_accumulation_steps"] > 1 else 12) * total_params
    if fp32:
        peak = states + L * 64 * sbh + 8 * sbh + 16 * sbv
    else:
        peak = states + 2 * linear_weights(sc) + L * 36 * sbh + 6 * sbh + 14 * sbv
    if not sc["flash"]:
        peak += L * a * s * s * b * (8 if fp32 else 6) + 4 * s * s
    if sc["dropout"] > 0:
        peak += L * 2 * sbh + (0 if sc["flash"] else L * a * s * s * b)
    return peak


def notes_eval_peak(sc: dict, total_params: int) -> int:
    """The notes' evaluation peak (eval batch size)."""
    sbv = sc["block_size"] * sc["eval_batch_size"] * sc["vocab_size"]
    copies = 0 if sc["dtype"] == "float32" else 2 * linear_weights(sc)
    return 4 * total_params + copies + 12 * sbv


def pct(model: int, truth: int) -> str:
    """Signed difference of ``model`` from ``truth`` in percent."""
    return f"{100.0 * (model - truth) / truth:+.1f} %"




def _terms(sc: dict, batch: int) -> dict:
    """Shared quantities of the replay-derived forms, in bytes."""
    L, a, h = sc["n_layer"], sc["n_head"], sc["n_embd"]
    s, V = sc["block_size"], sc["vocab_size"]
    fp32 = sc["dtype"] == "float32"
    e = 4 if fp32 else 2
    sbh, sbv, sb = s * batch * h, s * batch * V, s * batch
    if sc["flash"]:
        lse = 4 * a * (-(-s // 32) * 32 if fp32 else s) * batch
        attn = lse
    else:
        attn = (4 if fp32 else 6) * a * s * s * batch + s * s
    layer = (64 if fp32 else 36) * sbh + attn + 16 * sb
    if sc["dropout"] > 0:
        layer += 2 * sbh + (0 if sc["flash"] else a * s * s * batch)
    return {"a": a, "s": s,"L": L, "h": h, "V": V, "e": e, "fp32": fp32, "sbh": sbh, "sbv": sbv,
            "sb": sb, "layer": layer, "buffers": 0 if sc["flash"] else 4 * L * s * s}


def replay_train_peak(sc: dict, total_params: int) -> int:
    """max(forward end, loss backward) of the replay's last micro-step."""
    t = _terms(sc, sc["batch_size"])
    states = 12 * total_params + t["buffers"]
    if sc["gradient_accumulation_steps"] > 1:
        states += 4 * total_params
    bias_lin = 9 * t["h"] * t["L"] if sc["bias"] else 0
    copies = 0 if t["fp32"] else 2 * linear_weights(sc)
    tokens = 4 * 8 * t["sb"]  # X, Y and the prefetched next X, Y (int64)
    saved = states + copies + t["L"] * t["layer"] + 4 * t["sbh"] + 8 * t["sb"] + tokens
    # GPT.forward's locals tok_emb (fp32, 4 sbh) and pos_emb (fp32, 4 s h) and
    # the ln_f output x live until forward returns.
    locals_ = 4 * t["sbh"] + 4 * sc["block_size"] * t["h"]
    if t["fp32"]:
        fwd_end = saved + locals_ + 4 * t["sbh"] + 12 * t["sbv"]
        loss_bwd = saved + 4 * t["sbh"] + 16 * t["sbv"]
    else:
        fwd_end = saved + locals_ + 2 * bias_lin + 6 * t["sbh"] + 10 * t["sbv"]
        loss_bwd = saved + 2 * t["sbh"] + 12 * t["sbv"]
    if sc["dropout"] > 0:
        fwd_end += t["sbh"]  # the embedding dropout's mask
    # End of backward: every gradient exists, and the tied wte/lm_head
    # gradient is being summed (lm_head part + embedding part + sum, fp32);
    # with accumulation 1 the wte gradient is not yet in the 4P.
    vh = t["V"] * t["h"]
    bwd_end = (16 * total_params + t["buffers"] + 12 * vh + t["e"] * t["sbv"] + tokens
               - (4 * vh if sc["gradient_accumulation_steps"] == 1 else 0))
    # Backward through the last block's MLP output projection: all layers'
    # saved tensors, logits, the tied gradient in flight, the residual
    # gradient (fp32), c_proj's input gradient (4h wide) and its weight
    # gradient (16-bit, then fp32).
    h, e = t["h"], t["e"]
    w_grad = 4 * 4 * h * h + (0 if t["fp32"] else 2 * 4 * h * h)
    mlp_bwd = (states + copies + t["L"] * t["layer"] + 4 * t["sbh"] + 4 * e * t["sbh"]
               + e * t["sbv"] + 4 * vh + w_grad + tokens)
    return max(fwd_end, loss_bwd, bwd_end, mlp_bwd,
               _last_layer_softmax_bwd(sc, t, states, copies))


def _last_layer_softmax_bwd(sc: dict, t: dict, states: int, copies: int) -> int:
    """Manual attention: backward through the last layer's softmax.

    With a small vocabulary the sbV terms are small and the peak moves here:
    every earlier layer's saved tensors, what the last layer still keeps
    (residual, ln_1 output, q and k copies, fp32 softmax, mask), logits, the
    tied embedding gradient in flight, the last layer's new weight gradients
    (accumulation 1) and the attention gradients (2 x fp32 a s^2 b).
    """
    if sc["flash"]:
        return 0
    a, s, b, h, e = t["a"], t["s"], sc["batch_size"], t["h"], t["e"]
    sbh = t["sbh"]
    kept = 4 * sbh + e * sbh + 2 * e * sbh + 4 * a * s * s * b + s * s + 8 * t["sb"]
    grads = 0 if sc["gradient_accumulation_steps"] > 1 else 4 * 9 * h * h
    transient = 8 * a * s * s * b + 4 * sbh + e * sbh
    return (states + copies + (t["L"] - 1) * t["layer"] + kept + e * t["sbv"]
            + 4 * t["V"] * h + grads + transient + 4 * 8 * t["sb"])


def replay_eval_peak(sc: dict, total_params: int) -> int:
    """Evaluation at iteration 0 (no grads, no Adam state, ``no_grad``).

    The largest of: the loss tail (all weight copies, logits of this and the
    previous batch, log-softmax, fp32 copy, ln_f output), the last block's
    MLP (GELU input and output beside the residuals and GPT.forward's
    ``tok_emb``), and for manual attention the last block's score matrices.
    """
    t = _terms(sc, sc["eval_batch_size"])
    L, h, e, sbh, sbv = t["L"], t["h"], t["e"], t["sbh"], t["sbv"]
    # Train and eval X, Y (int64) and GPT.forward's pos_emb (fp32 s x h).
    base = (4 * total_params + t["buffers"] + 4 * t["s"] * h
            + 2 * 8 * t["s"] * (sc["batch_size"] + sc["eval_batch_size"]))
    bias_lin = 9 * h * L if sc["bias"] else 0
    # 16-bit weight copies cached when the last block's GELU runs (all but
    # the last c_proj and lm_head) and when its attention scores exist
    # (earlier blocks and the last c_attn); Linear biases are cast as well.
    bias_h = 1 if sc["bias"] else 0  # a Linear bias is as long as its output
    mlp_copies = 2 * (12 * L * h * h - 4 * h * h + bias_lin - bias_h * h)
    attn_copies = 2 * (12 * (L - 1) * h * h + 3 * h * h + bias_h * (9 * (L - 1) + 3) * h)
    if t["fp32"]:
        mlp_copies = attn_copies = 0
    # Tail: tok_emb and the ln_f output (fp32 locals of GPT.forward); under
    # no_grad the 16-bit copy of the ln_f output is gone after lm_head.
    if t["fp32"]:
        tail = base + 8 * sbh + 12 * sbv
    else:
        tail = base + 2 * (linear_weights(sc) + bias_lin) + 8 * sbh + 10 * sbv
    # tok_emb, block input, mid-block residual, ln_2 output (fp32 each),
    # c_fc output and GELU output (4h wide, activation dtype).
    mlp = base + mlp_copies + 16 * sbh + 2 * 4 * e * sbh + e * sbv
    attn = 0
    if not sc["flash"]:
        area = t["a"] * t["s"] * t["s"] * sc["eval_batch_size"]
        # At the softmax: fp32 keeps two score buffers, bf16 the masked
        # scores, their fp32 copy and the fp32 softmax, fp16 skips the copy
        # (CUDA's half-to-float kernel). At att @ v: the fp32 softmax, its
        # 16-bit cast, the v copy and the output.
        at_softmax = {"float32": 8, "bfloat16": 10, "float16": 6}[sc["dtype"]] * area
        at_value = (4 if t["fp32"] else 6) * area + 2 * e * sbh
        attn = (base + attn_copies + 12 * sbh + 3 * e * sbh + max(at_softmax, at_value)
                + e * sbv)
    return max(tail, mlp, attn)


def replay_saved_bytes(sc: dict, total_params: int) -> int:
    """Bytes autograd saves in one micro-step (parameters and buffers excluded)."""
    t = _terms(sc, sc["batch_size"])
    copies = 0 if t["fp32"] else 2 * linear_weights(sc)
    head = (8 * t["sbh"] + 4 * t["sbv"]) if t["fp32"] else (6 * t["sbh"] + 6 * t["sbv"])
    # X and Y (int64), ln_f statistics, the position indices (int64).
    small = 16 * t["sb"] + 8 * t["sb"] + 8 * sc["block_size"]
    dropout = t["sbh"] if sc["dropout"] > 0 else 0
    return t["L"] * t["layer"] + copies + head + small + dropout


def _buffers(sc: dict) -> int:
    """The fp32 causal-mask buffers (manual attention only): 4 L s^2."""
    return 0 if sc["flash"] else 4 * sc["n_layer"] * sc["block_size"] ** 2


def resume_load_peak(sc: dict, params: dict) -> int:
    """Peak of train.py's resume sequence, at ``model.to(device)``.

    ``torch.load(map_location=device)`` puts the checkpoint on the GPU: the
    weights (4P, the tied wte/lm_head once) and mask buffers, the two fp32
    Adam moments (8P) and one fp32 ``step`` per parameter tensor (fused
    AdamW). The model, built on the CPU, is then moved over (4P + buffers).
    ``optimizer.load_state_dict`` takes the checkpoint's tensors by reference
    (same dtype and device), so it adds nothing.
    """
    n_tensors = params["decay_tensors"] + params["no_decay_tensors"]
    return 16 * params["total"] + 2 * _buffers(sc) + 4 * n_tensors


def resume_retained(sc: dict, params: dict) -> int:
    """What ``checkpoint = None`` does not free: the checkpoint's weights.

    train.py's module-level ``state_dict = checkpoint['model']`` keeps them
    (4P + buffers) for the whole run; the Adam state is the optimizer's own.
    """
    return 4 * params["total"] + _buffers(sc)


def ddp_buckets(params: dict) -> int:
    """DDP's reducer buckets without ``gradient_as_bucket_view``: 4P."""
    return 4 * params["total"]


def run_forms(run: dict) -> list[tuple[str, int, int]]:
    """(figure, replay, closed form) for one entry of ``runs``."""
    sc, params = run["scenario"], run["params"]
    p = params["total"]
    n_tensors = params["decay_tensors"] + params["no_decay_tensors"]
    extra_train, extra_eval = 0, 0
    rows = []
    if sc.get("init_from") == "resume":
        kept = resume_retained(sc, params)
        rows.append(("resume load", run["resume_load_peak_bytes"], resume_load_peak(sc, params)))
        # Training already holds the Adam state; evaluation at the resumed
        # iteration holds it too (8P and the steps), unlike iteration 0.
        extra_train, extra_eval = kept, kept + 8 * p + 4 * n_tensors
    if sc.get("ddp_world_size", 1) > 1:
        rows.append(("buckets", run["ddp_bucket_bytes"], ddp_buckets(params)))
        extra_train += ddp_buckets(params)
        extra_eval += ddp_buckets(params)
    if "train_peak_bytes" in run:
        rows.append(("train", run["train_peak_bytes"], replay_train_peak(sc, p) + extra_train))
    rows.append(("eval", run["eval_peak_bytes"], replay_eval_peak(sc, p) + extra_eval))
    return rows


def runs_table(doc: dict) -> str:
    """Markdown table of the ``runs``: every figure against its closed form."""
    mib = 2**20
    rows = ["| run | figure | replay (MiB) | formula (MiB) | diff |", "|---|---|---:|---:|---:|"]
    for run in doc.get("runs", []):
        for figure, got, form in run_forms(run):
            rows.append(f"| {run['name']} | {figure} | {got / mib:.1f} | {form / mib:.1f} | "
                        f"{pct(form, got)} |")
    return "\n".join(rows)


def patched(c: dict) -> bool:
    """A fine-tune with frozen embeddings or LoRA adapters: these forms describe full training
    only; the estimator's own forms (``src/estimate/memory.rs``, ``finetune.rs``) cover the
    patches and ``tests/it/calibration.rs`` holds them to the replay."""
    sc = c["scenario"]
    return bool(sc.get("freeze_embeddings") or sc.get("lora_rank"))


def table(doc: dict, train_form, eval_form) -> str:
    """Markdown table of replay vs. one pair of closed forms (full training only)."""
    mib = 2**20
    rows = [
        "| scenario | train replay (MiB) | train formula (MiB) | diff | "
        "eval replay (MiB) | eval formula (MiB) | diff |",
        "|---|---:|---:|---:|---:|---:|---:|",
    ]
    for c in (c for c in doc["configs"] if not patched(c)):
        sc, p = c["scenario"], c["params"]["total"]
        tr, ev = c["train_peak_bytes"], c["eval_peak_bytes"]
        nt, ne = train_form(sc, p), eval_form(sc, p)
        rows.append(
            f"| {c['name']} | {tr / mib:.1f} | {nt / mib:.1f} | {pct(nt, tr)} | "
            f"{ev / mib:.1f} | {ne / mib:.1f} | {pct(ne, ev)} |"
        )
    return "\n".join(rows)


def main(argv: list[str]) -> int:
    """Print both tables for the data file named in ``argv`` (or the default)."""
    default = Path(__file__).resolve().parents[2] / "tests/data/nanogpt_replay.json"
    doc = json.loads((Path(argv[0]) if argv else default).read_text())
    print("docs/memory-model.md closed forms\n")
    print(table(doc, notes_train_peak, notes_eval_peak))
    print("\nReplay-derived closed forms (replay_train_peak, replay_eval_peak)\n")
    print(table(doc, replay_train_peak, replay_eval_peak))
    worst = max(
        abs(replay_saved_bytes(c["scenario"], c["params"]["total"])
            - c["saved_for_backward_bytes"])
        for c in doc["configs"]
        if not patched(c)
    )
    print(f"\nreplay_saved_bytes is within {worst} bytes of every saved_for_backward_bytes.")
    left_out = [c["name"] for c in doc["configs"] if patched(c)]
    if left_out:
        print(
            f"\n{len(left_out)} fine-tunes with frozen embeddings or LoRA are left out of these "
            "tables: tests/it/calibration.rs holds the estimator to them."
        )
    if doc.get("runs"):
        print("\nRuns: eval-only, resume, DDP (plain forms plus each run's own terms)\n")
        print(runs_table(doc))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
