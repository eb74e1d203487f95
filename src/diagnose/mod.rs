//! `vramdoc diagnose`: explains a PyTorch CUDA out-of-memory message against a nanoGPT scenario.
//!
//! [`message`] reads the message's numbers and traceback, [`tensors`] names the tensor that failed
//! and the phase, [`render`] writes the report (table, Markdown; JSON is [`Diagnosis`] itself).
//! The memory model is [`crate::estimate`]'s; the options are `estimate`'s, ranked the same way.

pub mod message;
mod render;
pub(crate) mod tensors;

use std::io::IsTerminal;
use std::path::PathBuf;

use serde::Serialize;

use crate::diagnostics::Diagnostic;
use crate::estimate::{self, Estimate, GpuCatalog, Scenario, WhatIf};
use crate::report::input;
use crate::report::Format;
use message::OomMessage;
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

pub(crate) use render::guide_block;

/// The catalog id given to the card described only by the message's capacity.
pub(crate) const MESSAGE_GPU: &str = "gpu-from-message";

/// Fragmentation: what PyTorch's cache held without using it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub(crate) struct Fragmentation {
    /// Reserved by PyTorch but unallocated.
    pub(crate) reserved_unallocated: u64,
    /// Free plus reserved-unallocated would have held the allocation: the cache's blocks were
    /// there, just not in one piece.
    pub(crate) cause: bool,
    /// Worth `expandable_segments:True`: the cause, or at least 512 MiB or a fifth of the
    /// reserved memory unused.
    pub(crate) advise_expandable_segments: bool,
}

/// Everything `diagnose` found (the JSON output).
#[derive(Debug, Clone, Serialize)]
pub struct Diagnosis {
    /// The message's numbers.
    pub(crate) message: OomMessage,
    /// Held by other programs: capacity − free − this process (PyTorch 2 messages).
    pub(crate) other_processes_bytes: Option<u64>,
    /// This process outside PyTorch's cache (CUDA context, libraries): in use − reserved
    /// (PyTorch 2 messages).
    pub(crate) non_pytorch_bytes: Option<u64>,
    /// Outside PyTorch's cache in all, this process's CUDA context and other programs together:
    /// capacity − free − reserved (PyTorch 1 messages, which do not print the process's total).
    pub(crate) outside_pytorch_bytes: u64,
    /// The fragmentation finding.
    pub(crate) fragmentation: Fragmentation,
    /// The tensor and phase, when a scenario was given.
    pub(crate) identified: Option<Identified>,
    /// The scenario's estimate against the card (with the other programs' memory).
    pub(crate) estimate: Option<Estimate>,
    /// The options, ranked as `vramdoc estimate` ranks them.
    pub(crate) what_if: Vec<WhatIf>,
    /// Scenario keys that would sharpen the diagnosis, when no scenario was given.
    pub(crate) missing_keys: Vec<&'static str>,
    /// The catalog cards with the message's capacity, when it is more than one (and no `gpu`
    /// was given): the diagnosis then uses the printed capacity.
    pub(crate) gpu_candidates: Vec<String>,
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
    let msg = message::parse(&text).map_err(|e| {
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
        Format::Markdown => render::markdown(&diagnosis, &loc),
        _ => render::table(&diagnosis, &loc),
    })
}

/// The card the message describes: the one catalog entry whose capacity is the printed one
/// (within its rounding); when none or several are, a new entry ([`MESSAGE_GPU`]) with the
/// printed capacity, and the names of the cards it could be.
fn gpu_from_message(
    m: &OomMessage,
    catalog: &mut GpuCatalog,
) -> Result<(String, Vec<String>), estimate::ScenarioError> {
    let tol = m.capacity.tolerance.max(1);
    let matches: Vec<(String, String, bool)> = catalog
        .iter()
        .filter(|g| g.capacity_bytes.abs_diff(m.capacity.bytes) <= tol)
        .map(|g| (g.id.clone(), g.name.clone(), g.bf16))
        .collect();
    if let [(id, _, _)] = matches.as_slice() {
        return Ok((id.clone(), Vec::new()));
    }
    let index = m.gpu_index.unwrap_or(0);
    let bf16 = matches.is_empty() || matches.iter().any(|(_, _, b)| *b);
    catalog.extend_from_yaml(&format!(
        "gpus:\n  - {{id: {MESSAGE_GPU}, name: \"GPU {index}\", capacity_bytes: {}, bf16: {bf16}}}\n",
        m.capacity.bytes.max(1)
    ))?;
    Ok((
        MESSAGE_GPU.to_owned(),
        matches.into_iter().map(|(_, name, _)| name).collect(),
    ))
}

/// What the message alone tells: its numbers, other programs' memory and fragmentation.
pub fn from_message(m: OomMessage) -> Diagnosis {
    let other = m.process.map(|p| {
        m.capacity
            .bytes
            .saturating_sub(m.free.bytes)
            .saturating_sub(p.bytes)
    });
    let non_pytorch = m.process.map(|p| p.bytes.saturating_sub(m.reserved.bytes));
    let outside = m
        .capacity
        .bytes
        .saturating_sub(m.free.bytes)
        .saturating_sub(m.reserved.bytes);
    let unalloc = m.reserved_unallocated.bytes;
    let cause = m.free.bytes < m.requested.bytes
        && m.free.bytes.saturating_add(unalloc) >= m.requested.bytes;
    Diagnosis {
        other_processes_bytes: other,
        non_pytorch_bytes: non_pytorch,
        outside_pytorch_bytes: outside,
        fragmentation: Fragmentation {
            reserved_unallocated: unalloc,
            cause,
            advise_expandable_segments: cause
                || unalloc >= 512 << 20
                || unalloc.saturating_mul(5) >= m.reserved.bytes.max(1),
        },
        identified: None,
        estimate: None,
        what_if: Vec::new(),
        missing_keys: SHARPENING_KEYS.to_vec(),
        gpu_candidates: Vec::new(),
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
    let mut d = from_message(m);
    d.missing_keys.clear();
    let mut own;
    let catalog = if scenario.gpu.is_none() {
        own = catalog.clone();
        let (id, candidates) = gpu_from_message(&d.message, &mut own)?;
        scenario.gpu = Some(id);
        d.gpu_candidates = candidates;
        &own
    } else {
        catalog
    };
    if scenario.other_processes == 0 && !keep_other {
        scenario.other_processes = d.other_processes_bytes.unwrap_or(0);
    }
    let est = estimate::estimate(&scenario, catalog)?;
    d.what_if = estimate::what_if(&scenario, catalog)?;
    d.identified = Some(tensors::identify(&d.message, &est));
    d.estimate = Some(est);
    Ok(d)
}

/// Puts the message, the command line's scenario and the estimator together.
pub(crate) fn diagnose(
    m: OomMessage,
    args: &DiagnoseArgs,
    catalog: &GpuCatalog,
) -> Result<Diagnosis, Box<Diagnostic>> {
    let have_scenario = args.config.is_some() || !args.set.is_empty();
    if !have_scenario {
        return Ok(from_message(m));
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
    let keep_other = args.other_processes.is_some();
    with_scenario_as_given(m, loaded.scenario, catalog, keep_other).map_err(|e| {
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
    })
}
