//! What PEFT 0.21.2's `LoraConfig(target_modules=...)` adapts in a mixture of experts of
//! transformers 5.24, whose experts are two 3-D parameters per layer and whose router is a
//! `TopKRouter` module with a 2-D `weight`, none of them an `nn.Linear`.
//!
//! Source: `peft/utils/transformers_weight_conversion.py` (`_convert_peft_config_moe`,
//! `_MOE_TARGET_MODULE_MAPPING`, `_MOE_FUSED_TARGETS`), `peft/tuners/lora/layer.py`
//! (`ParamWrapper`), checked by `tools/hf_replay/peft_counts.py` and the replays:
//!
//! - **Mixtral and Qwen3-MoE** (transformers has a checkpoint conversion for `mixtral` and
//!   for `qwen3_moe`, which follows `qwen2_moe`'s pattern): PEFT converts the names of
//!   transformers 4 into `target_parameters`. The router `gate` becomes `gate.weight`; the gate
//!   and up projections (Mixtral `w1` and `w3`, Qwen3-MoE `gate_proj` and `up_proj`, both or
//!   neither: PEFT raises "Cannot convert PEFT target(s) ... because they are fused into
//!   gate_up_proj") become the experts' `gate_up_proj` with rank `2r` (and alpha `2α`); the
//!   down projection (`w2`, `down_proj`) becomes `down_proj`. `all-linear` adds all of them to
//!   the attention's Linears. Each parameter gets a `lora.ParamWrapper`: `A` `(r·E, in)`, `B`
//!   `(out, r·E)` for an `(E, out, in)` parameter, and `r·(in + out)` for the router's `(E, h)`.
//!   `ParamWrapper` refuses `lora_dropout > 0`.
//! - **Qwen1.5-MoE** (`qwen2_moe`, no conversion in transformers 5.24): only `nn.Linear`
//!   modules are targets. `all-linear` and `gate_proj`, `up_proj`, `down_proj` reach the
//!   shared expert's Linears and `shared_expert_gate`, never the experts; `gate` (the router)
//!   is refused by PEFT ("Target module Qwen2MoeTopKRouter() is not supported").
//! - PEFT has no default targets for any of them: `qwen2_moe` and `qwen3_moe` are not in
//!   `TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING`, and Mixtral's `q_proj, v_proj` is
//!   emptied by the conversion, so `get_peft_model` raises ("No `target_modules` passed but
//!   also no `target_parameters` found").

use crate::estimate::arch::{Architecture, MixtureOfExperts};
use crate::estimate::lora_targets::{LoraModule, LoraTargets};

/// Whether PEFT converts `a`'s names to its experts' parameters: Mixtral and Qwen3-MoE, the
/// mixtures of experts without a shared expert (Qwen1.5-MoE has one).
pub(crate) fn converted(a: &Architecture) -> bool {
    matches!(&a.mlp, crate::estimate::arch::Mlp::Moe(m) if m.shared.is_none())
}

/// Mixtral: no shared expert, no QK-norm (its expert names are `w1`, `w3`, `w2`).
fn mixtral(a: &Architecture) -> bool {
    converted(a) && a.attention.qk_norm.is_none()
}

const ATTENTION: [LoraModule; 4] = [
    LoraModule::QProj,
    LoraModule::KProj,
    LoraModule::VProj,
    LoraModule::OProj,
];

/// What `all-linear` adapts in one block of `a`, in block order.
pub(crate) fn all_linear(a: &Architecture) -> Vec<LoraModule> {
    let mut out = ATTENTION.to_vec();
    if converted(a) {
        out.extend([
            LoraModule::Router,
            LoraModule::ExpertsGateUp,
            LoraModule::ExpertsDown,
        ]);
    } else {
        out.extend([
            LoraModule::GateProj,
            LoraModule::UpProj,
            LoraModule::DownProj,
            LoraModule::SharedExpertGate,
        ]);
    }
    out
}

/// What PEFT 0.21.2 raises for a `LoraConfig` without `target_modules` on `a`, where that
/// differs from the dense families' words (`None` for a dense model): the converted mixtures of
/// experts end with no targets at all (`NoMatchingPeftModuleError`), Qwen1.5-MoE has no
/// mapping (`ValueError`).
pub(crate) fn peft_default_error(a: &Architecture) -> Option<&'static str> {
    match &a.mlp {
        crate::estimate::arch::Mlp::Moe(_) if converted(a) => {
            Some("No `target_modules` passed but also no `target_parameters` found")
        }
        crate::estimate::arch::Mlp::Moe(_) => {
            Some("Please specify `target_modules` or `target_parameters`in `peft_config`")
        }
        crate::estimate::arch::Mlp::Dense(_) => None,
    }
}

/// The attention's four projections, for a mixture of experts (`None` for other families): the
/// fewest targets the what-ifs offer where PEFT has no default.
pub(crate) fn attention_only(a: &Architecture) -> Option<LoraTargets> {
    matches!(a.mlp, crate::estimate::arch::Mlp::Moe(_)).then(|| LoraTargets::of(&ATTENTION))
}

/// The names a scenario may give for `a`'s blocks.
pub(crate) fn names(a: &Architecture) -> Vec<LoraModule> {
    let mut out = ATTENTION.to_vec();
    if mixtral(a) {
        out.extend([
            LoraModule::Router,
            LoraModule::W1,
            LoraModule::W3,
            LoraModule::W2,
        ]);
    } else if converted(a) {
        out.extend([
            LoraModule::Router,
            LoraModule::GateProj,
            LoraModule::UpProj,
            LoraModule::DownProj,
        ]);
    } else {
        out.extend(all_linear(a).into_iter().skip(ATTENTION.len()));
    }
    out
}

/// The modules `t` (named, not `all-linear`) adapts in `a`'s blocks, in block order; the error
/// says what PEFT says.
pub(crate) fn resolve(t: LoraTargets, a: &Architecture) -> Result<Vec<LoraModule>, String> {
    let has = names(a);
    let named: Vec<LoraModule> = t.named().collect();
    let missing: Vec<&str> = named
        .iter()
        .filter(|m| !has.contains(m))
        .map(|m| m.as_str())
        .collect();
    if !missing.is_empty() {
        let router = if converted(a) {
            ""
        } else {
            " (its router `gate` is a TopKRouter, which PEFT refuses for qwen2_moe)"
        };
        let list: Vec<&str> = has.iter().map(|m| m.as_str()).collect();
        return Err(format!(
            "{} {} no target of {}'s blocks in PEFT 0.21.2 with transformers 5.24{router}; they have {} (or all-linear)",
            missing.join(", "),
            if missing.len() == 1 { "is" } else { "are" },
            a.name,
            list.join(", ")
        ));
    }
    if !converted(a) {
        return Ok(all_linear(a)
            .into_iter()
            .filter(|m| named.contains(m))
            .collect());
    }
    let (gate, up, down) = if mixtral(a) {
        (LoraModule::W1, LoraModule::W3, LoraModule::W2)
    } else {
        (
            LoraModule::GateProj,
            LoraModule::UpProj,
            LoraModule::DownProj,
        )
    };
    if named.contains(&gate) != named.contains(&up) {
        let (present, absent) = if named.contains(&gate) {
            (gate, up)
        } else {
            (up, gate)
        };
        return Err(format!(
            "PEFT cannot adapt {} of {} without {}: transformers 5.24 fuses them into the experts' \
             gate_up_proj (\"Cannot convert PEFT target(s) ... because they are fused into gate_up_proj\"); name both",
            present.as_str(),
            a.name,
            absent.as_str()
        ));
    }
    let mut out: Vec<LoraModule> = ATTENTION
        .into_iter()
        .filter(|m| named.contains(m))
        .collect();
    for (on, module) in [
        (named.contains(&LoraModule::Router), LoraModule::Router),
        (named.contains(&gate), LoraModule::ExpertsGateUp),
        (named.contains(&down), LoraModule::ExpertsDown),
    ] {
        if on {
            out.push(module);
        }
    }
    Ok(out)
}

/// `(in, out)` of module `m` of `a`'s blocks such that its adapters hold `r·in` and `out·r`
/// elements: the experts' `ParamWrapper` stacks `E` adapters (`A` `(r·E, in)`, `B`
/// `(out, r·E)`), at rank `2r` for `gate_up_proj`; the router's `(E, h)` weight is adapted as a
/// Linear `h → E`; Qwen2-MoE's `gate_proj`, `up_proj`, `down_proj` are its shared expert's.
pub(crate) fn features(m: LoraModule, a: &Architecture, moe: &MixtureOfExperts) -> (u64, u64) {
    let (h, e, i) = (a.hidden, moe.experts, moe.expert.intermediate);
    let stacked = |rank: u64, input: u64, output: u64| {
        (
            rank.saturating_mul(e).saturating_mul(input),
            rank.saturating_mul(e).saturating_mul(output),
        )
    };
    match m {
        LoraModule::Router => (h, e),
        LoraModule::SharedExpertGate => (h, 1),
        LoraModule::ExpertsGateUp => stacked(2, h, i.saturating_mul(2)),
        LoraModule::ExpertsDown => stacked(1, i, h),
        _ => m.dense_features(a, moe.shared.map_or(i, |f| f.intermediate)),
    }
}

/// Whether `modules` has a `ParamWrapper` (the router's or the experts' parameters).
pub(crate) fn wraps_parameters(modules: &[LoraModule]) -> bool {
    modules.iter().any(|m| {
        matches!(
            m,
            LoraModule::Router | LoraModule::ExpertsGateUp | LoraModule::ExpertsDown
        )
    })
}
