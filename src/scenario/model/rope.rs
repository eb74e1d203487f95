//! A rotary model's positions from its config: `max_position_embeddings` (each transformers 5.24
//! `*Config` class's default when missing), `rope_theta`, and the RoPE scaling, read as
//! transformers 5.24 reads it (`modeling_rope_utils.py`, `convert_rope_params_to_dict` and
//! `standardize_rope_params`):
//! - the legacy `rope_scaling` wins over `rope_parameters` when both are given; a mapping keyed
//!   by layer type (Gemma 3's `full_attention` / `sliding_attention`) is read at
//!   `full_attention`, the layers that see the whole sequence;
//! - the type is `rope_type`, or the older `type`, `default` when neither;
//! - `original_max_position_embeddings` for `yarn`, `llama3` and `longrope` is the config's
//!   top-level field when it has one (it becomes an attribute, which wins), else the mapping's,
//!   else `max_position_embeddings`; Phi-3 always has the attribute (4,096 by default) and reads
//!   the old `su` and `yarn` types as `longrope`, refusing any other type as its config class
//!   does;
//! - YaRN's missing `factor` is `max_position_embeddings / original_max_position_embeddings`.
//!
//! A type transformers 5.24 does not build here (`proportional`, a misspelling) is refused at its
//! line: the position bound would be a guess.

use yaml_serde::Value;

use super::facts::Facts;
use crate::estimate::arch::{Positions, RopeScaling};

/// Each modelled rotary `model_type`'s default `max_position_embeddings` in transformers 5.24.
const DEFAULT_MAX_POSITIONS: &[(&str, u64)] = &[
    ("llama", 2048),
    ("mistral", 4096 * 32),
    ("qwen2", 32768),
    ("qwen3", 32768),
    ("phi3", 4096),
    ("gemma2", 8192),
    ("gemma3_text", 131_072),
    ("mixtral", 4096 * 32),
    ("qwen2_moe", 32768),
    ("qwen3_moe", 32768),
];

/// The RoPE types read.
const TYPES: &str = "default, linear, dynamic, yarn, llama3, longrope";

/// The positions of a transformers rotary model `model_type`.
pub(super) fn positions(f: &mut Facts<'_>, model_type: &str) -> Positions {
    let default = DEFAULT_MAX_POSITIONS
        .iter()
        .find(|(t, _)| *t == model_type)
        .map_or(2048, |(_, n)| *n);
    let max_positions = f.count_or("max_position_embeddings", default);
    let (key, params) = match (nonempty(f, "rope_scaling"), nonempty(f, "rope_parameters")) {
        (Some(m), _) => ("rope_scaling", Some(m)),
        (None, Some(m)) => ("rope_parameters", Some(m)),
        (None, None) => ("rope_scaling", None),
    };
    let params = params.map(|m| match m.get("full_attention") {
        Some(Value::Mapping(inner)) => inner,
        _ => m,
    });
    let in_params = |name: &str| params.and_then(|m| m.get(name)).filter(|v| !v.is_null());
    let theta = match in_params("rope_theta").and_then(Value::as_f64) {
        Some(t) => t,
        None => f.number("rope_theta").unwrap_or(10000.0),
    };
    let mut kind = in_params("rope_type")
        .or_else(|| in_params("type"))
        .and_then(Value::as_str)
        .unwrap_or("default")
        .to_owned();
    let phi3 = model_type == "phi3";
    if phi3 && matches!(kind.as_str(), "su" | "yarn") {
        kind = "longrope".to_owned();
    }
    let number = |name: &str| in_params(name).and_then(Value::as_f64);
    // A top-level field becomes a config attribute, which `standardize_rope_params` prefers
    // (Phi3Config always has one: 4,096 by default).
    let top = "original_max_position_embeddings";
    let original = if phi3 || f.get(top).is_some() {
        f.count_or(top, 4096)
    } else {
        number(top)
            .filter(|n| *n >= 1.0 && n.fract() == 0.0)
            .map_or(max_positions, |n| n as u64)
    };
    let factor = |f: &mut Facts<'_>, missing: Option<f64>| -> f64 {
        match number("factor").or(missing) {
            Some(x) if x.is_finite() && x >= 1.0 => x,
            _ => {
                f.error(
                    Some(key),
                    format!("the `{kind}` RoPE scaling needs a `factor` of at least 1"),
                    "give the model's own config.json, whose rope scaling names its factor",
                );
                1.0
            }
        }
    };
    let scaling = match kind.as_str() {
        "default" => RopeScaling::Default,
        "longrope" => RopeScaling::LongRope {
            original_max_positions: original,
        },
        _ if phi3 => {
            refuse(
                f,
                key,
                &kind,
                "Phi-3's config accepts default and longrope only (transformers raises)",
            );
            RopeScaling::Default
        }
        "linear" => RopeScaling::Linear {
            factor: factor(f, None),
        },
        "dynamic" => RopeScaling::Dynamic {
            factor: factor(f, None),
        },
        "yarn" => RopeScaling::Yarn {
            factor: factor(f, Some(max_positions as f64 / original as f64)),
            original_max_positions: original,
        },
        "llama3" => RopeScaling::Llama3 {
            factor: factor(f, None),
            original_max_positions: original,
        },
        _ => {
            refuse(f, key, &kind, &format!("vramdoc reads {TYPES}"));
            RopeScaling::Default
        }
    };
    Positions::Rotary {
        theta,
        max_positions,
        scaling,
    }
}

/// The mapping under `key`, unless missing, `null` or empty.
fn nonempty<'a>(f: &Facts<'a>, key: &str) -> Option<&'a yaml_serde::Mapping> {
    f.get(key)
        .and_then(Value::as_mapping)
        .filter(|m| !m.is_empty())
}

fn refuse(f: &mut Facts<'_>, key: &str, kind: &str, why: &str) {
    f.error(
        Some(key),
        format!(
            "RoPE type \"{}\" is not modelled: {why}",
            crate::terminal::visible_line(kind)
        ),
        "the model's position bound would be a guess: give a config with one of those types",
    );
}
