//! Hugging Face `generate` on GPT-2 (`GPT2LMHeadModel`, transformers 5.24) and Llama-family
//! decoders (Llama, Mistral, Qwen2, Qwen3, Phi-3): the weights, the KV cache (`kv_cache.rs`), the
//! prefill of the whole prompt and the decoding steps (issue 22, item 2).
//!
//! Source: the fake-tensor replay of transformers' own `generate`
//! (`tools/hf_replay/replay_generate.py`, data in `tests/data/hf_generate_replay.json`; its
//! `--explain` lists the storages alive at each peak), read against `generation/utils.py` and
//! `modeling_gpt2.py`; `tests/it/hf_generate.rs` holds every replayed run (KV bytes exactly, the
//! prefill and decode peaks within 1 %) and the six GPT-2 runs measured on an H200.
//!
//! Notation: `b` prompts (`batch_size`), `r` `num_return_sequences` (sampling), `B = b·r`
//! sequences, `P` prompt tokens, `N` new tokens, `T = P + N − 1` the tokens the cache ends
//! holding, `h` hidden, `V` vocabulary, `e` bytes of the weights' dtype (no autocast: weights and
//! activations share it), `W` the weights. What `generate` holds:
//! - **Token ids** (int64): the caller's prompt and attention mask (`2·b·P·8`); at prefill
//!   generate's position ids and a copy (`2·B·P·8`, three with `r > 1`: the prompt and mask are
//!   repeated), of which one (two with `r > 1`) stays to the end; during decoding the grown ids and
//!   mask (`2·B·T·8`).
//! - **Prefill** (`logits_to_keep = 1`: only the last position's logits): the peak is the last
//!   block's `gelu_new` MLP, written out in Python: `c_fc`'s output, `pow`'s and the two products
//!   (`4·4·BPh·e`), beside the token and position embeddings, their sum, the block's residual
//!   input, the attention output and the LayerNorm output (`6·BPh·e`): `22·BPh·e`, with the cache
//!   as the prefill left it (a static cache whole). With a short prompt and a large vocabulary the
//!   logits weigh more: the last position's logits (`B·V·e`) and their float32 copy (`B·V·4`),
//!   once the forward's activations are gone and the ids have grown by the first new token.
//! - **Decoding** (one token per step, the last step is the largest): with a `DynamicCache`, the
//!   last layer's `torch.cat` holds its previous values (`B·(T−1)·h·e`) while the new ones exist,
//!   beside the previous step's float32 logits (greedy: `B·V·4`; sampling also keeps the top-k
//!   masked scores and the probabilities: `3·B·V·4`) and the step's small activations
//!   (`7·B·h·e`); or, at the logits, the new logits (`B·V·e`) and their float32 copy beside the
//!   previous one (`2·B·V·4`; sampling also the previous top-k scores and probabilities,
//!   `2·B·V·4`, and top-k's boolean mask, `B·V`), the ids one token longer. A `StaticCache`
//!   never grows: only the logits moment is left. With grouped-query attention nothing is
//!   repeated in transformers 5.24: the prefill slices the empty slots off and runs
//!   FlashAttention-2 with grouped heads (no mask), and a decoding step, masked over the unfilled
//!   slots, packs its one query per key/value head (`pack_gqa`) instead of repeating the keys and
//!   values (`repeat_kv`). Transformers 5.17, which the H200 measured, repeated them: 144 MiB
//!   more at 2,303 tokens for Llama 3.2 1B's shape (`tests/it/hf_generate.rs` says so).
//! - **Llama-family decoders** (SwiGLU, RoPE, RMSNorm; Llama 2/3, Mistral, Qwen2 with its q/k/v
//!   biases, Qwen3 with its QK-norm, Phi-3 with its fused projections): the same moments, the
//!   prefill's MLP holding three intermediate-wide tensors (`3·BPI·e`: `gate_proj`'s output, its
//!   SiLU, the product; Phi-3's fused `gate_up_proj` output is two wide, so four) beside four
//!   hidden-wide ones and RoPE's cos and sin (`2·BP·head_dim·e`); the weights include the two
//!   `inv_freq` buffers. A sliding-window cache layer (`DynamicSlidingWindowLayer`: Mistral
//!   v0.1, Phi-3) concatenates keys and values before it drops either old tensor, so a decoding
//!   step holds both the old keys and the old values. Within the window (`prompt + new ≤
//!   sliding_window`) every layer sees every token and no mask is built; past it the prefill is
//!   masked, the dynamic cache cut to the window and the static one's full slots rolled at each
//!   step (`window_generate.rs`).
//! - **Quantized cache** (optimum-quanto's int4 or int2, HQQ's int8, transformers' fp8; Llama
//!   family): the prefill as above with the quantized cache (HQQ's own quantization of the
//!   prompt where larger); its decoding steps' dequantized and returned states and flushes are
//!   `quantized_decode.rs`'s.
//! - **bitsandbytes weights** (`load_in_4bit`, `load_in_8bit`; GPT-2 and the Llama family): the
//!   weights and the quantized MLP Linears' moments are `bnb_generate.rs`'s.
//! - **Beam search** (`num_beams > 1`, dynamic or static cache): `B = b·num_beams` rows, the
//!   beams' own tensors, two float32 tensors over the vocabulary kept between steps,
//!   `reorder_cache`'s copies and a window's shorter cache (`beam_generate.rs`).
//! - **Mixtures of experts** (Mixtral, Qwen1.5-MoE, Qwen3-MoE; every expert's weights resident):
//!   the same moments, the prefill's MLP the experts' `k` pairs per token
//!   (`hf_moe::prefill_bytes_per_token`, held to `tests/data/hf_moe_generate_replay.json`).

use serde::Serialize;

use super::arch::{Architecture, Family, Mlp, PositionLimit, Positions, Span};
use super::beam_generate::{self, Search};
use super::bnb_generate::{self, WeightQuant};
use super::error::ScenarioError;
use super::generate_assembly::{assemble, GenerateParts};
use super::kv_cache::{cache_bytes, CacheBytes, CacheKind, CacheRun};
use super::num::N;
use super::params::{self, Params};
use super::quantized_decode::{self, Quanto};
use super::scenario::{Dtype, Scenario};
use super::window_generate;
use super::{GpuCatalog, GpuRef, Verdict};

/// What `model.generate` is asked to do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Generation {
    /// Tokens of each prompt (`input_ids.shape[1]`; no padding).
    pub prompt_tokens: u64,
    /// `max_new_tokens` (generation runs to it: no sequence ends early).
    pub max_new_tokens: u64,
    /// Prompts in the batch (`input_ids.shape[0]`).
    pub batch_size: u64,
    /// `num_return_sequences` (with `do_sample=True`, or at most `num_beams`; 1 otherwise).
    pub num_return_sequences: u64,
    /// `do_sample=True` (top-k 50, the generation config's default) instead of greedy decoding.
    pub do_sample: bool,
    /// `num_beams`: 1 is greedy decoding or sampling; more is beam search (`beam_generate.rs`).
    #[serde(skip_serializing_if = "is_one")]
    pub num_beams: u64,
    /// The cache `generate` builds (`cache_implementation`).
    pub cache: CacheKind,
}

impl Generation {
    /// Sequences decoded at once: `batch_size · max(num_beams, num_return_sequences)`
    /// (`generate`'s `expand_size`, `generation/utils.py`).
    pub(crate) fn sequences(&self) -> N {
        N::from(self.batch_size) * N::from(self.num_beams.max(self.num_return_sequences))
    }
}

/// Whether `n` is 1 (`num_beams` leaves the JSON where it is).
fn is_one(n: &u64) -> bool {
    *n == 1
}

/// When the peak occurs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum GenerateMoment {
    /// The forward over the whole prompt.
    Prefill,
    /// A decoding step: the last, where the cache is largest, or with sliding-window layers
    /// holding a prompt beyond their window, the first (`hf_gemma/generate.rs`).
    Decode,
    /// Loading the checkpoint (nanochat's `build_model`: `nanochat/generate.rs`).
    Load,
}

/// Bytes of a `generate` call (`estimate --format json`'s `bytes`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct GenerateBytes {
    /// The model's parameters in the weights' dtype.
    pub weights: u64,
    /// The KV cache at its largest.
    pub kv_cache: u64,
    /// The KV cache right after the prefill.
    pub kv_cache_after_prefill: u64,
    /// The KV cache `generate` returns (after the last step).
    pub kv_cache_at_end: u64,
    /// Loading the checkpoint, where the estimate models it (nanochat's `build_model`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load_peak: Option<u64>,
    /// The prefill's peak: weights, cache, prompt ids and the largest forward moment.
    pub prefill_peak: u64,
    /// The decoding steps' peak (the last step, or the first: [`GenerateMoment::Decode`]).
    pub decode_peak: u64,
    /// The larger of the two: `torch.cuda.max_memory_allocated()`.
    pub peak: u64,
    /// Context, allocator slack and cuBLAS workspace at their middle.
    pub overhead: u64,
    /// `peak + overhead`.
    pub total: u64,
    /// The total with every overhead at its low end.
    pub total_low: u64,
    /// The total with every overhead at its high end.
    pub total_high: u64,
    /// Memory other programs hold on the card.
    pub other_processes: u64,
    /// The CUDA context at the middle.
    pub cuda_context: u64,
    /// Reserved but unallocated memory at the middle.
    pub allocator_slack: u64,
    /// The cuBLAS workspace.
    pub cublas_workspace: u64,
}

/// The estimate of one `generate` call.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct GenerateEstimate {
    /// `generate`.
    pub phase: &'static str,
    /// The model.
    pub architecture: Architecture,
    /// The weights' dtype.
    pub dtype: Dtype,
    /// bitsandbytes' format of the blocks' Linears (`nf4`, `fp4`, `int8`), when quantized.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub weights_quantization: Option<&'static str>,
    /// What is generated.
    pub generation: Generation,
    /// Parameter counts.
    pub params: Params,
    /// `prompt_tokens + max_new_tokens`: the sequence each row ends as.
    pub context_tokens: u64,
    /// When the peak occurs.
    pub peak_moment: GenerateMoment,
    /// Where the bytes go.
    pub bytes: GenerateBytes,
    /// The scenario's GPU, if it names one.
    pub gpu: Option<GpuRef>,
    /// The verdict against the GPU, if one is named.
    pub verdict: Option<Verdict>,
    /// `verdict == fits`, if a GPU is named.
    pub fits: Option<bool>,
    /// `capacity_bytes − other_processes − total`, if a GPU is named.
    pub headroom_bytes: Option<i64>,
    /// The model's position bound, when this context feeds positions past it (transformers
    /// generates on with one warning; the model never trained on them: `arch/positions.rs`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub beyond_position_limit: Option<PositionLimit>,
    /// The estimator's fingerprint.
    pub estimator_version: &'static str,
}

/// Bytes of an int64 id.
const ID: u128 = 8;
/// Bytes of a float32 element.
const FP32: u128 = 4;

/// Estimates `model.generate` of `g` on model `a`, the weights in `s.dtype`, on `s.gpu` beside
/// `s.other_processes`.
pub fn estimate_generate(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<GenerateEstimate, ScenarioError> {
    estimate(a, s, g, catalog, true).map_err(|e| s.at_given_attention(e))
}

/// The memory of `g` with the model's positions not checked: what the card would hold were
/// the positions no bound (the `max_context` solver's memory bound, `solve.rs`).
pub(crate) fn estimate_generate_memory(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<GenerateEstimate, ScenarioError> {
    estimate(a, s, g, catalog, false)
}

fn estimate(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
    check_positions: bool,
) -> Result<GenerateEstimate, ScenarioError> {
    a.validate()?;
    let mut settled = s.clone();
    settled.settle_attention()?;
    super::flash_attention_2::check(a, &settled)?;
    let s = &settled;
    if a.family == Family::Nanochat {
        return super::nanochat::generate::estimate(a, s, g, catalog);
    }
    let e = if s.dtype == Dtype::Float32 { 4 } else { 2 };
    check(a, s, g, e, check_positions)?;
    let params = params::count_of(a, s)?.params;
    // Rotary models also keep `inv_freq` and `original_inv_freq` (head_dim/2 float32 each).
    let rotary = match (a.positions, a.family) {
        (_, Family::Gemma2 | Family::Gemma3) => super::hf_gemma::generate::buffers(a, e),
        (Positions::Rotary { .. }, _) => N::from(a.attention.head_dim) * FP32,
        (Positions::Learned { .. }, _) => N::ZERO,
    };
    let quant = WeightQuant::of(s);
    let weights = match quant {
        Some(q) => bnb_generate::weights(a, q, e, rotary),
        None => N::from(params.total) * e as u128 + rotary,
    };
    let cache = cache_bytes(
        a,
        &CacheRun {
            kind: g.cache,
            element_bytes: e,
            sequences: g.sequences().to_u64("the sequences")?,
            prompt: g.prompt_tokens,
            new_tokens: g.max_new_tokens,
        },
    )?;
    let (mut m, fixed) = GenerateMoments::of(a, g, e, &cache)?;
    if let Some(q) = quant {
        m = bnb_generate::with_quantized_linears(m, fixed, a, g, q, s.dtype, hidden_widths(a));
    }
    let prefill = weights + m.prefill;
    let decode = if g.max_new_tokens >= 2 {
        weights + m.decode
    } else {
        N::ZERO
    };
    let parts = GenerateParts {
        params,
        weights,
        cache: beam_generate::returned_cache(a, g, e, cache),
        load: None,
        prefill,
        decode,
        weights_quantization: quant.map(WeightQuant::name),
        beyond_position_limit: a
            .runs_past_positions(g.prompt_tokens.saturating_add(g.max_new_tokens)),
    };
    assemble(a, s, g, parts, catalog)
}

/// Refuses what the replay does not cover, naming each key (all at once).
fn check(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    e: u64,
    check_positions: bool,
) -> Result<(), ScenarioError> {
    if !replayed(a) {
        // What is known: the cache this call would end with.
        let cache = g
            .sequences()
            .to_u64("the sequences")
            .and_then(|sequences| {
                cache_bytes(
                    a,
                    &CacheRun {
                        kind: g.cache,
                        element_bytes: e,
                        sequences,
                        prompt: g.prompt_tokens,
                        new_tokens: g.max_new_tokens,
                    },
                )
            })
            .map_or_else(
                |_| String::new(),
                |c| format!(" (its KV cache here: {} bytes at its largest)", c.largest),
            );
        return Err(ScenarioError::key(
            "model",
            format!(
                "Hugging Face generate is modelled for GPT-2, Llama-family decoders with a gated \
                 MLP, mixtures of experts and Gemma 2/3 (transformers {}) only; {} ({}{}) is described and \
                 its KV cache computed{cache}, but its prefill and decoding are not replayed yet",
                super::arch::HF_TRANSFORMERS,
                a.name,
                a.family.as_str(),
                not_plain(a)
            ),
        ));
    }
    let mut wrong: Vec<(&str, String)> = Vec::new();
    if g.prompt_tokens == 0 {
        wrong.push((
            "prompt_tokens",
            "the prompt needs at least one token".into(),
        ));
    }
    if g.max_new_tokens == 0 {
        wrong.push(("max_new_tokens", "must be at least 1".into()));
    }
    if g.batch_size == 0 || g.num_return_sequences == 0 {
        wrong.push((
            "batch_size",
            "the batch and num_return_sequences must be at least 1".into(),
        ));
    }
    if g.num_return_sequences > 1 && !g.do_sample && g.num_beams == 1 {
        wrong.push((
            "num_return_sequences",
            "greedy decoding returns one sequence per prompt (transformers refuses more without \
             do_sample=True or beams)"
                .into(),
        ));
    }
    if let (Positions::Learned { max_positions }, true) = (a.positions, check_positions) {
        let last = u128::from(g.prompt_tokens) + u128::from(g.max_new_tokens);
        if last > u128::from(max_positions) + 1 {
            wrong.push((
                "max_new_tokens",
                format!(
                    "the prompt plus new tokens minus one ({}) exceeds GPT-2's {max_positions} \
                     positions (n_positions): generate would index past its position table",
                    last - 1
                ),
            ));
        }
    }
    let quantized = Quanto::of(g.cache).is_some() || g.cache == CacheKind::Fp8;
    let computed = matches!(g.cache, CacheKind::Dynamic | CacheKind::Static)
        || (quantized && a.family == Family::Llama);
    if !computed {
        wrong.push(("kv_cache", quantized_decode::refusal(g.cache)));
    }
    if matches!(a.family, Family::Gemma2 | Family::Gemma3) {
        wrong.extend(super::hf_gemma::generate::refusals(a, s));
    } else if !s.flash {
        wrong.push((
            "flash",
            "generate is replayed with SDPA attention (GPT-2's default), not eager".into(),
        ));
    }
    wrong.extend(bnb_generate::refusals(a, s));
    wrong.extend(beam_generate::refusals(g));
    if s.compile {
        wrong.push((
            "compile",
            "generate is replayed eager (disable_compile=True): set compile to false".into(),
        ));
    }
    if wrong.is_empty() {
        return Ok(());
    }
    let text: Vec<String> = wrong.iter().map(|(k, w)| format!("`{k}`: {w}")).collect();
    Err(ScenarioError {
        key: wrong.first().map(|(k, _)| (*k).to_owned()),
        message: format!(
            "Hugging Face generate (transformers {}): {}",
            super::arch::HF_TRANSFORMERS,
            text.join("; ")
        ),
    })
}

/// Whether `generate` on `a` is replayed: GPT-2, a Llama-family decoder with a gated MLP
/// (separate or fused projections, QK-norm or biases, a sliding window on every layer or none),
/// or a mixture of experts as `hf_moe::generate_replayed` says.
fn replayed(a: &Architecture) -> bool {
    match a.family {
        Family::HfGpt2 => true,
        Family::Llama => matches!(a.mlp, Mlp::Dense(f) if f.gated) && window(a).is_some(),
        Family::Moe => super::hf_moe::generate_replayed(a),
        Family::Gemma2 | Family::Gemma3 => true,
        _ => false,
    }
}

/// A Llama-family model's window: `Some(None)` with none, `Some(Some(W))` with every layer
/// local over `W` tokens, `None` for other patterns (not replayed).
fn window(a: &Architecture) -> Option<Option<u64>> {
    match &a.attention.sliding_window {
        None => Some(None),
        Some(w) if w.pattern.iter().all(|s| *s == Span::Local) => Some(Some(w.window)),
        Some(_) => None,
    }
}

/// What makes a Llama-family model other than replayed, for the refusal ("" for other families).
fn not_plain(a: &Architecture) -> &'static str {
    match (a.family, &a.mlp) {
        (Family::Llama, _) if window(a).is_none() => ", with mixed sliding-window layers",
        (Family::Llama, Mlp::Dense(f)) if !f.gated => ", without a gated MLP",
        _ => "",
    }
}

/// Elements per prompt token alive at the prefill's MLP moment, in the weights' dtype. GPT-2:
/// `gelu_new`'s `c_fc` output, `pow`, two products (`4·4h`) beside six hidden-wide tensors:
/// `22h`. Llama: `gate_proj`'s output, its SiLU, `up_proj`'s output and the product would be
/// four; the replay holds three intermediate-wide tensors at once (`3·I`) beside the embedding,
/// the residual sum, its RMSNorm and the block input (`4h`) and RoPE's cos and sin
/// (`2·head_dim`). Phi-3's fused `gate_up_proj` output (`2·I`, chunked into views) stays alive
/// beside the SiLU and the product: `4·I`.
fn prefill_widths(a: &Architecture) -> N {
    match (&a.mlp, a.family) {
        (Mlp::Dense(f), Family::Llama) => {
            let wide = if f.fused_gate_up { 4u64 } else { 3 };
            N::from(f.intermediate) * u128::from(wide) + hidden_widths(a)
        }
        _ => hidden_widths(a) + N::from(a.hidden) * 16,
    }
}

/// Of [`prefill_widths`], the elements per token beside the MLP's own tensors: GPT-2's six
/// hidden-wide tensors; Llama's (and a mixture's) four and RoPE's cos and sin; Gemma's four (its
/// RoPE tables are among `hf_gemma::generate`'s fixed bytes).
fn hidden_widths(a: &Architecture) -> N {
    let h = N::from(a.hidden);
    match a.family {
        Family::Llama | Family::Moe => h * 4 + N::from(a.attention.head_dim) * 2,
        Family::Gemma2 | Family::Gemma3 => h * 4,
        _ => h * 6,
    }
}

/// What lies beside the weights at the prefill's and the decoding's peaks.
pub(crate) struct GenerateMoments {
    pub(crate) prefill: N,
    pub(crate) decode: N,
}

/// What stays beside the prefill's forward (the cache, the ids), and beside a decoding step's
/// (the cache at its end, the ids, the previous step's float32 scores).
pub(crate) type Fixed = (N, N);

impl GenerateMoments {
    fn of(
        a: &Architecture,
        g: &Generation,
        e: u64,
        cache: &CacheBytes,
    ) -> Result<(GenerateMoments, Fixed), ScenarioError> {
        if matches!(a.family, Family::Gemma2 | Family::Gemma3) {
            return Ok(super::hf_gemma::generate::moments(a, g, e, cache));
        }
        let run = CacheRun {
            kind: g.cache,
            element_bytes: e,
            sequences: g.sequences().to_u64("the sequences")?,
            prompt: g.prompt_tokens,
            new_tokens: g.max_new_tokens,
        };
        let e = u128::from(e);
        let (b, seqs) = (N::from(g.batch_size), g.sequences());
        let (p, h, v) = (
            N::from(g.prompt_tokens),
            N::from(a.hidden),
            N::from(a.vocab_size),
        );
        let t = p + N::from(g.max_new_tokens) - N::from(1u64);
        let search = Search::of(g);
        let repeated = search.expanded;
        // Ids: the caller's prompt and mask, generate's own at prefill and those that stay.
        let caller = b * p * (2 * ID);
        let own_prefill = seqs * p * (if repeated { 3 } else { 2 } * ID);
        let own_kept = seqs * p * (if repeated { 2 } else { 1 } * ID);
        let per_token = match a.family {
            Family::Moe => super::hf_moe::prefill_bytes_per_token(a, e),
            _ => prefill_widths(a) * e,
        };
        let mut mlp = own_prefill + seqs * p * per_token;
        // Past a sliding window the prefill is masked (`window_generate.rs`).
        let sliding = window(a).flatten();
        let masked = sliding.and_then(|w| match g.cache {
            CacheKind::Dynamic => window_generate::masked_prefill(a, w, seqs, g.prompt_tokens, e),
            CacheKind::Static => window_generate::static_masked_prefill(
                a,
                w,
                seqs,
                g.prompt_tokens,
                g.max_new_tokens,
                e,
            ),
            _ => None,
        });
        let mut attention = N::ZERO;
        if let Some(m) = masked {
            mlp = mlp + m.mask;
            attention = own_prefill + m.attention;
        }
        // The first token's logits and their float32 copy (beams: its log-softmax too), the ids
        // one token longer.
        let prefill_logits = own_kept
            + seqs * v * (e + FP32 * search.prefill_vocab)
            + seqs * (p + N::from(1u64)) * ID;
        let mut prefill = N::from(cache.after_prefill)
            + caller
            + search.prefill_state
            + mlp.max(prefill_logits).max(attention);
        if let Some(q) = Quanto::of(g.cache).filter(|q| q.bits == 8) {
            // HQQ quantizes the prompt's states with its optimizer.
            prefill = prefill.max(caller + own_prefill + quantized_decode::hqq_prefill(a, &run, q));
        }
        // Decoding: the previous step's float32 tensors over the vocabulary.
        let kept_vocab = search.kept_vocab;
        let ids = seqs * t * (search.grown_rows * ID) + caller + own_kept + search.decode_state;
        let at_end = N::from(cache.at_end);
        // Sampling's top-k also makes a boolean mask over the vocabulary.
        let mask = if g.do_sample { seqs * v } else { N::ZERO };
        let logits_stage = seqs * v * e + seqs * v * ((kept_vocab + 1) * FP32) + mask + seqs * ID;
        let logits = at_end + ids + logits_stage;
        // A step's own activations beside the previous step's float32 logits.
        let step = seqs * h * (7 * e) + seqs * v * (kept_vocab * FP32);
        let decode = match g.cache {
            CacheKind::Static => {
                // Full sliding slots roll at each step.
                let kv_token = seqs * N::from(a.attention.kv_width()) * e;
                let roll = sliding.map_or(N::ZERO, |w| {
                    window_generate::static_roll(w, kv_token, g.prompt_tokens, g.max_new_tokens)
                });
                // Beams: `reorder_cache`'s copy of one layer's whole slots.
                let vocab = seqs * v * (kept_vocab * FP32);
                let reorder = beam_generate::static_reorder(a, g, cache, ids + vocab);
                let rolled = (roll > N::ZERO).then(|| at_end + ids + step + roll);
                logits.max(rolled.unwrap_or(N::ZERO)).max(reorder)
            }
            CacheKind::Dynamic => {
                let kv_token = seqs * N::from(a.attention.kv_width()) * e;
                let vocab = seqs * v * (kept_vocab * FP32);
                let beams = beam_generate::BeamStep::new(kv_token, cache, ids, step, vocab);
                let cache_moment = match sliding {
                    Some(w) => window_generate::decode_cache(
                        w,
                        kv_token,
                        g.prompt_tokens,
                        g.max_new_tokens,
                        cache.after_prefill,
                        cache.at_end,
                    ),
                    // The last layer's old values during its concatenation.
                    None => at_end + kv_token * (t - N::from(1u64)),
                };
                let plain = logits.max(cache_moment + ids + step);
                beam_generate::dynamic_decode(g, sliding, &beams).map_or(plain, |b| logits.max(b))
            }
            CacheKind::Fp8 => logits.max(ids + quantized_decode::fp8_moment(a, &run, at_end, step)),
            kind => match Quanto::of(kind) {
                // The logits moment with the cache at its largest (its residual fullest).
                Some(q) => (N::from(cache.largest) + ids + logits_stage)
                    .max(ids + quantized_decode::cache_moments(a, &run, q, step)?),
                None => logits,
            },
        };
        let fixed = (
            N::from(cache.after_prefill) + caller + own_prefill + search.prefill_state,
            at_end + ids + seqs * v * (kept_vocab * FP32),
        );
        Ok((GenerateMoments { prefill, decode }, fixed))
    }
}
