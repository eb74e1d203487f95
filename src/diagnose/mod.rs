//! `vramdoc diagnose`: explains a PyTorch CUDA out-of-memory message against a nanoGPT scenario.
//!
//! [`message`] reads the message's numbers and traceback, [`tensors`] names the tensor that failed
//! and the phase; [`crate::present`]'s `diagnosis_report` writes the report (table, Markdown;
//! JSON is [`Diagnosis`] itself).
//! The memory model is [`crate::estimate`]'s; the options are `estimate`'s, ranked the same way.

pub(crate) mod advice;
pub(crate) mod cards;
pub(crate) mod consistency;
mod formats;
pub mod message;
mod other_errors;
mod snapshot;
mod snapshot_report;
pub(crate) mod tensors;

use std::io::IsTerminal;
use std::path::PathBuf;

use serde::Serialize;

use crate::diagnostics::Diagnostic;
use crate::estimate::{self, Estimate, GpuCatalog, Scenario, WhatIf};
use crate::present::diagnosis_report;
use crate::report::input;
use crate::report::Format;
pub(crate) use advice::Fragmentation;
pub(crate) use cards::CardMatch;
use consistency::Finding;
use message::{MessageFormat, OomMessage};
use tensors::Identified;

/// Arguments of `vramdoc diagnose`.
#[derive(clap::Args, Debug, Clone)]
pub struct DiagnoseArgs {
    /// A file holding the out-of-memory message (the whole traceback may come with it); `-` or
    /// nothing reads standard input.
    #[arg(value_name = "MESSAGE_FILE")]
    pub file: Option<PathBuf>,
    /// The message itself, instead of a file.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub message: Option<String>,
    /// The run's scenario: a YAML scenario or a nanoGPT Python config.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Set a scenario key, e.g. `--set batch_size=64` (repeatable; Python literals).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The GPU (catalog id); by default the catalog card whose capacity the message prints, or
    /// the message's capacity itself.
    #[arg(long, value_name = "ID")]
    pub gpu: Option<String>,
    /// Memory other programs hold on the card; by default the scenario's `other_processes`, else
    /// what the message implies.
    #[arg(long, value_name = "SIZE")]
    pub other_processes: Option<String>,
    /// Output format, language and extra GPUs.
    #[command(flatten)]
    pub output: crate::report::OutputArgs,
}

/// The catalog id given to the card described only by the message's capacity.
pub(crate) const MESSAGE_GPU: &str = "gpu-from-message";

/// Everything `diagnose` found (the JSON output).
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The message's numbers.
    pub(crate) message: OomMessage,
    /// The numbers checked against each other, and what they change.
    pub(crate) findings: Vec<Finding>,
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

/// Runs `vramdoc diagnose`; prints the report to stdout, errors to stderr; returns the exit code.
pub(crate) fn run(args: &DiagnoseArgs) -> i32 {
    match report(args) {
        Ok(text) => {
            crate::terminal::print_out(&text);
            0
        }
        Err(diag) => {
            crate::terminal::eprint_line(&diag.render());
            1
        }
    }
}

/// Reads the message: `--message`, the file, or standard input.
fn read_message(args: &DiagnoseArgs) -> Result<(String, Option<PathBuf>), Box<Diagnostic>> {
    if let Some(text) = &args.message {
        return Ok((text.clone(), None));
    }
    match &args.file {
        Some(path) if path.as_os_str() != "-" => input::read_capped(Some(path))
            .map(|b| (String::from_utf8_lossy(&b).into_owned(), Some(path.clone())))
            .map_err(|e| {
                Box::new(
                    Diagnostic::error(format!("cannot read the message file: {e}"))
                        .in_file(path)
                        .with_help("save the error output to a file, or pass it with --message TEXT or on standard input"),
                )
            }),
        _ => {
            let stdin = std::io::stdin();
            if args.file.is_none() && stdin.is_terminal() {
                return Err(Box::new(
                    Diagnostic::error("no out-of-memory message given").with_help(
                        "pass a file holding it, --message TEXT, or pipe it in: python train.py 2>&1 | vramdoc diagnose",
                    ),
                ));
            }
            let bytes = input::read_capped(None).map_err(|e| {
                Box::new(Diagnostic::error(format!(
                    "cannot read standard input: {e}"
                )))
            })?;
            Ok((String::from_utf8_lossy(&bytes).into_owned(), None))
        }
    }
}

/// The whole report as a string, or the first error.
pub fn report(args: &DiagnoseArgs) -> Result<String, Box<Diagnostic>> {
    let (text, path) = read_message(args)?;
    let parsed = message::parse(&text);
    if let Err(e) = &parsed {
        if e.no_message {
            if let Some(found) = other_errors::find(&text) {
                return other_errors::render(&found, args.output.format, &args.output.lang);
            }
            if let Some(snapshot) = snapshot::read(&text) {
                return readout(snapshot, args);
            }
        }
    }
    let msg = parsed.map_err(|e| {
        let mut d = Diagnostic::error(format!("cannot read the out-of-memory message: {e}"));
        if let Some(p) = &path {
            d = d.in_file(p).at(e.line, 1);
        }
        d.with_help("pass PyTorch's message as printed: \"CUDA out of memory. Tried to allocate …\" with the GPU's numbers that follow it")
    })?;
    // diagnose prints one error: the catalog's first (estimate prints them all).
    let catalog = crate::report::catalog_with(args.output.catalog.as_deref())
        .map_err(|mut all| Box::new(all.remove(0)))?;
    let diagnosis = diagnose(msg, args, &catalog)?;
    if args.output.format == Format::Json {
        let text = serde_json::to_string_pretty(&diagnosis)
            .map_err(|e| Diagnostic::error(e.to_string()))?;
        return Ok(text + "\n");
    }
    let loc = crate::report::localizer(&args.output.lang)?;
    Ok(match args.output.format {
        Format::Markdown => diagnosis_report::markdown(&diagnosis, &loc),
        _ => diagnosis_report::table(&diagnosis, &loc),
    })
}

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
            let name = serde_json::to_string(&g.name)
                .map_err(|e| estimate::ScenarioError::general(e.to_string()))?;
            catalog.extend_from_yaml(&format!(
                "gpus:\n  - {{id: {}, name: {name}, capacity_bytes: {}, bf16: {}}}\n",
                g.id, card.capacity_bytes, g.bf16
            ))?;
        }
        return Ok(card.id.clone());
    }
    let m = &d.message;
    let index = m.gpu_index.unwrap_or(0);
    let bf16 = !d.cards.is_empty() && d.cards.iter().all(|c| c.bf16);
    catalog.extend_from_yaml(&format!(
        "gpus:\n  - {{id: {MESSAGE_GPU}, name: \"GPU {index}\", capacity_bytes: {}, bf16: {bf16}}}\n",
        m.capacity.bytes.max(1)
    ))?;
    Ok(MESSAGE_GPU.to_owned())
}

/// What the message alone tells: its numbers checked, other programs' memory, fragmentation and
/// the cards it can be (from the built-in catalog).
pub fn from_message(m: OomMessage) -> Diagnosis {
    from_message_with(m, &GpuCatalog::builtin())
}

/// [`from_message`] against `catalog`.
fn from_message_with(m: OomMessage, catalog: &GpuCatalog) -> Diagnosis {
    let findings = consistency::check(&m);
    let consistent = !findings.iter().any(Finding::impossible);
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
    with_scenario_as_given(m, scenario, catalog, false)
}

/// [`with_scenario`]; `keep_other` keeps the scenario's `other_processes` even when 0 (an
/// explicit `--other-processes 0`).
fn with_scenario_as_given(
    m: OomMessage,
    mut scenario: Scenario,
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
    let est = estimate::estimate(&scenario, catalog)?;
    d.what_if = estimate::what_if(&scenario, catalog)?;
    d.identified = Some(tensors::identify(&d.message, &est));
    // The run failed; an estimate that fits the card it failed on describes another run.
    if est.fits == Some(true) {
        let capacity = est
            .gpu
            .as_ref()
            .map_or(d.message.capacity.bytes, |g| g.capacity_bytes);
        d.findings.push(Finding::ScenarioCannotBeTheRun {
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
    d.estimate = Some(est);
    Ok(d)
}

/// Puts the message, the command line's scenario and the estimator together.
pub(crate) fn diagnose(
    m: OomMessage,
    args: &DiagnoseArgs,
    catalog: &GpuCatalog,
) -> Result<Diagnosis, Box<Diagnostic>> {
    let Some(scenario) = load_scenario(args, catalog)? else {
        return Ok(from_message_with(m, catalog));
    };
    let keep_other = args.other_processes.is_some();
    with_scenario_as_given(m, scenario, catalog, keep_other).map_err(|e| scenario_error(e, args))
}

/// A scenario error as a diagnostic naming the config file and the key to fix.
fn scenario_error(e: estimate::ScenarioError, args: &DiagnoseArgs) -> Box<Diagnostic> {
    let mut diag = Diagnostic::error(e.to_string());
    if let Some(file) = &args.config {
        diag = diag.in_file(file);
    }
    Box::new(diag.with_help(match e.key.as_deref() {
        Some("gpu") => {
            "pick an id from the list above, or add the card with --catalog FILE".to_owned()
        }
        Some(key) => format!("fix `{key}` in the config or with --set {key}=VALUE"),
        None => "check the scenario's sizes".to_owned(),
    }))
}

/// The command line's scenario (`--config`, `--set`, `--gpu`, `--other-processes`), if it gives
/// one.
fn load_scenario(
    args: &DiagnoseArgs,
    catalog: &GpuCatalog,
) -> Result<Option<Scenario>, Box<Diagnostic>> {
    if args.config.is_none() && args.set.is_empty() {
        return Ok(None);
    }
    let inputs: Vec<crate::report::Input> = args
        .config
        .iter()
        .map(|p| crate::report::Input::File(p.clone()))
        .collect();
    let mut loaded = input::load(&input::Sources {
        inputs: &inputs,
        sets: &args.set,
        gpu: args.gpu.as_deref(),
        catalog,
        base: std::path::Path::new("."),
    })
    .map_err(|errors| {
        let first = errors.into_iter().next();
        Box::new(first.unwrap_or_else(|| Diagnostic::error("the scenario could not be read")))
    })?;
    if loaded.sampling.is_some() {
        // The tensors diagnose matches are a training step's; a sampling run holds others.
        let mut diag = Diagnostic::error(
            "this config describes sampling with nanoGPT's sample.py; diagnose matches a message against a training step's tensors, and sampling's are not matched yet".to_owned(),
        );
        if let Some(file) = &args.config {
            diag = diag.in_file(file);
        }
        return Err(Box::new(diag.with_help(
            "run `vramdoc estimate` with the same config for sampling's memory, or diagnose without --config for what the message alone tells",
        )));
    }
    if let Some(size) = &args.other_processes {
        crate::report::set_other_processes(&mut loaded.scenario, size)?;
    }
    Ok(Some(loaded.scenario))
}

/// The report on a memory readout (`memory_summary()`, `nvidia-smi`), with the scenario's
/// estimate beside it when one is given (on the card `nvidia-smi` names, if the catalog has it).
fn readout(snapshot: snapshot::Snapshot, args: &DiagnoseArgs) -> Result<String, Box<Diagnostic>> {
    // One error, as for a message: the catalog's first.
    let catalog = crate::report::catalog_with(args.output.catalog.as_deref()).map_err(|all| {
        Box::new(
            all.into_iter()
                .next()
                .unwrap_or_else(|| Diagnostic::error("the GPU catalog could not be read")),
        )
    })?;
    let estimate = match load_scenario(args, &catalog)? {
        Some(mut scenario) => {
            if scenario.gpu.is_none() {
                scenario.gpu = snapshot_report::card_named(&snapshot, &catalog);
            }
            Some(estimate::estimate(&scenario, &catalog).map_err(|e| scenario_error(e, args))?)
        }
        None => None,
    };
    let d = snapshot_report::SnapshotDiagnosis { snapshot, estimate };
    let loc = crate::report::localizer(&args.output.lang)?;
    snapshot_report::render(&d, args.output.format, &loc)
}
