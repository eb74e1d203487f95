#!/usr/bin/env python3
"""Replays how PyTorch's ZeroRedundancyOptimizer (ZeRO-1) partitions nanoGPT's parameters.

Runs PyTorch's own `ZeroRedundancyOptimizer._partition_parameters` (the greedy partition: each
param group's tensors sorted by numel, largest first, each put whole on the rank with the fewest
elements so far; the per-rank sizes carry over from one group to the next) on the parameter lists
nanoGPT's `configure_optimizers` builds: the weight-decay group (every tensor of two or more
dimensions, in `named_parameters()` order, the tied `wte`/`lm_head` once) and then the no-decay
group (biases and LayerNorm weights). The tensors live on the `meta` device, so nothing is
allocated, and no process group is needed: the method only reads `param_groups` and `world_size`.

Writes tests/data/zero1_partition.json, which `cargo test` checks the estimator's partition
against. Regenerate with any PyTorch 2.x (CPU or CUDA build):

    python3 tools/zero1_partition.py > tests/data/zero1_partition.json
"""

import json
import sys

import torch
from torch.distributed.optim import ZeroRedundancyOptimizer

# (name, n_layer, n_embd, block_size, vocab_size, bias, world sizes)
CASES = [
    ("nanogpt-124m", 12, 768, 1024, 50304, False, [2, 4, 8, 16]),
    ("gpt2-124m-pretrained", 12, 768, 1024, 50257, True, [8]),
    ("shakespeare-char", 6, 384, 256, 65, False, [4]),
    ("gpt2-xl", 48, 1600, 1024, 50257, True, [8, 64]),
]


def named_parameters(n_layer, h, block, vocab, bias):
    """nanoGPT's GPT.named_parameters() shapes, in order (lm_head.weight is wte.weight)."""
    out = [("transformer.wte.weight", (vocab, h)), ("transformer.wpe.weight", (block, h))]
    for i in range(n_layer):
        p = f"transformer.h.{i}."
        out.append((p + "ln_1.weight", (h,)))
        if bias:
            out.append((p + "ln_1.bias", (h,)))
        out.append((p + "attn.c_attn.weight", (3 * h, h)))
        if bias:
            out.append((p + "attn.c_attn.bias", (3 * h,)))
        out.append((p + "attn.c_proj.weight", (h, h)))
        if bias:
            out.append((p + "attn.c_proj.bias", (h,)))
        out.append((p + "ln_2.weight", (h,)))
        if bias:
            out.append((p + "ln_2.bias", (h,)))
        out.append((p + "mlp.c_fc.weight", (4 * h, h)))
        if bias:
            out.append((p + "mlp.c_fc.bias", (4 * h,)))
        out.append((p + "mlp.c_proj.weight", (h, 4 * h)))
        if bias:
            out.append((p + "mlp.c_proj.bias", (h,)))
    out.append(("transformer.ln_f.weight", (h,)))
    if bias:
        out.append(("transformer.ln_f.bias", (h,)))
    return out


def partition(params, world):
    """PyTorch's own partition of nanoGPT's two param groups among `world` ranks."""
    tensors = {name: torch.empty(shape, device="meta") for name, shape in params}
    decay = [t for t in tensors.values() if t.dim() >= 2]
    no_decay = [t for t in tensors.values() if t.dim() < 2]
    zero = object.__new__(ZeroRedundancyOptimizer)
    zero.param_groups = [
        {"params": decay, "weight_decay": 0.1},
        {"params": no_decay, "weight_decay": 0.0},
    ]
    zero.world_size = world
    zero._partition_parameters_cache = []
    per_rank = ZeroRedundancyOptimizer._partition_parameters(zero)
    return [sum(p.numel() for g in groups for p in g["params"]) for groups in per_rank]


def main():
    cases = []
    for name, n_layer, h, block, vocab, bias, worlds in CASES:
        params = named_parameters(n_layer, h, block, vocab, bias)
        total = sum(torch.Size(s).numel() for _, s in params)
        for world in worlds:
            cases.append(
                {
                    "name": name,
                    "n_layer": n_layer,
                    "n_embd": h,
                    "block_size": block,
                    "vocab_size": vocab,
                    "bias": bias,
                    "world_size": world,
                    "total_elements": total,
                    "rank_elements": partition(params, world),
                }
            )
    json.dump({"torch_version": torch.__version__, "cases": cases}, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()
