//! The flags `vramdoc estimate` and `vramdoc diagnose` share: the scenario's (`--set`, `--gpu`,
//! `--other-processes`, `--catalog`, `--data-dir`) and the output's (`--format`, `--lang`).

use std::path::PathBuf;

use clap::builder::TypedValueParser as _;

use crate::diagnostics::Diagnostic;
use crate::estimate::{self, Scenario};
use crate::present::Format;

/// The scenario flags, flattened into `estimate` and `diagnose`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct ScenarioArgs {
    /// Set a scenario key, e.g. `--set batch_size=8` (repeatable; Python literals).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// The GPU (a catalog id such as rtx-4070, rtx-3060-12gb, a100-80gb). diagnose: by default
    /// the catalog card whose capacity the message prints, or that capacity itself.
    #[arg(long, value_name = "ID")]
    pub gpu: Option<String>,
    /// Memory other programs hold on the card, as nvidia-smi lists them ("2.1 GiB", "2150 MiB"
    /// or bytes): counted in the verdict. Sets the scenario key `other_processes`; diagnose: by
    /// default the scenario's, else what the message implies.
    #[arg(long, value_name = "SIZE")]
    pub other_processes: Option<String>,
    /// The model to train, when it is not nanoGPT's: an id of vramdoc's model catalog (gpt2,
    /// llama-3.1-8b, qwen2.5-7b, ...; data/models) or the path of a Hugging Face config.json.
    /// Its training step is a transformers Trainer step (the numbers follow transformers
    /// 5.24.0's modeling code), or TRL 0.29.1's SFTTrainer's with `--set trainer=trl`. Sets the
    /// scenario key `model`.
    #[arg(long, value_name = "ID|CONFIG.JSON")]
    pub model: Option<String>,
    /// A YAML file of extra GPUs (`gpus:` list with id, name, capacity_bytes).
    #[arg(long, value_name = "FILE")]
    pub catalog: Option<PathBuf>,
    /// The folder train.py runs in, where `data/<dataset>/meta.pkl` and `<out_dir>/ckpt.pt` are
    /// read [default: the working folder].
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,
}

/// How to print, and in which language.
#[derive(clap::Args, Debug, Clone)]
pub struct OutputArgs {
    /// Output format.
    #[arg(
        long,
        default_value = "table",
        value_parser = clap::builder::PossibleValuesParser::new(Format::NAMES)
            .try_map(|name: String| Format::parse(&name).ok_or("unknown format")),
    )]
    pub format: Format,
    /// Language of the table and Markdown output (en, es, zh).
    #[arg(long, default_value = "en")]
    pub lang: String,
}

impl Default for OutputArgs {
    fn default() -> Self {
        OutputArgs {
            format: Format::Table,
            lang: "en".into(),
        }
    }
}

/// Applies `--other-processes SIZE` to a scenario (`estimate` and `diagnose`).
pub(crate) fn set_other_processes(
    scenario: &mut Scenario,
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
