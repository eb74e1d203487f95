//! Which tensor a failed allocation is, and in which phase of nanoGPT's loop (or of a Hugging
//! Face `Trainer`'s, for a model given by `model`) it failed.
//!
//! The candidates are the estimator's named list of a run's large tensors
//! (`estimate::arch::large_tensors`, derived from the model's architecture description; exact
//! replay of nanoGPT's train step; docs/memory-model.md): logits and their fp32 copy, the
//! evaluation's logits, the token embedding's gradient and AdamW moments, attention scores without
//! flash, and the per-layer activations. A candidate matches when its size is within the message's rounding
//! plus the caching allocator's: PyTorch rounds requests of 10 MiB and more up to a multiple of
//! 2 MiB (`CUDACachingAllocator.cpp`, `get_allocation_size`).

use serde::Serialize;

use super::message::{OomMessage, PrintedSize};
use crate::estimate::arch::{large_tensors, TensorPhase};
use crate::estimate::{Estimate, Family};

/// Whether `e` is a Hugging Face `Trainer` step (`estimate_model`'s GPT-2 or Llama family):
/// a training step only, with no evaluation modelled.
pub(crate) fn is_trainer_step(e: &Estimate) -> bool {
    matches!(e.architecture().family, Family::HfGpt2 | Family::Llama)
}

/// `Trainer`'s evaluation frames (`transformers/trainer.py`: `evaluate` → `evaluation_loop` →
/// `prediction_step`; `prediction_loop` in older versions).
const TRAINER_EVALUATION: &[&str] = &["evaluation_loop", "prediction_step", "prediction_loop"];

/// Frames only generation runs: transformers' `generate` and its decoding loops
/// (`generation/utils.py`: `_sample`, `_beam_search`, `_assisted_decoding`, the prefill of
/// newer versions), the cache it builds (`_prepare_cache_for_generation`, 4.45 and later;
/// `_get_cache` before; 4.4x's `HybridCache` and `StaticCache` preallocate in their
/// `__init__` under them), nanoGPT's `model.generate` (`model.py`), which `sample.py` calls, and
/// nanochat's `Engine.generate` and `GPT.generate`. Matched as whole frame names.
const GENERATION_FRAMES: &[&str] = &[
    "generate",
    "generate_batch",
    "_sample",
    "_beam_search",
    "_group_beam_search",
    "_constrained_beam_search",
    "_assisted_decoding",
    "_contrastive_search",
    "prefill",
    "_prefill",
    "_prepare_cache_for_generation",
    "_get_cache",
];

/// Code lines that only generation runs: the attention's cache update
/// (`past_key_value.update(…)`, `past_key_values.update(…)` in newer versions), the cache's own
/// concatenation in `cache_utils.py` (`self.key_cache[layer_idx]` before 4.54, `self.keys`
/// after; a sliding layer's `torch.cat((self.keys[:, :, 1:, :], …))`), a static layer's
/// preallocation and copy (`self.keys = torch.zeros(…)`, `self.keys.index_copy_(…)`; 4.4x's
/// `new_layer_key_cache = torch.zeros(…)`, `k_out.index_copy_(…)`), the quantized cache's
/// states (`self._quantized_keys`, 4.4x's `self._quantized_key_cache`, `self._dequantize(…)`),
/// `sample.py`'s call of `model.generate(…)`, and nanochat's cache (`KVCache(…)`,
/// `flash_attn_with_kvcache`).
const GENERATION_CODE: &[&str] = &[
    "past_key_value",
    "self.key_cache",
    "self.value_cache",
    "self.keys,",
    "self.values,",
    "self.keys[",
    "self.values[",
    "self.keys = torch.zeros",
    "self.keys.index_copy_",
    "self.values.index_copy_",
    "new_layer_key_cache",
    "k_out.index_copy_",
    "self._quantized_key",
    "self._quantized_value",
    "self._dequantize(",
    "model.generate(",
    "KVCache(",
    "flash_attn_with_kvcache",
];

/// The caching allocator's rounding of large blocks: 2 MiB.
const ROUND_LARGE: u64 = 2 << 20;

/// A phase of nanoGPT's `train.py` loop (or a Trainer's), or generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum LoopPhase {
    /// `estimate_loss()` (at iteration 0 it runs before the first training step).
    Evaluation,
    /// A micro-step's forward (`model(X, Y)`).
    Forward,
    /// A micro-step's backward (`loss.backward()`).
    Backward,
    /// A micro-step, forward or backward (no traceback to tell which).
    TrainingStep,
    /// `optimizer.step()` (the AdamW moments are created at the first one).
    OptimizerStep,
    /// Generation: Hugging Face `generate` (its prefill or a decoding step) or nanoGPT's
    /// `model.generate` in `sample.py`; no training step's tensor is allocated there.
    Generation,
}

/// How the phase was found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum PhaseSource {
    /// The traceback's frames.
    Traceback,
    /// The memory in use: the phase whose estimated peak is closest to what PyTorch held plus
    /// the failed allocation.
    Memory,
    /// The matched tensor exists in one phase only.
    Tensor,
}

/// A tensor of the scenario that an allocation can be.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Candidate {
    /// Which tensor (`logits`, `logits_fp32`, `eval_logits`, …).
    pub(crate) kind: &'static str,
    /// Its shape, as PyTorch prints it.
    pub(crate) shape: String,
    /// Its dtype (`bfloat16`, `float16`, `float32`).
    pub(crate) dtype: &'static str,
    /// Its bytes.
    pub(crate) bytes: u64,
    /// The phases in which it is allocated.
    #[serde(skip)]
    pub(crate) phases: Vec<LoopPhase>,
}

impl LoopPhase {
    /// The loop phase of an estimator tensor phase.
    fn of(p: TensorPhase) -> LoopPhase {
        match p {
            TensorPhase::Evaluation => LoopPhase::Evaluation,
            TensorPhase::Forward => LoopPhase::Forward,
            TensorPhase::Backward => LoopPhase::Backward,
            TensorPhase::OptimizerStep => LoopPhase::OptimizerStep,
        }
    }
}

/// The scenario's large tensors, each with the phases that allocate it: the estimator's one
/// named list (`estimate::arch::large_tensors`), as this module shows them.
pub(crate) fn candidates(e: &Estimate) -> Vec<Candidate> {
    large_tensors(e.architecture(), &e.scenario)
        .into_iter()
        .map(|t| Candidate {
            kind: t.name,
            shape: t.shape_text(),
            dtype: t.dtype.as_str(),
            bytes: t.bytes(),
            phases: t.phases.iter().map(|p| LoopPhase::of(*p)).collect(),
        })
        .collect()
}

/// Whether `bytes` is what the message's `requested` can stand for.
pub(crate) fn size_matches(bytes: u64, requested: PrintedSize) -> bool {
    let rounded = if bytes >= 10 << 20 {
        bytes.div_ceil(ROUND_LARGE).saturating_mul(ROUND_LARGE)
    } else {
        bytes
    };
    [bytes, rounded]
        .iter()
        .any(|b| b.abs_diff(requested.bytes) <= requested.tolerance.max(1))
}

/// The phase the traceback names: a generation frame ([`GENERATION_FRAMES`],
/// [`GENERATION_CODE`]) with no backward → generation, `estimate_loss` or `Trainer`'s evaluation frames →
/// evaluation, a backward frame → backward, an optimizer's `step` → optimizer step, any other
/// frame → a micro-step's forward.
pub(crate) fn phase_from_traceback(m: &OomMessage) -> Option<LoopPhase> {
    if m.frames.is_empty() && m.code.is_empty() {
        return None;
    }
    let has = |needle: &str| {
        m.frames.iter().any(|f| f.contains(needle)) || m.code.iter().any(|c| c.contains(needle))
    };
    let generation = m
        .frames
        .iter()
        .any(|f| GENERATION_FRAMES.contains(&f.as_str()))
        || GENERATION_CODE.iter().any(|n| has(n));
    if generation && !has("backward") {
        return Some(LoopPhase::Generation);
    }
    let trainer_evaluation = m
        .frames
        .iter()
        .any(|f| TRAINER_EVALUATION.contains(&f.as_str()));
    Some(if has("estimate_loss") || trainer_evaluation {
        LoopPhase::Evaluation
    } else if has("backward") {
        LoopPhase::Backward
    } else if m
        .frames
        .iter()
        .any(|f| f == "step" || f.contains("adam") || f.contains("sgd"))
        || m.code.iter().any(|c| c.contains(".step("))
    {
        LoopPhase::OptimizerStep
    } else {
        LoopPhase::Forward
    })
}

/// The tensor and phase of a failed allocation.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub(crate) struct Identified {
    /// The matched tensor, if one has the requested size.
    pub(crate) tensor: Option<Candidate>,
    /// The phase, if known.
    pub(crate) phase: Option<LoopPhase>,
    /// How the phase was found.
    pub(crate) phase_source: Option<PhaseSource>,
    /// For an evaluation: whether it ran before the first optimizer step (iteration 0, where
    /// nanoGPT evaluates before it trains), judged by the memory in use.
    pub(crate) before_first_step: Option<bool>,
    /// The candidate closest in size, when none matches.
    pub(crate) nearest: Option<Candidate>,
    /// The traceback names a `Trainer` evaluation, which the estimate (a training step only)
    /// does not model: no tensor is matched.
    pub(crate) evaluation_not_modelled: bool,
    /// The traceback names generation and the scenario is a training run: a training step's
    /// tensors are not what generation allocates, so none is matched.
    pub(crate) generation_not_modelled: bool,
}

/// Matches the requested size against the scenario's tensors and settles the phase.
///
/// The traceback decides the phase when there is one. Without it, the phase is the one whose
/// estimated peak (`eval_first_peak` at iteration 0, `eval_peak` later, `train_peak` for a
/// micro-step) is closest to what PyTorch held plus the failed allocation, among the phases that
/// allocate a tensor of that size.
pub(crate) fn identify(m: &OomMessage, e: &Estimate) -> Identified {
    let traced = phase_from_traceback(m);
    if traced == Some(LoopPhase::Generation) {
        return Identified {
            tensor: None,
            phase: traced,
            phase_source: Some(PhaseSource::Traceback),
            before_first_step: None,
            nearest: None,
            evaluation_not_modelled: false,
            generation_not_modelled: true,
        };
    }
    if is_trainer_step(e) && traced == Some(LoopPhase::Evaluation) {
        // The evaluation's batch (`per_device_eval_batch_size`) and tensors are not the step's.
        return Identified {
            tensor: None,
            phase: traced,
            phase_source: Some(PhaseSource::Traceback),
            before_first_step: None,
            nearest: None,
            evaluation_not_modelled: true,
            generation_not_modelled: false,
        };
    }
    let all = candidates(e);
    let at_failure = m.allocated.bytes.saturating_add(m.requested.bytes);
    let gap = |peak: u64| peak.abs_diff(at_failure);
    let matching: Vec<&Candidate> = all
        .iter()
        .filter(|c| size_matches(c.bytes, m.requested))
        .collect();
    let b = &e.bytes;
    let (phase, source) = match traced {
        Some(p) => (Some(p), Some(PhaseSource::Traceback)),
        None => {
            let eval = matching
                .iter()
                .any(|c| c.phases.contains(&LoopPhase::Evaluation));
            let train = matching
                .iter()
                .any(|c| c.phases.iter().any(|p| *p != LoopPhase::Evaluation));
            let eval_gap = gap(b.eval_first_peak).min(gap(b.eval_peak));
            match (eval, train) {
                (true, true) if eval_gap <= gap(b.train_peak) => {
                    (Some(LoopPhase::Evaluation), Some(PhaseSource::Memory))
                }
                (true, true) => (Some(LoopPhase::TrainingStep), Some(PhaseSource::Memory)),
                (true, false) => (Some(LoopPhase::Evaluation), Some(PhaseSource::Tensor)),
                (false, true) => match matching.first().map(|c| c.phases.as_slice()) {
                    Some([only]) => (Some(*only), Some(PhaseSource::Tensor)),
                    _ => (Some(LoopPhase::TrainingStep), Some(PhaseSource::Tensor)),
                },
                (false, false) => (None, None),
            }
        }
    };
    let fits_phase = |c: &Candidate, p: LoopPhase| {
        c.phases.contains(&p)
            || (p == LoopPhase::TrainingStep
                && c.phases.iter().any(|q| *q != LoopPhase::Evaluation))
    };
    let tensor = matching
        .iter()
        .find(|c| phase.is_some_and(|p| fits_phase(c, p)))
        .or(matching.first())
        .map(|c| (*c).clone());
    let before_first_step =
        (phase == Some(LoopPhase::Evaluation)).then(|| gap(b.eval_first_peak) <= gap(b.eval_peak));
    let nearest = if tensor.is_none() {
        all.iter()
            .min_by_key(|c| c.bytes.abs_diff(m.requested.bytes))
            .cloned()
    } else {
        None
    };
    Identified {
        tensor,
        phase,
        phase_source: source,
        before_first_step,
        nearest,
        evaluation_not_modelled: false,
        generation_not_modelled: false,
    }
}

#[cfg(test)]
mod tests {
    use super::{phase_from_traceback, LoopPhase};
    use crate::oom::message::parse;

    const MESSAGE: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of 14.75 GiB of which 10.00 MiB is free. Process 1 has 14.73 GiB memory in use. Of the allocated memory 14.00 GiB is allocated by PyTorch, and 100.00 MiB is reserved by PyTorch but unallocated.";

    /// The phase of `MESSAGE` after a traceback of `frames` (function name, code line).
    fn phase(frames: &[(&str, &str)]) -> Option<LoopPhase> {
        let mut text = String::from("Traceback (most recent call last):\n");
        for (i, (name, code)) in frames.iter().enumerate() {
            text += &format!("  File \"/x/f{i}.py\", line {i}, in {name}\n    {code}\n");
        }
        text += MESSAGE;
        phase_from_traceback(&parse(&text).expect("the message parses"))
    }

    #[test]
    fn generation_frames_and_cache_updates_name_generation() {
        let cases: [&[(&str, &str)]; 4] = [
            &[("generate", "return self._beam_search("), ("_beam_search", "outputs = self(**model_inputs)")],
            &[("_prefill", "outputs = self(**model_inputs)"), ("forward", "x = self.mlp(x)")],
            &[("forward", "key_states, value_states = past_key_values.update(key_states, value_states, self.layer_idx)"), ("update", "self.keys = torch.cat([self.keys, key_states], dim=-2)")],
            &[("<module>", "y = model.generate(x, max_new_tokens, temperature=temperature, top_k=top_k)"), ("decorate_context", "return func(*args, **kwargs)")],
        ];
        for frames in cases {
            assert_eq!(phase(frames), Some(LoopPhase::Generation), "{frames:?}");
        }
    }

    #[test]
    fn each_caches_own_lines_name_generation_in_4_4x_and_5_x() {
        let cases: [&[(&str, &str)]; 8] = [
            // 5.x StaticLayer: lazy preallocation and the copy of a step's keys.
            &[("update", "self.lazy_initialization(key_states, value_states)"), ("lazy_initialization", "self.keys = torch.zeros(")],
            &[("update", "self.keys.index_copy_(2, cache_position, key_states)")],
            // 5.x sliding static layer, full: the roll by concatenation.
            &[("update", "full_key_states = torch.cat((self.keys[:, :, 1:, :], key_states), dim=-2)")],
            // 4.4x StaticCache and HybridCache: built under _get_cache, copied with index_copy_.
            &[("_get_cache", "self._cache = cache_cls(**cache_kwargs)"), ("__init__", "new_layer_key_cache = torch.zeros(cache_shape, dtype=self.dtype, device=layer_device)")],
            &[("update", "k_out.index_copy_(2, cache_position, key_states)")],
            // QuantizedCache: 5.x's states and 4.4x's lists.
            &[("update", "self._quantized_keys = self._quantize(keys_to_return.contiguous(), axis=self.axis_key)")],
            &[("update", "dequant_key = self._dequantize(self._quantized_key_cache[layer_idx])")],
            // nanochat's Engine.
            &[("generate", "kv_cache_decode = KVCache("), ("__init__", "self.k_cache = torch.zeros(num_layers, batch_size, seq_len, num_heads, head_dim, device=device, dtype=dtype)")],
        ];
        for frames in cases {
            assert_eq!(phase(frames), Some(LoopPhase::Generation), "{frames:?}");
        }
        // A cache line under a backward is a training step's (gradient checkpointing
        // recomputing a forward that built a cache).
        let recomputed = [
            ("backward", "torch.autograd.backward("),
            (
                "update",
                "self.keys = torch.cat([self.keys, key_states], dim=-2)",
            ),
        ];
        assert_eq!(phase(&recomputed), Some(LoopPhase::Backward));
    }

    #[test]
    fn training_frames_stay_training() {
        let train = [
            ("<module>", "logits, loss = model(X, Y)"),
            ("forward", "x = block(x)"),
        ];
        assert_eq!(phase(&train), Some(LoopPhase::Forward));
        let backward = [
            ("<module>", "scaler.scale(loss).backward()"),
            ("backward", "torch.autograd.backward("),
        ];
        assert_eq!(phase(&backward), Some(LoopPhase::Backward));
    }
}
