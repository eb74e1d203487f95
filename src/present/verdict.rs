//! The verdict in words, one function per form it takes: its name (`verdict-fits`, …: the same
//! word in the CLI, the tables, the charts, the short answer and `{{ x.fits }}`), a table cell
//! (the name, with the total's range when only part of it fits), the CLI's sentence, and the
//! note under a guide's table or chart (the rule of the four verdicts and the free memory).

use fluent_bundle::FluentValue;

use super::html::escape_text;
use crate::estimate::{Dtype, Estimate, GpuRef, Verdict};
use crate::i18n::Localizer;

/// Every message key this module builds (each must exist in every locale; the verdict's wording
/// is written nowhere else, `words_of_the_verdict_live_here_only` checks it).
pub(crate) const MESSAGE_KEYS: [&str; 16] = [
    "verdict-fits",
    "verdict-tight",
    "verdict-unlikely",
    "verdict-no-fit",
    "verdict-label",
    "verdict-rule",
    "verdict-free-all",
    "verdict-free-others",
    "est-verdict-with-range",
    "est-verdict-fits",
    "est-verdict-tight",
    "est-verdict-unlikely",
    "est-verdict-no-fit",
    "est-verdict-none",
    "est-verdict-others",
    "est-warn-no-bf16",
];

/// The rule of the four verdicts, said under every table, chart and report that gives one.
pub(crate) fn verdict_rule(loc: &Localizer) -> String {
    loc.t("verdict-rule")
}

/// The label of a verdict column or row ("Verdict").
pub(crate) fn verdict_label(loc: &Localizer) -> String {
    loc.t("verdict-label")
}

/// The message key of a verdict's name: one word (or phrase) per state.
pub(crate) fn verdict_key(v: Verdict) -> &'static str {
    match v {
        Verdict::Fits => "verdict-fits",
        Verdict::Tight => "verdict-tight",
        Verdict::Unlikely => "verdict-unlikely",
        Verdict::DoesNotFit => "verdict-no-fit",
    }
}

/// A verdict's name in `loc`'s language.
pub(crate) fn verdict_name(v: Verdict, loc: &Localizer) -> String {
    loc.t(verdict_key(v))
}

/// The two-state verdict of a `fits` flag: "fits" or "does not fit".
pub(crate) fn verdict_of_fits(fits: bool) -> Verdict {
    if fits {
        Verdict::Fits
    } else {
        Verdict::DoesNotFit
    }
}

/// A verdict as a table cell: its name, with the total's low–high range when only part of it
/// fits (`est-verdict-with-range`); "—" when there is none.
pub(crate) fn verdict_word(v: Option<Verdict>, low: u64, high: u64, loc: &Localizer) -> String {
    let Some(v) = v else {
        return "—".to_owned();
    };
    let word = verdict_name(v, loc);
    match v {
        Verdict::Tight | Verdict::Unlikely => loc.t_args(
            "est-verdict-with-range",
            &[
                ("verdict", FluentValue::from(word)),
                ("range", FluentValue::from(loc.byte_range(low, high))),
            ],
        ),
        Verdict::Fits | Verdict::DoesNotFit => word,
    }
}

/// The four-state verdict as a sentence: the range, what other programs hold, the margin.
pub(crate) fn estimate_verdict(e: &Estimate, loc: &Localizer) -> String {
    let b = &e.bytes;
    let range = (b.total_low, b.total_high, b.other_processes);
    let sentence = verdict_sentence(e.gpu.as_ref(), e.verdict, range, e.scenario.dtype, loc);
    match (e.verdict, e.compiled_peak_low) {
        (Some(_), Some(low)) => format!(
            "{sentence}{}{}",
            sentence_gap(loc),
            loc.t_args(
                "est-verdict-compiled",
                &[
                    ("low", FluentValue::from(loc.bytes(low))),
                    ("peak", FluentValue::from(loc.bytes(e.bytes.train_peak))),
                ],
            )
        ),
        (Some(v), None) if v != Verdict::Fits && e.eager_upper_bound => {
            format!(
                "{sentence}{}{}",
                sentence_gap(loc),
                loc.t("est-verdict-eager-bound")
            )
        }
        _ => sentence,
    }
}

/// What separates two sentences: Chinese runs them together, the other languages use a space.
fn sentence_gap(loc: &Localizer) -> &'static str {
    if loc.lang().starts_with("zh") {
        ""
    } else {
        " "
    }
}

/// [`verdict_sentence`], then (with a GPU) the rule of the four verdicts on the next line: how
/// the sampling and generate reports end their memory table.
pub(crate) fn verdict_with_rule(
    gpu: Option<&GpuRef>,
    state: Option<Verdict>,
    range: (u64, u64, u64),
    dtype: Dtype,
    loc: &Localizer,
) -> String {
    let sentence = verdict_sentence(gpu, state, range, dtype, loc);
    match gpu {
        Some(_) => format!("{sentence}\n{}", verdict_rule(loc)),
        None => sentence,
    }
}

/// The verdict sentence of any estimate on `gpu`: `range` is (total at the low end, total at
/// the high end, memory of other programs).
pub(crate) fn verdict_sentence(
    gpu: Option<&GpuRef>,
    state: Option<Verdict>,
    range: (u64, u64, u64),
    dtype: Dtype,
    loc: &Localizer,
) -> String {
    let (Some(gpu), Some(state)) = (gpu, state) else {
        return loc.t("est-verdict-none");
    };
    let (total_low, total_high, other_processes) = range;
    let cap = i128::from(gpu.capacity_bytes) - i128::from(other_processes);
    let amount = |x: i128| FluentValue::from(loc.bytes(x.unsigned_abs() as u64));
    let name = FluentValue::from(gpu.name.clone());
    let args = [
        ("gpu", name.clone()),
        ("capacity", FluentValue::from(loc.bytes(gpu.capacity_bytes))),
        (
            "range",
            FluentValue::from(loc.byte_range(total_low, total_high)),
        ),
        ("spare", amount(cap - i128::from(total_high))),
        ("missing", amount(i128::from(total_low) - cap)),
    ];
    let mut text = loc.t_args(
        match state {
            Verdict::Fits => "est-verdict-fits",
            Verdict::Tight => "est-verdict-tight",
            Verdict::Unlikely => "est-verdict-unlikely",
            Verdict::DoesNotFit => "est-verdict-no-fit",
        },
        &args,
    );
    let sep = sentence_gap(loc);
    if other_processes > 0 {
        text += sep;
        text += &loc.t_args(
            "est-verdict-others",
            &[("other", FluentValue::from(loc.bytes(other_processes)))],
        );
    }
    if !gpu.bf16 && dtype == Dtype::Bfloat16 {
        text += sep;
        text += &loc.t_args("est-warn-no-bf16", &[("gpu", name)]);
    }
    text
}

/// The paragraph under a table or chart with verdicts: the rule of the four verdicts and the
/// free memory they were judged against (the capacity less what other programs hold).
pub(crate) fn verdict_note(est: &Estimate, loc: &Localizer) -> String {
    let Some(gpu) = &est.gpu else {
        return String::new();
    };
    let other = est.bytes.other_processes;
    let gpu_name = FluentValue::from(escape_text(&gpu.name));
    let size = FluentValue::from(loc.bytes(gpu.capacity_bytes));
    let free = if other > 0 {
        loc.t_args(
            "verdict-free-others",
            &[
                ("gpu", gpu_name),
                ("size", size),
                ("other", FluentValue::from(loc.bytes(other))),
                (
                    "free",
                    FluentValue::from(loc.bytes(gpu.capacity_bytes.saturating_sub(other))),
                ),
            ],
        )
    } else {
        loc.t_args("verdict-free-all", &[("gpu", gpu_name), ("size", size)])
    };
    let sep = if loc.lang().starts_with("zh") {
        ""
    } else {
        " "
    };
    format!("{}{sep}{free}\n", verdict_rule(loc))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every `.rs` file under `dir`.
    fn sources(dir: &std::path::Path, out: &mut Vec<std::path::PathBuf>) {
        for entry in std::fs::read_dir(dir).expect("read src").flatten() {
            let path = entry.path();
            if path.is_dir() {
                sources(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                out.push(path);
            }
        }
    }

    #[test]
    fn words_of_the_verdict_live_here_only() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let mut files = Vec::new();
        sources(&root.join("src"), &mut files);
        let this = root.join("src/present/verdict.rs");
        let mut found = Vec::new();
        for file in files.iter().filter(|f| **f != this) {
            let text = std::fs::read_to_string(file).expect("read a source file");
            for key in MESSAGE_KEYS {
                if text.contains(&format!("\"{key}\"")) {
                    found.push(format!("{} names {key}", file.display()));
                }
            }
        }
        assert!(files.len() > 50, "the sources were not found");
        assert!(
            found.is_empty(),
            "verdict wording outside present/verdict.rs: {found:#?}"
        );
    }

    #[test]
    fn a_fits_flag_reads_as_the_two_state_verdict() {
        assert_eq!(verdict_of_fits(true), Verdict::Fits);
        assert_eq!(verdict_of_fits(false), Verdict::DoesNotFit);
    }
}
