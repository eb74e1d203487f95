//! Which attention a Hugging Face model runs (`attn_implementation`, the argument users pass to
//! `from_pretrained` or set on the config): transformers 5.24's `sdpa` (its default, PyTorch's
//! `scaled_dot_product_attention`), `eager` (`eager_attention_forward`, the scores written out)
//! or `flash_attention_2` (the `flash-attn` package, through transformers'
//! `integrations/flash_attention.py`).
//!
//! nanoGPT's own key is `flash` (True: SDPA, False: the manual masked softmax); for a Hugging
//! Face model it is a synonym (`flash = True` is `sdpa`, `False` is `eager`), and the two given
//! with contradicting values are refused at the line, as `pure_bf16` and `weights_dtype` are.
//! `flash_attention_2` is modelled where `flash_attention_2.rs` says and refused elsewhere.

use serde::Serialize;

use super::error::ScenarioError;
use super::scenario::Scenario;

/// transformers' `attn_implementation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum AttnImplementation {
    /// `sdpa`: `torch.nn.functional.scaled_dot_product_attention`, the kernel CUDA picks.
    Sdpa,
    /// `eager`: the scores and the softmax materialized per layer.
    Eager,
    /// `flash_attention_2`: `flash_attn_func` / `flash_attn_varlen_func` of the `flash-attn`
    /// package.
    #[serde(rename = "flash_attention_2")]
    FlashAttention2,
}

impl AttnImplementation {
    /// transformers' spelling.
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            AttnImplementation::Sdpa => "sdpa",
            AttnImplementation::Eager => "eager",
            AttnImplementation::FlashAttention2 => "flash_attention_2",
        }
    }

    /// transformers' spellings, in any case, quotes and spaces trimmed.
    pub fn parse(s: &str) -> Option<AttnImplementation> {
        match s.trim().to_ascii_lowercase().as_str() {
            "sdpa" => Some(AttnImplementation::Sdpa),
            "eager" => Some(AttnImplementation::Eager),
            "flash_attention_2" => Some(AttnImplementation::FlashAttention2),
            _ => None,
        }
    }

    /// What nanoGPT's `flash` key says: SDPA, or the written-out softmax.
    pub(crate) fn of_flash(flash: bool) -> AttnImplementation {
        if flash {
            AttnImplementation::Sdpa
        } else {
            AttnImplementation::Eager
        }
    }
}

impl Scenario {
    /// The attention the run uses: `attn_implementation` when set, else what `flash` says.
    pub fn attention(&self) -> AttnImplementation {
        self.attn_implementation
            .unwrap_or(AttnImplementation::of_flash(self.flash))
    }

    /// `attn_implementation` given with `flash` (`given` says which keys an input set): the two
    /// must agree. The message names both.
    pub(crate) fn attention_agrees(&self, flash_given: bool) -> Result<(), ScenarioError> {
        let Some(a) = self.attn_implementation else {
            return Ok(());
        };
        let sdpa_like = a != AttnImplementation::Eager;
        if flash_given && self.flash != sdpa_like {
            return Err(ScenarioError::key(
                "attn_implementation",
                format!(
                    "`attn_implementation` = {} and `flash` = {} say different things: for a \
                     Hugging Face model flash = True is attn_implementation = sdpa and False is \
                     eager; give one of them",
                    a.as_str(),
                    if self.flash { "True" } else { "False" },
                ),
            ));
        }
        Ok(())
    }

    /// A Hugging Face model's run as the estimators read it: `flash` set to what
    /// `attn_implementation` says (SDPA or flash-attn, or eager), which then follows `flash`
    /// (`None`: what-ifs that turn SDPA on change that one key), except `flash_attention_2`,
    /// which stays named for the steps that model it (`flash_attention_2.rs`).
    pub(crate) fn settle_attention(&mut self) -> Result<(), ScenarioError> {
        let a = self.attention();
        self.flash = a != AttnImplementation::Eager;
        if a != AttnImplementation::FlashAttention2 {
            self.attn_implementation = None;
        }
        Ok(())
    }

    /// Whether the run's attention is flash-attn's (`attn_implementation = flash_attention_2`).
    pub(crate) fn flash_attention_2(&self) -> bool {
        self.attn_implementation == Some(AttnImplementation::FlashAttention2)
    }

    /// An estimator's refusal at `flash` said at the key the input gave: `attn_implementation`
    /// when it named the attention (`flash` is what the estimators read).
    pub(crate) fn at_given_attention(&self, mut e: ScenarioError) -> ScenarioError {
        if let (Some(a), Some("flash")) = (self.attn_implementation, e.key.as_deref()) {
            e.key = Some("attn_implementation".to_owned());
            e.message = format!(
                "attn_implementation = {} (flash = {}): {}",
                a.as_str(),
                if a == AttnImplementation::Eager {
                    "False"
                } else {
                    "True"
                },
                e.message
            );
        }
        e
    }

    /// nanoGPT's model reads `flash`, not transformers' `attn_implementation`.
    pub(crate) fn nanogpt_has_no_attn_implementation(&self) -> Result<(), ScenarioError> {
        match self.attn_implementation {
            None => Ok(()),
            Some(a) => Err(ScenarioError::key(
                "attn_implementation",
                format!(
                    "attn_implementation = {}: transformers' from_pretrained argument, given \
                     without a Hugging Face `model`; nanoGPT's model has `flash` (True: \
                     scaled_dot_product_attention, False: the manual softmax)",
                    a.as_str()
                ),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_users_paste_are_read() {
        for (text, a) in [
            ("sdpa", AttnImplementation::Sdpa),
            (" Eager ", AttnImplementation::Eager),
            ("flash_attention_2", AttnImplementation::FlashAttention2),
        ] {
            assert_eq!(AttnImplementation::parse(text), Some(a), "{text}");
            assert_eq!(AttnImplementation::parse(a.as_str()), Some(a));
        }
        for wrong in ["flash", "flash_attention_3", "sdpa2", ""] {
            assert_eq!(AttnImplementation::parse(wrong), None, "{wrong}");
        }
    }

    #[test]
    fn flash_is_a_synonym_and_a_contradiction_is_refused() {
        let mut s = Scenario::default();
        assert_eq!(s.attention(), AttnImplementation::Sdpa);
        s.flash = false;
        assert_eq!(s.attention(), AttnImplementation::Eager);
        s.attn_implementation = Some(AttnImplementation::Eager);
        assert!(s.attention_agrees(true).is_ok());
        s.attn_implementation = Some(AttnImplementation::Sdpa);
        assert_eq!(s.attention(), AttnImplementation::Sdpa);
        let e = s.attention_agrees(true).unwrap_err();
        assert_eq!(e.key.as_deref(), Some("attn_implementation"));
        assert!(e.message.contains("`flash` = False"), "{e}");
        // `flash` left at its default says nothing.
        assert!(s.attention_agrees(false).is_ok());
    }
}
