"""Selftest part: the emulated autocast policy against the installed wheel.

1. The tables in ``autocast_policy.py`` against ``autocast_mode.h``'s CUDA
   op lists and against the dispatcher (which ops have AutocastCUDA and
   AutocastCPU kernels): a PyTorch upgrade that changes a list fails here.
2. Each op whose policy differs between CPU and CUDA, called once on fake
   CPU tensors under the emulated policy and once on fake CUDA tensors under
   real CUDA autocast: the op streams (op, output dtypes and shapes) match.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Callable

import torch
from torch._subclasses.fake_tensor import FakeTensorMode

import autocast_policy as policy
from cuda_emulation import autocast

HEADER = Path(torch.__file__).parent / "include" / "ATen" / "autocast_mode.h"
A = torch.ops.aten


def header_list(text: str, macro: str) -> list[str]:
    """The ops of one ``AT_FORALL_*`` macro, as ``name.overload``."""
    body = re.search(rf"#define {macro}\(_\)(.*?)\n\s*\n", text, re.S)
    if body is None:
        raise SystemExit(f"{HEADER}: no {macro}")
    quoted = re.findall(r'"([\w.]+)"', body[1])
    if quoted:
        return quoted
    names = []
    for name, overload in re.findall(r"_\((?:ADD_NS\()?(\w+)\)?(?:,\s*\"?([\w.]+)\"?)?", body[1]):
        if overload.startswith(name + "."):
            names.append(overload)
        elif overload and overload != "fp32_append_dtype":
            names.append(f"{name}.{overload}")
        else:
            names.append(name)
    return names


def tables_match_wheel(check: Callable) -> None:
    text = HEADER.read_text()
    extra = set(policy.CUDA_EXTRA)
    pairs = [
        ("AT_FORALL_LOWER_PRECISION_FP", policy.CUDA_LOWER_PRECISION_FP),
        ("AT_FORALL_FP32", policy.CUDA_FP32),
        ("AT_FORALL_FP32_SET_OPT_DTYPE", policy.CUDA_FP32_SET_OPT_DTYPE),
        ("AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE", list(policy.CUDA_FP32_APPEND_DTYPE)),
        ("AT_FORALL_PROMOTE", policy.CUDA_PROMOTE),
    ]
    for macro, table in pairs:
        check(f"{macro} == table (less CUDA_EXTRA)", sorted(header_list(text, macro)),
              sorted(set(table) - extra))
    check("AutocastCUDA kernels == tables", sorted(policy.ops_with_kernel("AutocastCUDA")),
          sorted(policy.cuda_listed_ops()))
    cpu = policy.ops_with_kernel("AutocastCPU")
    check("CPU_SAME_AS_CUDA have both kernels", sorted(set(policy.CPU_SAME_AS_CUDA) - cpu), [])


def _stream(device: str, dtype: torch.dtype, call: Callable, make: Callable) -> list:
    from selftest import OpLog, real_cuda_autocast

    with FakeTensorMode(), torch.device(device):
        args = make()
        log = OpLog()
        ctx = autocast(dtype) if device == "cpu" else real_cuda_autocast(dtype)
        try:
            with log, ctx:
                call(*args)
        except RuntimeError as err:
            return ["raised", str(err).split(" ")[0]]
        return log.ops


def _t(dtype: torch.dtype, *shape: int, grad: bool = False) -> torch.Tensor:
    return torch.randn(*shape, dtype=dtype, requires_grad=grad)


BF, HF, F32 = torch.bfloat16, torch.float16, torch.float32
# (label, autocast dtype, call, inputs): one or more per policy difference.
CASES = [
    ("pow.Tensor_Scalar", BF, lambda x: torch.pow(x, 3.0), lambda: (_t(BF, 4, 8),)),
    ("pow.Tensor_Tensor", HF, lambda x, y: torch.pow(x, y), lambda: (_t(HF, 4, 8), _t(HF, 4, 8))),
    ("exp", BF, torch.exp, lambda: (_t(BF, 4, 8),)),
    ("rsqrt", HF, torch.rsqrt, lambda: (_t(HF, 4, 8),)),
    ("layer_norm", BF, lambda x, w: torch.nn.functional.layer_norm(x, (8,), w),
     lambda: (_t(BF, 4, 8), _t(F32, 8, grad=True))),
    ("logsumexp", BF, lambda x: torch.logsumexp(x, 1), lambda: (_t(BF, 4, 8),)),
    ("sum", BF, torch.sum, lambda: (_t(BF, 4, 8),)),
    ("sum.dim_IntList", HF, lambda x: x.sum(1), lambda: (_t(HF, 4, 8),)),
    ("cumsum", BF, lambda x: x.cumsum(1), lambda: (_t(BF, 4, 8),)),
    ("prod", BF, torch.prod, lambda: (_t(BF, 4, 8),)),
    ("softmax fp16", HF, lambda x: x.softmax(-1), lambda: (_t(HF, 4, 8),)),
    ("log_softmax bf16", BF, lambda x: x.log_softmax(-1), lambda: (_t(BF, 4, 8),)),
    ("linalg_vector_norm", BF, torch.linalg.vector_norm, lambda: (_t(BF, 4, 8),)),
    ("norm.Scalar", BF, lambda x: A.norm.Scalar(x, 2), lambda: (_t(BF, 4, 8),)),
    ("norm.ScalarOpt_dim", BF, lambda x: A.norm.ScalarOpt_dim(x, 2, [1]), lambda: (_t(BF, 4, 8),)),
    ("addcmul", BF, torch.addcmul, lambda: (_t(BF, 4, 8), _t(F32, 4, 8), _t(BF, 4, 8))),
    ("grid_sampler", BF, lambda x, g: A.grid_sampler(x, g, 0, 0, False),
     lambda: (_t(BF, 1, 1, 4, 4), _t(BF, 1, 2, 2, 2))),
    ("einsum", BF, lambda x, w: torch.einsum("ij,jk->ik", x, w),
     lambda: (_t(F32, 4, 8), _t(F32, 8, 8, grad=True))),
    ("mv", HF, torch.mv, lambda: (_t(F32, 4, 8), _t(F32, 8))),
    ("addr", BF, torch.addr, lambda: (_t(F32, 4, 8), _t(F32, 4), _t(F32, 8))),
    ("linear (same on both)", BF, torch.nn.functional.linear,
     lambda: (_t(F32, 4, 8), _t(F32, 8, 8, grad=True))),
    ("conv2d (same on both)", BF, torch.nn.functional.conv2d,
     lambda: (_t(F32, 1, 2, 5, 5), _t(F32, 3, 2, 3, 3, grad=True))),
    ("baddbmm (same on both)", HF, torch.baddbmm,
     lambda: (_t(F32, 2, 4, 4), _t(F32, 2, 4, 8), _t(F32, 2, 8, 4))),
    ("mse_loss (same on both)", BF, torch.nn.functional.mse_loss,
     lambda: (_t(BF, 4, 8), _t(BF, 4, 8))),
    ("cdist (same on both)", BF, torch.cdist, lambda: (_t(BF, 4, 8), _t(BF, 3, 8))),
    ("cat", BF, lambda x, y: torch.cat([x, y]), lambda: (_t(BF, 4, 8), _t(F32, 4, 8))),
    ("cross_entropy", BF, torch.nn.functional.cross_entropy,
     lambda: (_t(BF, 4, 8), torch.zeros(4, dtype=torch.long))),
    ("binary_cross_entropy", BF, torch.nn.functional.binary_cross_entropy,
     lambda: (_t(BF, 4, 8), _t(BF, 4, 8))),
    ("fft_rfft", BF, torch.fft.rfft, lambda: (_t(F32, 4, 8),)),
]


def ops_match_cuda(check: Callable) -> None:
    for label, dtype, call, make in CASES:
        cuda = _stream("cuda", dtype, call, make)
        cpu = _stream("cpu", dtype, call, make)
        check(f"{label} {dtype}: {len(cuda)} ops", cpu, cuda)


def run(check: Callable) -> None:
    print("autocast tables vs the installed wheel; differing ops vs real CUDA autocast")
    tables_match_wheel(check)
    ops_match_cuda(check)
