//! The key `weights_dtype` of a Hugging Face model: what `from_pretrained` loads the weights in,
//! one rule for training and `generate`.
//!
//! transformers 5.24's `from_pretrained` defaults to `dtype="auto"` (`modeling_utils.py`): the
//! config's `dtype` (a `config.json`'s `dtype`, or `torch_dtype` as configs written before
//! transformers 5 name it), else the dtype of the checkpoint's first floating-point weight. So
//! `weights_dtype` left out (or `auto`) is the model's own: the catalog entry's `torch_dtype` (or,
//! for a config without one, the checkpoint's dtype the entry records), or the given
//! `config.json`'s `dtype`/`torch_dtype`; a note says which, and when neither says, what was
//! assumed (float32). `pure_bf16 = True` is a synonym of `weights_dtype = bfloat16` for these
//! models (a contradiction between the two is refused at its line). In the generate phase
//! `dtype` has always named the weights' dtype (no autocast): it follows `weights_dtype`, and a
//! `dtype` given there (with no `weights_dtype`) is the weights' dtype.

use super::Model;
use crate::diagnostics::Diagnostic;
use crate::estimate::{Dtype, Literal, Phase, Scenario, WeightsDtype};
use crate::scenario::keys::Families;
use crate::scenario::pyconfig::Session;

/// Where a model's weights dtype comes from when `weights_dtype` is `auto`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct LoadDtype {
    /// The dtype `dtype="auto"` loads.
    pub(crate) dtype: Dtype,
    /// Why, as a note says it: "config.json's torch_dtype".
    pub(crate) why: String,
}

/// A refusal: the key whose line it is at, and the message.
pub(crate) type Refusal = (&'static str, String);

/// The weights' dtype of a run of `model` described by `s` (`given` says which keys an input
/// set), and the note saying how `auto` was resolved (none when a key gave it).
pub(crate) fn resolve(
    model: &Model,
    s: &Scenario,
    given: &dyn Fn(&str) -> bool,
) -> Result<Option<(Dtype, Option<String>)>, Refusal> {
    if !Families::HF.contains(model.architecture.family) {
        return Ok(None);
    }
    let explicit = s.weights_dtype.dtype().filter(|_| given("weights_dtype"));
    let pure = given("pure_bf16") && s.pure_bf16;
    if let (true, Some(w)) = (pure, explicit.filter(|w| *w != Dtype::Bfloat16)) {
        return Err((
            "pure_bf16",
            format!(
                "`pure_bf16` = True loads a Hugging Face model's weights in bfloat16, and \
                 `weights_dtype` = {} says otherwise",
                w.as_str()
            ),
        ));
    }
    let generate = s.phase == Phase::Generate;
    let set = explicit.or(pure.then_some(Dtype::Bfloat16));
    if let (true, true, Some(w)) = (generate, given("dtype"), set) {
        if w != s.dtype {
            return Err((
                "weights_dtype",
                format!(
                    "with phase = generate, `dtype` is the weights' dtype, and `dtype` = {} \
                     contradicts `weights_dtype` = {}",
                    s.dtype.as_str(),
                    w.as_str()
                ),
            ));
        }
    }
    if let Some(w) = set {
        return Ok(Some((w, None)));
    }
    if generate && given("dtype") {
        return Ok(Some((s.dtype, None)));
    }
    let name = &model.architecture.name;
    Ok(Some(match &model.loaded {
        Some(l) => (
            l.dtype,
            Some(format!(
                "model = {name}: weights in {}, {}, as from_pretrained's dtype=\"auto\" loads \
                 them{} (--weights_dtype=float32, bfloat16 or float16 to load them otherwise)",
                l.dtype.as_str(),
                l.why,
                trained_as(s, l.dtype)
            )),
        ),
        None => (
            Dtype::Float32,
            Some(format!(
                "model = {name}: {}, which vramdoc does not read: weights assumed float32{} \
                 (--weights_dtype=bfloat16 or float16 if they are 16-bit)",
                if model.info.id.is_some() {
                    "vramdoc's catalog records no torch_dtype for it, and from_pretrained's \
                     dtype=\"auto\" loads its config.json's, or without one the checkpoint's"
                } else {
                    "its config.json names no dtype (torch_dtype), so from_pretrained's \
                     dtype=\"auto\" loads the checkpoint's"
                },
                trained_as(s, Dtype::Float32)
            )),
        ),
    }))
}

/// How a training step holds weights of `dtype`, for the note.
fn trained_as(s: &Scenario, dtype: Dtype) -> &'static str {
    if s.phase == Phase::Generate {
        ""
    } else if s.load_in_4bit {
        ", then prepare_model_for_kbit_training upcasts every weight it does not quantize to \
         float32"
    } else if dtype != Dtype::Float32 && s.lora_rank > 0 {
        " and frozen, PEFT's adapters beside them in float32 (autocast_adapter_dtype), with their \
         gradients and AdamW's moments"
    } else if dtype != Dtype::Float32 {
        " and Trainer trains them as they are, gradients and AdamW's moments in the same dtype"
    } else {
        ""
    }
}

/// Sets the resolved dtype on `s`: `weights_dtype`, and in the generate phase `dtype` where no
/// input set it.
pub(crate) fn apply(s: &mut Scenario, dtype: Dtype, given: &dyn Fn(&str) -> bool) {
    s.weights_dtype = WeightsDtype::of(dtype);
    if s.phase == Phase::Generate && !given("dtype") {
        s.dtype = dtype;
    }
}

/// [`resolve`] and [`apply`] for the command line: the defaults recorded in the session, the
/// refusal at its key's line.
pub(super) fn settle(
    session: &mut Session<'_>,
    scenario: &mut Scenario,
    model: &Model,
) -> Result<Option<String>, Diagnostic> {
    let origins = session.origins.clone();
    let given = |k: &str| origins.contains_key(k);
    let resolved = resolve(model, scenario, &given).map_err(|(key, msg)| {
        let at = origins.get(key).or_else(|| origins.get("weights_dtype"));
        match at {
            Some(o) => o.error(&msg),
            None => Diagnostic::error(msg),
        }
        .with_help("give weights_dtype alone (auto, float32, bfloat16 or float16)")
    })?;
    let Some((dtype, note)) = resolved else {
        return Ok(None);
    };
    apply(scenario, dtype, &given);
    session.set_default(
        "weights_dtype",
        &Literal::Str(WeightsDtype::of(dtype).as_str().to_owned()),
    );
    if scenario.phase == Phase::Generate && !given("dtype") {
        session.set_default("dtype", &Literal::Str(dtype.as_str().to_owned()));
    }
    Ok(note)
}

/// What `dtype="auto"` loads for the catalog `entry` named `value`: the config's `torch_dtype`
/// (`torch_dtype`, with its key), or the alias's where the entry records it as differing, or
/// for a config that names none the dtype of the checkpoint's first floating-point tensor.
pub(super) fn loaded(
    torch_dtype: Option<(Dtype, &'static str)>,
    entry: &super::catalog::ModelEntry,
    value: &str,
) -> Option<LoadDtype> {
    if let Some(dtype) = entry.alias_dtype(value) {
        let alias = value.trim().trim_end_matches('/');
        return Some(LoadDtype {
            dtype,
            why: format!("{alias}'s config.json's torch_dtype"),
        });
    }
    let repo = &entry.source.repo;
    match (torch_dtype, entry.checkpoint_dtype) {
        (Some((dtype, key)), _) => Some(LoadDtype {
            dtype,
            why: format!("{repo}'s config.json's {key}"),
        }),
        (None, Some(dtype)) => Some(LoadDtype {
            dtype,
            why: format!(
                "the dtype of {repo}'s checkpoint tensors (its config.json names no dtype)"
            ),
        }),
        (None, None) => None,
    }
}
