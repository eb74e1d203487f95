//! Literals and how each kind of scenario key reads one: the values `--set`, Python config
//! files and YAML give, checked and typed ([`super::keys`] names the reader of each key).

use crate::estimate::{
    AttnImplementation, BatchLayout, Dtype, HfTrainer, InitFrom, LoraTargets, Optimizer, Phase,
    QuantType, ScenarioError, Sharding, WeightsDtype,
};

/// A value for [`crate::estimate::Scenario::set`], as parsed from a Python config, a `--set` flag or YAML.
#[derive(Debug, Clone, PartialEq)]
pub enum Literal {
    /// An integer literal.
    Int(i64),
    /// A float literal.
    Float(f64),
    /// `True`/`False` (Python) or `true`/`false` (YAML).
    Bool(bool),
    /// A string literal (quotes removed).
    Str(String),
    /// Python's `None` or YAML's `null`: resets the optional keys `eval_batch_size` and `gpu`.
    None,
}

impl Literal {
    /// [`Literal::None`], or a string that means it (`"None"`, `"none"`, `"null"`, `""`).
    pub(crate) fn is_none(&self) -> bool {
        match self {
            Literal::None => true,
            Literal::Str(s) => {
                matches!(s.trim().to_ascii_lowercase().as_str(), "" | "none" | "null")
            }
            _ => false,
        }
    }
}

impl std::fmt::Display for Literal {
    /// Python's spelling: `6`, `0.1`, `True`, `'bfloat16'`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Literal::Int(i) => write!(f, "{i}"),
            Literal::Float(x) => write!(f, "{x:?}"),
            Literal::Bool(true) => f.write_str("True"),
            Literal::Bool(false) => f.write_str("False"),
            Literal::Str(s) => write!(f, "'{s}'"),
            Literal::None => f.write_str("None"),
        }
    }
}

/// A whole number ≥ 1 (integral floats such as `1e3` are accepted).
pub(super) fn count(key: &str, value: &Literal) -> Result<u64, ScenarioError> {
    let n = match value {
        Literal::Int(i) => *i,
        Literal::Float(f) if f.fract() == 0.0 && f.abs() < 9.0e18 => *f as i64,
        other => {
            return Err(ScenarioError::key(
                key,
                format!("expected a whole number, got {other}"),
            ))
        }
    };
    if n < 1 {
        return Err(ScenarioError::key(
            key,
            format!("must be at least 1, got {n}"),
        ));
    }
    u64::try_from(n).map_err(|_| ScenarioError::key(key, format!("{n} is out of range")))
}

/// `float32`, `bfloat16` or `float16` (and their short names).
pub(super) fn dtype(key: &str, value: &Literal) -> Result<Dtype, ScenarioError> {
    Dtype::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!("unknown dtype {value}; use float32, bfloat16 or float16"),
        )
    })
}

/// `auto` or a dtype: what a Hugging Face model's weights are loaded in.
pub(super) fn weights_dtype(key: &str, value: &Literal) -> Result<WeightsDtype, ScenarioError> {
    WeightsDtype::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!("unknown weights dtype {value}; use auto, float32, bfloat16 or float16"),
        )
    })
}

/// `adamw`, `adamw8bit`, `paged_adamw8bit` or `sgd` (and their other spellings).
pub(super) fn optimizer(key: &str, value: &Literal) -> Result<Optimizer, ScenarioError> {
    Optimizer::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!(
                "unknown optimizer {value}; use adamw (Trainer's adamw_torch_fused), adamw8bit \
                 (adamw_bnb_8bit), paged_adamw8bit or sgd{}",
                if text(key, value).is_ok_and(|t| t.trim().eq_ignore_ascii_case("adamw_torch")) {
                    " (Trainer's unfused adamw_torch keeps foreach temporaries vramdoc does not model)"
                } else {
                    ""
                }
            ),
        )
    })
}

/// `nf4` or `fp4`.
pub(super) fn quant_type(key: &str, value: &Literal) -> Result<QuantType, ScenarioError> {
    QuantType::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(key, format!("unknown 4-bit type {value}; use nf4 or fp4"))
    })
}

/// `transformers` (`Trainer`) or `trl` (`SFTTrainer`).
pub(super) fn trainer(key: &str, value: &Literal) -> Result<HfTrainer, ScenarioError> {
    HfTrainer::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!(
                "unknown trainer {value}; use transformers (transformers' Trainer) or trl (TRL's SFTTrainer)"
            ),
        )
    })
}

/// transformers' `attn_implementation`: `sdpa`, `eager` or `flash_attention_2`; `None` leaves
/// it to `flash`.
pub(super) fn attn_implementation(
    key: &str,
    value: &Literal,
) -> Result<Option<AttnImplementation>, ScenarioError> {
    if value.is_none() {
        return Ok(None);
    }
    AttnImplementation::parse(&text(key, value)?)
        .map(Some)
        .ok_or_else(|| {
            ScenarioError::key(
                key,
                format!(
                    "unknown attn_implementation {value}; use sdpa (transformers' default), eager or flash_attention_2"
                ),
            )
        })
}

/// `full`, `padded` or `padding_free`.
pub(super) fn batch_layout(key: &str, value: &Literal) -> Result<BatchLayout, ScenarioError> {
    BatchLayout::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!(
                "unknown batch_layout {value}; use full (rows of block_size tokens, no padding: pre-chunked text or TRL's packing_strategy=\"wrapped\"), padded (TRL's default packing=False, rows padded to the longest) or padding_free (TRL's padding_free=True or packing=True with \"bfd\")"
            ),
        )
    })
}

/// `none`, `zero1` or `fsdp`.
pub(super) fn sharding(key: &str, value: &Literal) -> Result<Sharding, ScenarioError> {
    Sharding::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!("unknown sharding {value}; use none, zero1 (ZeroRedundancyOptimizer) or fsdp"),
        )
    })
}

/// `train` or `generate`.
pub(super) fn phase(key: &str, value: &Literal) -> Result<Phase, ScenarioError> {
    Phase::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!("unknown phase {value}; use train (train.py) or generate (sample.py)"),
        )
    })
}

/// `scratch`, `resume` or a GPT-2 checkpoint's name.
pub(super) fn init_from(key: &str, value: &Literal) -> Result<InitFrom, ScenarioError> {
    InitFrom::parse(&text(key, value)?).ok_or_else(|| {
        ScenarioError::key(
            key,
            format!("unknown init_from {value}; nanoGPT knows scratch, resume, gpt2, gpt2-medium, gpt2-large and gpt2-xl"),
        )
    })
}

/// Linear layers to adapt, comma-separated (`attn.c_attn,mlp.c_fc`, `all-linear`).
pub(super) fn lora_targets(key: &str, value: &Literal) -> Result<LoraTargets, ScenarioError> {
    LoraTargets::parse(&text(key, value)?).map_err(|m| ScenarioError::key(key, m))
}

/// A GPU id, lower-cased, or None (`None`, `null`, ...).
pub(super) fn gpu_id(key: &str, value: &Literal) -> Result<Option<String>, ScenarioError> {
    match value {
        v if v.is_none() => Ok(None),
        Literal::Str(s) => Ok(Some(s.trim().to_ascii_lowercase())),
        other => Err(ScenarioError::key(
            key,
            format!("expected a GPU id such as \"rtx-4070\", got {other}"),
        )),
    }
}

/// A model: a catalog id or a `config.json` path, as written (paths are case-sensitive), or None.
pub(super) fn model(key: &str, value: &Literal) -> Result<Option<String>, ScenarioError> {
    match value {
        v if v.is_none() => Ok(None),
        Literal::Str(s) if !s.trim().is_empty() => Ok(Some(s.trim().to_owned())),
        other => Err(ScenarioError::key(
            key,
            format!("expected a model id such as \"gpt2\" or a path to a config.json, got {other}"),
        )),
    }
}

/// A whole number ≥ 1, or None (`None`, `null`, ...).
pub(super) fn optional_count(key: &str, value: &Literal) -> Result<Option<u64>, ScenarioError> {
    if value.is_none() {
        Ok(None)
    } else {
        count(key, value).map(Some)
    }
}

/// A YAML scalar as the literal for `key`: numbers, booleans, strings, `null`, and for a key of
/// names (`lora_targets`) a list of them (read comma-separated).
pub fn yaml_literal(key: &str, val: &yaml_serde::Value) -> Result<Literal, ScenarioError> {
    use yaml_serde::Value;
    Ok(match val {
        Value::Null => Literal::None,
        Value::Bool(b) => Literal::Bool(*b),
        Value::String(s) => Literal::Str(s.clone()),
        Value::Number(n) => match (n.as_i64(), n.as_f64()) {
            (Some(i), _) => Literal::Int(i),
            // An integer beyond i64 (YAML reads up to 2^64 - 1): said as written, not as the
            // float it would round to.
            (None, _) if n.is_u64() => {
                return Err(ScenarioError::key(
                    key,
                    format!("{n} is too large: the largest integer vramdoc reads is 2^63 - 1"),
                ))
            }
            (None, Some(f)) => Literal::Float(f),
            (None, None) => {
                return Err(ScenarioError::key(
                    key,
                    format!("number {n} is out of range"),
                ))
            }
        },
        Value::Sequence(items)
            if super::keys::get(key).is_some_and(|k| k.kind == super::keys::Kind::Names)
                && !items.is_empty()
                && items.iter().all(|i| i.as_str().is_some()) =>
        {
            let names: Vec<&str> = items.iter().filter_map(|i| i.as_str()).collect();
            Literal::Str(names.join(","))
        }
        _ => {
            return Err(ScenarioError::key(
                key,
                "expected a number, a boolean or a string, not a list or mapping",
            ))
        }
    })
}

/// A whole number ≥ 0 (`lora_rank = 0` turns LoRA off).
pub(super) fn whole(key: &str, value: &Literal) -> Result<u64, ScenarioError> {
    match value {
        Literal::Int(0) => Ok(0),
        Literal::Float(f) if *f == 0.0 => Ok(0),
        other => count(key, other).map_err(|e| {
            ScenarioError::key(
                key,
                e.message
                    .replace("at least 1", "at least 0 (0 turns it off)"),
            )
        }),
    }
}

/// A byte count: a whole number of bytes, or a string with a unit as nvidia-smi and PyTorch
/// print them (`"2118 MiB"`, `"2.1 GiB"`, `"2.1GB"`; KiB/MiB/GiB/TiB are powers of 1024,
/// kB/MB/GB/TB powers of 1000, `B` bytes). [`parse_byte_size`] reads the string form.
pub(super) fn byte_size(key: &str, value: &Literal) -> Result<u64, ScenarioError> {
    let bad = |v: &dyn std::fmt::Display| {
        ScenarioError::key(
            key,
            format!("expected a whole number of bytes such as 2254438400, or a size with its unit such as \"2150 MiB\" or \"2.1 GiB\", got {v}"),
        )
    };
    match value {
        Literal::Int(i) => u64::try_from(*i).map_err(|_| bad(value)),
        Literal::Float(f) if f.fract() == 0.0 && *f >= 0.0 && *f < 9.0e18 => Ok(*f as u64),
        Literal::Str(s) => parse_byte_size(s).ok_or_else(|| bad(value)),
        other => Err(bad(other)),
    }
}

/// Parses `"2.1 GiB"`, `"2118MiB"`, `"300 MB"`, `"1024"` (bytes) into bytes; `None` when the text
/// is not a non-negative number with an optional known unit, is out of range, or is a fraction
/// of a byte (`"1.5"` has no unit to scale it: it would round to 2 bytes, surely not meant).
pub fn parse_byte_size(text: &str) -> Option<u64> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let value: f64 = number.parse().ok()?;
    let scale: f64 = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" | "bytes" => 1.0,
        "kib" => 1024.0,
        "mib" => 1024.0 * 1024.0,
        "gib" => 1024.0 * 1024.0 * 1024.0,
        "tib" => 1024.0 * 1024.0 * 1024.0 * 1024.0,
        "kb" => 1e3,
        "mb" => 1e6,
        "gb" => 1e9,
        "tb" => 1e12,
        _ => return None,
    };
    if scale == 1.0 && value.fract() != 0.0 {
        return None;
    }
    let bytes = (value * scale).round();
    (0.0..9.0e18).contains(&bytes).then_some(bytes as u64)
}

/// `True`/`False`; the strings "true"/"false" are accepted too.
pub(super) fn boolean(key: &str, value: &Literal) -> Result<bool, ScenarioError> {
    match value {
        Literal::Bool(b) => Ok(*b),
        Literal::Str(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Literal::Str(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        other => Err(ScenarioError::key(
            key,
            format!("expected True or False, got {other}"),
        )),
    }
}

/// A probability in [0, 1).
pub(super) fn probability(key: &str, value: &Literal) -> Result<f64, ScenarioError> {
    let p = match value {
        Literal::Float(f) => *f,
        Literal::Int(i) => *i as f64,
        other => {
            return Err(ScenarioError::key(
                key,
                format!("expected a number such as 0.1, got {other}"),
            ))
        }
    };
    if !(0.0..1.0).contains(&p) {
        return Err(ScenarioError::key(
            key,
            format!("must be at least 0 and below 1, got {p}"),
        ));
    }
    Ok(p)
}

/// A string value (dtype, optimizer).
pub(super) fn text(key: &str, value: &Literal) -> Result<String, ScenarioError> {
    match value {
        Literal::Str(s) => Ok(s.clone()),
        other => Err(ScenarioError::key(
            key,
            format!("expected a quoted string, got {other}"),
        )),
    }
}
