//! Unit tests of the shared rows.

use super::*;
use crate::estimate::{estimate, what_if, GpuCatalog, Scenario};

fn en() -> Localizer {
    Localizer::builtin("en").expect("English bundle")
}

fn est(s: &Scenario) -> Estimate {
    estimate(s, &GpuCatalog::builtin()).expect("valid scenario")
}

#[test]
fn weights_are_labelled_with_their_storage_dtype() {
    let loc = en();
    let pure = Scenario {
        pure_bf16: true,
        dtype: Dtype::Bfloat16,
        ..Scenario::default()
    };
    let rows = memory_rows(&est(&pure), &loc);
    assert_eq!(rows[0].line, Line::Weights);
    assert!(rows[0].label.contains("bf16"), "{}", rows[0].label);
    let rows = memory_rows(&est(&Scenario::default()), &loc);
    assert!(rows[0].label.contains("fp32"), "{}", rows[0].label);
}

#[test]
fn the_range_row_carries_both_ends_and_components_sum_to_the_peak() {
    let e = est(&Scenario::default());
    let rows = memory_rows(&e, &en());
    let range = rows.iter().find(|r| r.line == Line::TotalRange).unwrap();
    assert_eq!(
        (range.bytes, range.high),
        (e.bytes.total_low, e.bytes.total_high)
    );
    let sum: u64 = rows
        .iter()
        .filter(|r| r.line.is_component())
        .map(|r| r.bytes)
        .sum();
    assert_eq!(sum, e.bytes.train_peak);
    assert!(!rows.iter().any(|r| r.line == Line::OtherProcesses));
}

#[test]
fn changes_are_written_as_nanogpt_reads_them() {
    let c = |k: &str, v: &str| Change {
        key: k.into(),
        value: v.into(),
    };
    assert_eq!(config_line(&c("compile", "False")), "compile = False");
    assert_eq!(config_line(&c("dtype", "bfloat16")), "dtype = 'bfloat16'");
    assert_eq!(flag(&c("compile", "False")), "--compile=False");
    assert_eq!(flag(&c("dtype", "bfloat16")), "--dtype=bfloat16");
    assert!(needs_code(&c("grad_checkpoint", "True")));
    assert!(needs_code(&c("optimizer", "adamw8bit")));
    assert!(!needs_code(&c("batch_size", "4")));
}

#[test]
fn one_row_per_distinct_change_and_no_negative_saving_shown_as_saving() {
    let loc = en();
    let s = Scenario {
        gpu: Some("rtx-4070".into()),
        batch_size: 16,
        gradient_accumulation_steps: 2,
        ..Scenario::default()
    };
    let base = est(&s);
    let options = what_if(&s, &GpuCatalog::builtin()).unwrap();
    let half = Scenario {
        batch_size: 8,
        gradient_accumulation_steps: 4,
        ..s.clone()
    };
    let half_e = est(&half);
    let variants = [NamedVariant {
        label: "Half the micro-batch",
        estimate: &half_e,
    }];
    let rows = option_rows(&base, &variants, &options, &loc);
    for (i, r) in rows.iter().enumerate() {
        assert!(
            !rows[..i].iter().any(|o| o.changes == r.changes),
            "{:?} listed twice",
            r.changes
        );
    }
    let merged = &rows[0];
    assert_eq!(merged.label, "Half the micro-batch");
    assert!(!merged.also.is_empty(), "{merged:?}");
    assert!(!merged.label.contains(" / "));
    let notes = merged_notes(&rows, &loc);
    assert_eq!(notes.len(), 1, "{notes:?}");
    assert!(
        notes[0].contains("Half the micro-batch") && notes[0].contains(&merged.also[0]),
        "{notes:?}"
    );
    assert!(!merged.changes_training);
    let zero = OptionRow {
        saving: 0,
        ..merged.clone()
    };
    assert_eq!(zero.saving_text(&loc), "—");
    let more = OptionRow {
        saving: -(1 << 30),
        ..merged.clone()
    };
    assert!(
        !more.saving_text(&loc).starts_with('−'),
        "{}",
        more.saving_text(&loc)
    );
    assert!(
        more.saving_text(&loc).contains(&loc.bytes(1 << 30)),
        "{}",
        more.saving_text(&loc)
    );
}

#[test]
fn patches_and_training_changes_are_marked() {
    let loc = en();
    let s = Scenario::default();
    let rows = option_rows(
        &est(&s),
        &[],
        &what_if(&s, &GpuCatalog::builtin()).unwrap(),
        &loc,
    );
    let ckpt = rows
        .iter()
        .find(|r| r.changes.iter().any(|c| c.key == "grad_checkpoint"))
        .unwrap();
    assert!(
        ckpt.marked_label().ends_with(" ‡"),
        "{}",
        ckpt.marked_label()
    );
    let block = rows
        .iter()
        .find(|r| r.changes.iter().any(|c| c.key == "block_size"))
        .unwrap();
    assert!(
        block.marked_label().ends_with(" †"),
        "{}",
        block.marked_label()
    );
    let base = est(&s);
    assert_ne!(
        block.batch_text(&base, &loc),
        loc.int(block.effective_batch)
    );
    let notes = footnotes(&rows, &loc);
    assert_eq!(notes.len(), 2);
    // The ‡ note names what each code change needs, and nothing another option needs.
    assert!(notes[1].contains("grad_checkpoint"), "{}", notes[1]);
    assert!(!notes[1].contains("PyTorch 2.0"), "{}", notes[1]);
    let lora_only: Vec<OptionRow> = rows
        .iter()
        .filter(|r| r.changes.iter().any(|c| c.key == "optimizer"))
        .cloned()
        .collect();
    // Chinese runs the sentences together, with its own full stop.
    let zh = Localizer::builtin("zh").unwrap();
    let zh_notes = footnotes(&lora_only, &zh);
    let code = zh_notes.last().unwrap();
    assert!(code.contains("代码。`") && code.ends_with('。'), "{code}");
    let notes = footnotes(&lora_only, &loc);
    assert!(
        notes.iter().any(|n| n.contains("bitsandbytes"))
            && !notes.iter().any(|n| n.contains("flash")),
        "{notes:?}"
    );
}

#[test]
fn every_runtime_key_exists_in_every_locale() {
    for lang in ["en", "es", "zh"] {
        let loc = Localizer::builtin(lang).unwrap();
        let missing: Vec<String> = runtime_message_keys()
            .into_iter()
            .filter(|k| !loc.has_own(k))
            .collect();
        assert!(missing.is_empty(), "`{lang}` lacks {missing:?}");
    }
}
