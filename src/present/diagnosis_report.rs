//! The table (terminal) and Markdown formats of `vramdoc diagnose`, localized.

use fluent_bundle::FluentValue;

use super::estimate_report::{options_markdown, options_text};
use super::table::{aligned, markdown_table, Align};
use super::verdict::verdict_sentence;
use crate::estimate::{Family, VariantKind};
use crate::i18n::Localizer;
use crate::oom::advice::AllocatorSetting;
use crate::oom::consistency::ConsistencyFinding;
use crate::oom::message::MessageFormat;
use crate::oom::tensors::{is_trainer_step, Candidate, LoopPhase, PhaseSource};
use crate::oom::{cards, CardMatch, Diagnosis, MESSAGE_GPU};

/// The message's numbers as (label, value) rows.
fn message_rows(d: &Diagnosis, loc: &Localizer) -> Vec<(String, String)> {
    let m = &d.message;
    if m.format == MessageFormat::Mps {
        let own = m.process.map_or(0, |p| p.bytes);
        return vec![
            (loc.t("diag-requested"), loc.bytes(m.requested.bytes)),
            (loc.t("diag-mps-allocated"), loc.bytes(m.allocated.bytes)),
            (
                loc.t("diag-mps-other"),
                loc.bytes(own.saturating_sub(m.allocated.bytes)),
            ),
            (loc.t("diag-mps-limit"), loc.bytes(m.capacity.bytes)),
        ];
    }
    let gpu = FluentValue::from(
        m.gpu_index
            .map_or_else(|| "?".to_owned(), |i| i.to_string()),
    );
    let mut rows = vec![
        (loc.t("diag-requested"), loc.bytes(m.requested.bytes)),
        (
            loc.t_args("diag-capacity", &[("gpu", gpu)]),
            loc.bytes(m.capacity.bytes),
        ),
        (
            loc.t("diag-free"),
            m.free
                .map_or_else(|| loc.t("diag-not-printed"), |f| loc.bytes(f.bytes)),
        ),
    ];
    if let Some(p) = m.process {
        rows.push((loc.t("diag-process"), loc.bytes(p.bytes)));
    }
    rows.push((loc.t("diag-allocated"), loc.bytes(m.allocated.bytes)));
    if let Some(p) = m.private_pools {
        rows.push((loc.t("diag-private-pools"), loc.bytes(p.bytes)));
    }
    rows.push((
        loc.t("diag-reserved-unallocated"),
        loc.bytes(m.reserved_unallocated.bytes),
    ));
    if m.format == MessageFormat::Pytorch1 {
        rows.push((loc.t("diag-reserved"), loc.bytes(m.reserved.bytes)));
    }
    for p in m.processes.iter().take(MAX_PROCESS_ROWS) {
        rows.push((
            loc.t_args(
                "diag-process-line",
                &[("pid", FluentValue::from(p.pid.to_string()))],
            ),
            loc.bytes(p.bytes),
        ));
    }
    if m.processes.len() > MAX_PROCESS_ROWS {
        let rest: u64 = m.processes[MAX_PROCESS_ROWS..]
            .iter()
            .map(|p| p.bytes)
            .fold(0, u64::saturating_add);
        rows.push((
            loc.t_args(
                "diag-process-more",
                &[(
                    "count",
                    FluentValue::from((m.processes.len() - MAX_PROCESS_ROWS) as u64),
                )],
            ),
            loc.bytes(rest),
        ));
    }
    match (
        d.other_processes_bytes,
        d.non_pytorch_bytes,
        d.outside_pytorch_bytes,
    ) {
        (Some(other), Some(non), _) => {
            rows.push((loc.t("diag-other"), loc.bytes(other)));
            rows.push((loc.t("diag-non-pytorch"), loc.bytes(non)));
        }
        (_, _, Some(outside)) if m.process.is_none() => {
            rows.push((loc.t("diag-outside"), loc.bytes(outside)))
        }
        _ => {}
    }
    rows
}

/// Listed processes shown one per row; the rest are summed in one.
const MAX_PROCESS_ROWS: usize = 20;

/// The heading over the message's numbers, naming the PyTorch versions that print its format.
fn heading_message(d: &Diagnosis, loc: &Localizer) -> String {
    let versions = d.message.versions.label();
    let key = if d.message.format == MessageFormat::Mps {
        "diag-heading-message-mps"
    } else {
        "diag-heading-message"
    };
    loc.t_args(key, &[("versions", FluentValue::from(versions))])
}

/// A card's name with the setting whose capacity matched: `NVIDIA L40S (ECC on)`.
fn card_name(c: &CardMatch, loc: &Localizer) -> String {
    match c.variant {
        None => c.name.clone(),
        Some(v) => {
            let key = match v {
                VariantKind::EccOn => "diag-variant-ecc-on",
                VariantKind::EccOff => "diag-variant-ecc-off",
                VariantKind::Windows => "diag-variant-windows",
                VariantKind::NewerDriver => "diag-variant-newer-driver",
            };
            format!("{} ({})", c.name, loc.t(key))
        }
    }
}

/// The list separator of the locale.
fn separator(loc: &Localizer) -> &'static str {
    if loc.lang().starts_with("zh") {
        "、"
    } else {
        ", "
    }
}

/// The checks of the numbers, and the cards the capacity can be, as sentences.
fn check_lines(d: &Diagnosis, loc: &Localizer) -> Vec<String> {
    let b = |n: u64| FluentValue::from(loc.bytes(n));
    let mut lines: Vec<String> = d
        .findings
        .iter()
        .filter(|f| !matches!(f, ConsistencyFinding::ScenarioCannotBeTheRun { .. }))
        .map(|f| match *f {
            ConsistencyFinding::AllZero => loc.t("diag-check-all-zero"),
            ConsistencyFinding::FreeAboveCapacity { free, capacity } => loc.t_args(
                "diag-check-free-above-capacity",
                &[("a", b(free)), ("b", b(capacity))],
            ),
            ConsistencyFinding::AllocatedAboveReserved {
                allocated,
                reserved,
            } => loc.t_args(
                "diag-check-allocated-above-reserved",
                &[("a", b(allocated)), ("b", b(reserved))],
            ),
            ConsistencyFinding::ReservedAboveCapacity { reserved, capacity } => loc.t_args(
                "diag-check-reserved-above-capacity",
                &[("a", b(reserved)), ("b", b(capacity))],
            ),
            ConsistencyFinding::ReservedAboveProcess { reserved, process } => loc.t_args(
                "diag-check-reserved-above-process",
                &[("a", b(reserved)), ("b", b(process))],
            ),
            ConsistencyFinding::InUseAboveCapacity { in_use, capacity } => loc.t_args(
                "diag-check-in-use-above-capacity",
                &[("a", b(in_use)), ("b", b(capacity))],
            ),
            ConsistencyFinding::ProcessAboveCapacity {
                pid,
                bytes,
                capacity,
            } => loc.t_args(
                "diag-check-process-above-capacity",
                &[
                    ("pid", FluentValue::from(pid.to_string())),
                    ("a", b(bytes)),
                    ("b", b(capacity)),
                ],
            ),
            ConsistencyFinding::RequestAboveCapacity {
                requested,
                capacity,
            } => loc.t_args(
                "diag-check-request-above-capacity",
                &[("a", b(requested)), ("b", b(capacity))],
            ),
            ConsistencyFinding::SeveralMessages { count } => loc.t_args(
                "diag-check-several-messages",
                &[("count", FluentValue::from(count as u64))],
            ),
            ConsistencyFinding::ScenarioCannotBeTheRun { .. } => String::new(),
        })
        .collect();
    let m = &d.message;
    if m.format == MessageFormat::Mps {
        let used = m
            .process
            .map_or(0, |p| p.bytes)
            .saturating_add(m.requested.bytes);
        lines.push(loc.t_args(
            "diag-mps-explain",
            &[("used", b(used)), ("limit", b(m.capacity.bytes))],
        ));
        return lines;
    }
    let capacity = b(m.capacity.bytes);
    if let Some(named) = &d.named_card {
        let key = if named.matches {
            "diag-card-named-fits"
        } else {
            "diag-card-named-differs"
        };
        lines.push(loc.t_args(
            key,
            &[
                ("capacity", capacity),
                ("card", FluentValue::from(named.name.clone())),
                ("card_capacity", b(named.capacity_bytes)),
            ],
        ));
        return lines;
    }
    let names: Vec<String> = d.cards.iter().map(|c| card_name(c, loc)).collect();
    lines.push(match names.as_slice() {
        [] => loc.t_args(
            "diag-cards-none",
            &[
                ("capacity", capacity),
                ("tolerance", b(cards::tolerance(m.capacity))),
            ],
        ),
        [one] if d.cards[0].exact => loc.t_args(
            "diag-cards-one",
            &[
                ("capacity", capacity),
                ("card", FluentValue::from(one.clone())),
            ],
        ),
        [one] => loc.t_args(
            "diag-cards-near",
            &[
                ("capacity", capacity),
                ("card", FluentValue::from(one.clone())),
                ("card_capacity", b(d.cards[0].capacity_bytes)),
            ],
        ),
        many if cards::settled(&d.cards).is_some() => {
            let settled = cards::settled(&d.cards).map(|c| card_name(c, loc));
            let others: Vec<String> = d
                .cards
                .iter()
                .filter(|c| !c.exact)
                .map(|c| card_name(c, loc))
                .collect();
            debug_assert!(many.len() > others.len());
            loc.t_args(
                "diag-cards-settled",
                &[
                    ("capacity", capacity),
                    ("card", FluentValue::from(settled.unwrap_or_default())),
                    ("cards", FluentValue::from(others.join(separator(loc)))),
                ],
            )
        }
        many => loc.t_args(
            "diag-cards-many",
            &[
                ("capacity", capacity),
                ("cards", FluentValue::from(many.join(separator(loc)))),
            ],
        ),
    });
    lines
}

/// A candidate tensor described in words.
///
/// A Hugging Face `Trainer` step's tensors that differ from nanoGPT's in what makes them
/// (`ForCausalLMLoss`'s `logits.float()`, eager attention, a residual stream in the weights'
/// dtype) have their own words (`diag-t-hf-…`).
fn tensor_text(c: &Candidate, trainer: bool, loc: &Localizer) -> String {
    const HF_WORDED: &[&str] = &[
        "logits_fp32",
        "attention_scores_fp32",
        "attention_scores",
        "residual",
    ];
    if trainer && HF_WORDED.contains(&c.kind) {
        return loc.t(&format!("diag-t-hf-{}", c.kind));
    }
    loc.t(&format!("diag-t-{}", c.kind))
}

/// Whether the diagnosis's estimate is a Hugging Face `Trainer` step.
fn trainer_step(d: &Diagnosis) -> bool {
    d.estimate.as_ref().is_some_and(is_trainer_step)
}

/// What the failed allocation is and when it happened, as sentences.
fn tensor_lines(d: &Diagnosis, loc: &Localizer) -> Vec<String> {
    let Some(id) = &d.identified else {
        let keys = d.missing_keys.join(", ");
        return vec![loc.t_args("diag-missing", &[("keys", FluentValue::from(keys))])];
    };
    let size = FluentValue::from(loc.bytes(d.message.requested.bytes));
    let trainer = trainer_step(d);
    let describe = |key: &str, c: &Candidate| {
        loc.t_args(
            key,
            &[
                ("size", size.clone()),
                ("tensor", FluentValue::from(tensor_text(c, trainer, loc))),
                ("shape", FluentValue::from(c.shape.clone())),
                ("dtype", FluentValue::from(c.dtype)),
                ("bytes", FluentValue::from(loc.bytes(c.bytes))),
            ],
        )
    };
    let mut lines = Vec::new();
    match (&id.tensor, &id.nearest) {
        (Some(c), _) => lines.push(describe("diag-tensor", c)),
        (None, Some(c)) => lines.push(describe("diag-tensor-none", c)),
        (None, None) => {}
    }
    match (id.phase, id.phase_source) {
        (Some(p), Some(src)) => {
            let phase = match p {
                LoopPhase::Evaluation if trainer => "diag-phase-trainer-evaluation",
                LoopPhase::Evaluation => "diag-phase-evaluation",
                LoopPhase::Forward => "diag-phase-forward",
                LoopPhase::Backward => "diag-phase-backward",
                LoopPhase::TrainingStep => "diag-phase-training_step",
                LoopPhase::OptimizerStep => "diag-phase-optimizer_step",
                LoopPhase::Generation => "diag-phase-generation",
            };
            let source = match src {
                PhaseSource::Traceback => "diag-source-traceback",
                PhaseSource::Memory => "diag-source-memory",
                PhaseSource::Tensor => "diag-source-tensor",
            };
            lines.push(loc.t_args(
                "diag-phase",
                &[
                    ("phase", FluentValue::from(loc.t(phase))),
                    ("source", FluentValue::from(loc.t(source))),
                ],
            ));
        }
        _ => lines.push(loc.t("diag-phase-unknown")),
    }
    if id.before_first_step == Some(true) {
        lines.push(loc.t("diag-first-step"));
    }
    if id.evaluation_not_modelled {
        lines.push(loc.t("diag-trainer-evaluation"));
    }
    if id.generation_not_modelled {
        lines.push(loc.t("diag-generation-not-modelled"));
    }
    lines
}

/// The fragmentation finding as a sentence, with the setting that fits the message's PyTorch.
fn fragmentation_line(d: &Diagnosis, loc: &Localizer) -> String {
    let f = &d.fragmentation;
    let m = &d.message;
    let too_big = d
        .findings
        .iter()
        .any(|f| matches!(f, ConsistencyFinding::RequestAboveCapacity { .. }));
    let key = if m.format == MessageFormat::Mps {
        "diag-frag-mps"
    } else if too_big {
        "diag-frag-too-big"
    } else if d.findings.iter().any(ConsistencyFinding::impossible) {
        "diag-frag-unknown"
    } else if m.free.is_none() {
        "diag-frag-no-free"
    } else if f.cause {
        "diag-frag-cause"
    } else if f.setting.is_some() {
        "diag-frag-large"
    } else {
        "diag-frag-none"
    };
    let mut line = loc.t_args(
        key,
        &[
            (
                "unalloc",
                FluentValue::from(loc.bytes(f.reserved_unallocated)),
            ),
            (
                "free",
                FluentValue::from(loc.bytes(m.free.map_or(0, |f| f.bytes))),
            ),
            ("size", FluentValue::from(loc.bytes(m.requested.bytes))),
        ],
    );
    let setting = f.setting.map(|s| match (s, f.suggested_by_message) {
        (AllocatorSetting::ExpandableSegments, false) => "diag-set-expandable",
        (AllocatorSetting::ExpandableSegments, true) => "diag-set-expandable-suggested",
        (AllocatorSetting::MaxSplitSizeMb, false) => "diag-set-max-split",
        (AllocatorSetting::MaxSplitSizeMb, true) => "diag-set-max-split-suggested",
        (AllocatorSetting::AlreadyOn, _) => "diag-set-on",
        (AllocatorSetting::NoneInThisVersion, _) => "diag-set-none",
    });
    if let Some(key) = setting {
        line.push_str(if loc.lang().starts_with("zh") {
            ""
        } else {
            " "
        });
        line.push_str(&loc.t_args(key, &[("versions", FluentValue::from(m.versions.label()))]));
    }
    line
}

/// The verdict sentence and, when the card came from the message, where it came from.
fn estimate_lines(d: &Diagnosis, loc: &Localizer) -> Vec<String> {
    let Some(e) = d.totals() else {
        return Vec::new();
    };
    let mut lines = Vec::new();
    if e.gpu.is_some_and(|g| g.id == MESSAGE_GPU) {
        let capacity = FluentValue::from(loc.bytes(d.message.capacity.bytes));
        lines.push(if d.gpu_candidates.is_empty() {
            loc.t_args("diag-gpu-from-message", &[("capacity", capacity)])
        } else {
            loc.t_args(
                "diag-gpu-candidates",
                &[
                    ("capacity", capacity),
                    (
                        "cards",
                        FluentValue::from(
                            d.cards
                                .iter()
                                .map(|c| card_name(c, loc))
                                .collect::<Vec<_>>()
                                .join(separator(loc)),
                        ),
                    ),
                ],
            )
        });
    }
    lines.push(loc.t_args(
        "diag-estimate",
        &[
            ("peak", FluentValue::from(loc.bytes(e.peak))),
            (
                "range",
                FluentValue::from(loc.byte_range(e.total_low, e.total_high)),
            ),
        ],
    ));
    let range = (e.total_low, e.total_high, e.other_processes);
    lines.push(verdict_sentence(e.gpu, e.verdict, range, e.dtype, loc));
    for f in &d.findings {
        if let ConsistencyFinding::ScenarioCannotBeTheRun {
            estimate,
            run,
            capacity,
        } = *f
        {
            let key = if d.generation.is_some() {
                "diag-check-scenario-generate"
            } else if trainer_step(d) {
                "diag-check-scenario-model"
            } else {
                "diag-check-scenario"
            };
            lines.push(loc.t_args(
                key,
                &[
                    ("a", FluentValue::from(loc.bytes(estimate))),
                    ("b", FluentValue::from(loc.bytes(capacity))),
                    ("c", FluentValue::from(loc.bytes(run))),
                ],
            ));
        }
    }
    lines
}

/// The message's numbers as a Markdown table.
fn message_table(d: &Diagnosis, loc: &Localizer) -> String {
    let header = [loc.t("diag-col-figure"), loc.t("diag-col-size")];
    let rows: Vec<Vec<String>> = message_rows(d, loc)
        .into_iter()
        .map(|(label, value)| vec![label, value])
        .collect();
    markdown_table(&header, &[Align::Left, Align::Right], &rows)
}

/// A readable terminal report.
pub(crate) fn table(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!("{}\n\n{}\n", loc.t("diag-title"), heading_message(d, loc));
    out += &aligned(&message_rows(d, loc), true);
    out += &format!("\n{}\n", loc.t("diag-heading-checks"));
    for line in check_lines(d, loc) {
        out += &format!("  {line}\n");
    }
    out += &format!("\n{}\n", loc.t("diag-heading-tensor"));
    for line in tensor_lines(d, loc) {
        out += &format!("  {line}\n");
    }
    out += &format!(
        "\n{}\n  {}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!("\n{}\n", loc.t("diag-heading-estimate"));
        for line in est {
            out += &format!("  {line}\n");
        }
    }
    if !d.what_if.is_empty() {
        out += &format!("\n{}\n", loc.t("est-heading-options"));
        out += &options_text(&d.what_if, Family::NanoGpt, loc);
    }
    out
}

/// Markdown: the same content with headings, a table of the numbers and of the options.
pub(crate) fn markdown(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!(
        "## {}\n\n### {}\n\n{}",
        loc.t("diag-title"),
        heading_message(d, loc),
        message_table(d, loc)
    );
    out += &format!("\n### {}\n\n", loc.t("diag-heading-checks"));
    for line in check_lines(d, loc) {
        out += &format!("{line}\n\n");
    }
    out += &format!("### {}\n\n", loc.t("diag-heading-tensor"));
    for line in tensor_lines(d, loc) {
        out += &format!("{line}\n\n");
    }
    out += &format!(
        "### {}\n\n{}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!(
            "\n### {}\n\n{}\n",
            loc.t("diag-heading-estimate"),
            est.join("\n\n")
        );
    }
    if !d.what_if.is_empty() {
        out += &format!("\n### {}\n\n", loc.t("est-heading-options"));
        out += &options_markdown(&d.what_if, Family::NanoGpt, loc);
    }
    out
}

/// The block `{{ diagnosis() }}` puts in a guide: the message's numbers, the tensor and phase,
/// fragmentation and the verdict, without headings (the guide has its own) or options (the
/// guide's `options_table()` lists them).
pub(crate) fn guide_block(d: &Diagnosis, loc: &Localizer) -> String {
    let mut out = format!(
        "**{}**\n\n{}",
        heading_message(d, loc),
        message_table(d, loc)
    );
    out += &format!(
        "\n**{}**\n\n{}\n",
        loc.t("diag-heading-checks"),
        check_lines(d, loc).join("\n\n")
    );
    out += &format!("\n**{}**\n\n", loc.t("diag-heading-tensor"));
    out += &tensor_lines(d, loc).join("\n\n");
    out += &format!(
        "\n\n**{}**\n\n{}\n",
        loc.t("diag-heading-fragmentation"),
        fragmentation_line(d, loc)
    );
    let est = estimate_lines(d, loc);
    if !est.is_empty() {
        out += &format!(
            "\n**{}**\n\n{}\n",
            loc.t("diag-heading-estimate"),
            est.join("\n\n")
        );
    }
    out
}
