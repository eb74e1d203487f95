//! The report of a sampling run (nanoGPT's `sample.py`): the model, what is generated, where the
//! bytes go at the peak, the total, the verdict and the options (`generate_options.rs`), as a
//! table, Markdown or JSON.

use fluent_bundle::FluentValue;

use super::generate_options;
use super::table::{aligned, markdown_table, Align};
use super::verdict::verdict_with_rule;
use crate::estimate::{GenerateWhatIf, InitFrom, SampleEstimate, SampleMoment};
use crate::i18n::Localizer;

/// sample.py's settings this report uses; the others it reads (`temperature`, `seed`) do not
/// change memory.
const USED: &[&str] = &["start", "num_samples", "max_new_tokens", "top_k", "out_dir"];

/// The note on the options sample.py's model does not compute (a smaller `block_size` crop).
const NOT_COMPUTED: &str = "sample-options-not-computed";

/// The settings the inputs gave that do not change a sampling run's memory.
pub(crate) fn ignored(e: &SampleEstimate, ignored: &[String]) -> Vec<String> {
    ignored
        .iter()
        .filter(|k| !USED.contains(&k.as_str()) || (k.as_str() == "out_dir" && !is_resume(e)))
        .cloned()
        .collect()
}

fn is_resume(e: &SampleEstimate) -> bool {
    e.scenario.init_from == InitFrom::Resume
}

fn arg(name: &'static str, v: String) -> (&'static str, FluentValue<'static>) {
    (name, FluentValue::from(v))
}

/// The model and the generation, as label/value rows.
fn setting_rows(e: &SampleEstimate, loc: &Localizer) -> Vec<(String, String)> {
    let s = &e.scenario;
    let r = &e.sampling;
    vec![
        (
            loc.t("sample-model"),
            loc.t_args(
                "sample-model-value",
                &[
                    arg("init_from", s.init_from.as_str().to_owned()),
                    // Config values, written as in a config: never digit-grouped.
                    arg("layers", s.n_layer.to_string()),
                    arg("heads", s.n_head.to_string()),
                    arg("width", s.n_embd.to_string()),
                    arg("vocab", s.vocab_size.to_string()),
                    arg("block", s.block_size.to_string()),
                    arg("params", loc.count(e.params.total)),
                ],
            ),
        ),
        (
            loc.t("sample-precision"),
            format!(
                "dtype={} flash={} compile={}",
                s.dtype.as_str(),
                py_bool(s.flash),
                py_bool(s.compile)
            ),
        ),
        (
            loc.t("sample-generation"),
            loc.t_args(
                "sample-generation-value",
                &[
                    arg("prompt", loc.int(r.prompt_tokens)),
                    ("prompt_count", FluentValue::from(r.prompt_tokens as f64)),
                    arg("new", loc.int(r.max_new_tokens)),
                    arg("samples", loc.int(r.num_samples)),
                    arg(
                        "top_k",
                        r.top_k.map_or_else(|| "None".to_owned(), |k| loc.int(k)),
                    ),
                    arg("context", loc.int(e.context_tokens)),
                ],
            ),
        ),
    ]
}

fn py_bool(b: bool) -> &'static str {
    if b {
        "True"
    } else {
        "False"
    }
}

/// The memory at the peak, component by component, then the totals.
fn breakdown_rows(e: &SampleEstimate, loc: &Localizer) -> Vec<(String, String)> {
    let b = &e.bytes;
    let mut rows = vec![(loc.t("sample-weights"), loc.bytes(b.weights))];
    if is_resume(e) {
        rows.push((loc.t("sample-checkpoint"), loc.bytes(b.checkpoint)));
    }
    if b.autocast_weights > 0 {
        rows.push((loc.t("est-autocast"), loc.bytes(b.autocast_weights)));
    }
    let activations = loc.t_args(
        "sample-activations",
        &[arg("context", loc.int(e.context_tokens))],
    );
    rows.extend([
        (activations, loc.bytes(b.activations)),
        (loc.t("sample-logits"), loc.bytes(b.sampling)),
        (loc.t("sample-ids"), loc.bytes(b.token_ids)),
        (loc.t("sample-kv-cache"), loc.bytes(b.kv_cache)),
    ]);
    rows.extend(peak_and_totals(
        [
            b.peak,
            b.overhead,
            b.other_processes,
            b.total,
            b.total_low,
            b.total_high,
        ],
        loc,
    ));
    rows
}

/// The rows under a generation breakdown's rule: the peak allocated by PyTorch, the overhead,
/// what other processes hold (when any), the total and its range. `bytes` is `[peak, overhead,
/// other_processes, total, total_low, total_high]`.
pub(super) fn peak_and_totals(bytes: [u64; 6], loc: &Localizer) -> Vec<(String, String)> {
    let [peak, overhead, other, total, low, high] = bytes;
    let mut rows = vec![
        (String::new(), String::new()),
        (loc.t("sample-peak"), loc.bytes(peak)),
        (loc.t("est-overhead"), loc.bytes(overhead)),
    ];
    if other > 0 {
        rows.push((loc.t("est-other-processes"), loc.bytes(other)));
    }
    rows.extend([
        (loc.t("est-total"), loc.bytes(total)),
        (loc.t("est-total-range"), loc.byte_range(low, high)),
    ]);
    rows
}

fn heading_memory(e: &SampleEstimate, loc: &Localizer) -> String {
    let moment = match e.peak_moment {
        SampleMoment::Forward => loc.t("sample-moment-forward"),
        SampleMoment::NextToken => loc.t("sample-moment-next-token"),
    };
    loc.t_args("sample-heading-memory", &[arg("moment", moment)])
}

/// The verdict sentence, then (with a GPU) the rule of the four verdicts.
fn verdict(e: &SampleEstimate, loc: &Localizer) -> String {
    let b = &e.bytes;
    let range = (b.total_low, b.total_high, b.other_processes);
    verdict_with_rule(e.gpu.as_ref(), e.verdict, range, e.scenario.dtype, loc)
}

/// What the run could change: for a resumed checkpoint, the copy sample.py keeps.
fn advice(e: &SampleEstimate, loc: &Localizer) -> Vec<String> {
    let mut lines = Vec::new();
    if is_resume(e) && e.bytes.checkpoint > 0 {
        lines.push(loc.t_args(
            "sample-advice-checkpoint",
            &[arg("bytes", loc.bytes(e.bytes.checkpoint))],
        ));
    }
    if e.bytes.autocast_weights > 0 {
        lines.push(loc.t_args(
            "sample-advice-autocast",
            &[arg("bytes", loc.bytes(e.bytes.autocast_weights))],
        ));
    }
    lines
}

/// A readable terminal report.
pub(crate) fn table(
    e: &SampleEstimate,
    options: &[GenerateWhatIf],
    loc: &Localizer,
    ignored: &[String],
) -> String {
    let mut out = format!("{}\n\n", loc.t("sample-title"));
    out += &aligned(&setting_rows(e, loc), false);
    out += &format!("\n{}\n", heading_memory(e, loc));
    out += &aligned(&breakdown_rows(e, loc), true);
    out += &format!("\n{}\n", verdict(e, loc));
    let advice = advice(e, loc);
    if !advice.is_empty() {
        out += &format!("\n{}\n", loc.t("sample-heading-advice"));
        for line in advice {
            out += &format!("  - {line}\n");
        }
    }
    out += &generate_options::section(options, NOT_COMPUTED, loc, false);
    if !ignored.is_empty() {
        let keys = FluentValue::from(ignored.join(", "));
        out += &format!("\n{}\n", loc.t_args("est-ignored", &[("keys", keys)]));
    }
    out + &format!("\n{}\n", loc.t("sample-note"))
}

/// The same content as Markdown.
pub(crate) fn markdown(e: &SampleEstimate, options: &[GenerateWhatIf], loc: &Localizer) -> String {
    let mut out = format!("## {}\n\n", loc.t("sample-title"));
    for (label, value) in setting_rows(e, loc) {
        out += &format!("- **{label}:** {value}\n");
    }
    out += &format!("\n### {}\n\n", heading_memory(e, loc));
    let rows: Vec<Vec<String>> = breakdown_rows(e, loc)
        .into_iter()
        .filter(|(label, _)| !label.is_empty())
        .map(|(label, value)| vec![label, value])
        .collect();
    let header = [loc.t("est-col-component"), loc.t("est-col-memory")];
    out += &markdown_table(&header, &[Align::Default, Align::Right], &rows);
    out += &format!("\n{}\n", verdict(e, loc));
    let advice = advice(e, loc);
    if !advice.is_empty() {
        out += &format!("\n### {}\n\n", loc.t("sample-heading-advice"));
        for line in advice {
            out += &format!("- {line}\n");
        }
    }
    out += &generate_options::section(options, NOT_COMPUTED, loc, true);
    out + &format!("\n_{}_\n", loc.t("sample-note"))
}
