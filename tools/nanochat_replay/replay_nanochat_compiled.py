"""Replay nanochat's compiled training step (``torch.compile(model, dynamic=False)`` of
``scripts/base_train.py`` at the pinned commit) on fake tensors: what inductor's partition saves
for backward, and the step's peak as the fake-tensor tracker sees it (issue 21, the compiled step).

Usage::

    python tools/nanochat_replay/replay_nanochat_compiled.py --nanochat DIR --out tests/data/nanochat_compiled_replay.json

Two backends, both run nanochat's own ``GPT`` and ``MuonAdamW`` (imported from ``DIR/nanochat``
as ``replay_nanochat.py`` does) on fake CPU tensors, with SDPA routed to the kernels CUDA picks
(``hf_sdpa.py``) and two optimizer steps of ``grad_accum_steps`` micro-steps:

- ``partition``: AOTAutograd with inductor's own decomposition table
  (``compile_fx.select_decomp_table``) and inductor's own partition function
  (``compile_fx.partition_fn``: inductor's joint-graph passes, then
  ``min_cut_rematerialization_partition(compiler="inductor")``), the forward and backward graphs
  run op by op (no fusion) under the tracker. The saved set is exactly inductor's; the peak is
  the unfused graph's: every pointwise intermediate materialized, an upper bound on what the
  fused kernels keep.
- ``inductor``: ``torch.compile``'s default backend for real: lowering, scheduling, fusion and
  buffer reuse of inductor's C++ (CPU) backend, its wrapper run under the tracker with every
  generated kernel replaced by a no-op (fake tensors have no data; gcc never runs). The buffers
  the wrapper allocates and frees are CPU inductor's plan. Triton (CUDA) schedules the same IR
  nodes with its own fusion rules, so this is a measurement of inductor on CPU, not of CUDA.

Not replayed, and said so: ``optim.py``'s compiled fused AdamW and Muon steps run eagerly (under
a tracker, dynamo skips them; ``_torchdynamo_orig_callable`` is called instead), CUDA's rms_norm
kernel (inductor decomposes ``F.rms_norm`` itself), FA3 (the SDPA fallback, as in the eager
replay), FP8.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
import warnings
from dataclasses import asdict
from pathlib import Path

import torch
import torch.nn.functional as F
from torch._subclasses.fake_tensor import FakeTensorMode
from torch.utils._python_dispatch import _get_current_dispatch_mode_stack, _pop_mode_temporarily

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "hf_replay"))
sys.path.insert(0, str(HERE.parent / "nanogpt_replay"))

from replay_nanochat import (  # noqa: E402
    NANOCHAT_COMMIT, FakeDist, Run, config_of, load_nanochat, param_data_assignment)
from hf_sdpa import hf_sdpa, scratch_bytes  # noqa: E402
from replay_common import print_live, unique_bytes, write_document  # noqa: E402
from tracker import StorageTracker  # noqa: E402

# replay_nanochat.py disables dynamo for the eager replay; this one compiles.
os.environ.pop("TORCHDYNAMO_DISABLE", None)
torch._dynamo.config.disable = False
torch._dynamo.config.cache_size_limit = 64
# Every run compiles afresh (a cached artifact would skip the partition this replay records).
torch._inductor.config.fx_graph_cache = False
torch._functorch.config.enable_autograd_cache = False


class Graphs:
    """The forward and backward graphs of inductor's partition, as the last compile made them."""

    fw: torch.fx.GraphModule | None = None
    bw: torch.fx.GraphModule | None = None


def under(tracker, fn):
    """``fn(args)`` with the fake mode and ``tracker`` on the dispatch-mode stack (unless they
    are there already: in the backward, which dynamo does not enter)."""
    def run(args):
        if tracker in _get_current_dispatch_mode_stack():
            return fn(args)
        with tracker.fake, tracker:
            return fn(args)
    run._boxed_call = True
    return run


def recording_partition(gm, joint_inputs, **kwargs):
    """Inductor's own ``partition_fn``, recording the graphs it returns."""
    from torch._inductor import compile_fx
    fw, bw = compile_fx.partition_fn(gm, joint_inputs, **kwargs)
    Graphs.fw, Graphs.bw = fw, bw
    return fw, bw


def partition_backend(tracker):
    """AOTAutograd with inductor's decompositions and partition, graphs run op by op."""
    from torch._dynamo.backends.common import aot_autograd
    from torch._inductor import compile_fx
    from torch.fx.graph import _BoxedCodeGen

    def nop(gm, _example_inputs):
        gm.graph.set_codegen(_BoxedCodeGen())
        gm.recompile()
        return under(tracker, gm.forward)

    return aot_autograd(fw_compiler=nop, bw_compiler=nop,
                        decompositions=compile_fx.select_decomp_table(),
                        partition_fn=recording_partition)


@contextlib.contextmanager
def inductor_without_kernels(tracker):
    """Inductor as ``torch.compile`` runs it, with its partition recorded, each generated C++
    kernel a no-op (never compiled), and each compiled graph's wrapper run under ``tracker``."""
    from torch._inductor import async_compile, compile_fx
    from torch._inductor.output_code import CompiledFxGraph

    saved = (async_compile.AsyncCompile.cpp_pybinding, CompiledFxGraph.__call__,
             compile_fx.partition_fn)
    original_partition = compile_fx.partition_fn
    guards = torch._C._dynamo.guards
    original_reinterpret = guards._reinterpret_tensor
    original_empty = guards._empty_strided_cpu

    def empty(size, stride, dtype):
        # The wrapper's buffers, through the dispatcher: fake, and seen by the tracker.
        return torch.empty_strided(size, stride, dtype=dtype, device="cpu")

    def reinterpret(t, size, stride, offset):
        # The wrapper's view of a buffer, through the dispatcher (the C++ helper bypasses it,
        # which fake tensors do not survive).
        return t.as_strided(size, stride, t.storage_offset() + offset)

    def no_kernel(self, argtypes, source_code):
        return lambda *args: None

    def call(self, inputs):
        return under(tracker, lambda a: saved[1](self, a))(inputs)

    def partition(gm, joint_inputs, **kwargs):
        fw, bw = original_partition(gm, joint_inputs, **kwargs)
        Graphs.fw, Graphs.bw = fw, bw
        return fw, bw

    async_compile.AsyncCompile.cpp_pybinding = no_kernel
    guards.__dict__["_reinterpret_tensor"] = reinterpret
    guards.__dict__["_empty_strided_cpu"] = empty
    CompiledFxGraph.__call__ = call
    compile_fx.partition_fn = partition
    try:
        yield
    finally:
        (async_compile.AsyncCompile.cpp_pybinding, CompiledFxGraph.__call__,
         compile_fx.partition_fn) = saved
        guards.__dict__["_reinterpret_tensor"] = original_reinterpret
        guards.__dict__["_empty_strided_cpu"] = original_empty


def saved_tensors(bw: torch.fx.GraphModule) -> list[dict]:
    """The backward graph's saved inputs (every placeholder but the tangents), with the bytes of
    their storages (0 for a view of a storage listed before); inputs of the forward (parameters,
    buffers, tokens) are marked ``input``."""
    rows, seen = [], set()
    for n in bw.graph.nodes:
        if n.op != "placeholder" or n.name.startswith("tangents"):
            continue
        v = n.meta.get("val")
        if not isinstance(v, torch.Tensor):
            continue
        key = v.untyped_storage()._cdata
        rows.append({"name": n.name, "dtype": str(v.dtype).removeprefix("torch."),
                     "shape": list(v.shape),
                     "bytes": 0 if key in seen else v.untyped_storage().nbytes(),
                     "input": n.name.startswith("primals")})
        seen.add(key)
    return rows


def replay(run: Run, root: Path, backend: str, explain: bool = False) -> dict:
    gpt, optim = load_nanochat(root, run.dtype)
    optim.dist = FakeDist(run.nproc_per_node)
    for name in ("adamw_step_fused", "muon_step_fused"):
        fn = getattr(optim, name)
        setattr(optim, name, getattr(fn, "_torchdynamo_orig_callable", fn))
    config = config_of(gpt, run)
    torch._dynamo.reset()
    Graphs.fw = Graphs.bw = None
    tracker = StorageTracker("cpu", snapshot=explain, scratch=scratch_bytes)
    original_sdpa = F.scaled_dot_product_attention
    F.scaled_dot_product_attention = hf_sdpa
    peaks, phases, live_after_forward = [], [], []
    try:
        with contextlib.ExitStack() as stack:
            if backend == "inductor":
                stack.enter_context(inductor_without_kernels(tracker))
                compile_args = {}
            else:
                compile_args = {"backend": partition_backend(tracker)}
            tracker.fake = FakeTensorMode(allow_non_fake_inputs=True)
            stack.enter_context(tracker.fake)
            stack.enter_context(tracker)
            model = gpt.GPT(config)
            with param_data_assignment():
                model.init_weights()
            params = model.num_scaling_params()["total"]
            param_bytes = unique_bytes(model.parameters())
            opt = model.setup_optimizer(weight_decay=0.28)
            compiled = torch.compile(model, dynamic=False, **compile_args)
            shape = (run.device_batch_size, run.max_seq_len)
            x = torch.empty(shape, dtype=torch.long)
            y = torch.empty(shape, dtype=torch.long)
            step_peaks: dict[str, int] = {}
            largest: dict[str, list] = {}

            def phase(name):
                """Ends the current phase (its peak kept, the largest per name) and starts
                ``name``."""
                if tracker.phase != "setup":
                    if explain and tracker.peak >= step_peaks.get(tracker.phase, 0):
                        largest[tracker.phase] = tracker.peak_live
                    step_peaks[tracker.phase] = max(step_peaks.get(tracker.phase, 0),
                                                    tracker.peak)
                if name is not None:
                    tracker.phase = name
                    tracker.reset_peak()

            for step in range(2):
                step_peaks.clear()
                tracker.phase = "setup"
                for micro in range(run.grad_accum_steps):
                    phase("forward")
                    before = tracker.total
                    # Dynamo skips a frame entered under a Python dispatch mode: the tracker and
                    # the fake mode step aside at the call and the graphs run under the tracker.
                    with _pop_mode_temporarily() as top, _pop_mode_temporarily():
                        assert top is tracker
                        loss = compiled(x, y)
                    live_after_forward.append(tracker.total - before)
                    loss = loss / run.grad_accum_steps
                    phase("backward")
                    loss.backward()
                    del loss
                phase("optimizer step")
                opt.step()
                grad_bytes = unique_bytes(p.grad for p in model.parameters()
                                          if p.grad is not None)
                opt_bytes = unique_bytes(t for s in opt.state.values() for t in s.values()
                                         if isinstance(t, torch.Tensor))
                opt.zero_grad(set_to_none=True)
                phase(None)
                if explain:
                    for name, live in largest.items():
                        print(f"step {step + 1}: {name} peak {step_peaks[name]}")
                        print_live(live)
                peaks.append(max(step_peaks.values()))
                phases.append(max(step_peaks, key=step_peaks.get))
    finally:
        F.scaled_dot_product_attention = original_sdpa
    saved = saved_tensors(Graphs.bw)
    return {
        "run": asdict(run),
        "backend": backend,
        "params": params,
        "param_bytes": param_bytes,
        "grad_bytes": grad_bytes,
        "optimizer_bytes": opt_bytes,
        "saved_activation_bytes": sum(r["bytes"] for r in saved if not r["input"]),
        "forward_live_bytes": live_after_forward[-1],
        "train_peak_bytes": peaks[1],
        "first_step_peak_bytes": peaks[0],
        "train_peak_phase": phases[1],
        "phase_peaks": dict(step_peaks),
        "saved": saved if explain else None,
    }


# Small depths for the grid (every block is built the same); d12 and d20 with all their layers:
# the RTX 4070 run of tests/data/hf_validation.yaml and base_train.py's own defaults.
RUNS = [
    Run("d2-b2-s256-L", 2, 2, 256, "L"),
    Run("d4-b4-s512-L", 4, 4, 512, "L"),
    Run("d4-b2-s1024-SSSL", 4, 2, 1024, "SSSL"),
    Run("d4-b2-s512-L-acc2", 4, 2, 512, "L", grad_accum_steps=2),
    Run("d4-b2-s512-L-fp32", 4, 2, 512, "L", dtype="float32"),
    Run("d8-b2-s2048-SSSL", 8, 2, 2048, "SSSL"),
    Run("d6-b2-s1024-L-ddp4", 6, 2, 1024, "L", nproc_per_node=4),
    Run("d12-b4-s1024-SSSL-ddp8", 12, 4, 1024, "SSSL", nproc_per_node=8),
    Run("d12-b8-s2048-SSSL-acc4", 12, 8, 2048, "SSSL", grad_accum_steps=4),
    Run("d20-b32-s2048-SSSL", 20, 32, 2048, "SSSL"),
]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--nanochat", type=Path, required=True,
                        help=f"a directory holding nanochat/ at commit {NANOCHAT_COMMIT}")
    parser.add_argument("--out", type=Path)
    parser.add_argument("--backend", action="append", choices=["partition", "inductor"])
    parser.add_argument("--only", action="append", default=[])
    parser.add_argument("--explain", action="store_true",
                        help="list the saved tensors and the live storages at the peak")
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    entries = []
    for run in RUNS:
        if args.only and run.name not in args.only:
            continue
        for backend in args.backend or ["partition", "inductor"]:
            start = time.time()
            e = replay(run, args.nanochat.resolve(), backend, explain=args.explain)
            if args.explain:
                for r in e["saved"]:
                    print(f"  {r['name']:28s} {r['dtype']:9s} {str(r['shape']):24s} "
                          f"{r['bytes']:>12d}{' input' if r['input'] else ''}")
            print(f"{run.name} [{backend}]: saved {e['saved_activation_bytes']} "
                  f"forward {e['forward_live_bytes']} peak {e['train_peak_bytes']} "
                  f"({e['train_peak_phase']}), {time.time() - start:.0f} s", flush=True)
            entries.append(e)
    write_document({"generator": "tools/nanochat_replay/replay_nanochat_compiled.py",
                    "nanochat_commit": NANOCHAT_COMMIT,
                    "torch": torch.__version__.split("+")[0], "runs": entries}, args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
