"""Probe what the batch layout does to a Llama-family Trainer step's peak (issue 21, item 3):
the layout vramdoc models (full rows, no mask), padded rows (an attention mask with padding, as
TRL's default collator passes), and padding-free packing (one row of ``b·s`` tokens with
``position_ids``, no mask, ``use_cache=False`` as TRL 0.29's ``compute_loss`` sets), on fake
tensors with ``replay_llama.py``'s machinery, the cache left on. The first probe, not held by a
test; ``replay_batches.py`` records the layouts as vramdoc models them (the cache off, as TRL and
``Trainer`` run), held by ``tests/it/hf_batch_layout.rs``.

Usage::

    python tools/hf_replay/probe_batches.py

Under fake tensors transformers 5.24 cannot read a mask's values (``is_tracing`` is true for a
FakeTensor), so it never drops a padding mask and always builds the packed-sequence mask: the
padded case as a batch that has padding, the packed case as a row of several sequences.
"""

from __future__ import annotations

import contextlib
import sys
import warnings
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import autocast, cuda_dropout_patch, install_cuda_autocast_policy  # noqa: E402
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
import replay_llama  # noqa: E402
from tracker import StorageTracker  # noqa: E402


def peak(model_shape, s: int, b: int, attn: str, layout: str) -> int:
    cfg = replay_llama.config(model_shape)
    cfg._attn_implementation = attn
    cls = replay_llama.model_class(model_shape.model_type)
    original = F.scaled_dot_product_attention
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(StorageTracker("cpu", snapshot=False, scratch=scratch_bytes))
        stack.enter_context(cuda_dropout_patch())
        F.scaled_dot_product_attention = hf_sdpa
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original))
        default = torch.get_default_dtype()
        torch.set_default_dtype(torch.bfloat16)
        try:
            model = cls(cfg)
        finally:
            torch.set_default_dtype(default)
        model.train()
        opt = torch.optim.AdamW(model.parameters(), lr=5e-5, fused=True)
        if layout == "packed":
            ids = torch.empty((1, b * s), dtype=torch.long)
            kwargs = dict(position_ids=torch.empty((1, b * s), dtype=torch.long), use_cache=False)
        else:
            ids = torch.empty((b, s), dtype=torch.long)
            kwargs = {}
            if layout == "padded":
                kwargs["attention_mask"] = torch.empty((b, s), dtype=torch.long)
        for _ in range(2):
            tracker.reset_peak()
            with autocast(torch.float32):
                out = model(input_ids=ids, labels=ids, **kwargs)
            loss = out.loss
            del out
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            opt.zero_grad(set_to_none=True)
        return tracker.peak


def main() -> int:
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    shape = replay_llama.QWEN3_06B
    for attn in ("sdpa", "eager"):
        for s, b in ((1024, 2), (2048, 4)):
            row = {layout: peak(shape, s, b, attn, layout) for layout in ("full", "padded", "packed")}
            print(f"{shape.name} bf16 weights {attn} s={s} b={b}: "
                  + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in row.items()), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
