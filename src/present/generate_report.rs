//! The report of Hugging Face `generate` on a model (`phase = generate` with `model`): the model,
//! the call, the cache and the two peaks, the total, the verdict and the options
//! (`generate_options.rs`), as a table or Markdown.

use fluent_bundle::FluentValue;

use super::generate_options;
use super::sample_report::peak_and_totals;
use super::table::{aligned, markdown_table, Align};
use super::verdict::verdict_with_rule;
use crate::estimate::{GenerateEstimate, GenerateMoment, GenerateWhatIf};
use crate::i18n::Localizer;

fn arg(name: &'static str, v: String) -> (&'static str, FluentValue<'static>) {
    (name, FluentValue::from(v))
}

/// The model and the call, as label/value rows.
fn setting_rows(e: &GenerateEstimate, loc: &Localizer) -> Vec<(String, String)> {
    let g = &e.generation;
    let mut rows = vec![
        (
            loc.t("gen-model"),
            loc.t_args(
                if matches!(e.architecture.mlp, crate::estimate::arch::Mlp::Moe(_)) {
                    "gen-model-value-moe"
                } else {
                    "gen-model-value"
                },
                &[
                    arg("name", e.architecture.name.to_string()),
                    arg("params", loc.count(e.params.total)),
                    arg("active", loc.count(e.architecture.active_parameter_count())),
                    arg("dtype", e.dtype.as_str().to_owned()),
                ],
            ),
        ),
        (
            loc.t("gen-call"),
            if e.architecture.family == crate::estimate::Family::Nanochat {
                loc.t_args(
                    "gen-call-value-nanochat",
                    &[
                        arg("batch", loc.int(g.batch_size)),
                        ("batch_count", FluentValue::from(g.batch_size as f64)),
                        arg("prompt", loc.int(g.prompt_tokens)),
                        arg("new", loc.int(g.max_new_tokens)),
                        arg("context", loc.int(e.context_tokens)),
                    ],
                )
            } else {
                call_value(g, loc)
            },
        ),
    ];
    if g.num_beams > 1 {
        // `_beam_search` keeps `max(2, 1 + eos tokens) · num_beams` candidates; none ends early.
        let value = loc.t_args(
            "gen-beams-value",
            &[
                arg("beams", loc.int(g.num_beams)),
                arg("candidates", loc.int(g.num_beams.saturating_mul(2))),
            ],
        );
        rows.push((loc.t("gen-beams"), value));
    }
    if let Some(q) = e.weights_quantization {
        let moe = matches!(e.architecture.mlp, crate::estimate::arch::Mlp::Moe(_));
        let key = match (q, moe) {
            ("int8", false) => "gen-quant-int8",
            ("int8", true) => "gen-quant-int8-moe",
            (_, false) => "gen-quant-4bit",
            (_, true) => "gen-quant-4bit-moe",
        };
        let value = loc.t_args(
            key,
            &[
                arg("format", q.to_uppercase()),
                arg("dtype", e.dtype.as_str().to_owned()),
            ],
        );
        rows.insert(1, (loc.t("gen-quant"), value));
    }
    rows
}

/// Hugging Face `generate`'s call: prompts, new tokens, sequences, the cache.
fn call_value(g: &crate::estimate::Generation, loc: &Localizer) -> String {
    loc.t_args(
        "gen-call-value",
        &[
            arg("batch", loc.int(g.batch_size)),
            arg("prompt", loc.int(g.prompt_tokens)),
            arg("new", loc.int(g.max_new_tokens)),
            arg("sequences", loc.int(g.num_return_sequences)),
            (
                "sequences_count",
                FluentValue::from(g.num_return_sequences as f64),
            ),
            arg("cache", g.cache.as_str().to_owned()),
        ],
    )
}

/// Weights, the cache, the two peaks, then the totals.
fn breakdown_rows(e: &GenerateEstimate, loc: &Localizer) -> Vec<(String, String)> {
    let b = &e.bytes;
    let mut rows = vec![
        (loc.t("gen-weights"), loc.bytes(b.weights)),
        (loc.t("gen-kv-cache"), loc.bytes(b.kv_cache)),
    ];
    if let Some(load) = b.load_peak {
        rows.push((loc.t("gen-load-peak"), loc.bytes(load)));
    }
    rows.extend([
        (loc.t("gen-prefill-peak"), loc.bytes(b.prefill_peak)),
        (loc.t("gen-decode-peak"), loc.bytes(b.decode_peak)),
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

/// The title's, the closing note's and the options' not-computed line's keys: Hugging Face
/// `generate`, or nanochat's `Engine`.
fn words(e: &GenerateEstimate) -> [&'static str; 3] {
    if e.architecture.family == crate::estimate::Family::Nanochat {
        [
            "gen-title-nanochat",
            "gen-note-nanochat",
            "gen-options-not-computed-nanochat",
        ]
    } else if e.generation.num_beams > 1 {
        ["gen-title", "gen-note", "gen-options-not-computed-beams"]
    } else {
        ["gen-title", "gen-note", "gen-options-not-computed"]
    }
}

fn heading_memory(e: &GenerateEstimate, loc: &Localizer) -> String {
    let moment = match e.peak_moment {
        GenerateMoment::Prefill => loc.t("gen-moment-prefill"),
        GenerateMoment::Decode => loc.t("gen-moment-decode"),
        GenerateMoment::Load => loc.t("gen-moment-load"),
    };
    loc.t_args("sample-heading-memory", &[arg("moment", moment)])
}

fn verdict(e: &GenerateEstimate, loc: &Localizer) -> String {
    let b = &e.bytes;
    let range = (b.total_low, b.total_high, b.other_processes);
    verdict_with_rule(e.gpu.as_ref(), e.verdict, range, e.dtype, loc)
}

/// The sentence for a context past the model's positions, if it is.
fn beyond_positions(e: &GenerateEstimate, loc: &Localizer) -> String {
    let Some(p) = e.beyond_position_limit else {
        return String::new();
    };
    let text = loc.t_args(
        "gen-beyond-positions",
        &[
            arg("tokens", loc.count(e.context_tokens)),
            arg("positions", loc.int(p.positions)),
            arg("source", loc.t(super::solve_report::source_key(p.source))),
        ],
    );
    format!("\n{text}\n")
}

/// A readable terminal report, its options last.
pub(crate) fn table(e: &GenerateEstimate, options: &[GenerateWhatIf], loc: &Localizer) -> String {
    let mut out = format!("{}\n\n", loc.t(words(e)[0]));
    out += &aligned(&setting_rows(e, loc), false);
    out += &format!("\n{}\n", heading_memory(e, loc));
    out += &aligned(&breakdown_rows(e, loc), true);
    out += &format!("\n{}\n", verdict(e, loc));
    out += &beyond_positions(e, loc);
    out += &generate_options::section(options, words(e)[2], loc, false);
    out + &format!("\n{}\n", loc.t(words(e)[1]))
}

/// The same content as Markdown.
pub(crate) fn markdown(
    e: &GenerateEstimate,
    options: &[GenerateWhatIf],
    loc: &Localizer,
) -> String {
    let mut out = format!("## {}\n\n", loc.t(words(e)[0]));
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
    out += &beyond_positions(e, loc);
    out += &generate_options::section(options, words(e)[2], loc, true);
    out + &format!("\n{}\n", loc.t(words(e)[1]))
}
