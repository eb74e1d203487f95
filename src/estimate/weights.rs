//! What a Hugging Face model's weights are loaded in (`weights_dtype`), and so held and trained
//! in: transformers 5.24's `from_pretrained(..., dtype=...)`.
//!
//! Source: `transformers/modeling_utils.py` (`from_pretrained`: `dtype` defaults to `"auto"`;
//! `_get_dtype`: `"auto"` takes the config's `dtype`, which `PreTrainedConfig` fills from a
//! `config.json`'s `dtype` or, written by older versions, `torch_dtype`; without either, the
//! dtype of the checkpoint's first floating-point weight). Trainer trains the parameters in the
//! dtype they were loaded in: 16-bit weights get 16-bit gradients and 16-bit AdamW moments (no
//! float32 master copy), and under `bf16=True`/`fp16=True` autocast casts only float32 weights.

use super::error::ScenarioError;
use super::scenario::{Dtype, Scenario};

/// The dtype `from_pretrained` loads the weights in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WeightsDtype {
    /// `dtype="auto"`, transformers 5's default: the `config.json`'s `dtype`/`torch_dtype`, else
    /// the checkpoint's first floating-point weight. The scenario layer resolves it from the
    /// model (`scenario::model::weights`) before anything is estimated.
    Auto,
    /// `dtype=torch.float32`.
    Float32,
    /// `dtype=torch.bfloat16`.
    Bfloat16,
    /// `dtype=torch.float16`.
    Float16,
}

impl WeightsDtype {
    /// The key's spelling: `auto`, `float32`, `bfloat16`, `float16`.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            WeightsDtype::Auto => "auto",
            WeightsDtype::Float32 => "float32",
            WeightsDtype::Bfloat16 => "bfloat16",
            WeightsDtype::Float16 => "float16",
        }
    }

    /// Parses `auto` or a dtype ([`Dtype::parse`]'s spellings, `torch.` prefix allowed, as a
    /// `from_pretrained` argument is written).
    pub fn parse(s: &str) -> Option<WeightsDtype> {
        let s = s.trim();
        let s = s.strip_prefix("torch.").unwrap_or(s);
        if s.eq_ignore_ascii_case("auto") {
            return Some(WeightsDtype::Auto);
        }
        Dtype::parse(s).map(WeightsDtype::of)
    }

    /// The dtype it names; `None` for `auto`.
    pub(crate) fn dtype(self) -> Option<Dtype> {
        match self {
            WeightsDtype::Auto => None,
            WeightsDtype::Float32 => Some(Dtype::Float32),
            WeightsDtype::Bfloat16 => Some(Dtype::Bfloat16),
            WeightsDtype::Float16 => Some(Dtype::Float16),
        }
    }

    /// The weights held in `d`.
    pub(crate) fn of(d: Dtype) -> WeightsDtype {
        match d {
            Dtype::Float32 => WeightsDtype::Float32,
            Dtype::Bfloat16 => WeightsDtype::Bfloat16,
            Dtype::Float16 => WeightsDtype::Float16,
        }
    }
}

impl Scenario {
    /// The dtype the weights are held and trained in: bfloat16 with `pure_bf16` (nanoGPT's
    /// patch, and a synonym of `weights_dtype = bfloat16` for a Hugging Face model, whose
    /// scenario layer refuses the two contradicting), else `weights_dtype`'s; one left `auto` (a
    /// scenario built in code, not resolved against a model) is PyTorch's default float32.
    pub(crate) fn weights(&self) -> Dtype {
        match (self.pure_bf16, self.weights_dtype.dtype()) {
            (true, None | Some(Dtype::Float32)) => Dtype::Bfloat16,
            (_, d) => d.unwrap_or(Dtype::Float32),
        }
    }

    /// nanoGPT's model (and sample.py's) is no `from_pretrained` load: `weights_dtype` is
    /// refused for it (its own patch is `pure_bf16`).
    pub(crate) fn nanogpt_has_no_weights_dtype(&self) -> Result<(), ScenarioError> {
        if self.weights_dtype == WeightsDtype::Auto {
            return Ok(());
        }
        Err(ScenarioError::key(
            "weights_dtype",
            format!(
                "weights_dtype = {}: a Hugging Face model's from_pretrained dtype, given with \
                 `model`; nanoGPT's weights in bfloat16 are its pure_bf16 patch",
                self.weights_dtype.as_str()
            ),
        ))
    }

    /// Whether the weights are 16-bit and trained as they are.
    pub(crate) fn half_weights(&self) -> bool {
        self.weights() != Dtype::Float32
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings() {
        assert_eq!(WeightsDtype::parse("auto"), Some(WeightsDtype::Auto));
        assert_eq!(WeightsDtype::parse(" AUTO "), Some(WeightsDtype::Auto));
        assert_eq!(
            WeightsDtype::parse("torch.bfloat16"),
            Some(WeightsDtype::Bfloat16)
        );
        assert_eq!(WeightsDtype::parse("fp16"), Some(WeightsDtype::Float16));
        assert_eq!(WeightsDtype::parse("float"), Some(WeightsDtype::Float32));
        assert_eq!(WeightsDtype::parse("int8"), None);
        for w in [
            WeightsDtype::Auto,
            WeightsDtype::Float32,
            WeightsDtype::Bfloat16,
            WeightsDtype::Float16,
        ] {
            assert_eq!(WeightsDtype::parse(w.as_str()), Some(w));
        }
    }

    #[test]
    fn auto_unresolved_follows_pure_bf16() {
        let mut s = Scenario::default();
        assert_eq!(s.weights(), Dtype::Float32);
        s.pure_bf16 = true;
        assert_eq!(s.weights(), Dtype::Bfloat16);
        s.weights_dtype = WeightsDtype::Float16;
        assert_eq!(s.weights(), Dtype::Float16);
        assert!(s.half_weights());
    }
}
