//! Everything clap, and nothing else: the flags of each subcommand, turned into typed requests
//! at this edge, and the runners that print (through [`crate::terminal`]). Below this module
//! nothing parses flags or writes to the terminal.

pub mod args;
pub mod diagnose;
pub mod estimate;
mod generate;
mod model_report;
pub(crate) mod solve;
pub mod translations;

use std::io::IsTerminal;
use std::path::PathBuf;

use clap::{Parser, Subcommand};
use indicatif::ProgressBar;

use crate::diagnostics::Diagnostic;
use crate::site::{self, BuildOptions};
use crate::terminal::{eprint_line, print_out};

/// vramdoc: GPU-memory troubleshooting guides in, a computed multilingual site out.
#[derive(Parser, Debug)]
#[command(name = "vramdoc", version, about, long_about = None)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the site: HTML pages, Markdown editions, charts, indexes and sitemap.
    Build {
        /// The site root (holds vramdoc.yaml and content/).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// The output folder [default: ROOT/public].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Render every page, ignoring what the previous build recorded.
        #[arg(long)]
        force: bool,
        /// No progress bar.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Estimate a nanoGPT training run's GPU memory: breakdown, verdict against a GPU, and what
    /// to change. FILE is a YAML scenario or a nanoGPT Python config; `--key=value` overrides work.
    #[command(after_long_help = crate::scenario::keys::help_list())]
    Estimate(estimate::EstimateArgs),
    /// Explain a PyTorch CUDA out-of-memory message: its numbers, other programs' memory, which
    /// tensor failed and when, fragmentation, and what to change. Reads a file, --message or stdin.
    Diagnose(diagnose::DiagnoseArgs),
    /// Check the site without writing it: errors, stale output, missing strings and
    /// translations, outdated translations, broken links. Exits non-zero on any problem.
    Check {
        /// The site root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// The output folder to compare with [default: ROOT/public].
        #[arg(long)]
        out: Option<PathBuf>,
        /// Report format.
        #[arg(long, value_enum, default_value = "text")]
        format: CheckFormat,
    },
    /// Translation records: `mark` a translation as made from the source as it is now, or see
    /// each translated section's `status` (current, stale, missing).
    #[command(subcommand)]
    Translations(translations::TranslationsCommand),
    /// Build, serve the output on 127.0.0.1, rebuild on changes and reload open pages.
    #[cfg(feature = "serve")]
    Serve {
        /// The site root (holds vramdoc.yaml and content/).
        #[arg(long, default_value = ".")]
        root: PathBuf,
        /// The port to listen on (127.0.0.1 only).
        #[arg(long, default_value_t = crate::serve::DEFAULT_PORT)]
        port: u16,
        /// The output folder [default: ROOT/public].
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// Output format of `vramdoc check`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum CheckFormat {
    /// Problems and a translation-status table, for people.
    Text,
    /// One JSON object, for tools.
    Json,
}

/// Parses the arguments, runs the subcommand, and returns the process exit code.
pub fn main() -> i32 {
    let cli = Cli::parse();
    if std::io::stdout().is_terminal() {
        // Reports fit the terminal; piped or redirected, a table keeps one line per row.
        let (_, columns) = console::Term::stdout().size();
        crate::present::wrap_tables_to(usize::from(columns));
    }
    match cli.command {
        Command::Estimate(args) => estimate::run(&args),
        Command::Diagnose(args) => diagnose::run(&args),
        Command::Translations(command) => translations::run(&command),
        Command::Check { root, out, format } => {
            let out = out.unwrap_or_else(|| root.join(site::DEFAULT_OUT));
            let report = crate::check::check(&root, &out);
            match format {
                CheckFormat::Text => print_out(&report.to_text()),
                CheckFormat::Json => print_out(&format!(
                    "{}\n",
                    serde_json::to_string_pretty(&report).unwrap_or_default()
                )),
            }
            i32::from(!report.ok())
        }
        Command::Build {
            root,
            out,
            force,
            quiet,
        } => run_build(
            BuildOptions::new(root, out)
                .force(force)
                .progress(if quiet {
                    |_| ProgressBar::hidden()
                } else {
                    progress_bar
                })
                .notify(crate::terminal::eprint_line),
        ),
        #[cfg(feature = "serve")]
        Command::Serve { root, port, out } => {
            crate::serve::run(&crate::serve::ServeOptions::new(root, out, port))
        }
    }
}

fn run_build(opts: BuildOptions) -> i32 {
    match site::try_build(&opts, None) {
        Ok(report) => {
            print_diagnostics(&report.warnings);
            print_out(&format!("{}\n", report.summary(&opts.out)));
            0
        }
        Err(failure) => {
            let diags = &failure.diagnostics;
            print_diagnostics(diags);
            let n = crate::diagnostics::error_count(diags);
            let state = match failure.output {
                site::OutputState::Unchanged => "was left unchanged",
                site::OutputState::Changed => {
                    "could not be restored (see above); the next build rewrites it"
                }
            };
            eprint_line(&format!(
                "build failed with {n} error{}; {} {state}",
                if n == 1 { "" } else { "s" },
                opts.out.display()
            ));
            1
        }
    }
}

/// Prints diagnostics to stderr, each with its snippet (the first
/// [`crate::diagnostics::MAX_PRINTED`], then a count of the rest), control characters shown as
/// visible symbols.
pub fn print_diagnostics(diags: &[Diagnostic]) {
    for text in crate::diagnostics::render_capped(diags) {
        eprint_line(&text);
    }
}

/// A progress bar on stderr for builds of more than a few hundred pages, hidden when stderr is
/// not a terminal (`--quiet` passes none).
fn progress_bar(jobs: usize) -> ProgressBar {
    if jobs < 300 || !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(jobs as u64);
    if let Ok(style) =
        indicatif::ProgressStyle::with_template("{bar:40} {pos}/{len} pages {elapsed}")
    {
        bar.set_style(style);
    }
    bar
}
