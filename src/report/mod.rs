//! `vramdoc estimate`: one scenario's memory breakdown, verdict and options, in the terminal,
//! as Markdown or as JSON.
//!
//! The estimator itself is pure ([`crate::estimate`]); this module reads the inputs
//! ([`input`]); [`crate::present`] formats the results (`estimate_report`, `sample_report`).

mod artifacts;
pub(crate) mod input;
mod nanogpt;
mod pickle;
mod pyconfig;

use std::path::PathBuf;

use crate::diagnostics::Diagnostic;
use crate::estimate::{self, GpuCatalog};
use crate::i18n::Localizer;
use crate::present::{estimate_report, sample_report};

/// The flags `vramdoc estimate` and `vramdoc diagnose` share: how to print, in which language,
/// and extra GPUs for the catalog.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(long, value_enum, default_value_t = Format::Table)]
    pub format: Format,
    /// Language of the table and Markdown output (en, es, zh).
    #[arg(long, default_value = "en")]
    pub lang: String,
    /// A YAML file of extra GPUs (`gpus:` list with id, name, capacity_bytes).
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
}

/// Arguments of `vramdoc estimate`.
#[derive(clap::Args, Debug, Clone)]
pub struct EstimateArgs {
    /// FILEs (YAML scenarios or nanoGPT Python configs; `-` is standard input) and nanoGPT-style
    /// `--key=value` overrides, applied in order as nanoGPT's `train.py config/x.py --batch_size=8`
    /// applies them.
    #[arg(value_name = "FILE | --KEY=VALUE", allow_hyphen_values = true)]
    pub inputs: Vec<String>,
    /// Set a scenario key, e.g. `--set batch_size=8` (repeatable; Python literals).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Check the estimate against this GPU (e.g. rtx-4070, rtx-3060-12gb, a100-80gb).
    #[arg(long, value_name = "ID")]
    pub gpu: Option<String>,
    /// Memory other programs hold on the card, as nvidia-smi lists them ("2.1 GiB", "2150 MiB"
    /// or bytes): counted in the verdict. Sets the scenario key `other_processes`.
    #[arg(long, value_name = "SIZE")]
    pub other_processes: Option<String>,
    /// torchrun's `--nproc_per_node`: GPUs per machine of a DDP job (the estimate is per GPU;
    /// train.py divides `gradient_accumulation_steps` among the processes).
    #[arg(long, value_name = "N")]
    pub nproc_per_node: Option<u64>,
    /// torchrun's `--nnodes`: machines of a DDP job.
    #[arg(long, value_name = "N")]
    pub nnodes: Option<u64>,
    /// Output format, language and extra GPUs.
    #[command(flatten)]
    pub output: OutputArgs,
    /// The folder train.py runs in, where `data/<dataset>/meta.pkl` and `<out_dir>/ckpt.pt` are
    /// read [default: the working folder].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// The arguments with vramdoc's own flags separated from nanoGPT-style overrides.
///
/// Once clap starts collecting `inputs` it keeps everything that follows, so flags such as
/// `--gpu t4` written after the file arrive there; [`EstimateArgs::resolve`] takes them back out.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Request {
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
}

/// One input of `vramdoc estimate`, applied in command-line order.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Input {
    /// A YAML scenario or a nanoGPT Python config (`-`: standard input).
    File(PathBuf),
    /// A nanoGPT-style `--key=value` override.
    Override(String),
}

impl EstimateArgs {
    /// Separates FILE, overrides and any of vramdoc's flags that clap left in `inputs`.
    pub(crate) fn resolve(&self) -> Result<Request, Box<Diagnostic>> {
        let mut r = Request {
            inputs: Vec::new(),
            sets: self.set.clone(),
            gpu: self.gpu.clone(),
            other_processes: self.other_processes.clone(),
            nproc_per_node: self.nproc_per_node,
            nnodes: self.nnodes,
            format: self.output.format,
            lang: self.output.lang.clone(),
            catalog: self.output.catalog.clone(),
            data_dir: self.data_dir.clone(),
        };
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
                    r.format =
                        <Format as clap::ValueEnum>::from_str(&value, true).map_err(|_| {
                            Diagnostic::error(format!("--format {value}: unknown format"))
                                .with_help("use table, markdown or json")
                        })?
                }
            }
        }
        Ok(r)
    }
}

/// Output formats of `vramdoc estimate`.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A readable terminal report.
    Table,
    /// Markdown a guide can embed.
    Markdown,
    /// The estimate as JSON (the contract in docs/contracts.md), plus a `what_if` list.
    Json,
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
            crate::cli::print_diagnostics(&diags);
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

/// The built-in GPU catalog plus `--catalog FILE`'s cards (`estimate` and `diagnose`); every
/// bad entry is reported, each at its line.
pub(crate) fn catalog_with(path: Option<&std::path::Path>) -> Result<GpuCatalog, Vec<Diagnostic>> {
    let mut catalog = GpuCatalog::builtin();
    let Some(path) = path else {
        return Ok(catalog);
    };
    let text = input::read_capped_text(Some(path)).map_err(|e| {
        vec![Diagnostic::error(format!("cannot read the GPU catalog: {e}")).in_file(path)]
    })?;
    let doc = input::parse_yaml(path, &text, crate::yaml_input::MAX_CATALOG_YAML_BYTES)
        .map_err(|d| vec![*d])?;
    let source: std::sync::Arc<str> = std::sync::Arc::from(text.as_str());
    catalog.extend_checked(&text, &doc).map_err(|problems| {
        problems
            .into_iter()
            .map(|p| {
                let d = Diagnostic::error(p.message).in_file(path);
                match p.line {
                    Some(line) => d.at(line, 1).with_source(source.clone()),
                    None => d,
                }
            })
            .collect::<Vec<_>>()
    })?;
    Ok(catalog)
}

/// The localizer of `--lang` (`estimate` and `diagnose`).
pub(crate) fn localizer(lang: &str) -> Result<Localizer, Box<Diagnostic>> {
    Localizer::builtin(lang).map_err(|diags| {
        let detail = diags.first().map(|d| d.render()).unwrap_or_default();
        Box::new(
            Diagnostic::error(format!("--lang {lang}: no such language ({detail})"))
                .with_help("use en, es or zh"),
        )
    })
}

/// Applies `--other-processes SIZE` to a scenario (`estimate` and `diagnose`).
pub(crate) fn set_other_processes(
    scenario: &mut estimate::Scenario,
    size: &str,
) -> Result<(), Box<Diagnostic>> {
    scenario
        .set("other_processes", estimate::Literal::Str(size.to_owned()))
        .map_err(|e| {
            Box::new(
                Diagnostic::error(format!("--other-processes {size}: {}", e.message))
                    .with_help("give the memory nvidia-smi lists for the other processes, e.g. --other-processes \"2.1 GiB\""),
            )
        })
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
    let notes = std::mem::take(&mut loaded.notes);
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
    let scenario_error = |e: estimate::ScenarioError| {
        let origin = e.key.as_deref().and_then(|k| loaded.origins.get(k));
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
    if let Some(run) = loaded.sampling {
        let est = estimate::estimate_sampling(&loaded.scenario, &run, &catalog)
            .map_err(scenario_error)?;
        let text = match args.format {
            Format::Json => {
                serde_json::to_string_pretty(&est).map_err(|e| Diagnostic::error(e.to_string()))?
                    + "\n"
            }
            Format::Markdown => sample_report::markdown(&est, &localizer(&args.lang)?),
            Format::Table => sample_report::table(
                &est,
                &localizer(&args.lang)?,
                &sample_report::ignored(&est, &loaded.ignored),
            ),
        };
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
    struct Cli {
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
            let r = Cli::try_parse_from(argv).unwrap().args.resolve().unwrap();
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
        let r = Cli::try_parse_from([
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
        let two = Cli::try_parse_from(["x", "a.py", "--n_layer=2", "b.py"])
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
