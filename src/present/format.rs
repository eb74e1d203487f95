//! How a command's report is written: for people in a terminal, as Markdown, or as JSON.

/// Output formats of `vramdoc estimate` and `vramdoc diagnose`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// A readable terminal report.
    Table,
    /// Markdown a guide can embed.
    Markdown,
    /// The result as JSON (the contract in docs/contracts.md).
    Json,
}

impl Format {
    /// The names the command line takes, in this order.
    pub const NAMES: [&'static str; 3] = ["table", "markdown", "json"];

    /// The format named `name` (ignoring ASCII case).
    pub fn parse(name: &str) -> Option<Format> {
        match name.to_ascii_lowercase().as_str() {
            "table" => Some(Format::Table),
            "markdown" => Some(Format::Markdown),
            "json" => Some(Format::Json),
            _ => None,
        }
    }
}
