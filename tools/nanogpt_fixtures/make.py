"""Writes the nanoGPT file fixtures under tests/data/nanogpt/ (the Rust tests never need Python).

- data/shakespeare_char/meta.pkl: what nanoGPT's data/shakespeare_char/prepare.py writes
  (vocab_size 65, itos, stoi), with the standard-library pickle, protocol as prepare.py uses.
- out-gpt2-xl/ckpt.pt: what train.py's torch.save(checkpoint, ...) writes after fine-tuning
  GPT-2 XL (config/finetune_shakespeare.py), with tiny stand-in tensors: the same zip layout,
  the same persistent storage references and the same model_args, iter_num, config keys.
  Needs torch (see tools/nanogpt_replay/README.md for installing it).

Usage: python tools/nanogpt_fixtures/make.py [--only meta]
"""
import collections
import os
import pickle
import sys

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "data", "nanogpt")


def meta():
    chars = sorted(set("\n !$&',-.3:;?ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"))
    assert len(chars) == 65
    path = os.path.join(ROOT, "data", "shakespeare_char", "meta.pkl")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        pickle.dump({"vocab_size": len(chars), "itos": dict(enumerate(chars)),
                     "stoi": {c: i for i, c in enumerate(chars)}}, f)


def checkpoint():
    import torch
    model = collections.OrderedDict(
        (name, torch.zeros(2, 2)) for name in ("transformer.wte.weight", "transformer.h.0.attn.c_attn.weight", "lm_head.weight"))
    optimizer = {"state": {i: {"step": torch.tensor(20.0), "exp_avg": torch.zeros(2, 2), "exp_avg_sq": torch.zeros(2, 2)}
                           for i in range(2)},
                 "param_groups": [{"lr": 3e-5, "betas": (0.9, 0.99), "weight_decay": 0.1, "params": [0, 1]}]}
    ckpt = {
        "model": model,
        "optimizer": optimizer,
        "model_args": dict(n_layer=48, n_head=25, n_embd=1600, block_size=1024, bias=True, vocab_size=50257, dropout=0.1),
        "iter_num": 20,
        "best_val_loss": torch.tensor(1.25),
        "config": {"init_from": "gpt2-xl", "dataset": "shakespeare", "batch_size": 1, "block_size": 1024},
    }
    path = os.path.join(ROOT, "out-gpt2-xl", "ckpt.pt")
    os.makedirs(os.path.dirname(path), exist_ok=True)
    torch.save(ckpt, path)


if __name__ == "__main__":
    meta()
    if "--only" not in sys.argv:
        checkpoint()
