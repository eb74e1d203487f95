//! Build-time syntax highlighting of fenced code with class-based spans (syntect).

use std::sync::OnceLock;

use syntect::highlighting::ThemeSet;
use syntect::html::{css_for_theme_with_class_style, ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::{SyntaxReference, SyntaxSet};
use syntect::util::LinesWithEndings;

use super::escape::escape_html;

/// Every highlighted token class starts with this prefix, so the CSS cannot clash with the site's.
const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };
/// Theme used by default (light backgrounds).
const LIGHT_THEME: &str = "InspiredGitHub";
/// Theme used under `prefers-color-scheme: dark`.
const DARK_THEME: &str = "base16-ocean.dark";

/// Common names that are neither a syntect extension nor a syntax name.
const ALIASES: &[(&str, &str)] = &[("shell", "sh"), ("zsh", "sh")];

fn syntax_set() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The syntax for a fence's language token, or `None` when unknown or plain text.
fn find_syntax(lang: &str) -> Option<&'static SyntaxReference> {
    let set = syntax_set();
    let lower = lang.to_ascii_lowercase();
    let token = ALIASES
        .iter()
        .find(|(alias, _)| *alias == lower)
        .map_or(lower.as_str(), |(_, target)| target);
    set.find_syntax_by_token(token)
        .filter(|syntax| syntax.name != "Plain Text")
}

/// Appends the contents of a `<code>` element for `code`: class-based spans when `lang` is a
/// known language, escaped plain text otherwise (also when highlighting fails).
pub(crate) fn push_code_html(out: &mut String, code: &str, lang: Option<&str>) {
    if let Some(html) = lang.and_then(find_syntax).and_then(|s| highlight(code, s)) {
        out.push_str(&html);
    } else {
        escape_html(out, code);
    }
}

fn highlight(code: &str, syntax: &SyntaxReference) -> Option<String> {
    let mut generator =
        ClassedHTMLGenerator::new_with_class_style(syntax, syntax_set(), CLASS_STYLE);
    for line in LinesWithEndings::from(code) {
        generator
            .parse_html_for_line_which_includes_newline(line)
            .ok()?;
    }
    Some(generator.finalize())
}

/// CSS for the highlighted spans: the light theme, then the dark one inside
/// `@media (prefers-color-scheme: dark)`. The theme's base colours apply to `pre.code`.
pub(crate) fn highlight_css() -> &'static str {
    static CSS: OnceLock<String> = OnceLock::new();
    CSS.get_or_init(|| {
        let themes = ThemeSet::load_defaults();
        let mut css = String::new();
        if let Some(light) = themes.themes.get(LIGHT_THEME) {
            css.push_str(&theme_css(light));
        }
        if let Some(dark) = themes.themes.get(DARK_THEME) {
            css.push_str("\n@media (prefers-color-scheme: dark) {\n");
            css.push_str(&theme_css(dark));
            css.push_str("}\n");
        }
        css
    })
}

fn theme_css(theme: &syntect::highlighting::Theme) -> String {
    // syntect only fails here on a formatting error into a String, which cannot happen; an
    // empty string (unstyled code) is the harmless fallback.
    css_for_theme_with_class_style(theme, CLASS_STYLE)
        .map(|css| css.replacen(".hl-code {", "pre.code {", 1))
        .unwrap_or_default()
}
