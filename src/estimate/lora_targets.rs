//! The scenario key `lora_targets`: which Linear modules of every block get LoRA adapters, by the
//! names PEFT's `LoraConfig(target_modules=...)` matches, for every family that has LoRA.
//!
//! PEFT matches a name in `target_modules` against the end of each module's path
//! (`peft/tuners/tuners_utils.py`, `check_target_module_exists`: the whole path, or a suffix after
//! a `.`), so `q_proj` adapts `model.layers.*.self_attn.q_proj` in every block, and GPT-2's
//! `c_proj` both `attn.c_proj` and `mlp.c_proj`. `all-linear` (PEFT's `INCLUDE_LINEAR_LAYERS_SHORTHAND`,
//! resolved by `_maybe_include_all_linear_layers`) is every `nn.Linear` (and GPT-2's `Conv1D`)
//! except the output head. The names a family's blocks have ([`LoraModule::of`]):
//!
//! - nanoGPT's GPT and Hugging Face's GPT-2: `attn.c_attn`, `attn.c_proj`, `mlp.c_fc`,
//!   `mlp.c_proj` (the same module paths in both codes);
//! - the Llama family, Gemma 2 and Gemma 3: `q_proj`, `k_proj`, `v_proj`, `o_proj`,
//!   `gate_proj`, `up_proj`, `down_proj`; Phi-3 fuses them as `qkv_proj` and `gate_up_proj`;
//! - a mixture of experts: the attention's, the router `gate`, the experts by their names of
//!   transformers 4 (Mixtral `w1`, `w3`, `w2`; Qwen `gate_proj`, `up_proj`, `down_proj`) and
//!   Qwen2-MoE's `shared_expert_gate` (what PEFT does with them: `hf_moe::targets`).
//!
//! A set is read before the model is known (a scenario's keys come in any order), so it holds any
//! of these names; [`LoraTargets::resolve`] checks them against the model's family.

use serde::Serialize;

use super::arch::{Architecture, Family, Mlp};
use super::finetune::LoraTarget;

/// One Linear module of a block, as PEFT's `target_modules` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(into = "&'static str")]
pub enum LoraModule {
    /// GPT-2's fused q/k/v projection `attn.c_attn` (h → 3h).
    CAttn,
    /// GPT-2's attention output projection `attn.c_proj` (h → h).
    AttnProj,
    /// GPT-2's MLP up projection `mlp.c_fc` (h → 4h).
    CFc,
    /// GPT-2's MLP down projection `mlp.c_proj` (4h → h).
    MlpProj,
    /// Llama's query projection `self_attn.q_proj`.
    QProj,
    /// Llama's key projection `self_attn.k_proj`.
    KProj,
    /// Llama's value projection `self_attn.v_proj`.
    VProj,
    /// Llama's output projection `self_attn.o_proj`.
    OProj,
    /// Llama's gate projection `mlp.gate_proj`.
    GateProj,
    /// Llama's up projection `mlp.up_proj`.
    UpProj,
    /// Llama's down projection `mlp.down_proj`.
    DownProj,
    /// Phi-3's fused q/k/v projection `self_attn.qkv_proj`.
    QkvProj,
    /// Phi-3's fused gate and up projection `mlp.gate_up_proj`.
    GateUpProj,
    /// A mixture of experts' router `mlp.gate` (`hf_moe::targets`).
    Router,
    /// Mixtral's expert names of transformers 4 (`w1` gate, `w3` up, `w2` down), which PEFT
    /// converts to the experts' 3-D parameters.
    W1,
    W3,
    W2,
    /// Qwen2-MoE's shared expert's gate `mlp.shared_expert_gate` (`h → 1`).
    SharedExpertGate,
    /// The experts' 3-D `gate_up_proj` `(E, 2·I, h)`, adapted through `lora.ParamWrapper`.
    ExpertsGateUp,
    /// The experts' 3-D `down_proj` `(E, h, I)`, adapted through `lora.ParamWrapper`.
    ExpertsDown,
}

impl From<LoraModule> for &'static str {
    fn from(m: LoraModule) -> &'static str {
        m.as_str()
    }
}

impl LoraModule {
    /// Every module, in the order a block runs them (GPT-2's, then Llama's, then Phi-3's).
    const ALL: [LoraModule; 20] = [
        LoraModule::CAttn,
        LoraModule::AttnProj,
        LoraModule::CFc,
        LoraModule::MlpProj,
        LoraModule::QProj,
        LoraModule::KProj,
        LoraModule::VProj,
        LoraModule::QkvProj,
        LoraModule::OProj,
        LoraModule::GateProj,
        LoraModule::UpProj,
        LoraModule::GateUpProj,
        LoraModule::DownProj,
        LoraModule::Router,
        LoraModule::W1,
        LoraModule::W3,
        LoraModule::W2,
        LoraModule::SharedExpertGate,
        LoraModule::ExpertsGateUp,
        LoraModule::ExpertsDown,
    ];

    /// The name as written in a scenario and shown (GPT-2's with their sublayer, since `c_proj`
    /// alone names two).
    pub fn as_str(self) -> &'static str {
        match self {
            LoraModule::CAttn => "attn.c_attn",
            LoraModule::AttnProj => "attn.c_proj",
            LoraModule::CFc => "mlp.c_fc",
            LoraModule::MlpProj => "mlp.c_proj",
            LoraModule::QProj => "q_proj",
            LoraModule::KProj => "k_proj",
            LoraModule::VProj => "v_proj",
            LoraModule::OProj => "o_proj",
            LoraModule::GateProj => "gate_proj",
            LoraModule::UpProj => "up_proj",
            LoraModule::DownProj => "down_proj",
            LoraModule::QkvProj => "qkv_proj",
            LoraModule::GateUpProj => "gate_up_proj",
            LoraModule::Router => "gate",
            LoraModule::W1 => "w1",
            LoraModule::W3 => "w3",
            LoraModule::W2 => "w2",
            LoraModule::SharedExpertGate => "shared_expert_gate",
            LoraModule::ExpertsGateUp => "experts.gate_up_proj",
            LoraModule::ExpertsDown => "experts.down_proj",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    /// The Linear modules of one block of `a`, in the order the block runs them: what
    /// `all-linear` adapts, and the names a scenario may give for it.
    pub fn of(a: &Architecture) -> Vec<LoraModule> {
        match a.family {
            Family::NanoGpt | Family::HfGpt2 => vec![
                LoraModule::CAttn,
                LoraModule::AttnProj,
                LoraModule::CFc,
                LoraModule::MlpProj,
            ],
            Family::Moe => super::hf_moe::targets::all_linear(a),
            _ => {
                let mut out = if a.attention.fused_qkv {
                    vec![LoraModule::QkvProj]
                } else {
                    vec![LoraModule::QProj, LoraModule::KProj, LoraModule::VProj]
                };
                out.push(LoraModule::OProj);
                match &a.mlp {
                    Mlp::Dense(f) if f.fused_gate_up => out.push(LoraModule::GateUpProj),
                    _ => out.extend([LoraModule::GateProj, LoraModule::UpProj]),
                }
                out.push(LoraModule::DownProj);
                out
            }
        }
    }

    /// The names a scenario may give for `a`'s blocks (what `all-linear` adapts, except for a
    /// mixture of experts, whose names PEFT converts: `hf_moe::targets`).
    pub fn names(a: &Architecture) -> Vec<LoraModule> {
        match a.family {
            Family::Moe => super::hf_moe::targets::names(a),
            _ => LoraModule::of(a),
        }
    }

    /// `(in, out)` features of this module in a block of `a`: its adapters' `A` is `r × in`
    /// and `B` `out × r`. A mixture of experts' 3-D parameters have `E` adapters stacked
    /// (`hf_moe::targets::features`).
    pub fn features(self, a: &Architecture) -> (u64, u64) {
        match &a.mlp {
            Mlp::Dense(f) => self.dense_features(a, f.intermediate),
            Mlp::Moe(m) => super::hf_moe::targets::features(self, a, m),
        }
    }

    /// `(in, out)` of a dense block's module, its MLP `i` wide.
    pub(crate) fn dense_features(self, a: &Architecture, i: u64) -> (u64, u64) {
        let h = a.hidden;
        let at = &a.attention;
        match self {
            LoraModule::CAttn | LoraModule::QkvProj => (h, at.qkv_width()),
            LoraModule::AttnProj => (h, h),
            LoraModule::CFc => (h, i),
            LoraModule::MlpProj | LoraModule::DownProj => (i, h),
            LoraModule::QProj => (h, at.q_width()),
            LoraModule::KProj | LoraModule::VProj => (h, at.kv_width()),
            LoraModule::OProj => (at.q_width(), h),
            LoraModule::GateProj | LoraModule::UpProj => (h, i),
            LoraModule::GateUpProj => (h, i.saturating_mul(2)),
            // Not a dense block's: `hf_moe::targets::features` gives them.
            LoraModule::Router
            | LoraModule::W1
            | LoraModule::W3
            | LoraModule::W2
            | LoraModule::SharedExpertGate
            | LoraModule::ExpertsGateUp
            | LoraModule::ExpertsDown => (h, 0),
        }
    }

    /// nanoGPT's block target of the same name, for GPT-2's four.
    pub(crate) fn gpt2_target(self) -> Option<LoraTarget> {
        match self {
            LoraModule::CAttn => Some(LoraTarget::CAttn),
            LoraModule::AttnProj => Some(LoraTarget::AttnProj),
            LoraModule::CFc => Some(LoraTarget::CFc),
            LoraModule::MlpProj => Some(LoraTarget::MlpProj),
            _ => None,
        }
    }
}

/// The spellings a scenario may use: PEFT's suffixes, with or without the sublayer.
const SPELLINGS: &[(&str, &[LoraModule])] = &[
    ("attn.c_attn", &[LoraModule::CAttn]),
    ("c_attn", &[LoraModule::CAttn]),
    ("attn.c_proj", &[LoraModule::AttnProj]),
    ("mlp.c_fc", &[LoraModule::CFc]),
    ("c_fc", &[LoraModule::CFc]),
    ("mlp.c_proj", &[LoraModule::MlpProj]),
    ("c_proj", &[LoraModule::AttnProj, LoraModule::MlpProj]),
    ("q_proj", &[LoraModule::QProj]),
    ("k_proj", &[LoraModule::KProj]),
    ("v_proj", &[LoraModule::VProj]),
    ("o_proj", &[LoraModule::OProj]),
    ("gate_proj", &[LoraModule::GateProj]),
    ("up_proj", &[LoraModule::UpProj]),
    ("down_proj", &[LoraModule::DownProj]),
    ("qkv_proj", &[LoraModule::QkvProj]),
    ("gate_up_proj", &[LoraModule::GateUpProj]),
    ("gate", &[LoraModule::Router]),
    ("w1", &[LoraModule::W1]),
    ("w3", &[LoraModule::W3]),
    ("w2", &[LoraModule::W2]),
    ("shared_expert_gate", &[LoraModule::SharedExpertGate]),
];

/// The bit of `all-linear` (above every module's).
const ALL_LINEAR: u32 = 1 << 31;

/// The Linear modules of every block that get LoRA adapters (`lora_targets`).
///
/// Spelled as a list of module names separated by commas (a YAML list too): the names above, each
/// optionally with its sublayer as in the module path (`self_attn.q_proj`, `mlp.down_proj`), or
/// `all-linear` (also `all`). The default is `attn.c_attn`, PEFT's default for GPT-2 and the LoRA
/// paper's choice; a Hugging Face model given without `lora_targets` gets PEFT's default for its
/// `model_type` instead (`scenario::model`, [`LoraTargets::peft_default`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct LoraTargets(u32);

impl Default for LoraTargets {
    fn default() -> Self {
        LoraTargets(LoraModule::CAttn.bit())
    }
}

impl LoraTargets {
    /// `all-linear`: every Linear of the block, whatever the family calls them.
    pub const ALL: LoraTargets = LoraTargets(ALL_LINEAR);

    /// The set of exactly `modules`.
    pub fn of(modules: &[LoraModule]) -> LoraTargets {
        LoraTargets(modules.iter().fold(0, |bits, m| bits | m.bit()))
    }

    /// Whether this is `all-linear`.
    pub fn all_linear(self) -> bool {
        self.0 & ALL_LINEAR != 0
    }

    /// Whether nanoGPT's block target `t` is adapted (`all-linear` adapts the four).
    pub(crate) fn has(self, t: LoraTarget) -> bool {
        self.all_linear()
            || LoraModule::ALL
                .iter()
                .any(|m| m.gpt2_target() == Some(t) && self.0 & m.bit() != 0)
    }

    /// nanoGPT's block targets adapted, in block order.
    pub(crate) fn iter(self) -> impl Iterator<Item = LoraTarget> {
        LoraTarget::ALL.into_iter().filter(move |t| self.has(*t))
    }

    /// The named modules, in block order (none for `all-linear`).
    pub(crate) fn named(self) -> impl Iterator<Item = LoraModule> {
        LoraModule::ALL
            .into_iter()
            .filter(move |m| self.0 & m.bit() != 0)
    }

    /// The canonical spelling: `all-linear`, or the names in block order, comma-separated.
    pub fn display(self) -> String {
        if self.all_linear() {
            return "all-linear".to_owned();
        }
        self.named()
            .map(LoraModule::as_str)
            .collect::<Vec<_>>()
            .join(",")
    }

    /// The modules of `a`'s blocks this set adapts, in block order; the error names a module the
    /// family does not have and lists those it has.
    pub fn resolve(self, a: &Architecture) -> Result<Vec<LoraModule>, String> {
        let has = LoraModule::of(a);
        if self.all_linear() {
            return Ok(has);
        }
        if a.family == Family::Moe {
            return super::hf_moe::targets::resolve(self, a);
        }
        let missing: Vec<&str> = self
            .named()
            .filter(|m| !has.contains(m))
            .map(LoraModule::as_str)
            .collect();
        if !missing.is_empty() {
            let names: Vec<&str> = has.iter().map(|m| m.as_str()).collect();
            return Err(format!(
                "{} {} no Linear module of {}'s blocks; they have {} (or all-linear)",
                missing.join(", "),
                if missing.len() == 1 { "is" } else { "are" },
                a.name,
                names.join(", ")
            ));
        }
        Ok(has.into_iter().filter(|m| self.0 & m.bit() != 0).collect())
    }

    /// PEFT's `target_modules` when a `LoraConfig` names none
    /// (`TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`, peft 0.21: `gpt2` → `c_attn`;
    /// `llama`, `mistral`, `qwen2`, `qwen3`, `gemma2`, `gemma3_text` → `q_proj`, `v_proj`);
    /// `None` where PEFT has none and raises (Phi-3: "Please specify `target_modules` in
    /// `peft_config`").
    pub fn peft_default(a: &Architecture) -> Option<LoraTargets> {
        match a.family {
            Family::NanoGpt | Family::HfGpt2 => Some(LoraTargets::default()),
            Family::Llama | Family::Gemma2 | Family::Gemma3 if !a.attention.fused_qkv => {
                Some(LoraTargets::of(&[LoraModule::QProj, LoraModule::VProj]))
            }
            _ => None,
        }
    }

    /// Parses a list of names separated by commas, spaces or `+`; the error names the one it does
    /// not know and lists the names it does.
    pub fn parse(text: &str) -> Result<LoraTargets, String> {
        let mut bits = 0u32;
        for name in text
            .split(|c: char| c == ',' || c == '+' || c.is_whitespace())
            .map(|n| n.trim_matches(|c| matches!(c, '\'' | '"' | '[' | ']')))
            .filter(|n| !n.is_empty())
        {
            let lower = name.to_ascii_lowercase();
            if matches!(lower.as_str(), "all" | "all-linear" | "all_linear") {
                bits |= ALL_LINEAR;
                continue;
            }
            // `self_attn.q_proj`, `mlp.down_proj`: the sublayer before a Llama name.
            let short = lower
                .strip_prefix("self_attn.")
                .or_else(|| lower.strip_prefix("mlp."))
                .filter(|rest| !rest.starts_with("c_"))
                .unwrap_or(&lower);
            match SPELLINGS.iter().find(|(s, _)| *s == short) {
                Some((_, modules)) => bits |= LoraTargets::of(modules).0,
                None => {
                    return Err(format!(
                        "unknown LoRA target `{name}`; GPT-2 and nanoGPT have attn.c_attn, attn.c_proj, mlp.c_fc, mlp.c_proj (c_proj: both projections), the Llama family and Gemma q_proj, k_proj, v_proj, o_proj, gate_proj, up_proj, down_proj (Phi-3: qkv_proj, o_proj, gate_up_proj, down_proj), a mixture of experts also gate (the router), Mixtral w1, w3, w2, Qwen2-MoE shared_expert_gate; all-linear adapts every Linear but the head; separate names by commas"
                    ))
                }
            }
        }
        if bits == 0 {
            return Err(
                "name at least one Linear layer, e.g. 'attn.c_attn' or 'q_proj'".to_owned(),
            );
        }
        if bits & ALL_LINEAR != 0 {
            bits = ALL_LINEAR;
        }
        Ok(LoraTargets(bits))
    }
}

impl Serialize for LoraTargets {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.display())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn targets_parse_and_print_canonically() {
        let t = LoraTargets::parse("c_fc, attn.c_attn").unwrap();
        assert_eq!(t.display(), "attn.c_attn,mlp.c_fc");
        assert_eq!(
            LoraTargets::parse("c_proj").unwrap().display(),
            "attn.c_proj,mlp.c_proj"
        );
        assert_eq!(LoraTargets::parse("all-linear").unwrap(), LoraTargets::ALL);
        assert_eq!(LoraTargets::parse("q_proj, all").unwrap(), LoraTargets::ALL);
        assert_eq!(
            LoraTargets::parse("['c_attn', 'mlp.c_proj']")
                .unwrap()
                .display(),
            "attn.c_attn,mlp.c_proj"
        );
        assert_eq!(
            LoraTargets::parse("down_proj,self_attn.v_proj,mlp.gate_proj,q_proj")
                .unwrap()
                .display(),
            "q_proj,v_proj,gate_proj,down_proj"
        );
        let err = LoraTargets::parse("q_prj").unwrap_err();
        assert!(
            err.contains("q_prj") && err.contains("gate_up_proj"),
            "{err}"
        );
        assert!(LoraTargets::parse(" , ").is_err());
        assert_eq!(LoraTargets::default().display(), "attn.c_attn");
    }

    #[test]
    fn nanogpt_targets_follow_the_names() {
        let t = LoraTargets::parse("c_proj").unwrap();
        let on: Vec<_> = t.iter().collect();
        assert_eq!(on, [LoraTarget::AttnProj, LoraTarget::MlpProj]);
        assert_eq!(LoraTargets::ALL.iter().count(), 4);
        assert_eq!(LoraTargets::parse("q_proj").unwrap().iter().count(), 0);
    }
}
