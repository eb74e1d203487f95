//! A generate estimate put together from its moments, whoever computed them (transformers'
//! `generate` in `hf_generate.rs`, nanochat's `Engine` in `nanochat/generate.rs`): the peak and
//! when it occurs, the overhead around it (`overhead.rs`) and the verdict on the scenario's card.

use super::arch::{Architecture, PositionLimit};
use super::error::ScenarioError;
use super::hf_generate::{GenerateBytes, GenerateEstimate, GenerateMoment, Generation};
use super::kv_cache::CacheBytes;
use super::num::N;
use super::overhead;
use super::params::Params;
use super::scenario::Scenario;
use super::{headroom, GpuCatalog, GpuRef, Verdict, ESTIMATOR_VERSION};

/// What a generate call's estimate is made of, before the overhead and the verdict.
pub(crate) struct GenerateParts {
    /// The model's parameter counts.
    pub(crate) params: Params,
    /// The weights as loaded (and what stays beside them: rotary buffers).
    pub(crate) weights: N,
    /// The KV cache after the prefill, at the end and at its largest.
    pub(crate) cache: CacheBytes,
    /// The load's own peak, where it can pass the generation's (nanochat's `build_model`).
    pub(crate) load: Option<N>,
    /// The prefill's peak, the weights included.
    pub(crate) prefill: N,
    /// The decoding steps' peak, the weights included (zero without a second new token).
    pub(crate) decode: N,
    /// bitsandbytes' format of the weights, if quantized.
    pub(crate) weights_quantization: Option<&'static str>,
    /// The position bound the context passes where the code runs on past it.
    pub(crate) beyond_position_limit: Option<PositionLimit>,
}

/// The estimate of `g` on model `a` under `s` from its `parts`: the largest of the load, the
/// prefill and the decoding steps (the load only when it is larger than both, the prefill on a
/// tie), the overhead at that peak, and the verdict on `s.gpu` (an unknown card refused).
pub(crate) fn assemble(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    parts: GenerateParts,
    catalog: &GpuCatalog,
) -> Result<GenerateEstimate, ScenarioError> {
    let GenerateParts {
        params,
        weights,
        cache,
        load,
        prefill,
        decode,
        weights_quantization,
        beyond_position_limit,
    } = parts;
    let generation = prefill.max(decode);
    let (peak, moment) = match load {
        Some(load) if load > generation => (load, GenerateMoment::Load),
        _ if decode > prefill => (decode, GenerateMoment::Decode),
        _ => (prefill, GenerateMoment::Prefill),
    };
    let u = |n: N, what: &str| n.to_u64(what);
    let t = overhead::totals(peak, false)?;
    let bytes = GenerateBytes {
        weights: u(weights, "the weights")?,
        kv_cache: cache.largest,
        kv_cache_after_prefill: cache.after_prefill,
        kv_cache_at_end: cache.at_end,
        load_peak: load.map(|l| u(l, "the load peak")).transpose()?,
        prefill_peak: u(prefill, "the prefill peak")?,
        decode_peak: u(decode, "the decoding peak")?,
        peak: u(peak, "the peak")?,
        overhead: t.overhead,
        total: t.total,
        total_low: t.total_low,
        total_high: t.total_high,
        other_processes: s.other_processes,
        cuda_context: t.cuda_context,
        allocator_slack: t.allocator_slack,
        cublas_workspace: t.cublas_workspace,
    };
    let card = match s.gpu.as_deref() {
        Some(id) => Some(
            catalog
                .get(id)
                .ok_or_else(|| ScenarioError::key("gpu", catalog.unknown_card(id)))?,
        ),
        None => None,
    };
    let verdict = card.map(|c| {
        Verdict::of(
            bytes.total_low,
            bytes.total,
            bytes.total_high,
            bytes.other_processes,
            c.capacity_bytes,
        )
    });
    Ok(GenerateEstimate {
        phase: "generate",
        architecture: a.clone(),
        dtype: s.dtype,
        weights_quantization,
        generation: *g,
        params,
        context_tokens: u(
            N::from(g.prompt_tokens) + N::from(g.max_new_tokens),
            "the context",
        )?,
        peak_moment: moment,
        bytes,
        gpu: card.map(GpuRef::of),
        fits: verdict.map(|v| v == Verdict::Fits),
        verdict,
        headroom_bytes: card.map(|c| headroom(c.capacity_bytes, s.other_processes, bytes.total)),
        beyond_position_limit,
        estimator_version: ESTIMATOR_VERSION,
    })
}
