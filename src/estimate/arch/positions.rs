//! Where a token's position enters the model, and how long a sequence the model's positions
//! allow: the bound the generate solvers weigh against the card's (issue 22).
//!
//! What the pinned code does past the bound (read in transformers 5.24, nanochat at
//! [`super::NANOCHAT_COMMIT`]):
//! - **GPT-2's learned table** (`wpe`, `n_positions` rows): a position past it indexes out of
//!   the table, an `IndexError` on the CPU and a device-side assert on CUDA. Refused.
//! - **Rotary models in transformers** (Llama, Mistral, Qwen2/3, Phi-3, Gemma 2/3, the mixtures
//!   of experts): the rotary embedding computes `cos`/`sin` from `inv_freq` for any position
//!   (`position_ids[..., None] * inv_freq`: no table), and a `StaticCache` is sized from
//!   `max_length` (`max_cache_len = prompt + new − 1`), never from the positions. `generate`
//!   runs on; its `MaxLengthCriteria` logs once ("This is a friendly reminder - the current text
//!   generation call has exceeded the model's predefined maximum length ...") when a sequence
//!   longer than `max_position_embeddings` is not yet done. The model was never trained on
//!   those positions, so vramdoc does not count such a context as fitting, and an estimate past
//!   them says so.
//! - **nanochat**: `GPT` precomputes `cos`/`sin` for `10 · sequence_len` positions and asserts
//!   ("Sequence length grew beyond the rotary embeddings cache"); with its KV cache a slice past
//!   the table is short and the rotation fails. Refused where its generation is estimated.
//!
//! The config's RoPE scaling (`rope_scaling`, or transformers 5's `rope_parameters`) changes the
//! frequencies, never the memory beyond `inv_freq`-sized buffers; only YaRN moves the bound:
//! transformers' own check reads its `factor` as "post-yarn context length / pre-yarn context
//! length", so the model is built for `factor · original_max_position_embeddings` tokens (Qwen's
//! documented 4 × 32,768 = 131,072) when that exceeds `max_position_embeddings`. `llama3` and
//! `longrope` configs (Llama 3.1/3.2, Phi-3.5) already give the extended length as
//! `max_position_embeddings`; `linear` and `dynamic` are read as the config's
//! `max_position_embeddings` (dynamic NTK rescales past it at run time, which is extrapolation,
//! not trained positions).

use serde::Serialize;

/// Where a token's position enters the model.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "kind")]
pub enum Positions {
    /// A learned table of `max_positions × hidden` added to the token embedding (GPT-2's
    /// `wpe`; nanoGPT sizes it by `block_size`, transformers by `n_positions`).
    Learned {
        /// Rows of the table.
        max_positions: u64,
    },
    /// Rotary embeddings applied to queries and keys: no parameters; the cos/sin tables are
    /// computed per forward (`rope_theta`).
    Rotary {
        /// The base of the rotary frequencies.
        theta: f64,
        /// The positions the model declares: `max_position_embeddings` (nanochat: the rows of
        /// its precomputed rotary table, `10 · sequence_len`).
        max_positions: u64,
        /// The config's RoPE scaling.
        scaling: RopeScaling,
    },
}

impl Positions {
    /// Rotary embeddings of base `theta` declared for `max_positions` positions, unscaled.
    pub fn rotary(theta: f64, max_positions: u64) -> Positions {
        Positions::Rotary {
            theta,
            max_positions,
            scaling: RopeScaling::Default,
        }
    }
}

/// A config's RoPE scaling (`rope_scaling` / `rope_parameters`, its `rope_type` or `type`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
#[serde(rename_all = "snake_case", tag = "type")]
pub enum RopeScaling {
    /// None (`default`).
    Default,
    /// Positions divided by `factor`.
    Linear {
        /// `factor`.
        factor: f64,
    },
    /// Dynamic NTK: the base grows once a sequence passes `max_position_embeddings`.
    Dynamic {
        /// `factor`.
        factor: f64,
    },
    /// YaRN, built for `factor · original_max_position_embeddings` tokens.
    Yarn {
        /// `factor`.
        factor: f64,
        /// `original_max_position_embeddings` (the pretraining length).
        original_max_positions: u64,
    },
    /// Llama 3.1's scaling (low and high frequency bands).
    Llama3 {
        /// `factor`.
        factor: f64,
        /// `original_max_position_embeddings`.
        original_max_positions: u64,
    },
    /// Phi-3's LongRoPE: the long factors past `original_max_position_embeddings`.
    #[serde(rename = "longrope")]
    LongRope {
        /// `original_max_position_embeddings`.
        original_max_positions: u64,
    },
}

/// Where a model's position bound comes from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PositionSource {
    /// GPT-2's learned table (`n_positions`).
    NPositions,
    /// The config's `max_position_embeddings`.
    MaxPositionEmbeddings,
    /// YaRN's `factor · original_max_position_embeddings`.
    Yarn,
    /// nanochat's precomputed rotary table (`10 · sequence_len`).
    RotaryTable,
}

/// What the pinned code does with a longer sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PastLimit {
    /// It fails: GPT-2 indexes past its table, nanochat asserts.
    Fails,
    /// transformers generates on and logs one warning; the positions are untrained.
    Warns,
}

/// The longest sequence a model's positions allow.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct PositionLimit {
    /// Positions the model has (or is built for).
    pub positions: u64,
    /// The longest prompt plus new tokens within them: `positions + 1`, since a sequence of
    /// `P + N` tokens feeds `P + N − 1` of them (the last new token is never fed back).
    pub max_context: u64,
    /// Where the bound comes from.
    pub source: PositionSource,
    /// What the pinned code does past it.
    pub past: PastLimit,
}

impl PositionLimit {
    fn of(positions: u64, source: PositionSource, past: PastLimit) -> PositionLimit {
        PositionLimit {
            positions,
            max_context: positions.saturating_add(1),
            source,
            past,
        }
    }

    /// Whether a context of `tokens` (prompt plus new) feeds positions past the bound.
    pub fn exceeded_by(&self, tokens: u64) -> bool {
        tokens > self.max_context
    }
}

/// The position bound of `positions` in code where a longer sequence `fails` (GPT-2, nanochat)
/// or runs with a warning (transformers' rotary models).
pub(super) fn limit(positions: Positions, nanochat: bool) -> PositionLimit {
    match positions {
        Positions::Learned { max_positions } => {
            PositionLimit::of(max_positions, PositionSource::NPositions, PastLimit::Fails)
        }
        Positions::Rotary { max_positions, .. } if nanochat => {
            PositionLimit::of(max_positions, PositionSource::RotaryTable, PastLimit::Fails)
        }
        Positions::Rotary {
            max_positions,
            scaling,
            ..
        } => {
            let yarn = match scaling {
                RopeScaling::Yarn {
                    factor,
                    original_max_positions,
                } => yarn_length(factor, original_max_positions),
                _ => 0,
            };
            if yarn > max_positions {
                PositionLimit::of(yarn, PositionSource::Yarn, PastLimit::Warns)
            } else {
                PositionLimit::of(
                    max_positions,
                    PositionSource::MaxPositionEmbeddings,
                    PastLimit::Warns,
                )
            }
        }
    }
}

/// YaRN's extended length, `⌊factor · original⌋` (0 for a factor that is not a finite number of
/// at least 1).
fn yarn_length(factor: f64, original: u64) -> u64 {
    if !factor.is_finite() || factor < 1.0 {
        return 0;
    }
    let length = (factor * original as f64).floor();
    if length >= u64::MAX as f64 {
        u64::MAX
    } else {
        length as u64
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_source_gives_its_bound() {
        let gpt2 = limit(
            Positions::Learned {
                max_positions: 1024,
            },
            false,
        );
        assert_eq!((gpt2.positions, gpt2.max_context), (1024, 1025));
        assert_eq!(gpt2.past, PastLimit::Fails);
        let qwen = limit(Positions::rotary(1e6, 32768), false);
        assert_eq!(qwen.source, PositionSource::MaxPositionEmbeddings);
        assert_eq!(qwen.past, PastLimit::Warns);
        assert!(!qwen.exceeded_by(32769) && qwen.exceeded_by(32770));
        let yarn = Positions::Rotary {
            theta: 1e6,
            max_positions: 32768,
            scaling: RopeScaling::Yarn {
                factor: 4.0,
                original_max_positions: 32768,
            },
        };
        let y = limit(yarn, false);
        assert_eq!((y.positions, y.source), (131072, PositionSource::Yarn));
        // DeepSeek-V3's shape: max_position_embeddings already the extended length.
        let ds = Positions::Rotary {
            theta: 1e4,
            max_positions: 163840,
            scaling: RopeScaling::Yarn {
                factor: 40.0,
                original_max_positions: 4096,
            },
        };
        assert_eq!(
            limit(ds, false).source,
            PositionSource::MaxPositionEmbeddings
        );
        let nano = limit(Positions::rotary(1e5, 20480), true);
        assert_eq!(
            (nano.positions, nano.source, nano.past),
            (20480, PositionSource::RotaryTable, PastLimit::Fails)
        );
        assert_eq!(yarn_length(f64::NAN, 10), 0);
        assert_eq!(yarn_length(0.5, 10), 0);
    }
}
