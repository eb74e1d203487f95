"""Does FSDP's root unit keep the tied wte/lm_head gradient alive through the backward?

nanoGPT ties ``transformer.wte.weight`` and ``lm_head.weight``: one parameter,
used first by the embedding (start of the forward) and last by the head (end
of the forward). Wrapped in FSDP the way a user would (one unit per
``Block``, the root unit holding the embeddings, the final LayerNorm and the
head), the root's gradients are reduce-scattered only when the root's
backward is complete, i.e. after the embedding's backward. The head's
backward, the first thing the backward runs, already produces the tied
weight's gradient. This replay measures whether that unsharded gradient
stays allocated from then until the embedding's backward, and how many bytes
are so held, for:

* **FSDP2** (``torch.distributed.fsdp.fully_shard``): ``fully_shard(block)``
  for each block, then ``fully_shard(model)``; defaults
  (``reshard_after_forward=True``, no ``MixedPrecisionPolicy``), and once with
  ``MixedPrecisionPolicy(param_dtype=bfloat16, reduce_dtype=float32)``.
* **FSDP1** (``FullyShardedDataParallel`` with
  ``transformer_auto_wrap_policy({Block})``, ``FULL_SHARD``, defaults).

Each run builds nanoGPT's GPT on fake CPU tensors, one rank of a ``fake``
process group (no communication), and runs train.py's micro-step: forward
under bf16 autocast, ``loss.backward()``. The :class:`StorageTracker` counts
every storage. Gradient hooks on the block outputs and on the token
embeddings' output mark the moments: *head done* (the gradient of the last
block's output exists: the head's and ``ln_f``'s backward have run) and
*embedding start* (the gradient of ``wte``'s output exists: every block's
backward has run and the embedding's is next). ``held_bytes`` is what of the
storages created between the backward's start and *head done* is still
alive at *embedding start*, beyond the loss's own gradient scalars;
``held_tied_bytes`` is the part of it with the tied weight's shape
(vocab × n_embd) or inside FSDP1's flat root gradient. For contrast,
``last_block_kept_bytes`` is what the last block's backward created that is
still alive then: its gradients after their reduce-scatter, the rank's shard.

Result (torch 2.15, every case): the root holds the tied weight's gradient
and ``ln_f``'s, whole (``(vocab·n_embd + ln_f params) ×`` the gradient's
element size: 4 bytes, 2 under the bf16 ``MixedPrecisionPolicy``), whatever
the world size; a block keeps ``4 × block params / world size``.

Writes ``tests/data/fsdp_tied_gradient.json``::

    /work/venv-replay/bin/python tools/nanogpt_replay/fsdp_replay.py \
        --out tests/data/fsdp_tied_gradient.json
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from dataclasses import dataclass
from pathlib import Path

import torch
import torch.distributed as dist
from torch._subclasses.fake_tensor import FakeTensorMode

sys.path.insert(0, str(Path(__file__).resolve().parent))
from cuda_emulation import (  # noqa: E402
    autocast,
    cuda_dropout_patch,
    cuda_sdpa,
    install_cuda_autocast_policy,
)
from model import GPT, Block, GPTConfig  # noqa: E402
from tracker import StorageTracker  # noqa: E402


@dataclass(frozen=True)
class Case:
    """One wrapped model and world size."""

    name: str
    wrapper: str  # "fsdp2", "fsdp2-mp" or "fsdp1"
    world_size: int
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int = 50304
    block_size: int = 1024
    batch_size: int = 4
    bias: bool = False


CASES = [
    Case("fsdp2-gpt2-w2", "fsdp2", 2, 12, 12, 768),
    Case("fsdp2-gpt2-w8", "fsdp2", 8, 12, 12, 768),
    Case("fsdp2-mp-gpt2-w8", "fsdp2-mp", 8, 12, 12, 768),
    Case("fsdp2-small-w2", "fsdp2", 2, 4, 4, 256, vocab_size=8192, block_size=256),
    Case("fsdp2-small-bias-w8", "fsdp2", 8, 4, 4, 256, vocab_size=8192, block_size=256, bias=True),
    Case("fsdp1-small-bias-w8", "fsdp1", 8, 4, 4, 256, vocab_size=8192, block_size=256, bias=True),
    Case("fsdp1-gpt2-w2", "fsdp1", 2, 12, 12, 768),
    Case("fsdp1-gpt2-w8", "fsdp1", 8, 12, 12, 768),
]


@contextlib.contextmanager
def fake_group(world_size: int):
    """Rank 0 of a ``fake`` process group: collectives return without moving data."""
    from torch.testing._internal.distributed.fake_pg import FakeStore

    dist.init_process_group("fake", store=FakeStore(), rank=0, world_size=world_size)
    try:
        yield
    finally:
        dist.destroy_process_group()


def wrap(model: GPT, case: Case, mesh):
    """Wrap ``model`` as a user would for ``case.wrapper``."""
    if case.wrapper.startswith("fsdp2"):
        from torch.distributed.fsdp import MixedPrecisionPolicy, fully_shard

        kw = {"mesh": mesh}
        if case.wrapper == "fsdp2-mp":
            kw["mp_policy"] = MixedPrecisionPolicy(
                param_dtype=torch.bfloat16, reduce_dtype=torch.float32
            )
        for block in model.transformer.h:
            fully_shard(block, **kw)
        fully_shard(model, **kw)
        return model
    import functools

    from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
    from torch.distributed.fsdp.wrap import transformer_auto_wrap_policy

    policy = functools.partial(transformer_auto_wrap_policy, transformer_layer_cls={Block})
    return FSDP(model, auto_wrap_policy=policy, device_id=torch.device("cpu"))


def run(case: Case) -> dict:
    """Replay one micro-step of ``case`` and measure the held gradient."""
    cfg = GPTConfig(
        block_size=case.block_size,
        vocab_size=case.vocab_size,
        n_layer=case.n_layer,
        n_head=case.n_head,
        n_embd=case.n_embd,
        dropout=0.0,
        bias=case.bias,
        flash=True,
    )
    tied_shape = (case.vocab_size, case.n_embd)
    with contextlib.ExitStack() as stack:
        stack.enter_context(fake_group(case.world_size))
        # The mesh reads tensor data: made before the fake mode starts.
        from torch.distributed.device_mesh import init_device_mesh

        mesh = init_device_mesh("cpu", (case.world_size,))
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=True))
        stack.enter_context(cuda_dropout_patch())
        model = GPT(cfg, sdpa=cuda_sdpa)
        root_params = sum(
            p.numel()
            for name, p in model.named_parameters()
            if not name.startswith("transformer.h.")
        )
        block_params = sum(p.numel() for p in model.transformer.h[-1].parameters())
        model = wrap(model, case, mesh)
        inner = model.module if hasattr(model, "module") else model
        # The tracker's keys are storage addresses, which a later storage can
        # reuse: each storage also gets a serial number (and its shape is
        # kept) when it is first counted.
        serial: dict[int, int] = {}
        shapes: dict[int, tuple[int, ...]] = {}
        orig_track = tracker.track

        def track(t: torch.Tensor) -> None:
            key = t.untyped_storage()._cdata
            new = key not in tracker.live
            orig_track(t)
            if new and key in tracker.live:
                serial[key] = len(shapes)
                shapes[serial[key]] = tuple(t.shape)

        tracker.track = track

        def live() -> dict[int, int]:
            return {serial[k]: n for k, n in tracker.live.items() if k in serial}

        marks: dict[str, dict[int, int]] = {}
        origins: dict[int, str] = {}

        def mark(name: str):
            def hook(grad: torch.Tensor) -> None:
                if name not in marks:
                    marks[name] = live()
                    for k, o in tracker.origin.items():
                        if k in serial:
                            origins[serial[k]] = o
                return None

            return hook

        last = inner.transformer.h[-1]
        before_last = inner.transformer.h[-2]

        def on_last_block(_m, _inp, out):
            if out.requires_grad:
                out.register_hook(mark("head done"))

        def on_before_last(_m, _inp, out):
            if out.requires_grad:
                out.register_hook(mark("last block done"))

        def on_wte(_m, _inp, out):
            if out.requires_grad:
                out.register_hook(mark("embedding start"))

        handles = [
            last.register_forward_hook(on_last_block),
            before_last.register_forward_hook(on_before_last),
            inner.transformer.wte.register_forward_hook(on_wte),
        ]
        x = torch.empty((case.batch_size, case.block_size), dtype=torch.long)
        y = torch.empty((case.batch_size, case.block_size), dtype=torch.long)
        model.train()
        with autocast(torch.bfloat16):
            logits, loss = model(x, y)
        del logits
        before_backward = live()
        tracker.phase = "backward"
        loss.backward()
        for h in handles:
            h.remove()
        head = {k: n for k, n in marks["head done"].items() if k not in before_backward}
        still = marks["embedding start"]
        held = {k: n for k, n in head.items() if k in still}
        # The loss's gradient and the scalars around it are a few bytes; the
        # question is about tensors of parameter size.
        held = {k: n for k, n in held.items() if n >= 1024}
        # For contrast, a block unit: what its backward created that is still
        # alive at the embedding's backward (its gradients after the
        # reduce-scatter: the rank's shard).
        block_kept = sum(
            n
            for k, n in marks["last block done"].items()
            if k not in marks["head done"] and k in still and n >= 1024
        )
        tied_numel = case.vocab_size * case.n_embd

        def holds_tied(shape: tuple[int, ...]) -> bool:
            # The weight's own gradient, or FSDP1's flat gradient of the root
            # unit (1-D, the root's parameters end to end).
            return shape == tied_shape or (len(shape) == 1 and shape[0] >= tied_numel)

        tied = sum(n for k, n in held.items() if holds_tied(shapes.get(k, ())))
        # Measured, not assumed: the held tied gradient's bytes per element.
        grad_bytes = tied // tied_numel
        return {
            "name": case.name,
            "wrapper": case.wrapper,
            "world_size": case.world_size,
            "n_layer": case.n_layer,
            "n_head": case.n_head,
            "n_embd": case.n_embd,
            "vocab_size": case.vocab_size,
            "block_size": case.block_size,
            "batch_size": case.batch_size,
            "bias": case.bias,
            "root_params": root_params,
            "tied_params": case.vocab_size * case.n_embd,
            "gradient_element_bytes": grad_bytes,
            "held_bytes": sum(held.values()),
            "held_tied_bytes": tied,
            "block_params": block_params,
            "last_block_kept_bytes": block_kept,
            "held": sorted(
                ([n, list(shapes.get(k, ())), origins.get(k, "?")] for k, n in held.items()),
                key=lambda e: (-e[0], e[1], e[2]),
            ),
        }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path)
    ap.add_argument("--only", action="append", default=[])
    args = ap.parse_args(argv)
    install_cuda_autocast_policy()
    cases = [c for c in CASES if not args.only or c.name in args.only]
    results = [run(c) for c in cases]
    doc = {"torch": torch.__version__.split("+")[0], "runs": results}
    text = json.dumps(doc, indent=1, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
