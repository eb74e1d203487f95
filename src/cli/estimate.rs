//! `vramdoc estimate`: its flags, the typed [`EstimateRequest`] they become, and the run that
//! loads the scenario ([`crate::scenario::input`]), estimates it ([`crate::estimate`], pure) and
//! prints the report ([`crate::present`]) or every error.

use std::path::PathBuf;

use super::args::{set_other_processes, OutputArgs, ScenarioArgs};
use super::solve::{self, Solve};
use crate::diagnostics::Diagnostic;
use crate::estimate;
use crate::i18n::Localizer;
use crate::present::{estimate_report, sample_report, Format};
use crate::scenario::catalog::catalog_with;
use crate::scenario::input::{self, Input};

/// Arguments of `vramdoc estimate`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct EstimateArgs {
    /// FILEs (YAML scenarios or nanoGPT Python configs; `-` is standard input) and nanoGPT-style
    /// `--key=value` overrides, applied in order as nanoGPT's `train.py config/x.py --batch_size=8`
    /// applies them. Or nanochat's scripts/base_train.py or scripts/chat_sft.py followed by their
    /// own flags (`--depth=20 --device-batch-size=16`), read with the defaults of nanochat commit
    /// 92d63d4.
    #[arg(value_name = "FILE | --KEY=VALUE", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    /// The scenario's flags.
    #[command(flatten)]
    pub scenario: ScenarioArgs,
    /// What to estimate: `train` (train.py, the default) or `generate` (sampling with sample.py,
    /// which a sample.py FILE implies). Sets the scenario key `phase`.
    #[arg(long, value_name = "PHASE")]
    pub phase: Option<String>,
    /// Solve for the generate phase: `max_context` (the longest prompt plus new tokens whose
    /// verdict on --gpu is fits) or `max_batch` (the largest batch).
    #[arg(long, value_name = "SOLVER")]
    pub solve: Option<String>,
    /// torchrun's `--nproc_per_node`: GPUs per machine of a DDP job (the estimate is per GPU;
    /// train.py divides `gradient_accumulation_steps` among the processes).
    #[arg(long, value_name = "N")]
    pub nproc_per_node: Option<u64>,
    /// torchrun's `--nnodes`: machines of a DDP job.
    #[arg(long, value_name = "N")]
    pub nnodes: Option<u64>,
    /// Output format and language.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// The arguments with vramdoc's own flags separated from nanoGPT-style overrides.
///
/// Once clap starts collecting `inputs` it keeps everything that follows, so flags such as
/// `--gpu t4` written after the file arrive there; [`EstimateArgs::resolve`] takes them back out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct EstimateRequest {
    /// Scenario files and nanoGPT-style `--key=value` overrides, in command-line order.
    pub(crate) inputs: Vec<Input>,
    /// `--set KEY=VALUE` values, in order.
    pub(crate) sets: Vec<String>,
    /// `--gpu`.
    pub(crate) gpu: Option<String>,
    /// `--other-processes`.
    pub(crate) other_processes: Option<String>,
    /// `--nproc-per-node` (also `--nproc_per_node`).
    pub(crate) nproc_per_node: Option<u64>,
    /// `--nnodes`.
    pub(crate) nnodes: Option<u64>,
    /// `--format`.
    pub(crate) format: Format,
    /// `--lang`.
    pub(crate) lang: String,
    /// `--catalog`.
    pub(crate) catalog: Option<PathBuf>,
    /// `--data-dir`.
    pub(crate) data_dir: Option<PathBuf>,
    /// `--solve`.
    pub(crate) solve: Option<Solve>,
}

impl EstimateArgs {
    /// Separates FILE, overrides and any of vramdoc's flags that clap left in `inputs`.
    pub(crate) fn resolve(&self) -> Result<EstimateRequest, Box<Diagnostic>> {
        let mut r = EstimateRequest {
            inputs: Vec::new(),
            sets: self.scenario.set.clone(),
            gpu: self.scenario.gpu.clone(),
            other_processes: self.scenario.other_processes.clone(),
            nproc_per_node: self.nproc_per_node,
            nnodes: self.nnodes,
            format: self.output.format,
            lang: self.output.lang.clone(),
            catalog: self.scenario.catalog.clone(),
            data_dir: self.scenario.data_dir.clone(),
            solve: self.solve.as_deref().map(Solve::parse).transpose()?,
        };
        // `--phase X` and `--model X` are the overrides `--phase=X` and `--model=X`, in
        // command-line order with the FILEs.
        if let Some(phase) = &self.phase {
            r.inputs.push(Input::Override(format!("--phase={phase}")));
        }
        if let Some(model) = &self.scenario.model {
            r.inputs.push(Input::Override(format!("--model={model}")));
        }
        let mut items = self.inputs.iter();
        while let Some(item) = items.next() {
            let (flag, inline) = match item.split_once('=') {
                Some((f, v)) => (f, Some(v.to_owned())),
                None => (item.as_str(), None),
            };
            if !matches!(
                flag,
                "--gpu"
                    | "--set"
                    | "--format"
                    | "--lang"
                    | "--catalog"
                    | "--other-processes"
                    | "--nproc-per-node"
                    | "--nproc_per_node"
                    | "--nnodes"
                    | "--data-dir"
                    | "--phase"
                    | "--model"
                    | "--solve"
            ) {
                r.inputs.push(if item.starts_with("--") {
                    Input::Override(item.clone())
                } else {
                    Input::File(PathBuf::from(item))
                });
                continue;
            }
            let value = match inline.or_else(|| items.next().cloned()) {
                Some(v) => v,
                None => return Err(Box::new(Diagnostic::error(format!("{flag} needs a value")))),
            };
            match flag {
                "--phase" | "--model" => r.inputs.push(Input::Override(format!("{flag}={value}"))),
                "--solve" => r.solve = Some(Solve::parse(&value)?),
                "--gpu" => r.gpu = Some(value),
                "--other-processes" => r.other_processes = Some(value),
                "--nproc-per-node" | "--nproc_per_node" | "--nnodes" => {
                    let n = value
                        .parse::<u64>()
                        .ok()
                        .filter(|&n| n >= 1)
                        .ok_or_else(|| {
                            Diagnostic::error(format!(
                                "{flag} {value}: expected a whole number of at least 1"
                            ))
                            .with_help("as torchrun takes it, e.g. --nproc-per-node 8")
                        })?;
                    if flag == "--nnodes" {
                        r.nnodes = Some(n);
                    } else {
                        r.nproc_per_node = Some(n);
                    }
                }
                "--set" => r.sets.push(value),
                "--lang" => r.lang = value,
                "--catalog" => r.catalog = Some(PathBuf::from(value)),
                "--data-dir" => r.data_dir = Some(PathBuf::from(value)),
                _ => {
                    r.format = Format::parse(&value).ok_or_else(|| {
                        Diagnostic::error(format!("--format {value}: unknown format"))
                            .with_help("use table, markdown or json")
                    })?
                }
            }
        }
        Ok(r)
    }
}

/// Runs `vramdoc estimate`; prints the report to stdout, notes and errors to stderr; returns the
/// exit code.
pub(crate) fn run(args: &EstimateArgs) -> i32 {
    match report_with_notes(args) {
        Ok((text, notes)) => {
            for note in capped_notes(&notes) {
                crate::terminal::eprint_note(&note);
            }
            crate::terminal::print_out(&text);
            0
        }
        Err(diags) => {
            super::print_diagnostics(&diags);
            1
        }
    }
}

/// The notes to print: the first [`crate::diagnostics::MAX_PRINTED`], then a count of the rest
/// (a config of thousands of skipped lines would otherwise print megabytes).
fn capped_notes(notes: &[String]) -> Vec<String> {
    let max = crate::diagnostics::MAX_PRINTED;
    let mut out: Vec<String> = notes.iter().take(max).cloned().collect();
    if notes.len() > max {
        let rest = notes.len() - max;
        out.push(format!(
            "... and {rest} more note{} not shown",
            if rest == 1 { "" } else { "s" }
        ));
    }
    out
}

/// The whole report as a string, or the first error.
pub fn report(args: &EstimateArgs) -> Result<String, Box<Diagnostic>> {
    report_with_notes(args)
        .map(|(text, _)| text)
        .map_err(|mut diags| Box::new(diags.remove(0)))
}

/// The report and the notes on the config files' skipped statements and assumptions, or every
/// error found in the inputs (at least one).
pub(crate) fn report_with_notes(
    args: &EstimateArgs,
) -> Result<(String, Vec<String>), Vec<Diagnostic>> {
    report_inner(args).map_err(|e| e.0)
}

/// Errors of `vramdoc estimate`: the inputs' are all reported, the others one at a time.
struct Errors(Vec<Diagnostic>);

impl From<Diagnostic> for Errors {
    fn from(d: Diagnostic) -> Self {
        Errors(vec![d])
    }
}

impl From<Box<Diagnostic>> for Errors {
    fn from(d: Box<Diagnostic>) -> Self {
        Errors(vec![*d])
    }
}

/// The localizer of `--lang`.
fn localizer(lang: &str) -> Result<Localizer, Box<Diagnostic>> {
    Localizer::for_flag(lang)
}

fn report_inner(args: &EstimateArgs) -> Result<(String, Vec<String>), Errors> {
    let args = args.resolve()?;
    let catalog = catalog_with(args.catalog.as_deref()).map_err(Errors)?;
    let mut loaded = input::load(&input::Sources {
        inputs: &args.inputs,
        sets: &args.sets,
        gpu: args.gpu.as_deref(),
        catalog: &catalog,
        base: args
            .data_dir
            .as_deref()
            .unwrap_or(std::path::Path::new(".")),
    })
    .map_err(Errors)?;
    let mut notes = std::mem::take(&mut loaded.notes);
    // A card whose capacity no printed message backs: say so, once, with how to give the real one.
    let card = loaded
        .scenario
        .gpu
        .as_deref()
        .and_then(|id| catalog.get(id));
    notes.extend(card.and_then(|g| g.unsourced_capacity_note(None)));
    if (args.nproc_per_node.is_some() || args.nnodes.is_some()) && loaded.sampling.is_some() {
        return Err(Diagnostic::error(
            "--nproc-per-node/--nnodes: a DDP job is training; sample.py runs one process, and this scenario is phase = generate".to_owned(),
        )
        .with_help("drop --nproc-per-node and --nnodes to estimate sampling")
        .into());
    }
    if args.nproc_per_node.is_some() || args.nnodes.is_some() {
        let (per_node, nodes) = (args.nproc_per_node.unwrap_or(1), args.nnodes.unwrap_or(1));
        let world = per_node
            .checked_mul(nodes)
            .and_then(|w| i64::try_from(w).ok())
            .ok_or_else(|| {
                Diagnostic::error(format!(
                    "--nproc-per-node {per_node} × --nnodes {nodes} is more processes than vramdoc can count (2^63 - 1)"
                ))
                .with_help("give the job's real GPUs per machine and machines, e.g. --nproc-per-node 8 --nnodes 2")
            })?;
        loaded
            .scenario
            .set("ddp_world_size", estimate::Literal::Int(world))
            .map_err(|e| Diagnostic::error(format!("--nproc-per-node/--nnodes: {}", e.message)))?;
    }
    if let Some(size) = &args.other_processes {
        set_other_processes(&mut loaded.scenario, size)?;
    }
    // With a model, an error that names no key is about the model.
    let model_key = loaded.model.as_ref().map(|_| "model");
    let scenario_error = |e: estimate::ScenarioError| {
        let origin = e
            .key
            .as_deref()
            .or(model_key)
            .and_then(|k| loaded.origins.get(k));
        let d = match origin {
            Some(o) => o.error(&e.to_string()),
            None => Diagnostic::error(e.to_string()),
        };
        d.with_help(match e.key.as_deref() {
            Some("gpu") => {
                "pick an id from the list above, or add the card with --catalog FILE".to_owned()
            }
            Some(key) => format!("fix `{key}` in the file or with --set {key}=VALUE"),
            None => "check the scenario's sizes".to_owned(),
        })
    };
    solve::needs_gpu(args.solve, &loaded.scenario)?;
    if let Some(run) = loaded.sampling {
        let est = estimate::estimate_sampling(&loaded.scenario, &run, &catalog)
            .map_err(scenario_error)?;
        let options =
            estimate::what_if_sampling(&loaded.scenario, &run, &catalog).map_err(scenario_error)?;
        let solved = match args.solve {
            Some(which) => Some((
                which,
                solve::for_sampling(which, &loaded.scenario, &run, &catalog)?
                    .map_err(scenario_error)?,
            )),
            None => None,
        };
        let mut text = match args.format {
            Format::Json => {
                let mut value =
                    serde_json::to_value(&est).map_err(|e| Diagnostic::error(e.to_string()))?;
                if let serde_json::Value::Object(map) = &mut value {
                    let list = serde_json::to_value(&options)
                        .map_err(|e| Diagnostic::error(e.to_string()))?;
                    map.insert("what_if".into(), list);
                    if let Some((which, sol)) = &solved {
                        map.insert("solve".into(), solve::json(*which, sol, run.max_new_tokens));
                    }
                }
                serde_json::to_string_pretty(&value)
                    .map_err(|e| Diagnostic::error(e.to_string()))?
                    + "\n"
            }
            Format::Markdown => sample_report::markdown(&est, &options, &localizer(&args.lang)?),
            Format::Table => sample_report::table(
                &est,
                &options,
                &localizer(&args.lang)?,
                &sample_report::ignored(&est, &loaded.ignored),
            ),
        };
        if let (Some((which, sol)), false) = (&solved, args.format == Format::Json) {
            for line in solve::sampling_text(*which, sol, &est, &localizer(&args.lang)?) {
                text.push('\n');
                text.push_str(&line);
                text.push('\n');
            }
        }
        return Ok((text, notes));
    }
    if let (Some(model), Some(g)) = (&loaded.model, &loaded.generation) {
        let out = super::generate::Output {
            format: args.format,
            lang: &args.lang,
            solve: args.solve,
        };
        let text =
            super::generate::report(model, &loaded.scenario, g, &catalog, &out, &scenario_error)?;
        return Ok((text, notes));
    }
    if let Some(which) = args.solve {
        return Err(solve::training_refused(which).into());
    }
    if let Some(model) = &loaded.model {
        let est = estimate::estimate_model(&model.architecture, &loaded.scenario, &catalog)
            .map_err(|e| super::model_report::refusal(model, scenario_error(e)))?;
        let options = estimate::what_if_model(&model.architecture, &loaded.scenario, &catalog)
            .map_err(scenario_error)?;
        let text = super::model_report::render(
            &est,
            &options,
            model,
            args.format,
            &args.lang,
            &loaded.ignored,
        )?;
        return Ok((text, notes));
    }
    let est = estimate::estimate(&loaded.scenario, &catalog).map_err(scenario_error)?;
    let options = estimate::what_if(&loaded.scenario, &catalog).map_err(scenario_error)?;
    if args.format == Format::Json {
        let mut value = serde_json::to_value(&est).map_err(|e| Diagnostic::error(e.to_string()))?;
        if let serde_json::Value::Object(map) = &mut value {
            let list =
                serde_json::to_value(&options).map_err(|e| Diagnostic::error(e.to_string()))?;
            map.insert("what_if".to_owned(), list);
        }
        let text =
            serde_json::to_string_pretty(&value).map_err(|e| Diagnostic::error(e.to_string()))?;
        return Ok((text + "\n", notes));
    }
    let loc = localizer(&args.lang)?;
    let text = match args.format {
        Format::Markdown => estimate_report::markdown(&est, &options, &loc),
        _ => estimate_report::table(&est, &options, &loc, &loaded.ignored),
    };
    Ok((text, notes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use std::path::Path;

    #[derive(Parser)]
    struct TestCli {
        #[command(flatten)]
        args: EstimateArgs,
    }

    #[test]
    fn nanogpt_style_overrides_mix_with_flags() {
        for argv in [
            &[
                "x",
                "--gpu",
                "t4",
                "cfg.py",
                "--batch_size=8",
                "--compile=False",
            ][..],
            &[
                "x",
                "cfg.py",
                "--batch_size=8",
                "--gpu",
                "t4",
                "--compile=False",
            ],
            &[
                "x",
                "--batch_size=8",
                "--gpu=t4",
                "--compile=False",
                "cfg.py",
            ],
        ] {
            let r = TestCli::try_parse_from(argv)
                .unwrap()
                .args
                .resolve()
                .unwrap();
            let files: Vec<_> = r
                .inputs
                .iter()
                .filter_map(|i| match i {
                    Input::File(f) => Some(f.as_path()),
                    Input::Override(_) => None,
                })
                .collect();
            assert_eq!(files, [Path::new("cfg.py")], "{argv:?}");
            let overrides: Vec<_> = r
                .inputs
                .iter()
                .filter_map(|i| match i {
                    Input::Override(o) => Some(o.as_str()),
                    Input::File(_) => None,
                })
                .collect();
            assert_eq!(overrides, ["--batch_size=8", "--compile=False"], "{argv:?}");
            assert_eq!(r.gpu.as_deref(), Some("t4"), "{argv:?}");
        }
        let r = TestCli::try_parse_from([
            "x",
            "c.yaml",
            "--format",
            "json",
            "--set",
            "n_layer=6",
            "--lang=zh",
        ])
        .unwrap()
        .args
        .resolve()
        .unwrap();
        assert_eq!(
            (r.sets, r.format, r.lang.as_str()),
            (vec!["n_layer=6".to_owned()], Format::Json, "zh")
        );
        let two = TestCli::try_parse_from(["x", "a.py", "--n_layer=2", "b.py"])
            .unwrap()
            .args
            .resolve()
            .unwrap();
        assert_eq!(
            two.inputs,
            [
                Input::File("a.py".into()),
                Input::Override("--n_layer=2".into()),
                Input::File("b.py".into())
            ]
        );
    }
}
