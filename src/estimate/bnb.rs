//! bitsandbytes' bytes (version 0.50.2, as `tools/hf_replay/requirements.txt` pins): 4-bit
//! (NF4/FP4) and LLM.int8() weight storage, and the state of its 8-bit AdamW as Trainer builds
//! it. Each layout is read from bitsandbytes' source (cited per function) and held to the
//! fake-tensor replay `tests/data/hf_qlora_replay.json` by `tests/it/hf_qlora.rs`.

use super::arch::{Architecture, ParamKind};
use super::num::N;
use super::scenario::Optimizer;

/// Elements per absmax block of a 4-bit weight (`Params4bit`'s default `blocksize`, 64).
pub(crate) const NF4_BLOCK: u128 = 64;
/// absmax values per second-level block under double quantization (`quantize_4bit` calls
/// `quantize_blockwise(absmax - offset, blocksize=256)`).
pub(crate) const NESTED_BLOCK: u128 = 256;
/// Entries of bitsandbytes' 8-bit dynamic map (`create_dynamic_map`), float32.
const DYNAMIC_MAP: u128 = 256 * 4;
/// The 4-bit code (`get_4bit_type`: 16 float32 values), one per quantized layer.
const FOUR_BIT_CODE: u128 = 16 * 4;

/// Bytes one weight of `numel` elements keeps once quantized to 4 bits
/// (`functional.quantize_4bit`, `functional.py` 884-966, and the CUDA `quantize_4bit`,
/// `backends/cuda/ops.py` 384-392):
///
/// - the packed weight, two values per byte: `(n + 1) / 2` uint8;
/// - one float32 absmax per 64-element block, `⌈n/64⌉·4` bytes, and the layer's 4-bit code
///   (16 float32);
/// - with double quantization instead of that absmax: the absmax minus its mean quantized to
///   uint8 (`⌈n/64⌉` bytes), one float32 absmax per 256 of those (`⌈⌈n/64⌉/256⌉·4`), a copy of
///   the 256-entry dynamic map (`code.to(A.device, copy=True)`, 1 KiB) and the mean (a float32
///   scalar).
///
/// The dynamic map itself (1 KiB, made once on the device) is [`nested_map_bytes`].
pub(crate) fn four_bit_weight_bytes(numel: u128, double_quant: bool) -> N {
    let blocks = numel.div_ceil(NF4_BLOCK);
    let packed = numel.div_ceil(2);
    let absmax = if double_quant {
        blocks + blocks.div_ceil(NESTED_BLOCK) * 4 + DYNAMIC_MAP + 4
    } else {
        blocks * 4
    };
    N(packed + absmax + FOUR_BIT_CODE)
}

/// The dynamic map `quantize_blockwise` makes once on the weights' device
/// (`functional.name2qmap["dynamic"]`) when any layer is double-quantized.
pub(crate) fn nested_map_bytes(double_quant: bool) -> N {
    N(if double_quant { DYNAMIC_MAP } else { 0 })
}

/// Bytes one weight of `rows × cols` keeps under LLM.int8() (`Int8Params._quantize`,
/// `nn/modules.py` 737-748, with the CUDA `int8_vectorwise_quant`, `backends/cuda/ops.py`
/// 213-254): an int8 per element (`CB`) and a float32 scale per output row (`SCB`).
pub(crate) fn int8_weight_bytes(rows: u128, cols: u128) -> N {
    N(rows * cols + rows * 4)
}

/// Whether a parameter is one transformers' `get_keys_to_not_convert` keeps out of
/// quantization or bitsandbytes cannot take: only `nn.Linear`/`Conv1D` weights of the blocks
/// are quantized; the output embeddings (`lm_head`, tied or not), embeddings, norms and biases
/// stay in the model's dtype. A mixture of experts' router (`mlp.gate`, a `TopKRouter`) and
/// experts (3-D parameters) are not `nn.Linear`: `replace_with_bnb_linear` leaves them as they
/// are.
pub(crate) fn quantized(kind: ParamKind, name: &str) -> bool {
    kind == ParamKind::LinearWeight
        && !name.starts_with("lm_head")
        && !name.contains("mlp.experts.")
        && !name.contains("mlp.gate.")
}

/// Tensors of at least this many elements get paged state from `PagedAdamW8bit`
/// (`get_state_buffer`: `p.numel() < 1e5` gets ordinary memory).
const PAGED_MIN: u128 = 100_000;
/// Tensors below this many elements keep 32-bit state (`min_8bit_size`, 4096).
const MIN_8BIT: u128 = 4096;
/// The block of the 8-bit optimizer's absmax (`Optimizer2State.init_state`: 256).
const OPTIM_BLOCK: u128 = 256;

/// The state bitsandbytes' AdamW keeps for a tensor of `numel` elements
/// (`Optimizer2State.init_state`, `optim/optimizer.py` 492-533), split into what PyTorch's
/// allocator holds and what paging puts in CUDA unified memory (`get_state_buffer` 374-390:
/// `F.get_paged`, `cudaMallocManaged`, which the driver moves to host memory when the GPU runs
/// short; `torch.cuda.memory_allocated` does not see it).
///
/// 32-bit state (a tensor under 4096 elements, or one Trainer overrides): two float32 moments.
/// 8-bit: two uint8 moments and two float32 absmax per 256-element block (the absmax always in
/// ordinary memory). No `unorm_vec` (`max_unorm` 0) and `step` a Python int.
pub(crate) fn adamw_state(numel: u128, thirty_two_bit: bool, paged: bool) -> (N, N) {
    let paged = paged && numel >= PAGED_MIN;
    let (moments, scales) = if thirty_two_bit || numel < MIN_8BIT {
        (numel * 8, 0)
    } else {
        (numel * 2, numel.div_ceil(OPTIM_BLOCK) * 8)
    };
    if paged {
        (N(scales), N(moments))
    } else {
        (N(moments + scales), N::ZERO)
    }
}

/// bitsandbytes' AdamW state for the parameters `trainable` keeps among those of `a`, as
/// Trainer builds it for `adamw_bnb_8bit` / `paged_adamw_8bit`: `Trainer.create_optimizer`
/// gives every `nn.Embedding` weight 32-bit state (`register_module_override(module, "weight",
/// {"optim_bits": 32})`; a tied head is that embedding), and the two 256-entry float32 maps are
/// moved to the device once a tensor has 8-bit state (`init_state`). Returns the bytes in
/// PyTorch's allocator and the paged bytes outside it.
pub(crate) fn trainer_adamw8bit(
    a: &Architecture,
    optimizer: Optimizer,
    trainable: &dyn Fn(ParamKind, &str) -> bool,
) -> (N, N) {
    let paged = optimizer == Optimizer::PagedAdamw8bit;
    let mut device = N::ZERO;
    let mut host = N::ZERO;
    let mut any_8bit = false;
    for t in a.parameters() {
        if t.count == 0 || !trainable(t.kind, &t.name) {
            continue;
        }
        let embedding = matches!(
            t.kind,
            ParamKind::TokenEmbedding | ParamKind::PositionEmbedding
        );
        let numel = u128::from(t.numel());
        any_8bit |= !embedding && numel >= MIN_8BIT;
        let (d, h) = adamw_state(numel, embedding, paged);
        device = device + d * u128::from(t.count);
        host = host + h * u128::from(t.count);
    }
    if any_8bit {
        device = device + N(2 * DYNAMIC_MAP);
    }
    (device, host)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Llama 3.1 8B's `gate_proj` (14336 × 4096): NF4 with double quantization, written out.
    #[test]
    fn nf4_double_quant_of_a_gate_projection() {
        let n: u128 = 14336 * 4096; // 58 720 256 elements
        let packed = 29_360_128; // half a byte each
        let blocks = 917_504; // n / 64
        let second = 3_584; // blocks / 256
        let want = packed + blocks + second * 4 + 1024 + 4 + 64;
        assert_eq!(four_bit_weight_bytes(n, true), N(want));
        // Without double quantization each block keeps a float32 absmax.
        assert_eq!(four_bit_weight_bytes(n, false), N(packed + blocks * 4 + 64));
        // 4.14 bits per weight with double quantization, 4.5 without.
        let bits = |b: N| b.0 as f64 * 8.0 / n as f64;
        assert!((bits(four_bit_weight_bytes(n, true)) - 4.127).abs() < 0.001);
        assert!((bits(four_bit_weight_bytes(n, false)) - 4.5).abs() < 0.001);
    }

    /// A size that fills no block evenly rounds every level up.
    #[test]
    fn partial_blocks_round_up() {
        let n: u128 = 64 * 256 * 3 + 1; // 49 153: 769 blocks, 4 second-level blocks
        assert_eq!(
            four_bit_weight_bytes(n, true),
            N(24_577 + 769 + 4 * 4 + 1024 + 4 + 64)
        );
    }

    #[test]
    fn int8_weights_keep_a_scale_per_row() {
        assert_eq!(int8_weight_bytes(4096, 4096), N(16_777_216 + 16_384));
    }

    /// 8-bit state from 4096 elements on, paging from 100 000 on.
    #[test]
    fn adamw8bit_thresholds() {
        assert_eq!(adamw_state(4095, false, false), (N(4095 * 8), N::ZERO));
        assert_eq!(adamw_state(4096, false, false), (N(8192 + 16 * 8), N::ZERO));
        assert_eq!(
            adamw_state(99_999, false, true),
            (N(199_998 + 391 * 8), N::ZERO)
        );
        assert_eq!(adamw_state(100_000, false, true), (N(391 * 8), N(200_000)));
        assert_eq!(adamw_state(100_000, true, true), (N::ZERO, N(800_000)));
    }
}
