//! Sampling from a trained model with nanoGPT's `sample.py`: what it holds on the GPU.
//!
//! Source: an exact replay of `sample.py` and `GPT.generate` on PyTorch fake tensors
//! (`tools/nanogpt_replay/sample_replay.py`, data in `tests/data/nanogpt_sample_replay.json`;
//! `tests/it/sampling.rs` holds every replayed run within 0.1 %). What sample.py does:
//! - `init_from='resume'`: `torch.load(ckpt, map_location=device)` puts the whole checkpoint
//!   (weights and the optimizer state train.py saved) on the GPU, and the `checkpoint` name keeps
//!   it there until the script ends; the model is built on the host, loads the weights and is
//!   moved: the weights twice plus the optimizer state, as when train.py resumes
//!   ([`memory::setup`]'s load peak). `init_from='gpt2*'`: GPT-2 (block 1024, vocabulary 50257,
//!   biases) built on the host, then moved: the weights once.
//! - Under `torch.no_grad()` and the autocast context, `num_samples` times, `generate` runs the
//!   model once per new token on the sequence cropped to `block_size` (no KV cache), keeps the
//!   logits of the last position only, masks all but the `top_k` largest, softmax,
//!   `torch.multinomial`, `torch.cat`. Autocast caches the 16-bit copy of every Linear weight and
//!   bias (they require grad) for the whole context: `2·P_lin` bytes.
//!
//! Notation as in `memory.rs`; here the batch is 1, `t` is the longest context a forward sees,
//! `min(prompt + max_new_tokens − 1, block_size)`, `k = min(top_k, V)`, `c` the compute bytes (2
//! under autocast, 4 in float32). Every tensor in the stages below is one the replay lists.

use serde::Serialize;

use super::error::ScenarioError;
use super::memory::{self, Precision};
use super::num::N;
use super::overhead;
use super::params::{self, Params};
use super::scenario::{InitFrom, Scenario};
use super::{headroom, Architecture, GpuCatalog, GpuRef, Verdict, ESTIMATOR_VERSION, GPT2_VOCAB};

/// GPT-2's context: `from_pretrained` builds the model with it, whatever the config says.
const GPT2_CONTEXT: u64 = 1024;

/// What `sample.py` is asked to generate.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Sampling {
    /// Tokens of the prompt (`start`).
    pub prompt_tokens: u64,
    /// `max_new_tokens`: new tokens per sample.
    pub max_new_tokens: u64,
    /// `num_samples`: samples drawn one after the other.
    pub num_samples: u64,
    /// `top_k`, if the logits are masked to the `k` largest.
    pub top_k: Option<u64>,
}

/// When in sampling the memory peaks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SampleMoment {
    /// The forward over the longest context (an MLP or, without flash, the attention scores).
    Forward,
    /// Picking the next token: the last position's logits, their top-k mask, the softmax.
    NextToken,
}

/// Bytes of a sampling run (`estimate --format json`'s `bytes` for `phase: generate`).
///
/// `weights + checkpoint + autocast_weights + activations + sampling + token_ids == peak`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct SampleBytes {
    /// The model on the GPU: float32 parameters (and, without flash, the causal-mask buffers).
    pub weights: u64,
    /// `init_from='resume'`: the checkpoint sample.py loaded onto the GPU and keeps (its weights
    /// and optimizer state); 0 otherwise.
    pub checkpoint: u64,
    /// Autocast's cached 16-bit copies of the Linear weights and biases.
    pub autocast_weights: u64,
    /// The forward's tensors at the peak (0 when the peak is the next-token step).
    pub activations: u64,
    /// Logits, top-k values and mask, probabilities alive at the peak.
    pub sampling: u64,
    /// Token ids (int64): the prompt, the growing sequence, the previous sample, positions.
    pub token_ids: u64,
    /// nanoGPT keeps no KV cache: every token recomputes the context.
    pub kv_cache: u64,
    /// The peak PyTorch allocates.
    pub peak: u64,
    /// Context, allocator slack and cuBLAS workspace at their middle.
    pub overhead: u64,
    /// `peak + overhead`: what nvidia-smi would show.
    pub total: u64,
    /// The total with every overhead at its low end.
    pub total_low: u64,
    /// The total with every overhead at its high end.
    pub total_high: u64,
    /// Memory other programs hold on the card.
    pub other_processes: u64,
    /// The CUDA context (with torch.compile's kernels) at the middle.
    pub cuda_context: u64,
    /// Reserved but unallocated memory at the middle.
    pub allocator_slack: u64,
    /// The cuBLAS workspace.
    pub cublas_workspace: u64,
}

/// The estimate of a sampling run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SampleEstimate {
    /// `generate`.
    pub phase: &'static str,
    /// The model sampled from (a GPT-2 checkpoint's shape, or the resumed one) and the card;
    /// serialized as the keys that apply to sampling only.
    #[serde(serialize_with = "sampling_keys")]
    pub scenario: Scenario,
    /// What is generated.
    pub sampling: Sampling,
    /// The model's parameter counts.
    pub params: Params,
    /// The longest context a forward sees.
    pub context_tokens: u64,
    /// When the peak occurs.
    pub peak_moment: SampleMoment,
    /// Where the bytes go.
    pub bytes: SampleBytes,
    /// The scenario's GPU, if it names one.
    pub gpu: Option<GpuRef>,
    /// The verdict against the GPU, if one is named.
    pub verdict: Option<Verdict>,
    /// `verdict == fits`, if a GPU is named.
    pub fits: Option<bool>,
    /// `capacity_bytes − other_processes − total`, if a GPU is named.
    pub headroom_bytes: Option<i64>,
    /// The estimator's fingerprint.
    pub estimator_version: &'static str,
}

/// The scenario keys that decide a sampling run, as the JSON `scenario` object.
fn sampling_keys<S: serde::Serializer>(s: &Scenario, out: S) -> Result<S::Ok, S::Error> {
    #[derive(Serialize)]
    struct Keys<'a> {
        phase: super::Phase,
        init_from: InitFrom,
        n_layer: u64,
        n_head: u64,
        n_embd: u64,
        vocab_size: u64,
        block_size: u64,
        bias: bool,
        dtype: super::Dtype,
        flash: bool,
        compile: bool,
        gpu: &'a Option<String>,
        other_processes: u64,
    }
    Keys {
        phase: super::Phase::Generate,
        init_from: s.init_from,
        n_layer: s.n_layer,
        n_head: s.n_head,
        n_embd: s.n_embd,
        vocab_size: s.vocab_size,
        block_size: s.block_size,
        bias: s.bias,
        dtype: s.dtype,
        flash: s.flash,
        compile: s.compile,
        gpu: &s.gpu,
        other_processes: s.other_processes,
    }
    .serialize(out)
}

/// The model sample.py runs: a GPT-2 checkpoint's shape at GPT-2's context, no dropout, no
/// fine-tuning patches; a resumed or configured shape as it is.
pub(crate) fn sampled_model(s: &Scenario) -> Scenario {
    let mut m = s.as_run();
    if m.init_from.pretrained_shape().is_some() {
        m.block_size = GPT2_CONTEXT;
        m.vocab_size = GPT2_VOCAB;
    }
    m.dropout = 0.0;
    m.pure_bf16 = false;
    m.freeze_embeddings = false;
    m.lora_rank = 0;
    m.grad_checkpoint = false;
    m.eval_only = false;
    m.ddp_world_size = 1;
    m.sharding = super::Sharding::None;
    m
}

/// Estimates sampling `run` from the model of `s` (its shape, dtype, flash, `init_from`, GPU).
pub fn estimate_sampling(
    s: &Scenario,
    run: &Sampling,
    catalog: &GpuCatalog,
) -> Result<SampleEstimate, ScenarioError> {
    let model = sampled_model(s);
    model.validate(catalog)?;
    model.check_precision()?;
    check(run)?;
    let counted = params::count_of(&Architecture::nanogpt(&model), &model)?;
    let params = counted.params;
    let x = Precision::of(&model);
    let weights = memory::weights(&model, x, N::from(params.total));
    let setup = memory::setup(&model, &counted);
    let checkpoint = if model.init_from == InitFrom::Resume {
        setup.load_peak - weights
    } else {
        N::ZERO
    };
    let autocast_weights = if x.autocast {
        N::from(params.linear) * 2
    } else {
        N::ZERO
    };
    let dims = SamplingSizes::of(&model, run, x);
    let forward = dims.forward_moment();
    let next = dims.next_token_moment();
    let (moment, at_peak) = if forward.total() >= next.total() {
        (SampleMoment::Forward, forward)
    } else {
        (SampleMoment::NextToken, next)
    };
    let peak = weights + checkpoint + autocast_weights + at_peak.total();
    let u = |n: N, what: &str| n.to_u64(what);
    let t = overhead::totals(peak, model.compile)?;
    let bytes = SampleBytes {
        weights: u(weights, "the weights")?,
        checkpoint: u(checkpoint, "the checkpoint")?,
        autocast_weights: u(autocast_weights, "the autocast weight copies")?,
        activations: u(at_peak.activations, "the activations")?,
        sampling: u(at_peak.sampling, "the sampling tensors")?,
        token_ids: u(at_peak.ids, "the token ids")?,
        kv_cache: 0,
        peak: u(peak, "the peak")?,
        overhead: t.overhead,
        total: t.total,
        total_low: t.total_low,
        total_high: t.total_high,
        other_processes: model.other_processes,
        cuda_context: t.cuda_context,
        allocator_slack: t.allocator_slack,
        cublas_workspace: t.cublas_workspace,
    };
    let gpu = model.gpu.as_deref().and_then(|id| catalog.get(id));
    let verdict = gpu.map(|g| {
        Verdict::of(
            bytes.total_low,
            bytes.total,
            bytes.total_high,
            bytes.other_processes,
            g.capacity_bytes,
        )
    });
    Ok(SampleEstimate {
        phase: "generate",
        context_tokens: dims.t.to_u64("the context")?,
        params,
        sampling: *run,
        peak_moment: moment,
        bytes,
        gpu: gpu.map(GpuRef::of),
        fits: verdict.map(|v| v == Verdict::Fits),
        verdict,
        headroom_bytes: gpu.map(|g| headroom(g.capacity_bytes, model.other_processes, bytes.total)),
        scenario: model,
        estimator_version: ESTIMATOR_VERSION,
    })
}

/// sample.py's settings that would fail in nanoGPT (an empty prompt has no last position to
/// read logits from; no new token means no forward).
fn check(run: &Sampling) -> Result<(), ScenarioError> {
    let fail = |key: &str, msg: &str| Err(ScenarioError::key(key, msg));
    if run.prompt_tokens == 0 {
        return fail("start", "the prompt must have at least one token");
    }
    if run.max_new_tokens == 0 {
        return fail("max_new_tokens", "must be at least 1");
    }
    if run.num_samples == 0 {
        return fail("num_samples", "must be at least 1");
    }
    if run.top_k == Some(0) {
        return fail("top_k", "must be at least 1, or None");
    }
    Ok(())
}

/// What lies beside the weights at one moment.
#[derive(Debug, Clone, Copy)]
struct Beside {
    activations: N,
    sampling: N,
    ids: N,
}

impl Beside {
    fn total(&self) -> N {
        self.activations + self.sampling + self.ids
    }
}

/// The sizes the stages are made of, at the last new token of the last sample (the longest
/// context, the longest sequence and every leftover of earlier tokens and samples).
struct SamplingSizes {
    /// Longest context `t`, width `h`, heads `a`, vocabulary `V`, top-k `k`.
    t: N,
    h: N,
    a: N,
    v: N,
    k: Option<N>,
    /// Compute bytes `c` (logits too).
    c: N,
    x: Precision,
    flash: bool,
    /// Tokens of the prompt, and of a finished sample.
    prompt: N,
    finished: N,
    /// More than one new token: the previous token's logits, probabilities and top-k values
    /// are still bound when the last one is made.
    later: bool,
    /// More than one sample: the previous sample's ids (`y`) are still bound.
    repeated: bool,
}

impl SamplingSizes {
    fn of(m: &Scenario, run: &Sampling, x: Precision) -> SamplingSizes {
        let block = N::from(m.block_size);
        let longest = N::from(run.prompt_tokens) + N::from(run.max_new_tokens) - N::from(1u64);
        SamplingSizes {
            t: if longest < block { longest } else { block },
            h: N::from(m.n_embd),
            a: N::from(m.n_head),
            v: N::from(m.vocab_size),
            k: run.top_k.map(|k| N::from(k.min(m.vocab_size))),
            c: N::from(x.c as u64),
            x,
            flash: m.flash,
            prompt: N::from(run.prompt_tokens),
            finished: N::from(run.prompt_tokens) + N::from(run.max_new_tokens),
            later: run.max_new_tokens >= 2,
            repeated: run.num_samples >= 2,
        }
    }

    /// int64 ids alive throughout the last token: the prompt `x`, the previous sample `y` and
    /// the sequence so far (a new tensor once a token was appended).
    fn ids(&self) -> N {
        let y = if self.repeated {
            self.finished * 8
        } else {
            N::ZERO
        };
        let idx = if self.later {
            (self.finished - N::from(1u64)) * 8
        } else {
            N::ZERO
        };
        self.prompt * 8 + y + idx
    }

    /// What the previous token left bound: its logits (`c` bytes each), probabilities (fp32),
    /// top-k values and sampled id.
    fn leftovers(&self) -> N {
        if !self.later {
            return N::ZERO;
        }
        let topk = self.k.map_or(N::ZERO, |k| k * self.c);
        self.v * self.c + self.v * 4 + topk + N::from(8u64)
    }

    /// The forward over `t` tokens: its largest moment plus the positions (`8t`) and leftovers.
    ///
    /// Alive throughout: `tok_emb` and `pos_emb` (fp32, `8th`: locals of `forward`), the block's
    /// input and the residual after attention (fp32, `4th` each), the LayerNorm's output (fp32,
    /// `4th`). The MLP at GELU adds `c_fc`'s output and GELU's (`4h` wide each): `(20 + 8c)·th`.
    /// Without flash, the attention scores (`a·t²`) may weigh more; see [`SamplingSizes::attention`].
    fn forward_moment(&self) -> Beside {
        let th = self.t * self.h;
        let mlp = th * 20 + th * self.c * 8;
        let largest = if self.flash {
            mlp
        } else {
            mlp.max(self.attention())
        };
        Beside {
            activations: largest + self.t * 8,
            sampling: self.leftovers(),
            ids: self.ids(),
        }
    }

    /// Manual attention's largest moment: beside `16·th` (embeddings, block input, LayerNorm
    /// output) and `c_attn`'s output (`3c·th`, held by the `q`, `k`, `v` views). Under autocast:
    /// `att @ v` holds the fp32 softmax, its 16-bit cast and the output (`(4 + c)·a·t² + c·th`),
    /// or the softmax holds its 16-bit input and fp32 output, plus, for bf16, the fp32 copy of
    /// the input CUDA makes first (`(c + 4 + 4)·a·t²`). In float32: `masked_fill` holds the
    /// scores, their masked copy and the `t²` boolean mask (`8·a·t² + t²`), or `att @ v` the
    /// scores and the output (`4·a·t² + 4·th`).
    fn attention(&self) -> N {
        let (th, at2, c) = (self.t * self.h, self.a * self.t * self.t, self.c);
        let base = th * 16 + th * c * 3;
        if self.x.autocast {
            let matmul = base + at2 * 4 + at2 * c + th * c;
            let copy = if self.x.fp16 { N::ZERO } else { at2 * 4 };
            let softmax = base + at2 * c + at2 * 4 + copy;
            matmul.max(softmax)
        } else {
            let masked = base + at2 * 8 + self.t * self.t;
            let matmul = base + at2 * 4 + th * 4;
            masked.max(matmul)
        }
    }

    /// Picking the last token, after the forward returned: the largest of dividing the logits
    /// by the temperature (the last position's logits and their quotient), masking all but the
    /// top `k` (the quotient, the top-k values and int64 indices, a boolean mask over the
    /// vocabulary and the int64 indices of its `V − k` hits that the boolean `index_put_`
    /// makes), the softmax (the quotient, the new fp32 probabilities and, for bf16, the fp32 copy
    /// CUDA makes first) and `torch.cat` (the old and the new sequence). The previous token's
    /// probabilities and sampled id are bound until replaced.
    fn next_token_moment(&self) -> Beside {
        let (v, c) = (self.v, self.c);
        let prev = if self.later {
            v * 4 + N::from(8u64)
        } else {
            N::ZERO
        };
        let prev_topk = match (self.later, self.k) {
            (true, Some(k)) => k * c,
            _ => N::ZERO,
        };
        let topk = self.k.map_or(N::ZERO, |k| k * c + k * 8);
        let divide = v * c * 2 + prev + prev_topk;
        let mask = self
            .k
            .map_or(N::ZERO, |k| v * c + topk + v + (v - k) * 16 + prev);
        let copy = if self.x.autocast && !self.x.fp16 {
            v * 4
        } else {
            N::ZERO
        };
        let softmax = v * c + copy + v * 4 + topk + prev;
        let sequence = self.finished * 8;
        let cat = v * c + v * 4 + topk + N::from(8u64) + sequence;
        Beside {
            activations: N::ZERO,
            sampling: divide.max(mask).max(softmax).max(cat),
            ids: self.ids(),
        }
    }
}
