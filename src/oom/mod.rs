//! Out-of-memory messages explained, purely: a PyTorch CUDA (or MPS) out-of-memory message, a
//! memory readout or another CUDA error, read and matched against a nanoGPT scenario or a
//! Hugging Face model's Trainer step (`estimate::estimate_model`). No flags,
//! no terminal, no file reading: `cli::diagnose` does those.
//!
//! [`message`] reads the message's numbers and traceback, [`tensors`] names the tensor that failed
//! and the phase; [`Diagnosis`] is the result (and the JSON), which
//! [`crate::present::diagnosis_report`] writes as a table or Markdown. The memory model is
//! [`crate::estimate`]'s; the options are `estimate`'s, ranked the same way.

pub(crate) mod advice;
pub(crate) mod cards;
pub(crate) mod consistency;
mod formats;
pub mod message;
pub(crate) mod other_errors;
pub(crate) mod snapshot;
pub(crate) mod snapshot_match;
pub(crate) mod tensors;

use serde::Serialize;

use crate::estimate::{self, Architecture, Estimate, Gpu, GpuCatalog, Scenario, WhatIf};
pub(crate) use advice::Fragmentation;
pub(crate) use cards::CardMatch;
use consistency::ConsistencyFinding;
use message::{MessageFormat, OomMessage};
use tensors::Identified;

/// The catalog id given to the card described only by the message's capacity.
pub(crate) const MESSAGE_GPU: &str = "gpu-from-message";

/// Everything `diagnose` found (the JSON output).
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The message's numbers.
    pub(crate) message: OomMessage,
    /// The numbers checked against each other, and what they change.
    pub(crate) findings: Vec<ConsistencyFinding>,
    /// Held by other programs: capacity − free − this process (2.x messages with NVML), when
    /// the numbers are consistent.
    pub(crate) other_processes_bytes: Option<u64>,
    /// This process outside PyTorch's cache (CUDA context, libraries): in use − reserved.
    pub(crate) non_pytorch_bytes: Option<u64>,
    /// Outside PyTorch's cache in all, this process's CUDA context and other programs together:
    /// capacity − free − reserved (1.x messages, which do not print the process's total).
    pub(crate) outside_pytorch_bytes: Option<u64>,
    /// The fragmentation finding and the allocator setting that fits the message's PyTorch.
    pub(crate) fragmentation: Fragmentation,
    /// The tensor and phase, when a scenario was given.
    pub(crate) identified: Option<Identified>,
    /// The scenario's estimate against the card (with the other programs' memory).
    pub(crate) estimate: Option<Estimate>,
    /// The options, ranked as `vramdoc estimate` ranks them.
    pub(crate) what_if: Vec<WhatIf>,
    /// Scenario keys that would sharpen the diagnosis, when no scenario was given.
    pub(crate) missing_keys: Vec<&'static str>,
    /// The catalog cards the printed capacity can be (within [`cards::tolerance`]), closest
    /// first.
    pub(crate) cards: Vec<CardMatch>,
    /// Their names, when more than one matches (and no `gpu` was given): the diagnosis then
    /// uses the printed capacity.
    pub(crate) gpu_candidates: Vec<String>,
    /// The card the scenario names, and whether the printed capacity can be it.
    pub(crate) named_card: Option<NamedCard>,
}

/// The card a scenario names, checked against the printed capacity.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct NamedCard {
    /// Its name.
    pub(crate) name: String,
    /// Its catalog capacity.
    pub(crate) capacity_bytes: u64,
    /// One of its capacities is within the driver spread of the printed one.
    pub(crate) matches: bool,
}

/// Keys that decide which tensor an allocation is.
const SHARPENING_KEYS: &[&str] = &[
    "batch_size",
    "block_size",
    "vocab_size",
    "dtype",
    "n_layer",
    "n_head",
    "n_embd",
    "compile",
    "flash",
    "eval_batch_size",
    "gpu",
];

/// The card the message describes: the one catalog card whose capacity (or an ECC or Windows
/// variant) is the printed one within [`cards::tolerance`]; when none or several are, a new
/// entry ([`MESSAGE_GPU`]) with the printed capacity, with bf16 only if every candidate has it
/// (none known: no bf16, so no option proposes a dtype the card may lack).
fn gpu_from_message(
    d: &Diagnosis,
    catalog: &mut GpuCatalog,
) -> Result<String, estimate::ScenarioError> {
    if let Some(card) = cards::settled(&d.cards) {
        // Matched through an ECC or Windows figure: that figure is the card's capacity here.
        if let Some(g) = catalog
            .get(&card.id)
            .filter(|g| g.capacity_bytes != card.capacity_bytes)
        {
            let gpu = message_card(&g.id, &g.name, card.capacity_bytes, g.bf16)?;
            catalog.insert_all(vec![gpu]);
        }
        return Ok(card.id.clone());
    }
    let m = &d.message;
    let index = m.gpu_index.unwrap_or(0);
    let bf16 = !d.cards.is_empty() && d.cards.iter().all(|c| c.bf16);
    let name = format!("GPU {index}");
    let gpu = message_card(MESSAGE_GPU, &name, m.capacity.bytes.max(1), bf16)?;
    catalog.insert_all(vec![gpu]);
    Ok(MESSAGE_GPU.to_owned())
}

/// A catalog card made of what the message tells: its id, name, printed capacity and bf16, and
/// nothing else (no aliases, source or variants). A capacity the estimator cannot hold is
/// refused as a catalog entry would be.
fn message_card(
    id: &str,
    name: &str,
    capacity_bytes: u64,
    bf16: bool,
) -> Result<Gpu, estimate::ScenarioError> {
    if capacity_bytes == 0 || capacity_bytes > i64::MAX as u64 {
        return Err(estimate::ScenarioError::general(format!(
            "invalid GPU catalog entry \"{id}\": capacity_bytes must be between 1 and 2^63 - 1"
        )));
    }
    Ok(Gpu {
        id: id.to_owned(),
        name: name.to_owned(),
        capacity_bytes,
        memory_gb_marketing: 0.0,
        bf16,
        aliases: Vec::new(),
        source: String::new(),
        variants: Vec::new(),
    })
}

/// What the message alone tells: its numbers checked, other programs' memory, fragmentation and
/// the cards it can be (from the built-in catalog).
pub fn from_message(m: OomMessage) -> Diagnosis {
    from_message_with(m, &GpuCatalog::builtin())
}

/// [`from_message`] against `catalog`.
pub(crate) fn from_message_with(m: OomMessage, catalog: &GpuCatalog) -> Diagnosis {
    let findings = consistency::check(&m);
    let consistent = !findings.iter().any(ConsistencyFinding::impossible);
    let cuda = m.format != MessageFormat::Mps;
    let free = m.free.filter(|_| consistent && cuda).map(|f| f.bytes);
    let other = m.process.zip(free).map(|(p, free)| {
        m.capacity
            .bytes
            .saturating_sub(free)
            .saturating_sub(p.bytes)
    });
    let non_pytorch = m
        .process
        .filter(|_| consistent && cuda)
        .map(|p| p.bytes.saturating_sub(m.reserved.bytes));
    let outside = free.map(|free| {
        m.capacity
            .bytes
            .saturating_sub(free)
            .saturating_sub(m.reserved.bytes)
    });
    let fragmentation = advice::fragmentation(&m, &findings);
    let cards = if cuda {
        cards::matching(m.capacity, m.windows, catalog)
    } else {
        Vec::new()
    };
    let gpu_candidates = if cards::settled(&cards).is_none() {
        cards.iter().map(|c| c.name.clone()).collect()
    } else {
        Vec::new()
    };
    Diagnosis {
        findings,
        other_processes_bytes: other,
        non_pytorch_bytes: non_pytorch,
        outside_pytorch_bytes: outside,
        fragmentation,
        identified: None,
        estimate: None,
        what_if: Vec::new(),
        missing_keys: SHARPENING_KEYS.to_vec(),
        cards,
        gpu_candidates,
        named_card: None,
        message: m,
    }
}

/// The message read against a scenario: the card (the scenario's, else the message's), other
/// programs' memory (the scenario's when set, else the message's), the tensor, the phase and
/// the options.
pub fn with_scenario(
    m: OomMessage,
    scenario: Scenario,
    catalog: &GpuCatalog,
) -> Result<Diagnosis, estimate::ScenarioError> {
    with_scenario_as_given(m, scenario, None, catalog, false)
}

/// [`with_scenario`]; `model` is the run's model when the scenario names one (its estimate is
/// [`estimate::estimate_model`]'s, its tensors that model's, and no options are listed: what-ifs
/// are not computed for these models); `keep_other` keeps the scenario's `other_processes` even
/// when 0 (an explicit `--other-processes 0`).
pub(crate) fn with_scenario_as_given(
    m: OomMessage,
    mut scenario: Scenario,
    model: Option<&Architecture>,
    catalog: &GpuCatalog,
    keep_other: bool,
) -> Result<Diagnosis, estimate::ScenarioError> {
    let mut d = from_message_with(m, catalog);
    d.missing_keys.clear();
    let mut own;
    let catalog = if scenario.gpu.is_none() {
        own = catalog.clone();
        scenario.gpu = Some(gpu_from_message(&d, &mut own)?);
        &own
    } else {
        d.gpu_candidates.clear();
        let id = scenario.gpu.as_deref().unwrap_or_default();
        d.named_card = catalog.get(id).map(|g| NamedCard {
            name: g.name.clone(),
            capacity_bytes: g.capacity_bytes,
            matches: d.message.format == MessageFormat::Mps || d.cards.iter().any(|c| c.id == g.id),
        });
        catalog
    };
    if scenario.other_processes == 0 && !keep_other {
        scenario.other_processes = d.other_processes_bytes.unwrap_or(0);
    }
    let est = match model {
        Some(a) => estimate::estimate_model(a, &scenario, catalog)?,
        None => {
            let est = estimate::estimate(&scenario, catalog)?;
            d.what_if = estimate::what_if(&scenario, catalog)?;
            est
        }
    };
    let identified = tensors::identify(&d.message, &est);
    // The run failed; an estimate that fits the card it failed on describes another run (unless
    // it failed in a Trainer evaluation, which the training step's estimate does not cover).
    if est.fits == Some(true) && !identified.evaluation_not_modelled {
        let capacity = est
            .gpu
            .as_ref()
            .map_or(d.message.capacity.bytes, |g| g.capacity_bytes);
        d.findings.push(ConsistencyFinding::ScenarioCannotBeTheRun {
            estimate: est
                .bytes
                .total_high
                .saturating_add(est.bytes.other_processes),
            run: d
                .message
                .allocated
                .bytes
                .saturating_add(d.message.requested.bytes),
            capacity,
        });
    }
    d.identified = Some(identified);
    d.estimate = Some(est);
    Ok(d)
}
