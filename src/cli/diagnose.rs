//! `vramdoc diagnose`: its flags, reading the message (a file, `--message` or standard input)
//! and the scenario, and printing what [`crate::oom`] finds.

use std::io::IsTerminal;
use std::path::PathBuf;

use super::args::{set_other_processes, OutputArgs, ScenarioArgs};
use crate::diagnostics::Diagnostic;
use crate::estimate::{self, GpuCatalog, Scenario};
use crate::i18n::Localizer;
use crate::oom::message::{self, OomMessage};
use crate::oom::{
    from_message_with, other_errors, snapshot, snapshot_match, with_scenario_as_given, Diagnosis,
};
use crate::present::{diagnosis_report, other_errors_report, snapshot_report, Format};
use crate::scenario::catalog::catalog_with;
use crate::scenario::input;
use crate::scenario::model::Model;

/// Arguments of `vramdoc diagnose`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct DiagnoseArgs {
    /// A file holding the out-of-memory message (the whole traceback may come with it); `-` or
    /// nothing reads standard input.
    #[arg(value_name = "MESSAGE_FILE")]
    pub file: Option<PathBuf>,
    /// The message itself, instead of a file.
    #[arg(long, value_name = "TEXT", conflicts_with = "file")]
    pub message: Option<String>,
    /// The run's scenario: a YAML scenario or a nanoGPT Python config (with `--model`, the
    /// Hugging Face model's Trainer settings).
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// The scenario's flags.
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// Output format and language.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs `vramdoc diagnose`; prints the report to stdout, errors to stderr; returns the exit code.
pub(crate) fn run(args: &DiagnoseArgs) -> i32 {
    match report_with_notes(args) {
        Ok((text, notes)) => {
            for note in &notes {
                crate::terminal::eprint_note(note);
            }
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
    report_with_notes(args).map(|(text, _)| text)
}

/// The note on the card the diagnosis used when its capacity (or the ECC, Windows or driver
/// figure it was recognized by) is not sourced: the scenario's card, else the one card the
/// printed capacity settles on.
fn unsourced_card_note(d: &Diagnosis, catalog: &GpuCatalog) -> Option<String> {
    let named = d.estimate.as_ref().and_then(|e| e.gpu.as_ref());
    let (id, setting) = match named {
        Some(g) if d.named_card.is_some() => (g.id.as_str(), None),
        _ => crate::oom::cards::settled(&d.cards)
            .map(|c| (c.id.as_str(), c.variant.map(|v| (v, c.capacity_bytes))))?,
    };
    catalog.get(id)?.unsourced_capacity_note(setting)
}

/// [`report`] with the notes to print on standard error.
fn report_with_notes(args: &DiagnoseArgs) -> Result<(String, Vec<String>), Box<Diagnostic>> {
    let (text, path) = read_message(args)?;
    let parsed = message::parse(&text);
    if let Err(e) = &parsed {
        if e.no_message {
            if let Some(found) = other_errors::find(&text) {
                return other_error(&found, args).map(|text| (text, Vec::new()));
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
    let catalog = catalog_with(args.scenario.catalog.as_deref())
        .map_err(|mut all| Box::new(all.remove(0)))?;
    let diagnosis = diagnose(msg, args, &catalog)?;
    let notes = Vec::from_iter(unsourced_card_note(&diagnosis, &catalog));
    if args.output.format == Format::Json {
        return Ok((json(&diagnosis)?, notes));
    }
    let loc = Localizer::for_flag(&args.output.lang)?;
    let text = match args.output.format {
        Format::Markdown => diagnosis_report::markdown(&diagnosis, &loc),
        _ => diagnosis_report::table(&diagnosis, &loc),
    };
    Ok((text, notes))
}

/// Puts the message, the command line's scenario and the estimator together.
pub(crate) fn diagnose(
    m: OomMessage,
    args: &DiagnoseArgs,
    catalog: &GpuCatalog,
) -> Result<Diagnosis, Box<Diagnostic>> {
    let Some((scenario, model)) = load_scenario(args, catalog)? else {
        return Ok(from_message_with(m, catalog));
    };
    let keep_other = args.scenario.other_processes.is_some();
    let a = model.as_ref().map(|m| &m.architecture);
    with_scenario_as_given(m, scenario, a, catalog, keep_other)
        .map_err(|e| model_error(e, model.as_ref(), args))
}

/// A scenario error, with a model's refusal help (its family not computed: its parameter count
/// and the ids that are) when the scenario names one.
fn model_error(
    e: estimate::ScenarioError,
    model: Option<&Model>,
    args: &DiagnoseArgs,
) -> Box<Diagnostic> {
    let d = scenario_error(e, args);
    match model {
        Some(m) => Box::new(super::model_report::refusal(m, *d)),
        None => d,
    }
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

/// The command line's scenario (`--config`, `--set`, `--model`, `--gpu`, `--other-processes`),
/// if it gives one, with the model it names.
fn load_scenario(
    args: &DiagnoseArgs,
    catalog: &GpuCatalog,
) -> Result<Option<(Scenario, Option<Model>)>, Box<Diagnostic>> {
    if args.config.is_none() && args.scenario.set.is_empty() && args.scenario.model.is_none() {
        return Ok(None);
    }
    let mut inputs: Vec<input::Input> = args
        .config
        .iter()
        .map(|p| input::Input::File(p.clone()))
        .collect();
    if let Some(model) = &args.scenario.model {
        inputs.push(input::Input::Override(format!("--model={model}")));
    }
    let mut loaded = input::load(&input::Sources {
        inputs: &inputs,
        sets: &args.scenario.set,
        gpu: args.scenario.gpu.as_deref(),
        catalog,
        base: args
            .scenario
            .data_dir
            .as_deref()
            .unwrap_or(std::path::Path::new(".")),
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
    if let Some(size) = &args.scenario.other_processes {
        set_other_processes(&mut loaded.scenario, size)?;
    }
    Ok(Some((loaded.scenario, loaded.model)))
}

/// The report on a memory readout (`memory_summary()`, `nvidia-smi`), with the scenario's
/// estimate beside it when one is given (on the card `nvidia-smi` names, if the catalog has it),
/// and the note on that card's capacity when it is not sourced.
fn readout(
    snapshot: snapshot::Snapshot,
    args: &DiagnoseArgs,
) -> Result<(String, Vec<String>), Box<Diagnostic>> {
    // One error, as for a message: the catalog's first.
    let catalog = catalog_with(args.scenario.catalog.as_deref()).map_err(|all| {
        Box::new(
            all.into_iter()
                .next()
                .unwrap_or_else(|| Diagnostic::error("the GPU catalog could not be read")),
        )
    })?;
    let estimate = match load_scenario(args, &catalog)? {
        Some((mut scenario, model)) => {
            if scenario.gpu.is_none() {
                scenario.gpu = snapshot_match::card_named(&snapshot, &catalog);
            }
            let est = match &model {
                Some(m) => estimate::estimate_model(&m.architecture, &scenario, &catalog),
                None => estimate::estimate(&scenario, &catalog),
            };
            Some(est.map_err(|e| model_error(e, model.as_ref(), args))?)
        }
        None => None,
    };
    let card = estimate.as_ref().and_then(|e| e.gpu.as_ref());
    let note = card.and_then(|g| catalog.get(&g.id)?.unsourced_capacity_note(None));
    let d = snapshot_match::SnapshotDiagnosis { snapshot, estimate };
    let text = match args.output.format {
        Format::Json => json(&d)?,
        Format::Markdown => snapshot_report::markdown(&d, &Localizer::for_flag(&args.output.lang)?),
        _ => snapshot_report::table(&d, &Localizer::for_flag(&args.output.lang)?),
    };
    Ok((text, Vec::from_iter(note)))
}

/// The report on a memory error that is not the allocator's message, in the format asked for.
fn other_error(
    found: &other_errors::FoundError,
    args: &DiagnoseArgs,
) -> Result<String, Box<Diagnostic>> {
    Ok(match args.output.format {
        Format::Json => json(&serde_json::json!({
            "kind": "other_error",
            "error": found.error,
            "line": found.line,
            "quoted": found.quoted,
        }))?,
        Format::Markdown => {
            other_errors_report::markdown(found, &Localizer::for_flag(&args.output.lang)?)
        }
        _ => other_errors_report::table(found, &Localizer::for_flag(&args.output.lang)?),
    })
}

/// `value` as pretty JSON and a newline.
fn json(value: &impl serde::Serialize) -> Result<String, Box<Diagnostic>> {
    let text = serde_json::to_string_pretty(value).map_err(|e| Diagnostic::error(e.to_string()))?;
    Ok(text + "\n")
}
