//! The estimator against public measured reports (`tests/data/validation.yaml`; how they were
//! gathered and why each tolerance is what it is: `tests/data/VALIDATION.md`). Every entry whose
//! run vramdoc models (`needs` empty) is checked:
//! - `oom`: the verdict is not "fits"; the failing phase's estimated peak is at least 95 % of
//!   what PyTorch held plus what it asked for, and within 5 % when the request was the phase's
//!   last large allocation (`at_peak`);
//! - `fits`: the low end of the estimated range fits the card (the verdict is not
//!   "does not fit");
//! - `max_memory_allocated_bytes`: within 5 % of the estimated peak;
//! - `nvidia_smi_bytes`: within the estimated low–high range (widened by 0.5 GiB when the report
//!   rounds).
//!
//! Entries that disagree for a documented reason are listed in [`KNOWN_GAPS`]; the test checks
//! they still disagree, so fixing one (or the estimator drifting) shows up here.

use serde::Deserialize;
use vramdoc::estimate::{estimate, Estimate, GpuCatalog, Scenario, Verdict};

const GIB: f64 = (1u64 << 30) as f64;

/// Entries that disagree with the estimate, and why (see VALIDATION.md).
const KNOWN_GAPS: &[(&str, &str)] = &[(
    "nanogpt-437-16gb-b4-nvsmi",
    "an unreliable report: the card it names does not exist and the model is not stated",
)];

#[derive(Deserialize)]
struct Set {
    entries: Vec<Entry>,
}

#[derive(Deserialize)]
struct Entry {
    id: String,
    card: String,
    scenario: yaml_serde::Value,
    observed: Observed,
    needs: Vec<String>,
}

#[derive(Deserialize)]
struct Observed {
    kind: String,
    allocated_gib: Option<f64>,
    requested_gib: Option<f64>,
    phase: Option<String>,
    #[serde(default)]
    at_peak: bool,
    bytes: Option<u64>,
    #[serde(default)]
    approx: bool,
}

/// `Err(why)` when the estimate disagrees with the observation.
fn check(e: &Estimate, o: &Observed) -> Result<(), String> {
    let b = &e.bytes;
    match o.kind.as_str() {
        "oom" => {
            if e.verdict == Some(Verdict::Fits) {
                return Err("estimated to fit, but it ran out of memory".into());
            }
            let (Some(held), Some(asked)) = (o.allocated_gib, o.requested_gib) else {
                return Ok(());
            };
            let needed = (held + asked) * GIB;
            let phase = match o.phase.as_deref() {
                Some("eval_first") => b.eval_first_peak,
                Some("eval") => b.eval_peak,
                Some("train") => b.train_peak,
                _ => b.peak,
            } as f64;
            let ratio = phase / needed;
            if ratio < 0.95 || (o.at_peak && ratio > 1.05) {
                return Err(format!(
                    "phase peak {:.2} GiB against {:.2} GiB held and asked ({:+.1} %)",
                    phase / GIB,
                    needed / GIB,
                    100.0 * (ratio - 1.0)
                ));
            }
            Ok(())
        }
        "fits" => match e.verdict {
            Some(Verdict::DoesNotFit) => Err(format!(
                "it ran, but even the low end {:.2} GiB does not fit",
                b.total_low as f64 / GIB
            )),
            _ => Ok(()),
        },
        "max_memory_allocated_bytes" => {
            let want = o.bytes.ok_or("no bytes")? as f64;
            let diff = b.peak as f64 / want - 1.0;
            if diff.abs() > 0.05 {
                return Err(format!("peak {:+.1} % off", 100.0 * diff));
            }
            Ok(())
        }
        "nvidia_smi_bytes" => {
            let want = o.bytes.ok_or("no bytes")? as f64;
            let slack = if o.approx { 0.5 * GIB } else { 0.0 };
            let (low, high) = (b.total_low as f64 - slack, b.total_high as f64 + slack);
            if want < low || want > high {
                return Err(format!(
                    "nvidia-smi {:.2} GiB outside {:.2}–{:.2} GiB",
                    want / GIB,
                    low / GIB,
                    high / GIB
                ));
            }
            Ok(())
        }
        other => Err(format!("unknown observation kind {other}")),
    }
}

#[test]
fn public_reports_agree_with_the_estimate() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/validation.yaml");
    let set: Set = yaml_serde::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let catalog = GpuCatalog::builtin();
    let (mut checked, mut problems) = (0, Vec::new());
    for entry in set.entries.iter().filter(|e| e.needs.is_empty()) {
        let mut s =
            Scenario::from_yaml(&entry.scenario).unwrap_or_else(|e| panic!("{}: {e}", entry.id));
        s.gpu = Some(entry.card.clone());
        let e = estimate(&s, &catalog).unwrap_or_else(|e| panic!("{}: {e}", entry.id));
        let result = check(&e, &entry.observed);
        let gap = KNOWN_GAPS.iter().find(|(id, _)| *id == entry.id);
        println!("{:50} {:28} {result:?}", entry.id, entry.observed.kind);
        match (result, gap) {
            (Ok(()), None) | (Err(_), Some(_)) => {}
            (Err(why), None) => problems.push(format!("{}: {why}", entry.id)),
            (Ok(()), Some((id, _))) => problems.push(format!(
                "{id} now agrees: take it off KNOWN_GAPS (and VALIDATION.md's disagreements)"
            )),
        }
        checked += 1;
    }
    assert!(checked >= 14, "only {checked} entries checked");
    for (id, _) in KNOWN_GAPS {
        assert!(
            set.entries.iter().any(|e| e.id == *id),
            "{id} is not in the set"
        );
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
