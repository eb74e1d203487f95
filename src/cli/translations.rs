//! `vramdoc translations mark|status`: the subcommands' flags, and printing what
//! [`crate::translations::command`] returns.

use std::path::PathBuf;

use super::print_diagnostics;
use crate::translations::command::{mark, status, StatusFormat};

/// Output format of `vramdoc translations status`.
#[derive(clap::ValueEnum, Clone, Copy, Debug)]
pub enum StatusFormatArg {
    /// A line per guide and language, then the sections that are not current.
    Text,
    /// One JSON array: `{guide, lang, section, state}` per translated section.
    Json,
}

impl From<StatusFormatArg> for StatusFormat {
    fn from(f: StatusFormatArg) -> Self {
        match f {
            StatusFormatArg::Text => StatusFormat::Text,
            StatusFormatArg::Json => StatusFormat::Json,
        }
    }
}

/// `vramdoc translations …`.
#[derive(clap::Subcommand, Debug)]
pub enum TranslationsCommand {
    /// Record that LANG's translation of GUIDE was made from the source as it is now: all its
    /// sections, or only those named (by id). Run it after updating a translation.
    Mark {
        /// The translation's language (not the site's default language).
        lang: String,
        /// The guide's slug (its folder under content/).
        guide: String,
        /// Section ids (`_intro` for the text before the first heading); all when none.
        sections: Vec<String>,
        /// The site root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
    /// Each translated section: current, stale (its source changed since it was marked) or
    /// missing.
    Status {
        /// Only this language.
        #[arg(long)]
        lang: Option<String>,
        /// Report format.
        #[arg(long, value_enum, default_value = "text")]
        format: StatusFormatArg,
        /// The site root.
        #[arg(long, default_value = ".")]
        root: PathBuf,
    },
}

/// Runs a `translations` subcommand; returns the exit code.
pub fn run(command: &TranslationsCommand) -> i32 {
    let result = match command {
        TranslationsCommand::Mark {
            lang,
            guide,
            sections,
            root,
        } => mark(root, lang, guide, sections),
        TranslationsCommand::Status { lang, format, root } => {
            status(root, lang.as_deref(), (*format).into())
        }
    };
    match result {
        Ok(text) => {
            crate::terminal::print_out(&text);
            0
        }
        Err(errors) => {
            print_diagnostics(&errors);
            1
        }
    }
}
