//! Hugging Face `generate` on a model loaded with bitsandbytes-quantized weights
//! (`from_pretrained(quantization_config=BitsAndBytesConfig(load_in_4bit=True, …))` or
//! `(load_in_8bit=True)`; bitsandbytes 0.50.2, transformers 5.24): the weights' bytes and what
//! a quantized Linear allocates while it runs, beside what `hf_generate` computes for the rest of
//! the call (issue 22, items 2 and 5).
//!
//! Source: `tools/hf_replay/replay_generate_bnb.py` (fake tensors; `bnb_emulation.py` allocates
//! what bitsandbytes' CUDA kernels allocate and cites them), held to
//! `tests/data/hf_generate_bnb_replay.json` by `tests/it/hf_generate_bnb.rs`.
//!
//! **Weights.** Every block's `nn.Linear` (GPT-2's `Conv1D`) is replaced (`replace_with_bnb_linear`);
//! the head, embeddings, norms and biases stay in the model's dtype. 4-bit: `bnb::four_bit_weight_bytes`
//! per weight, plus double quantization's one dynamic map. LLM.int8(): an int8 per element and a
//! float32 scale per output row (`bnb::int8_weight_bytes`).
//!
//! **A quantized Linear at work** (`M` rows: tokens of the forward times sequences; `K` in, `N`
//! out; `e` bytes of the activations, `c` of the 4-bit compute dtype):
//! - 4-bit, `Linear4bit.forward` (`nn/modules.py` 106-134): the input cast to the compute dtype
//!   (`M·K·c`, when `c ≠ e`), then `gemm_4bit` (`backends/cuda/ops.py` 934-1000). At most 4 rows
//!   every GPU runs the fused kernel (`_GEMM_4BIT_CUSTOM_FLOOR_M`): its output only (`M·N·c`).
//!   Above 1536 rows every GPU dequantizes (`_dequant_linear_fallback`, 904-918): the whole
//!   weight in the compute dtype (`N·K·c`) and, double-quantized, the absmax dequantized and
//!   offset (two float32 per 64-element block), beside the output. Between 5 and 1536 rows a
//!   per-GPU rule picks (`_gemm_4bit_use_custom_cuda`, 584-700): vramdoc counts the fallback, the
//!   most a GPU allocates. The output is cast back to `e` (`M·N·e` beside the `M·N·c` one).
//!   A bias is cast to the compute dtype for good at the first call.
//! - LLM.int8() (`MatMul8bitLt.forward`, `autograd/_functions.py` 103-199, inference path,
//!   threshold 6.0): the input cast to float16 (`M·K·2`, unless float16), quantized row-wise
//!   (`M·K` int8, `M` float32 scales) while `abs()` (`M·K·2`) and the outlier mask (`M·K`) exist;
//!   then the int8 matmul's int32 output (`M·N·4`), its float16 dequantization (`M·N·2`) and the
//!   cast to `e` (`M·N·e`, unless float16), beside the outlier columns' input and weight slices;
//!   then `output.addmm(...)` for the outlier columns: a second `M·N·e` output. Which columns hold
//!   an outlier (a value of at least 6.0) depends on the data: vramdoc assumes
//!   [`OUTLIER_COLUMNS`] in every call (their own slices are small; with none the second output
//!   is not made, so the estimate is the larger case), and each layer keeps its last list
//!   (`state.idx`, int64).
//!
//! The largest Linears are the MLP's, so those moments are computed: Llama's `gate_proj` (beside
//! the prefill's hidden-wide tensors), `up_proj` (beside `gate`'s SiLU) and `down_proj` (beside
//! the product), Phi-3's fused `gate_up_proj` and `down_proj` (beside the kept `gate_up` output
//! and the product), GPT-2's `c_fc` and `c_proj` (beside `gelu_new`'s output). The prefill's
//! rows are `B·P`, a decoding step's `B`, with the cache at its end beside it.

use super::arch::{Architecture, Family, FeedForward, Mlp, ParamKind, ParamTensor};
use super::bnb;
use super::hf_generate::{Fixed, GenerateMoments, Generation};
use super::num::N;
use super::scenario::{Dtype, QuantType, Scenario};

/// Outlier columns LLM.int8() is assumed to find in each call's input (the LLM.int8() paper finds
/// fewer than ten systematic outlier feature dimensions per layer in 6.7B+ models; 64 is a margin).
pub(crate) const OUTLIER_COLUMNS: u128 = 64;

/// Rows up to which every GPU runs bitsandbytes' fused 4-bit kernel.
const FUSED_ROWS: u128 = 4;

/// How the Linears' weights are stored.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum WeightQuant {
    /// `load_in_4bit`: NF4 or FP4, double-quantized or not, computing in `compute`.
    FourBit {
        quant_type: QuantType,
        double_quant: bool,
        compute: Dtype,
    },
    /// `load_in_8bit`: LLM.int8() with the default outlier threshold.
    Int8,
}

impl WeightQuant {
    /// `nf4`, `fp4` or `int8`.
    pub(crate) fn name(self) -> &'static str {
        match self {
            WeightQuant::FourBit { quant_type, .. } => quant_type.as_str(),
            WeightQuant::Int8 => "int8",
        }
    }

    /// The quantization the scenario asks for, if any.
    pub(crate) fn of(s: &Scenario) -> Option<WeightQuant> {
        if s.load_in_8bit {
            Some(WeightQuant::Int8)
        } else if s.load_in_4bit {
            Some(WeightQuant::FourBit {
                quant_type: s.bnb_4bit_quant_type,
                double_quant: s.bnb_4bit_use_double_quant,
                compute: s.bnb_4bit_compute_dtype,
            })
        } else {
            None
        }
    }
}

/// Why a quantized `generate` on `a` is not estimated, with the key to change (none when it is).
pub(crate) fn refusals(a: &Architecture, s: &Scenario) -> Vec<(&'static str, String)> {
    let mut wrong = Vec::new();
    if s.load_in_4bit && s.load_in_8bit {
        wrong.push((
            "load_in_8bit",
            "load_in_4bit and load_in_8bit are both set; BitsAndBytesConfig refuses both: pick one"
                .into(),
        ));
    }
    let key = if s.load_in_8bit {
        "load_in_8bit"
    } else {
        "load_in_4bit"
    };
    if WeightQuant::of(s).is_some() && !replayed(a) {
        wrong.push((
            key,
            format!(
                "generate with bitsandbytes weights is replayed for GPT-2, the Llama family, \
                 Gemma 2/3 and the mixtures of experts; {} ({}) is not transformers' model: \
                 estimate it in 16 bits (unset {key})",
                a.name,
                a.family.as_str()
            ),
        ));
    }
    wrong
}

/// Whether the family's quantized generate is replayed.
fn replayed(a: &Architecture) -> bool {
    matches!(
        a.family,
        Family::HfGpt2 | Family::Llama | Family::Gemma2 | Family::Gemma3 | Family::Moe
    )
}

/// Whether `replace_with_bnb_linear` converts the module owning parameter `t`: an `nn.Linear`
/// (or `Conv1D`) weight or bias of a block. Not the head, not a mixture's router (its own module
/// class) nor its experts (3-D parameters of their own module): those stay in the model's dtype.
fn converted(t: &ParamTensor) -> bool {
    let name = &t.name;
    let linear = match t.kind {
        ParamKind::LinearWeight => t.shape.dims().len() == 2 && bnb::quantized(t.kind, name),
        ParamKind::LinearBias => !name.starts_with("lm_head"),
        _ => false,
    };
    linear && !name.contains(".experts.") && !name.contains(".mlp.gate.")
}

/// The weights' bytes under `q`: quantized Linear weights as bitsandbytes stores them, every
/// other parameter in `e` bytes, plus `buffers` (the rotary `inv_freq` buffers).
pub(crate) fn weights(a: &Architecture, q: WeightQuant, e: u64, buffers: N) -> N {
    let e = u128::from(e);
    let mut bytes = buffers;
    if let WeightQuant::FourBit { double_quant, .. } = q {
        bytes = bytes + bnb::nested_map_bytes(double_quant);
    }
    for t in a.parameters() {
        let count = u128::from(t.count);
        let dims = t.shape.dims();
        let numel = u128::from(t.numel());
        let weight = t.kind == ParamKind::LinearWeight && converted(&t);
        let one = match (q, dims) {
            (WeightQuant::FourBit { double_quant, .. }, _) if weight => {
                bnb::four_bit_weight_bytes(numel, double_quant)
            }
            (WeightQuant::Int8, [rows, cols]) if weight => {
                bnb::int8_weight_bytes(u128::from(*rows), u128::from(*cols))
            }
            _ => N(numel * e),
        };
        bytes = bytes + one * count;
    }
    bytes
}

/// What a quantized Linear adds, once it has run, to the bytes that stay: 4-bit biases recast to
/// the compute dtype (growth only), LLM.int8()'s kept outlier lists.
pub(crate) fn after_first_call(a: &Architecture, q: WeightQuant, e: u64) -> N {
    let mut bytes = N::ZERO;
    for t in a.parameters() {
        let count = u128::from(t.count);
        match q {
            WeightQuant::FourBit { compute, .. }
                if t.kind == ParamKind::LinearBias && converted(&t) =>
            {
                let c = u128::from(dtype_bytes(compute));
                let grown = c.saturating_sub(u128::from(e));
                bytes = bytes + N(u128::from(t.numel()) * grown) * count;
            }
            WeightQuant::Int8 if t.kind == ParamKind::LinearWeight && converted(&t) => {
                bytes = bytes + N(OUTLIER_COLUMNS * 8) * count;
            }
            _ => {}
        }
    }
    bytes
}

fn dtype_bytes(d: Dtype) -> u64 {
    if d == Dtype::Float32 {
        4
    } else {
        2
    }
}

/// The most one quantized Linear of `k` inputs and `n` outputs holds at once over `rows` rows,
/// beyond its input, activations in dtype `d`.
pub(crate) fn linear_bytes(q: WeightQuant, rows: N, k: u128, n: u128, d: Dtype) -> N {
    let e = u128::from(dtype_bytes(d));
    let fp16 = d == Dtype::Float16;
    match q {
        WeightQuant::FourBit {
            double_quant,
            compute,
            ..
        } => {
            let c = u128::from(dtype_bytes(compute));
            let same = compute == d;
            let cast_in = if same { N::ZERO } else { rows * (k * c) };
            let out = rows * (n * c);
            let matmul = if rows.0 <= FUSED_ROWS {
                out
            } else {
                let absmax = if double_quant {
                    N((n * k).div_ceil(bnb::NF4_BLOCK) * 8)
                } else {
                    N::ZERO
                };
                N(n * k * c) + absmax + out
            };
            let cast_out = if same { N::ZERO } else { out + rows * (n * e) };
            cast_in + matmul.max(cast_out)
        }
        WeightQuant::Int8 => {
            let half = if fp16 { N::ZERO } else { rows * (k * 2) };
            // Quantizing: the int8 copy and row scales beside `abs()` and the outlier mask.
            let quantize = half + rows * (k + 4) + rows * (k * 3);
            // The kept int8 input, its scales, the outlier list and the input's outlier columns.
            let kept = rows * (k + 4) + N(OUTLIER_COLUMNS * 8) + rows * (OUTLIER_COLUMNS * e);
            // The weight's outlier columns dequantized: their int8 slice and two float32
            // products (`int8_vectorwise_dequant`), then the slice cast to `e`.
            let slice = N(n * OUTLIER_COLUMNS * 9);
            let sub_b = N(n * OUTLIER_COLUMNS * e);
            let cast = if fp16 { N::ZERO } else { rows * (n * e) };
            let dequant = rows * (n * 6) + cast;
            let addmm = rows * (n * e * 2);
            quantize.max(kept + slice.max(sub_b + dequant.max(addmm)))
        }
    }
}

/// The largest quantized Linear moment over `rows` rows, activations in `d`: what lies beside
/// the moment's fixed bytes, per row (`base` elements: the hidden-wide tensors, plus the MLP's own
/// kept ones) and the Linear's own bytes. The MLP's Linears (a mixture's shared expert; its
/// experts are not quantized), and the attention's projections beside the hidden-wide tensors.
pub(crate) fn linear_moment(a: &Architecture, q: WeightQuant, rows: N, base: u128, d: Dtype) -> N {
    let (h, eb) = (u128::from(a.hidden), u128::from(dtype_bytes(d)));
    let beside = |extra: u128| rows * ((base + extra) * eb);
    let lin = |k: u128, n: u128| linear_bytes(q, rows, k, n, d);
    let (qw, kvw) = (
        u128::from(a.attention.q_width()),
        u128::from(a.attention.kv_width()),
    );
    let attention = beside(0) + lin(h, qw).max(lin(qw, h)).max(lin(h, kvw));
    let mlp = match (&a.mlp, a.family) {
        (Mlp::Dense(f), Family::HfGpt2) => {
            let i = u128::from(f.intermediate);
            (beside(0) + lin(h, i)).max(beside(i) + lin(i, h))
        }
        (Mlp::Dense(f), _) => gated(f, h, beside, lin),
        (Mlp::Moe(m), _) => m
            .shared
            .as_ref()
            .map_or(N::ZERO, |f| gated(f, h, beside, lin)),
    };
    attention.max(mlp)
}

/// A gated MLP's Linear moments: `gate_proj` (beside nothing of its own), `up_proj` (beside the
/// gate's activation), `down_proj` (beside the product); Phi-3's fused `gate_up_proj`, then
/// `down_proj` beside the kept `gate_up` output and the product.
fn gated(f: &FeedForward, h: u128, beside: impl Fn(u128) -> N, lin: impl Fn(u128, u128) -> N) -> N {
    let i = u128::from(f.intermediate);
    if f.fused_gate_up {
        return (beside(0) + lin(h, 2 * i)).max(beside(3 * i) + lin(i, h));
    }
    (beside(0) + lin(h, i))
        .max(beside(i) + lin(h, i))
        .max(beside(i) + lin(i, h))
}

/// The moments `m` of a `generate` call with bitsandbytes-quantized Linears: their MLP moments
/// (over `B·P` rows at prefill, `B` at a decoding step, beside `fixed` and `base` hidden-wide
/// elements per row) where larger, and what their first call leaves (`after_first_call`).
pub(crate) fn with_quantized_linears(
    m: GenerateMoments,
    fixed: Fixed,
    a: &Architecture,
    g: &Generation,
    q: WeightQuant,
    d: Dtype,
    base: N,
) -> GenerateMoments {
    let grown = after_first_call(a, q, dtype_bytes(d));
    let seqs = g.sequences();
    let rows = seqs * N::from(g.prompt_tokens);
    let prefill = fixed.0 + linear_moment(a, q, rows, base.0, d);
    let decode = if g.max_new_tokens >= 2 {
        m.decode.max(fixed.1 + linear_moment(a, q, seqs, base.0, d)) + grown
    } else {
        N::ZERO
    };
    GenerateMoments {
        prefill: m.prefill.max(prefill) + grown,
        decode,
    }
}
