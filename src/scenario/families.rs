//! Which model families a scenario key applies to: a set over [`Family`], the key table's
//! `families` column.
//!
//! A key's family set says whose code reads it: nanoGPT's `train.py` and `model.py` only
//! ([`Families::NANOGPT`]: the shape keys, which a Hugging Face model takes from its
//! `config.json`; the evaluation; train.py's `init_from` and `eval_only`; nanoGPT's fine-tuning
//! patches), or every family ([`Families::ALL`]: the run around the model, such as the batch, the
//! sequence length, the precision, the processes and the card). A key given for a family it does
//! not apply to is to be refused where it was written, naming the key and the family, once a
//! scenario can name its model (today only `estimate::estimate_model` computes another family).

use crate::estimate::Family;

/// A set of model families, one bit per [`Family`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Families(u8);

/// Every family, in declaration order.
const EVERY: [Family; 7] = [
    Family::NanoGpt,
    Family::HfGpt2,
    Family::Llama,
    Family::Gemma2,
    Family::Gemma3,
    Family::Moe,
    Family::Nanochat,
];

/// The bit of `f` (a match, so a new family cannot be left without one).
const fn bit(f: Family) -> u8 {
    1 << match f {
        Family::NanoGpt => 0,
        Family::HfGpt2 => 1,
        Family::Llama => 2,
        Family::Gemma2 => 3,
        Family::Gemma3 => 4,
        Family::Moe => 5,
        Family::Nanochat => 6,
    }
}

impl Families {
    /// No family.
    pub const NONE: Families = Families(0);
    /// nanoGPT's code only.
    pub const NANOGPT: Families = Families::of(Family::NanoGpt);
    /// The families transformers' modeling code runs under a Trainer step: GPT-2, Llama and the
    /// models written like it, Gemma 2 and 3, the mixture-of-experts decoders.
    pub const HF: Families = Families::of(Family::HfGpt2)
        .with(Family::Llama)
        .with(Family::Gemma2)
        .with(Family::Gemma3)
        .with(Family::Moe);
    /// The families with PEFT's LoRA computed: Hugging Face's GPT-2 and the Llama family.
    pub const HF_LORA: Families = Families::of(Family::HfGpt2).with(Family::Llama);
    /// The families Liger Kernel has patches for: the Llama family, Gemma 2 and 3, the mixtures
    /// of experts (Mixtral and Qwen3-MoE; Qwen2-MoE is refused by `estimate::fused_ce`).
    pub const LIGER: Families = Families::of(Family::Llama)
        .with(Family::Gemma2)
        .with(Family::Gemma3)
        .with(Family::Moe);
    /// The families with LoRA: nanoGPT's own patch and [`Families::HF_LORA`].
    pub const LORA: Families = Families::HF_LORA.with(Family::NanoGpt);
    /// Every family.
    pub const ALL: Families = {
        let mut all = Families::NONE;
        let mut i = 0;
        while i < EVERY.len() {
            all = all.with(EVERY[i]);
            i += 1;
        }
        all
    };

    /// The set of `f` alone.
    pub const fn of(f: Family) -> Families {
        Families(bit(f))
    }

    /// This set and `f`.
    pub const fn with(self, f: Family) -> Families {
        Families(self.0 | bit(f))
    }

    /// Whether `f` is in the set.
    pub const fn contains(self, f: Family) -> bool {
        self.0 & bit(f) != 0
    }

    /// The families in the set, in declaration order.
    pub fn iter(self) -> impl Iterator<Item = Family> {
        EVERY.into_iter().filter(move |f| self.contains(*f))
    }

    /// The families' names as messages and the JSON give them, comma-separated (`nanogpt`).
    pub fn names(self) -> String {
        self.iter()
            .map(Family::as_str)
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_family_has_its_own_bit_and_all_holds_every_one() {
        let mut seen = 0u8;
        for f in EVERY {
            assert_eq!(seen & bit(f), 0, "{f:?} shares a bit");
            seen |= bit(f);
            assert!(Families::ALL.contains(f));
            assert_eq!(Families::of(f).iter().collect::<Vec<_>>(), [f]);
        }
        assert_eq!(Families::ALL.iter().count(), EVERY.len());
    }

    #[test]
    fn hugging_face_is_transformers_families_only() {
        assert!(!Families::HF.contains(Family::NanoGpt));
        assert!(!Families::HF.contains(Family::Nanochat));
        assert_eq!(Families::HF.names(), "hf_gpt2, llama, gemma2, gemma3, moe");
        assert_eq!(Families::NANOGPT.names(), "nanogpt");
        assert!(Families::NONE.iter().next().is_none());
    }
}
