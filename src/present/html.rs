//! HTML for the pages' text: data made safe to put into Markdown, and byte figures that carry
//! their exact count.

use fluent_bundle::FluentValue;

use crate::i18n::Localizer;

/// Text from data (GPU names from a site's catalog, scenario values) made safe to put into
/// Markdown: HTML's special characters become entities, so they show as written.
pub(crate) fn escape_text(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    crate::markdown::escape_html(&mut out, text);
    out
}

/// A byte figure with the exact count in its `title`.
pub(crate) fn figure(loc: &Localizer, bytes: u64, shown: String) -> String {
    let exact = loc.t_args(
        "exact-bytes",
        &[("bytes", FluentValue::from(loc.int(bytes)))],
    );
    format!("<span class=\"figure\" title=\"{exact}\">{shown}</span>")
}
