"""Replay Hugging Face ``generate`` (transformers' own ``GenerationMixin`` and ``modeling_gpt2``)
on fake tensors and record its memory: the ground truth for vramdoc's generate estimate (issue 22).

Usage::

    python tools/hf_replay/replay_generate.py --out tests/data/hf_generate_replay.json

What runs, as ``tools/gpu_measure/hf_cases.py`` runs it on a GPU: a ``GPT2LMHeadModel`` built from
a ``GPT2Config`` with its weights in the run's dtype (``from_config(cfg, dtype=...)``, no
autocast), ``model.eval()``, then ``model.generate(input_ids, attention_mask=ones,
max_new_tokens=N, return_dict_in_generate=True, disable_compile=True)`` (the GPU runs also set
``min_new_tokens=N``, whose logits processor adds a few vocabulary-sized tensors per step),
greedy unless the run samples (``num_return_sequences`` needs sampling), with a
``LogitsProcessor`` that marks the end of the prefill: the peak up to its first call is the
prefill's, the peak after it the decoding's. Storages are counted by the training replay's
tracker (``tools/nanogpt_replay/tracker.py``: every storage an op returns, by ``nbytes``, until it
is freed); SDPA is routed to the kernel CUDA picks (FlashAttention-2 for 16-bit inputs without a
mask, the memory-efficient kernel otherwise, a boolean mask first turned into an additive bias of
the query's dtype and padded to a multiple of 16 keys, as ATen's ``sdpa`` does on CUDA).

Fake tensors hold no values, so the few places ``generate`` reads one are answered as a real
run of these inputs answers them (every input is one real token, nothing padded): a tensor made by
``aten.all`` is true, by ``aten.any`` false; ``fast_all`` of a padding mask is false only where
``prepare_padding_mask`` padded it with zeros (a static cache's unfilled slots: its decoding
steps get a mask, as on a GPU); and the loop stops after ``max_new_tokens`` (no sequence ends
early).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
import warnings
from dataclasses import asdict, dataclass
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from cuda_emulation import cuda_sdpa, install_cuda_autocast_policy  # noqa: E402

try:  # hqq (the int8 cache's backend) makes module-level tensors on import: before any fake mode
    import hqq.core.quantize  # noqa: E402,F401
except ImportError:
    pass
from tracker import StorageTracker  # noqa: E402

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
aten = torch.ops.aten


@dataclass(frozen=True)
class Run:
    """One ``generate`` call on one GPT-2 shape."""

    name: str
    n_layer: int
    n_head: int
    n_embd: int
    vocab_size: int
    n_positions: int
    prompt_tokens: int
    max_new_tokens: int
    batch_size: int
    cache: str  # "dynamic" or "static"
    dtype: str = "bfloat16"
    num_return_sequences: int = 1
    # Another family (transformers' model_type) and its config keywords; GPT-2 when empty.
    family: str = "gpt2"
    config: tuple = ()
    # The catalog model (data/models/*.yaml) whose config this is, with fewer layers; "" if none.
    model: str = ""


class GenerateTracker(StorageTracker):
    """The training replay's tracker, answering the values ``generate`` reads from tensors."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.made_by: dict[int, object] = {}
        # Beam search's output crop reads `max(generated length)` (+ the prompt): every step
        # generated a token, so it is max_new_tokens (set by `replay` for beam runs).
        self.generated: int | None = None
        self.values: dict[int, int] = {}

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        # `.item()`, or `bool(t)` (`is_nonzero`, which fake tensors decompose to it).
        if func in (aten._local_scalar_dense.default, aten.is_nonzero.default):
            maker = self.made_by.get(args[0].untyped_storage()._cdata)
            # `lt`: hqq's optimizer goes on while its error falls (`hqq_on_cuda`).
            if maker in (aten.all.default, aten.all.dim, aten.eq.Tensor, aten.eq.Scalar,
                         aten.lt.Tensor):
                return True
            if maker in (aten.any.default, aten.any.dim):
                return False
            # Beam search reorders a static cache only after the prefill filled it:
            # `StaticLayer.get_seq_length() > 0` (its `cumulative_length` tensor) holds.
            if maker is aten.gt.Scalar and self.generated is not None:
                return True
            value = self.values.get(args[0].untyped_storage()._cdata)
            if value is not None:
                return value
            raise RuntimeError(f"generate read a value made by {maker}: not answered")
        out = super().__torch_dispatch__(func, types, args, kwargs)
        if self.generated is not None and isinstance(out, torch.Tensor) and out.dim() == 0:
            self.known_value(func, args, out)
        if isinstance(out, torch.Tensor) and out.dim() == 0 and out.dtype == torch.bool:
            self.made_by[out.untyped_storage()._cdata] = func
        return out


def _known_value(tracker, func, args, out) -> None:
    """Records the value of beam search's crop length: `max` of the generated lengths, then
    the prompt added to it."""
    if func is aten.max.default and not out.dtype.is_floating_point:
        tracker.values[out.untyped_storage()._cdata] = tracker.generated
    elif func in (aten.add.Tensor, aten.add.Scalar):
        terms = []
        for a in args[:2]:
            if isinstance(a, torch.Tensor):
                terms.append(tracker.values.get(a.untyped_storage()._cdata))
            else:
                terms.append(a)
        if all(isinstance(t, int) for t in terms):
            tracker.values[out.untyped_storage()._cdata] = sum(terms)


GenerateTracker.known_value = _known_value


def cuda_sdpa_masked(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False,
                     scale=None, enable_gqa=False):
    """``F.scaled_dot_product_attention`` as HF calls it on CUDA (inference, no dropout)."""
    if attn_mask is None:
        return cuda_sdpa(query, key, value, None, dropout_p, is_causal)
    # A mask rules FlashAttention out: the memory-efficient kernel takes it as an additive bias
    # of the query's dtype (`convert_boolean_attn_mask`), its last dimension padded to a
    # multiple of 16 (`preprocess_mask`/`pad_bias`), then sliced back (a view).
    if attn_mask.dtype == torch.bool:
        bias = torch.where(attn_mask.logical_not(), float("-inf"), torch.zeros((), dtype=query.dtype))
        bias = bias.to(query.dtype)
    else:
        bias = attn_mask
    kv = bias.size(-1)
    if kv % 16:
        pad = 16 - kv % 16
        bias = F.pad(bias, (0, pad))[..., :kv]
    bias = bias.expand(query.size(0), query.size(1), query.size(2), kv)
    out = aten._scaled_dot_product_efficient_attention.default(query, key, value, bias, False, 0.0,
                                                               False)
    return out[0]


def print_live(live: list[tuple[int, str]]) -> None:
    """The storages alive at a peak, grouped by phase, op and size, largest total first."""
    groups: dict[tuple[str, int], int] = {}
    for nbytes, origin in live:
        groups[(origin, nbytes)] = groups.get((origin, nbytes), 0) + 1
    for (origin, nbytes), n in sorted(groups.items(), key=lambda kv: -kv[0][1] * kv[1]):
        print(f"{n * nbytes:>14} {n:>4} x {nbytes:>12}  {origin}")


def replay(run: Run, explain: bool = False) -> dict:
    from transformers import GPT2Config, GPT2LMHeadModel, LogitsProcessor, LogitsProcessorList
    from transformers.generation import utils as gen_utils

    if run.family == "gpt2":
        cfg = GPT2Config(n_layer=run.n_layer, n_head=run.n_head, n_embd=run.n_embd,
                         vocab_size=run.vocab_size, n_positions=run.n_positions)
    else:
        from transformers import AutoConfig

        cfg = AutoConfig.for_model(run.family, **dict(run.config))
    # SDPA, or what a run names (Gemma 2 has no SDPA: its softcapping needs eager attention).
    cfg._attn_implementation = getattr(run, "attn_implementation", "sdpa")
    dtype = DTYPES[run.dtype]
    total_len = run.prompt_tokens + run.max_new_tokens

    class PrefillProbe(LogitsProcessor):
        """Called once per new token after the forward; the first call ends the prefill."""

        def __init__(self, tracker):
            self.tracker = tracker
            self.calls = 0
            self.prefill_peak = None
            self.after_prefill = None

        def __call__(self, input_ids, scores):
            if self.calls == 0:
                self.prefill_peak = self.tracker.peak
                if explain:
                    print(f"prefill peak {self.tracker.peak} in {self.tracker.peak_phase}")
                    print_live(self.tracker.peak_live)
                self.after_prefill = self.tracker.total
                self.tracker.phase = "decode"
                self.tracker.reset_peak()
            self.calls += 1
            return scores

    def stop(self, unfinished_sequences, tokens, length):
        return length >= total_len

    from transformers import masking_utils

    # `fast_all` reads a mask's values: a padding mask that `prepare_padding_mask` padded with
    # zeros (a static cache longer than the tokens so far) is not all ones; a view of its real
    # part, or anything else here (every input token is real), is.
    padded: dict[int, int] = {}
    original_prepare = masking_utils.prepare_padding_mask
    original_fast_all = masking_utils.fast_all

    def prepare(attention_mask, kv_length, kv_offset):
        out = original_prepare(attention_mask, kv_length, kv_offset)
        if out is not None and out is not attention_mask:
            padded[out.untyped_storage()._cdata] = attention_mask.shape[-1]
        return out

    def fast_all(tensor):
        real = padded.get(tensor.untyped_storage()._cdata)
        return real is None or tensor.shape[-1] <= real

    original_sdpa = F.scaled_dot_product_attention
    original_stop = gen_utils.StopCheck.__call__
    with contextlib.ExitStack() as stack:
        stack.enter_context(FakeTensorMode())
        tracker = stack.enter_context(GenerateTracker("cpu", snapshot=explain))
        quanto_packs_fakes(stack, run)
        hqq_on_cuda(stack, run)
        F.scaled_dot_product_attention = cuda_sdpa_masked
        gen_utils.StopCheck.__call__ = stop
        masking_utils.prepare_padding_mask = prepare
        masking_utils.fast_all = fast_all
        stack.callback(lambda: setattr(masking_utils, "prepare_padding_mask", original_prepare))
        stack.callback(lambda: setattr(masking_utils, "fast_all", original_fast_all))
        stack.callback(lambda: setattr(F, "scaled_dot_product_attention", original_sdpa))
        stack.callback(lambda: setattr(gen_utils.StopCheck, "__call__", original_stop))
        if getattr(run, "num_beams", 1) > 1:
            tracker.generated = run.max_new_tokens
        # Beam search asks whether to go on from the beams' scores: as a run that never
        # finishes early answers, until max_new_tokens steps.
        beam_steps = [0]
        original_beams_go_on = gen_utils.GenerationMixin._beam_search_has_unfinished_sequences

        def beams_go_on(*args, **kwargs):
            beam_steps[0] += 1
            return beam_steps[0] < run.max_new_tokens

        gen_utils.GenerationMixin._beam_search_has_unfinished_sequences = staticmethod(beams_go_on)
        stack.callback(lambda: setattr(gen_utils.GenerationMixin,
                                       "_beam_search_has_unfinished_sequences",
                                       staticmethod(original_beams_go_on)))
        tracker.phase = "weights"
        if run.family == "gpt2":
            model = GPT2LMHeadModel._from_config(cfg, dtype=dtype)
        else:
            from transformers import AutoModelForCausalLM

            model = AutoModelForCausalLM.from_config(cfg, dtype=dtype)
        model.eval()
        # A run may change the loaded model (replay_generate_bnb.py quantizes its Linears).
        if hasattr(run, "prepare"):
            model = run.prepare(model, stack)
        weights = tracker.total
        params = sum(p.numel() for p in model.parameters())
        tracker.phase = "prefill"
        probe = PrefillProbe(tracker)
        ids = torch.zeros((run.batch_size, run.prompt_tokens), dtype=torch.long)
        extra = {"cache_implementation": "static"} if run.cache == "static" else {}
        if run.cache.startswith(("quanto-int", "hqq-int")):
            backend, bits = run.cache.split("-int")
            extra = {"cache_implementation": "quantized",
                     "cache_config": {"backend": backend, "nbits": int(bits)}}
        if run.cache == "fp8":
            # transformers' own float8 cache (`Fp8QuantizedLayer`): per-tensor scales, no options.
            extra = {"cache_implementation": "quantized", "cache_config": {"backend": "fp8"}}
        if run.num_return_sequences > 1:
            extra.update(do_sample=True, num_return_sequences=run.num_return_sequences)
        else:
            extra.update(do_sample=False)
        # Beam search (replay_generate_beams.py's runs): greedy beams, one sequence returned.
        if getattr(run, "num_beams", 1) > 1:
            extra.update(do_sample=False, num_beams=run.num_beams, eos_token_id=None)
        tracker.reset_peak()
        with torch.no_grad():
            out = model.generate(
                input_ids=ids, attention_mask=torch.ones_like(ids), max_new_tokens=run.max_new_tokens,
                pad_token_id=0,
                logits_processor=LogitsProcessorList([probe]), return_dict_in_generate=True,
                disable_compile=True, **extra,
            )
        decode_peak = tracker.peak if probe.calls > 1 else 0
        if explain and probe.calls > 1:
            print(f"decode peak {tracker.peak}")
            print_live(tracker.peak_live)
        cache = getattr(out, "cache", None) or getattr(out, "past_key_values", None)
        kv = cache_storage_bytes(cache)
        tokens_out = int(out.sequences.size(1))
        assert probe.calls == run.max_new_tokens, (probe.calls, run.max_new_tokens)
    return {
        "run": asdict(run),
        "params": params,
        "weights_bytes": weights,
        "prefill_peak_bytes": probe.prefill_peak,
        "allocated_after_prefill_bytes": probe.after_prefill,
        "decode_peak_bytes": decode_peak,
        "kv_cache_bytes": kv,
        "tokens_out": tokens_out,
    }


def quanto_packs_fakes(stack: contextlib.ExitStack, run: Run) -> None:
    """Makes quanto pack fake tensors as it packs real ones.

    ``WeightQBitsTensor.__init__`` (optimum-quanto 0.2.7, ``tensor/weights/qbits.py``) packs its
    int4/int2 data into a ``PackedTensor`` only ``if type(data) is torch.Tensor``; a fake tensor's
    type is ``FakeTensor``, so on fake tensors the cache would keep one byte per element where a
    GPU keeps two int4 (or four int2) values per byte. The same ``PackedTensor.pack`` is called
    here for a fake tensor, nothing else changed.
    """
    if not run.cache.startswith("quanto-"):
        return
    from optimum.quanto.tensor.packed import PackedTensor
    from optimum.quanto.tensor.weights.qbits import WeightQBitsTensor
    from torch._subclasses.fake_tensor import FakeTensor

    original = WeightQBitsTensor.__init__

    def init(self, qtype, axis, group_size, size, stride, data, scale, shift, requires_grad=False):
        if isinstance(data, FakeTensor):
            data = PackedTensor.pack(data, qtype.bits)
        original(self, qtype, axis, group_size, size, stride, data, scale, shift, requires_grad)

    WeightQBitsTensor.__init__ = init
    stack.callback(lambda: setattr(WeightQBitsTensor, "__init__", original))


def hqq_on_cuda(stack: contextlib.ExitStack, run: Run) -> None:
    """Makes hqq 0.2.8's optimizer work in the dtype it uses on a GPU.

    ``optimize_weights_proximal_legacy`` (``hqq/core/optimize.py`` 209-256, what
    ``Quantizer.optimize_weights`` is) copies the tensor to ``float16 if device.type == "cuda"
    else float32``: the fake tensors' device is the CPU, so its module-level ``float32`` is read
    as ``torch.float16`` while a replay runs (its ``best_error`` scalar too: 2 bytes, not 4). Its
    20 iterations stop once the error no longer falls (``if current_error < best_error``), a
    value fake tensors do not hold: ``GenerateTracker`` answers that the error fell, so every
    iteration runs; each makes and frees the same temporaries, so the peak does not depend on how
    many run.
    """
    if not run.cache.startswith("hqq-"):
        return
    import hqq.core.optimize as hqq_optimize

    original = hqq_optimize.float32
    hqq_optimize.float32 = torch.float16
    stack.callback(lambda: setattr(hqq_optimize, "float32", original))


def cache_storage_bytes(cache) -> int:
    """The cache's tensor bytes, unique storages (as ``hf_cases.py::cache_bytes`` counts them)."""
    seen: dict[int, int] = {}

    def add(value):
        if hasattr(value, "__tensor_flatten__"):
            # A quantized tensor (quanto's QTensor, its PackedTensor): the tensors it wraps.
            for name in value.__tensor_flatten__()[0]:
                add(getattr(value, name))
        elif isinstance(value, torch.Tensor):
            st = value.untyped_storage()
            seen[st._cdata] = st.nbytes()
        elif isinstance(value, tuple):
            # The fp8 cache's `(states, scale)` pairs, HQQ's `(states, meta)`.
            for item in value:
                add(item)
        elif isinstance(value, dict):
            # HQQ's `meta`: its `scale` and `zero` tensors.
            for item in value.values():
                add(item)

    for layer in cache.layers:
        for value in vars(layer).values():
            add(value)
    return sum(seen.values())


GPT2 = dict(n_layer=12, n_head=12, n_embd=768, vocab_size=50257, n_positions=1024)
MEDIUM_6 = dict(n_layer=6, n_head=16, n_embd=1024, vocab_size=50257, n_positions=1024)
SMALL_VOCAB = dict(n_layer=6, n_head=8, n_embd=512, vocab_size=512, n_positions=2048)

RUNS = [
    # The six GPT-2 runs measured on the H200 (tools/gpu_measure/hf_cases.py), same names.
    Run("gpt2-124m-p512-n512-b1-dynamic", **GPT2, prompt_tokens=512, max_new_tokens=512,
        batch_size=1, cache="dynamic"),
    Run("gpt2-124m-p512-n512-b8-dynamic", **GPT2, prompt_tokens=512, max_new_tokens=512,
        batch_size=8, cache="dynamic"),
    Run("gpt2-124m-p768-n256-b1-dynamic", **GPT2, prompt_tokens=768, max_new_tokens=256,
        batch_size=1, cache="dynamic"),
    Run("gpt2-124m-p768-n256-b8-dynamic", **GPT2, prompt_tokens=768, max_new_tokens=256,
        batch_size=8, cache="dynamic"),
    Run("gpt2-124m-p512-n512-b8-static", **GPT2, prompt_tokens=512, max_new_tokens=512,
        batch_size=8, cache="static"),
    Run("gpt2-124m-p768-n256-b8-static", **GPT2, prompt_tokens=768, max_new_tokens=256,
        batch_size=8, cache="static"),
    # Weights in float32 and float16; a long prompt with few new tokens; one new token only.
    Run("gpt2-124m-p1000-n24-b4-dynamic-fp32", **GPT2, prompt_tokens=1000, max_new_tokens=24,
        batch_size=4, cache="dynamic", dtype="float32"),
    Run("gpt2-124m-p256-n64-b16-static-fp16", **GPT2, prompt_tokens=256, max_new_tokens=64,
        batch_size=16, cache="static", dtype="float16"),
    Run("gpt2-124m-p1023-n1-b2-dynamic", **GPT2, prompt_tokens=1023, max_new_tokens=1,
        batch_size=2, cache="dynamic"),
    Run("gpt2-124m-p100-n300-b32-dynamic", **GPT2, prompt_tokens=100, max_new_tokens=300,
        batch_size=32, cache="dynamic"),
    # Sampling several sequences per prompt: the cache and the batch grow by that factor.
    Run("gpt2-124m-p300-n40-b2-r4-dynamic", **GPT2, prompt_tokens=300, max_new_tokens=40,
        batch_size=2, cache="dynamic", num_return_sequences=4),
    Run("gpt2-124m-p300-n40-b2-r3-static-fp32", **GPT2, prompt_tokens=300, max_new_tokens=40,
        batch_size=2, cache="static", dtype="float32", num_return_sequences=3),
    # Another width and head count; a small vocabulary where the logits no longer dominate.
    Run("h1024-6x16-p640-n128-b4-dynamic", **MEDIUM_6, prompt_tokens=640, max_new_tokens=128,
        batch_size=4, cache="dynamic"),
    Run("h1024-6x16-p640-n128-b4-static-fp32", **MEDIUM_6, prompt_tokens=640, max_new_tokens=128,
        batch_size=4, cache="static", dtype="float32"),
    Run("v512-6x8x512-p1500-n100-b8-dynamic", **SMALL_VOCAB, prompt_tokens=1500,
        max_new_tokens=100, batch_size=8, cache="dynamic"),
    Run("v512-6x8x512-p1500-n100-b8-static", **SMALL_VOCAB, prompt_tokens=1500,
        max_new_tokens=100, batch_size=8, cache="static"),
    # Short prompts in large batches: the logits over GPT-2's vocabulary outweigh the MLP.
    Run("gpt2-124m-p4-n32-b64-dynamic", **GPT2, prompt_tokens=4, max_new_tokens=32,
        batch_size=64, cache="dynamic"),
    Run("gpt2-124m-p8-n16-b16-r2-static-fp32", **GPT2, prompt_tokens=8, max_new_tokens=16,
        batch_size=16, cache="static", dtype="float32", num_return_sequences=2),
]

# Llama 3.2 1B's shape (GQA 32/8, head 64, vocabulary 128256, tied) with 8 of its 16 layers, as
# tools/gpu_measure/hf_cases.py measured it on the H200 (same names; the dynamic-cache ones: a
# static cache with grouped heads repeats its keys and values on a GPU, which this replay's
# masking does not reproduce yet, and vramdoc refuses it), and one in float32.
LLAMA_1B_8L = tuple(dict(hidden_size=2048, intermediate_size=8192, num_hidden_layers=8,
                         num_attention_heads=32, num_key_value_heads=8, head_dim=64,
                         vocab_size=128256, max_position_embeddings=4096,
                         tie_word_embeddings=True).items())
LLAMA = dict(n_layer=8, n_head=32, n_embd=2048, vocab_size=128256, n_positions=4096,
             family="llama", config=LLAMA_1B_8L)
RUNS += [
    Run(f"llama-3.2-1b-shape-8l-p{p}-n{n}-b{b}-{c}", **LLAMA, prompt_tokens=p, max_new_tokens=n,
        batch_size=b, cache=c)
    for p, n, b, c in [(512, 512, 1, "dynamic"), (512, 512, 8, "dynamic"),
                       (2048, 256, 1, "dynamic"), (2048, 256, 8, "dynamic"),
                       (512, 512, 8, "static"), (2048, 256, 8, "static")]
] + [
    Run("llama-3.2-1b-shape-8l-p300-n40-b4-dynamic-fp32", **LLAMA, prompt_tokens=300,
        max_new_tokens=40, batch_size=4, cache="dynamic", dtype="float32"),
]

# The quantized cache (`cache_implementation="quantized"`, optimum-quanto's int4 and int2, groups
# of 64, a 128-token residual): Llama 3.2 1B's config with 2 layers, and with a 1024-token
# vocabulary so that the cache's own moments, not the logits, set the decoding peak: the last
# step a flush (129 new tokens), a step after the last flush (140), grouped and multi-head.
L1B_2L = dict(LLAMA_1B_8L, num_hidden_layers=2)
LLAMA_2L = dict(LLAMA, n_layer=2, config=tuple(L1B_2L.items()))
LLAMA_2L_V1K = dict(LLAMA_2L, vocab_size=1024,
                    config=tuple(dict(L1B_2L, vocab_size=1024).items()))
MHA_2L_V1K = dict(LLAMA_2L_V1K, config=tuple(dict(L1B_2L, vocab_size=1024,
                                                  num_key_value_heads=32).items()))
RUNS += [
    Run("llama-3.2-1b-shape-2l-p512-n8-b4-quanto-int4", **LLAMA_2L, prompt_tokens=512,
        max_new_tokens=8, batch_size=4, cache="quanto-int4"),
    Run("llama-2l-v1k-p256-n129-b4-quanto-int4", **LLAMA_2L_V1K, prompt_tokens=256,
        max_new_tokens=129, batch_size=4, cache="quanto-int4"),
    Run("llama-2l-v1k-p256-n129-b48-quanto-int4", **LLAMA_2L_V1K, prompt_tokens=256,
        max_new_tokens=129, batch_size=48, cache="quanto-int4"),
    Run("llama-2l-v1k-p300-n140-b2-quanto-int2", **LLAMA_2L_V1K, prompt_tokens=300,
        max_new_tokens=140, batch_size=2, cache="quanto-int2"),
    Run("llama-mha-2l-v1k-p200-n40-b2-quanto-int4", **MHA_2L_V1K, prompt_tokens=200,
        max_new_tokens=40, batch_size=2, cache="quanto-int4"),
    Run("llama-mha-2l-v1k-p1000-n4-b1-quanto-int2-fp32", **MHA_2L_V1K, prompt_tokens=1000,
        max_new_tokens=4, batch_size=1, cache="quanto-int2", dtype="float32"),
]

# transformers' own float8 cache (`cache_config={"backend": "fp8"}`, `Fp8QuantizedLayer`): the
# prompt's states quantized with a per-tensor float32 scale, each new token appended in float8,
# and every decoding step's keys and values dequantized in full (float32, then the compute dtype).
# Grouped and multi-head, bf16 and float32, a long decode where the dequantization sets the peak.
RUNS += [
    Run("llama-2l-v1k-p256-n129-b4-fp8", **LLAMA_2L_V1K, prompt_tokens=256, max_new_tokens=129,
        batch_size=4, cache="fp8"),
    Run("llama-3.2-1b-shape-2l-p512-n8-b4-fp8", **LLAMA_2L, prompt_tokens=512, max_new_tokens=8,
        batch_size=4, cache="fp8"),
    Run("llama-mha-2l-v1k-p1000-n40-b8-fp8", **MHA_2L_V1K, prompt_tokens=1000, max_new_tokens=40,
        batch_size=8, cache="fp8"),
    Run("llama-mha-2l-v1k-p300-n20-b2-fp8-fp32", **MHA_2L_V1K, prompt_tokens=300,
        max_new_tokens=20, batch_size=2, cache="fp8", dtype="float32"),
]

# HQQ's int8 cache (`cache_config={"backend": "hqq", "nbits": 8}`, hqq 0.2.8 with
# `hqq_on_cuda`): a flush the last step (129 new tokens), a step after the last flush (140),
# grouped and multi-head, float32, and a prefill whose peak is HQQ quantizing the prompt.
RUNS += [
    Run("llama-2l-v1k-p256-n129-b4-hqq-int8", **LLAMA_2L_V1K, prompt_tokens=256,
        max_new_tokens=129, batch_size=4, cache="hqq-int8"),
    Run("llama-mha-2l-v1k-p200-n40-b2-hqq-int8", **MHA_2L_V1K, prompt_tokens=200,
        max_new_tokens=40, batch_size=2, cache="hqq-int8"),
    # A narrow MLP: quantizing the prompt's values sets the prefill's peak.
    Run("llama-mha-2l-v1k-i1k-p1000-n2-b2-hqq-int8", **dict(MHA_2L_V1K, config=tuple(
        dict(dict(MHA_2L_V1K["config"]), intermediate_size=1024).items())), prompt_tokens=1000,
        max_new_tokens=2, batch_size=2, cache="hqq-int8"),
    Run("llama-2l-v1k-p300-n140-b2-hqq-int8-fp32", **LLAMA_2L_V1K, prompt_tokens=300,
        max_new_tokens=140, batch_size=2, cache="hqq-int8", dtype="float32"),
    Run("llama-2l-v1k-p512-n129-b8-hqq-int8", **LLAMA_2L_V1K, prompt_tokens=512,
        max_new_tokens=129, batch_size=8, cache="hqq-int8"),
]

# Past a sliding window (dynamic cache): a Mistral-like config with a narrow MLP and a 512-token
# window, so that the prefill's masked attention (the boolean mask, its additive bias, padded to
# 16 keys when the prompt is not a multiple of 16, the repeated keys and values) sets the peak;
# and a prompt within the window whose decoding passes it.
SW512 = dict(n_layer=2, n_head=8, n_embd=1024, vocab_size=1024, n_positions=32768,
             family="mistral",
             config=tuple(dict(hidden_size=1024, intermediate_size=1024, num_hidden_layers=2,
                               num_attention_heads=8, num_key_value_heads=2, head_dim=128,
                               vocab_size=1024, max_position_embeddings=32768,
                               tie_word_embeddings=False, sliding_window=512).items()))
RUNS += [
    Run("mistral-like-2l-sw512-p4000-n3-b1-dynamic", **SW512, prompt_tokens=4000,
        max_new_tokens=3, batch_size=1, cache="dynamic"),
    Run("mistral-like-2l-sw512-p2001-n3-b2-dynamic", **SW512, prompt_tokens=2001,
        max_new_tokens=3, batch_size=2, cache="dynamic"),
    Run("mistral-like-2l-sw512-p1000-n3-b8-dynamic", **SW512, prompt_tokens=1000,
        max_new_tokens=3, batch_size=8, cache="dynamic"),
    Run("mistral-like-2l-sw512-p1000-n8-b2-static", **SW512, prompt_tokens=1000,
        max_new_tokens=8, batch_size=2, cache="static"),
    Run("mistral-like-2l-sw512-p500-n30-b2-static", **SW512, prompt_tokens=500,
        max_new_tokens=30, batch_size=2, cache="static"),
    Run("mistral-like-2l-sw512-p500-n30-b4-dynamic", **SW512, prompt_tokens=500,
        max_new_tokens=30, batch_size=4, cache="dynamic"),
]


def main(argv: list[str] | None = None, runs: list[Run] | None = None,
         generator: str = "tools/hf_replay/replay_generate.py") -> int:
    """Replays ``runs`` (this file's and the catalog's by default; those ``--only`` names) into
    ``--out``."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path)
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--explain", action="store_true", help="list the live storages at the peaks")
    parser.add_argument("--merge", action="store_true",
                        help="keep --out's other runs, replacing those replayed now")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    install_cuda_autocast_policy()
    import transformers

    if runs is None:
        from catalog_runs import catalog_runs

        runs = RUNS + catalog_runs(Run)
    replayed = {}
    for run in runs:
        if args.only and not any(o in run.name for o in args.only):
            continue
        e = replay(run, explain=args.explain)
        print(f"{run.name}: prefill {e['prefill_peak_bytes'] / 2**20:.1f} MiB, decode "
              f"{e['decode_peak_bytes'] / 2**20:.1f} MiB, cache {e['kv_cache_bytes']}", flush=True)
        replayed[run.name] = e
    kept = {}
    if args.merge and args.out and args.out.exists():
        kept = {e["run"]["name"]: e for e in json.loads(args.out.read_text())["runs"]}
    # In the runs' order; runs no longer listed are dropped.
    entries = [replayed.get(r.name) or kept[r.name] for r in runs
               if r.name in replayed or r.name in kept]
    doc = {
        "generator": generator,
        "torch": torch.__version__.split("+")[0],
        "transformers": transformers.__version__,
        "runs": entries,
    }
    text = json.dumps(doc, indent=2, sort_keys=True) + "\n"
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
