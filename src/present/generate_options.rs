//! The options table of a generate estimate ([`crate::estimate::what_if_generate`],
//! [`crate::estimate::what_if_sampling`]): option,
//! change (as the CLI's `--key=value`), total, saving and verdict, in the same columns as the
//! training options, then a note on what is not computed.

use fluent_bundle::FluentValue;

use super::estimate_report::{option_header, OPTION_ALIGN, OPTION_NARROWING};
use super::table::{markdown_table, text_table_wrapped, TextRow};
use super::verdict::verdict_word;
use crate::estimate::{GenerateWhatIf, GenerateWhatIfKind};
use crate::i18n::Localizer;

/// The message key of an option's label.
pub(crate) fn label_key(kind: GenerateWhatIfKind) -> &'static str {
    match kind {
        GenerateWhatIfKind::StaticCache => "gen-opt-static-cache",
        GenerateWhatIfKind::DynamicCache => "gen-opt-dynamic-cache",
        GenerateWhatIfKind::Dtype => "gen-opt-dtype",
        GenerateWhatIfKind::Int8Weights => "gen-opt-int8-weights",
        GenerateWhatIfKind::Int8Cache => "gen-opt-int8-cache",
        GenerateWhatIfKind::Fp8Cache => "gen-opt-fp8-cache",
        GenerateWhatIfKind::QuantizedCache => "gen-opt-quantized-cache",
        GenerateWhatIfKind::FourBitWeights => "gen-opt-4bit-weights",
        GenerateWhatIfKind::Autocast => "gen-opt-autocast",
        GenerateWhatIfKind::FewerSequences => "gen-opt-fewer-sequences",
        GenerateWhatIfKind::SmallerBatch => "gen-opt-smaller-batch",
        GenerateWhatIfKind::MaxBatch => "gen-opt-max-batch",
        GenerateWhatIfKind::FewerBeams => "gen-opt-fewer-beams",
        GenerateWhatIfKind::NoBeams => "gen-opt-no-beams",
        GenerateWhatIfKind::FewerNewTokens => "gen-opt-fewer-new-tokens",
        GenerateWhatIfKind::MaxContext => "gen-opt-max-context",
        GenerateWhatIfKind::Combination => "gen-opt-combination",
    }
}

/// One option as cells.
fn cells(o: &GenerateWhatIf, loc: &Localizer, md: bool) -> Vec<String> {
    let label = match o.kind {
        GenerateWhatIfKind::Dtype
        | GenerateWhatIfKind::Autocast
        | GenerateWhatIfKind::FourBitWeights => loc.t_args(
            label_key(o.kind),
            &[("dtype", FluentValue::from(o.dtype.as_str()))],
        ),
        kind => loc.t(label_key(kind)),
    };
    let flags: Vec<String> = o
        .changes
        .iter()
        .map(|c| format!("--{}={}", c.key, c.value))
        .collect();
    let change = if md {
        format!("`{}`", flags.join("` `"))
    } else {
        flags.join(" ")
    };
    let saving = match o.saving_bytes {
        s if s > 0 => loc.bytes(s.unsigned_abs()),
        0 => "—".to_owned(),
        s => loc.t_args(
            "est-saving-more",
            &[("bytes", FluentValue::from(loc.bytes(s.unsigned_abs())))],
        ),
    };
    vec![
        label,
        change,
        loc.bytes(o.total),
        saving,
        verdict_word(o.verdict, o.total_low, o.total_high, loc),
    ]
}

/// The heading, the table (or the line saying there is none) and the note of what is not
/// computed (message `not_computed`), as terminal text or Markdown.
pub(crate) fn section(
    options: &[GenerateWhatIf],
    not_computed: &str,
    loc: &Localizer,
    md: bool,
) -> String {
    let heading = loc.t("gen-heading-options");
    let mut out = if md {
        format!("\n### {heading}\n\n")
    } else {
        format!("\n{heading}\n")
    };
    let rows: Vec<Vec<String>> = options.iter().map(|o| cells(o, loc, md)).collect();
    if rows.is_empty() {
        out += &format!(
            "{}{}\n",
            if md { "" } else { "  " },
            loc.t("gen-no-options")
        );
    } else if md {
        out += &markdown_table(&option_header(loc), &OPTION_ALIGN, &rows);
    } else {
        let mut text = vec![TextRow::Cells(option_header(loc))];
        text.extend(rows.into_iter().map(TextRow::Cells));
        out += &text_table_wrapped(&text, &OPTION_ALIGN, &OPTION_NARROWING);
    }
    let note = loc.t(not_computed);
    out += &if md {
        format!("\n{note}\n")
    } else {
        format!("  {note}\n")
    };
    out
}
