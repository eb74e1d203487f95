//! Problems found while reading or building a site: typed, located, and printed together.
//!
//! Every stage returns `Diagnostic`s rather than stopping at the first problem; `build` collects
//! them and prints them all (with a source snippet where one is known) before exiting non-zero.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use annotate_snippets::{AnnotationKind, Group, Level, Renderer, Snippet};

/// How serious a problem is: errors fail the build, warnings are printed and the build goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Severity {
    /// Printed; the build still succeeds.
    Warning,
    /// The build fails and the previous output is left untouched.
    Error,
}

/// One problem, pointing at a file, a 1-based line and column where known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Diagnostic {
    /// Error or warning.
    pub severity: Severity,
    /// The file the problem is in, relative to the site root where possible.
    pub file: Option<PathBuf>,
    /// 1-based line in `file`.
    pub line: Option<usize>,
    /// 1-based column (in characters) in `line`.
    pub column: Option<usize>,
    /// What is wrong.
    pub message: String,
    /// What to do about it.
    pub help: Option<String>,
    /// The file's text, for a snippet under the message.
    pub source: Option<Arc<str>>,
}

impl Diagnostic {
    /// An error with a message and nothing else yet.
    pub fn error(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Error,
            file: None,
            line: None,
            column: None,
            message: message.into(),
            help: None,
            source: None,
        }
    }

    /// A warning with a message and nothing else yet.
    pub fn warning(message: impl Into<String>) -> Self {
        Diagnostic {
            severity: Severity::Warning,
            ..Diagnostic::error(message)
        }
    }

    /// Points the diagnostic at a file.
    pub fn in_file(mut self, file: impl AsRef<Path>) -> Self {
        self.file = Some(file.as_ref().to_path_buf());
        self
    }

    /// Points the diagnostic at a 1-based line and column.
    pub fn at(mut self, line: usize, column: usize) -> Self {
        self.line = Some(line.max(1));
        self.column = Some(column.max(1));
        self
    }

    /// Adds advice on how to fix the problem.
    pub fn with_help(mut self, help: impl Into<String>) -> Self {
        self.help = Some(help.into());
        self
    }

    /// Attaches the file's text so the rendering can show the offending line.
    pub fn with_source(mut self, source: Arc<str>) -> Self {
        self.source = Some(source);
        self
    }

    /// True for errors (which fail a build).
    pub fn is_error(&self) -> bool {
        self.severity == Severity::Error
    }

    /// `file:line:column`, as far as known.
    pub fn location(&self) -> String {
        let mut out = match &self.file {
            Some(f) => f.display().to_string(),
            None => String::new(),
        };
        if let Some(line) = self.line {
            out.push_str(&format!(":{line}"));
            if let Some(col) = self.column {
                out.push_str(&format!(":{col}"));
            }
        }
        out
    }

    /// Renders the diagnostic for a terminal, with a snippet of the offending line when the
    /// source is attached.
    pub fn render(&self) -> String {
        let level = match self.severity {
            Severity::Error => Level::ERROR,
            Severity::Warning => Level::WARNING,
        };
        let path = self
            .file
            .as_ref()
            .map(|f| f.display().to_string())
            .unwrap_or_default();
        let title = self.message.clone();
        let mut group = Group::with_title(level.primary_title(title.as_str()));
        if let (Some(source), Some(line)) = (&self.source, self.line) {
            if let Some(text) = line_text(source, line) {
                let (text, col) = snippet_window(text, self.column.unwrap_or(1));
                let offset = text
                    .char_indices()
                    .nth(col - 1)
                    .map(|(i, _)| i)
                    .unwrap_or(text.len());
                let end = text[offset..]
                    .chars()
                    .next()
                    .map(|c| offset + c.len_utf8())
                    .unwrap_or(offset);
                group = group.element(
                    Snippet::source(text)
                        .line_start(line)
                        .path(path.as_str())
                        .annotation(AnnotationKind::Primary.span(offset..end.max(offset))),
                );
            }
        } else if !path.is_empty() {
            group = group.element(Level::NOTE.message(format!("in {}", self.location())));
        }
        let mut report: Vec<Group<'_>> = vec![group];
        if let Some(help) = &self.help {
            report.push(Group::with_title(
                Level::HELP.secondary_title(help.as_str()),
            ));
        }
        Renderer::plain().render(&report)
    }
}

/// Characters of a long line shown on each side of the column a diagnostic points at.
const SNIPPET_CONTEXT: usize = 60;

/// The part of a line a snippet shows, and the column within it: the whole line when short,
/// else [`SNIPPET_CONTEXT`] characters on each side of `col`, so rendering a diagnostic on a
/// line of megabytes costs as little as on a short one.
fn snippet_window(text: &str, col: usize) -> (&str, usize) {
    let col = col.max(1);
    if text.len() <= 4 * SNIPPET_CONTEXT {
        return (text, col);
    }
    let skip = col.saturating_sub(SNIPPET_CONTEXT + 1);
    let mut chars = text.char_indices().skip(skip);
    let Some((start, _)) = chars.next() else {
        return (&text[text.len()..], 1);
    };
    let end = chars
        .nth(2 * SNIPPET_CONTEXT)
        .map_or(text.len(), |(i, _)| i);
    (&text[start..end], col - skip)
}

/// The text of a 1-based line, without its line ending.
fn line_text(source: &str, line: usize) -> Option<&str> {
    source
        .split('\n')
        .nth(line.checked_sub(1)?)
        .map(|t| t.trim_end_matches('\r'))
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match self.severity {
            Severity::Error => "error",
            Severity::Warning => "warning",
        };
        let loc = self.location();
        if loc.is_empty() {
            write!(f, "{kind}: {}", self.message)?;
        } else {
            write!(f, "{kind}: {loc}: {}", self.message)?;
        }
        if let Some(help) = &self.help {
            write!(f, " ({help})")?;
        }
        Ok(())
    }
}

impl std::error::Error for Diagnostic {}

/// Sorts diagnostics so reports are stable: by file, line, column, then message.
pub fn sort(diags: &mut [Diagnostic]) {
    diags.sort_by(|a, b| {
        (&a.file, a.line, a.column, &a.message).cmp(&(&b.file, b.line, b.column, &b.message))
    });
}

/// At most this many diagnostics are printed; a count stands for the rest.
pub const MAX_PRINTED: usize = 200;

/// Renders `diags` for a terminal: the first [`MAX_PRINTED`], then one line counting the errors
/// and warnings left out (a page can carry tens of thousands of the same warning).
pub fn render_capped(diags: &[Diagnostic]) -> Vec<String> {
    let mut out: Vec<String> = diags
        .iter()
        .take(MAX_PRINTED)
        .map(Diagnostic::render)
        .collect();
    if let Some(rest) = diags.get(MAX_PRINTED..).filter(|r| !r.is_empty()) {
        let errors = error_count(rest);
        let warnings = rest.len() - errors;
        let plural = |n: usize| if n == 1 { "" } else { "s" };
        out.push(format!(
            "... and {} more not shown ({errors} error{}, {warnings} warning{})",
            rest.len(),
            plural(errors),
            plural(warnings)
        ));
    }
    out
}

/// Counts the errors among `diags`.
pub fn error_count(diags: &[Diagnostic]) -> usize {
    diags.iter().filter(|d| d.is_error()).count()
}
