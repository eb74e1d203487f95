//! nanochat's inference at [`NANOCHAT_COMMIT`]: a checkpoint loaded by
//! `checkpoint_manager.build_model` and `Engine.generate` (`nanochat/engine.py`), the way
//! `scripts/chat_cli.py`, `chat_eval.py` and `infer_bench.py` run it (issue 22).
//!
//! Source: the fake-tensor replay of that code (`tools/nanochat_replay/replay_nanochat_generate.py`,
//! torch 2.15; `--explain` lists the storages alive at each peak), held by
//! `tests/it/nanochat_generate.rs` to `tests/data/nanochat_generate_replay.json`: the cache bytes
//! exactly, the load, prefill and decoding peaks within 1 %.
//!
//! Notation: `P` prompt tokens, `N` new tokens (`max_tokens`), `B` rows (`num_samples`: one
//! prompt, prefilled once, sampled `B` times; vramdoc's `batch_size`), `h` width, `n` layers,
//! `k` the key/value width (`n_kv_head·head_dim`), `V` the vocabulary and `Vp` it padded to 64,
//! `c` bytes of `COMPUTE_DTYPE`, `S` the checkpoint's `sequence_len` (the scenario's
//! `block_size`) and `R = 10·S` the rows of the rotary tables. What is resident and when:
//!
//! - **Weights** as `base_train.py` saved them: the matrices, the head and the scalars float32,
//!   `wte` and the value embeddings in `COMPUTE_DTYPE`; and the rotary `cos`/`sin` tables
//!   (`2·R·head_dim/2·c`). Each `Linear` casts its float32 weight to `c` bytes in its forward,
//!   so the head's cast (`Vp·h·c`) lies beside the logits.
//! - **Loading** (`build_model`): the checkpoint's tensors on the device, then `to_empty` gives
//!   every parameter float32 storage (`4·params`) and the rotary tables, then `init_weights`
//!   recomputes the tables (positions and frequencies float32, `4·R + 3·R·head_dim/2·4`, and
//!   their `c`-byte copies) and casts `wte` to `c` bytes (`Vp·h·c` beside its float32 copy);
//!   `load_state_dict(assign=True)` then frees the empty parameters. About twice the weights:
//!   on a small card the load, not the generation, runs out of memory.
//! - **Prefill** (batch 1): a `KVCache` of `P` positions (`2·n·P·k·c`, int32 positions), the
//!   prompt's ids (`8P`), and at the head the normalized embedding (the cache's
//!   `prev_embedding` view), `x0`, the backout residual and the final norm (`4·P·h·c`) beside
//!   the logits of every position: `logits.float()` (`4·P·V`), then `softcap·tanh(logits /
//!   softcap)` holding three float32 copies at once (`12·P·V`).
//! - **Replication**: `logits[:, -1, :].expand(B, −1)` keeps the prompt's whole float32 logits
//!   (`4·P·V`) alive until the first decoding forward returns; the decoding `KVCache` of `B`
//!   rows and `P + N` positions is allocated beside the prefill's (deleted after the copy), and
//!   the first token is sampled.
//! - **Decoding**: the preallocated cache never grows; a step holds the previous logits (the
//!   prompt's at the first step, then `4·B·V`), the head's weight cast and its output, or the
//!   softcap's three float32 copies (`12·B·V`); between steps `sample_next_token` (a positive
//!   temperature and no top-k: Engine's defaults) divides, softmaxes and draws with
//!   `multinomial`, whose CUDA kernel makes one more copy (`3·B·V·4`). Greedy or top-k sampling
//!   keeps less (at most that much): the estimate is of the default.
//!
//! The calculator tool's state (`RowState`: forced tokens, the expression's tokens) is Python
//! lists, and a forced token replaces a sampled one in the same column: no device memory.
//!
//! Stated assumptions: attention is nanochat's SDPA fallback (FA3 writes the same cache in
//! place and keeps no more); the checkpoint was trained with the same `COMPUTE_DTYPE`; no row
//! ends early; nothing is compiled.

use crate::estimate::arch::{Architecture, NANOCHAT_COMMIT};
use crate::estimate::error::ScenarioError;
use crate::estimate::generate_assembly::{assemble, GenerateParts};
use crate::estimate::generation_tensors::{fixed, growing, GrowingTensor};
use crate::estimate::hf_generate::{GenerateEstimate, Generation};
use crate::estimate::kv_cache::{CacheBytes, CacheKind};
use crate::estimate::num::N;
use crate::estimate::scenario::{Dtype, Scenario};
use crate::estimate::{params, GpuCatalog};

use super::Run;

/// Rotary positions per `sequence_len`: `GPT.__init__` sizes its tables `10·sequence_len`.
pub const ROTARY_FACTOR: u64 = 10;

/// Bytes of a float32, an int64 and an int32.
const FP32: u128 = 4;
const ID: u128 = 8;
const POSITIONS: u128 = 4;

/// The most tokens a prompt plus its new tokens may reach with `sequence_len` = `s`: the rotary
/// tables' rows (`forward` slices `cos[:, T0:T0+T]`, which comes up short past them).
pub fn max_positions(s: &Scenario) -> u64 {
    s.block_size.saturating_mul(ROTARY_FACTOR)
}

/// Estimates nanochat's `Engine.generate` of `g` on model `a` (`g.batch_size` rows of one
/// prompt) after `build_model` loaded it, in `s.dtype` (`COMPUTE_DTYPE`) with `s.block_size` as
/// its `sequence_len`, on `s.gpu`.
pub(crate) fn estimate(
    a: &Architecture,
    s: &Scenario,
    g: &Generation,
    catalog: &GpuCatalog,
) -> Result<GenerateEstimate, ScenarioError> {
    check(a, s, g)?;
    let params = params::count_of(a, s)?.params;
    let r = Run::of(a, s);
    let m = EngineMoments::of(&r, g, params.total);
    let cache = m.cache.to_u64("the KV cache")?;
    let parts = GenerateParts {
        params,
        weights: m.weights,
        cache: CacheBytes {
            after_prefill: cache,
            at_end: cache,
            largest: cache,
        },
        load: Some(m.load),
        prefill: m.prefill,
        decode: m.decode,
        // nanochat's Engine loads its own checkpoint: no bitsandbytes.
        weights_quantization: None,
        // Past its rotary tables nanochat's forward fails: `check` refuses such a context.
        beyond_position_limit: None,
    };
    assemble(a, s, g, parts, catalog)
}

/// Refuses what nanochat's Engine does not do or the replay does not cover, every key at once.
fn check(a: &Architecture, s: &Scenario, g: &Generation) -> Result<(), ScenarioError> {
    let mut wrong: Vec<(&'static str, String)> = Vec::new();
    let mut not = |yes: bool, key: &'static str, why: String| {
        if yes {
            wrong.push((key, why));
        }
    };
    not(
        s.dtype == Dtype::Float16,
        "dtype",
        "float16 (NANOCHAT_DTYPE=float16, float32 embeddings) is not replayed: use bfloat16 or \
         float32"
            .into(),
    );
    not(
        !s.flash,
        "flash",
        "nanochat's attention is FA3 or PyTorch's SDPA, never an eager softmax".into(),
    );
    not(
        s.compile,
        "compile",
        "nanochat's Engine runs the model uncompiled".into(),
    );
    not(
        a.attention.head_dim % 8 != 0,
        "model",
        "a head width that is not a multiple of 8 (FA3 needs one, and the replay covers no other)"
            .into(),
    );
    not(
        g.cache != CacheKind::Dynamic,
        "kv_cache",
        "nanochat's Engine has one cache of its own, a KVCache preallocated to the prompt plus \
         max_tokens: remove kv_cache"
            .into(),
    );
    not(
        g.num_beams != 1,
        "num_beams",
        "nanochat's Engine.generate has no beam search (engine.py samples each row's next token \
         on its own): leave num_beams at 1"
            .into(),
    );
    not(
        g.num_return_sequences != 1,
        "num_return_sequences",
        "Engine.generate samples num_samples rows of one prompt: give them as batch_size".into(),
    );
    not(
        g.prompt_tokens == 0 || g.max_new_tokens == 0 || g.batch_size == 0,
        "prompt_tokens",
        "the prompt, max_new_tokens and batch_size need at least 1 each".into(),
    );
    let last = u128::from(g.prompt_tokens) + u128::from(g.max_new_tokens);
    not(
        last > u128::from(max_positions(s)),
        "max_new_tokens",
        format!(
            "the prompt plus new tokens ({last}) exceed the {} rows of the rotary tables \
             ({ROTARY_FACTOR} × sequence_len {}, block_size here): gpt.py's forward cannot \
             run past them",
            max_positions(s),
            s.block_size
        ),
    );
    let Some((first, _)) = wrong.first() else {
        return Ok(());
    };
    let text: Vec<String> = wrong.iter().map(|(k, w)| format!("`{k}`: {w}")).collect();
    Err(ScenarioError {
        key: Some((*first).to_owned()),
        message: format!(
            "nanochat (commit {})'s Engine.generate: {}",
            &NANOCHAT_COMMIT[..7],
            text.join("; ")
        ),
    })
}

/// The bytes of one call at the moments that matter (module docs).
struct EngineMoments {
    /// Weights and rotary tables.
    weights: N,
    /// The decoding `KVCache`.
    cache: N,
    /// `build_model`'s peak.
    load: N,
    /// The prefill's peak, its replication and first sampling included.
    prefill: N,
    /// The decoding steps' peak.
    decode: N,
}

impl EngineMoments {
    fn of(r: &Run, g: &Generation, params: u64) -> EngineMoments {
        let n = |v: u128| N(v);
        let (h, v, vp, c) = (n(r.h), n(r.v), n(r.vp), r.c);
        let (p, b) = (N::from(g.prompt_tokens), N::from(g.batch_size));
        let rows = N::from(ROTARY_FACTOR) * n(r.t);
        let half = r.d / 2;
        let tables = rows * (2 * half * c);
        let weights = n(r.weight_bytes()) + tables;
        let cache_of =
            |batch: N, tokens: N| batch * tokens * (2 * r.n * r.kv() * c) + batch * POSITIONS;
        let prefill_cache = cache_of(N::from(1u64), p);
        let cache = cache_of(b, p + N::from(g.max_new_tokens));
        // Loading: the checkpoint, to_empty's float32 parameters and tables, and the larger of
        // init_weights' rotary recomputation and wte's cast.
        let recompute = rows * FP32
            + rows * (3 * half * FP32)
            + n(2 * half) * FP32
            + if c == FP32 { N::ZERO } else { tables };
        let wte_cast = if c == FP32 { N::ZERO } else { vp * h * c };
        let load = n(r.weight_bytes()) + N::from(params) * FP32 + tables + recompute.max(wte_cast);
        // float32 logits of `rows` positions with the softcap's two copies: a 16-bit head
        // output is upcast (and freed), a float32 one is the base the slice views.
        let softcap = |positions: N| {
            positions * v * (2 * FP32)
                + if c == FP32 {
                    positions * vp * FP32
                } else {
                    positions * v * FP32
                }
        };
        let head_cast = if c == FP32 { N::ZERO } else { vp * h * c };
        // The embedding's norm (the cache's `prev_embedding`), `x0`, the backout residual, the
        // final norm and the last layer's value embedding, beside the head or the softcap.
        let forward = |positions: N| {
            let head = head_cast + positions * vp * c;
            positions * (h * 4 + n(r.kv())) * c + head.max(softcap(positions))
        };
        let prompt_logits = p * v * FP32;
        let ids = p * ID;
        // The smear gate over positions 1.. (none for a one-token prompt).
        let gate = (p - N::from(1u64)) * c;
        let prefill_forward = weights + prefill_cache + ids + forward(p) + gate;
        // sample_next_token: logits / temperature, softmax, multinomial's exponential draw.
        let sample = b * v * (3 * FP32) + b * (2 * ID);
        let replicate = weights
            + ids
            + prompt_logits
            + cache
            + b * h * c
            + (prefill_cache + p * h * c).max(sample);
        let prefill = prefill_forward.max(replicate);
        // Decoding: the previous logits beside a step's forward, or beside the next sampling.
        // A step's new embedding (the cache's next `prev_embedding`), its smear gate, the
        // token ids in and out.
        let step = |previous: N| weights + cache + previous + b * h * c + b * (2 * ID + c);
        let first = step(prompt_logits) + forward(b);
        let decode = if g.max_new_tokens >= 2 {
            let previous = b * v * FP32;
            first
                .max(step(previous) + forward(b))
                .max(step(previous) + sample)
        } else {
            first
        };
        EngineMoments {
            weights,
            cache,
            load,
            prefill,
            decode,
        }
    }
}

/// The large tensors of nanochat's load and `Engine.generate` of `g` on `a` in `COMPUTE_DTYPE`
/// `d`, for `diagnose` (module docs for when each lives).
pub(crate) fn tensors(a: &Architecture, d: Dtype, g: &Generation) -> Vec<GrowingTensor> {
    let at = &a.attention;
    let (p, rows) = (g.prompt_tokens, g.batch_size);
    let context = p.saturating_add(g.max_new_tokens);
    let vp = crate::estimate::arch::nanochat_padded_vocab(a.vocab_size);
    let cache = |batch: u64, positions: u64| {
        let shape = (&[a.layers, batch][..], 1, &[at.kv_heads, at.head_dim][..]);
        growing("nanochat_kv_cache", shape, (positions, positions), d)
    };
    let logits = |name, width, dtype| growing(name, (&[1], 1, &[width]), (p, p), dtype);
    vec![
        cache(rows, context),
        GrowingTensor {
            name: "nanochat_prefill_kv_cache",
            ..cache(1, p)
        },
        logits("nanochat_prompt_logits", vp, d),
        logits("nanochat_prompt_logits_fp32", a.vocab_size, Dtype::Float32),
        fixed(
            "nanochat_step_logits_fp32",
            &[rows, 1, a.vocab_size],
            Dtype::Float32,
        ),
        fixed("nanochat_load_fp32", &[vp, a.hidden], Dtype::Float32),
    ]
}
