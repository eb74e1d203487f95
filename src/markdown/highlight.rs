//! Build-time syntax highlighting of fenced code with class-based spans (syntect).

use std::sync::{Arc, OnceLock};

use syntect::html::{ClassStyle, ClassedHTMLGenerator};
use syntect::parsing::{SyntaxDefinition, SyntaxReference, SyntaxSet, SyntaxSetBuilder};
use syntect::util::LinesWithEndings;

use super::escape::escape_html;
use crate::cache::BoundedCache;

/// Every highlighted token class starts with this prefix, so the CSS cannot clash with the site's.
const CLASS_STYLE: ClassStyle = ClassStyle::SpacedPrefixed { prefix: "hl-" };

/// Compact grammars for the languages guides use most. syntect's bundled Python and Bash
/// grammars cost ~200 µs a line with fancy-regex (their look-arounds run in its backtracking
/// VM), which alone would cap a build below 1,000 pages/s; these avoid look-arounds. The YAML
/// one spares a one-page rebuild loading syntect's whole bundled set for a config snippet.
const COMPACT_SYNTAXES: [&str; 3] = [
    include_str!("syntaxes/python.sublime-syntax"),
    include_str!("syntaxes/shell.sublime-syntax"),
    include_str!("syntaxes/yaml.sublime-syntax"),
];

/// The compact grammars compiled: syntect's dump of [`build_compact_set`]. Loading it takes
/// about 0.2 ms where building the set from its YAML took 5 to 9, a large part of rebuilding one
/// page. A test rebuilds the set and fails when the dump differs (`VRAMDOC_BLESS=1` rewrites it).
const COMPACT_DUMP: &[u8] = include_bytes!("syntaxes/compact.packdump");

/// syntect's bundled grammars, for every other language.
fn default_set() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(SyntaxSet::load_defaults_newlines)
}

/// The compact grammars, from their dump (or built, should the dump not load).
fn compact_set() -> &'static SyntaxSet {
    static SET: OnceLock<SyntaxSet> = OnceLock::new();
    SET.get_or_init(|| {
        syntect::dumps::from_reader(COMPACT_DUMP).unwrap_or_else(|_| build_compact_set())
    })
}

/// The compact grammars built from their YAML; one that failed to load (a unit test guards
/// against it) leaves its language to the bundled grammar.
fn build_compact_set() -> SyntaxSet {
    let mut builder = SyntaxSetBuilder::new();
    for source in COMPACT_SYNTAXES {
        if let Ok(definition) = SyntaxDefinition::load_from_str(source, true, None) {
            builder.add(definition);
        }
    }
    builder.build()
}

/// The grammar (and the set it belongs to) for a fence's language token: a compact one when
/// there is one, else syntect's; `None` when unknown or plain text.
fn find_syntax(lang: &str) -> Option<(&'static SyntaxReference, &'static SyntaxSet)> {
    let compact = compact_set();
    if let Some(syntax) = compact.find_syntax_by_token(lang) {
        return Some((syntax, compact));
    }
    let set = default_set();
    set.find_syntax_by_token(lang)
        .filter(|syntax| syntax.name != "Plain Text")
        .map(|syntax| (syntax, set))
}

/// Appends the contents of a `<code>` element for `code`: class-based spans when `lang` is a
/// known language, escaped plain text otherwise (also when highlighting fails).
///
/// Highlighted blocks are cached by (language, code): a guide's translations share their code
/// blocks, and highlighting is the costliest part of rendering a page.
pub(crate) fn push_code_html(out: &mut String, code: &str, lang: Option<&str>) {
    let Some((syntax, set)) = lang.and_then(find_syntax) else {
        escape_html(out, code);
        return;
    };
    let key = (syntax.name.clone(), code.to_string());
    if let Some(html) = cache().get(&key) {
        out.push_str(&html);
        return;
    }
    match highlight(code, syntax, set) {
        Some(html) => {
            out.push_str(&html);
            let bytes = key.1.len() + html.len();
            cache().insert(key, Arc::from(html), bytes);
        }
        None => escape_html(out, code),
    }
}

/// Highlighted blocks by (syntax name, code): at most 4 MiB of code and HTML, since the
/// translations that share a block are rendered close together.
fn cache() -> &'static BoundedCache<(String, String), Arc<str>> {
    static CACHE: OnceLock<BoundedCache<(String, String), Arc<str>>> = OnceLock::new();
    CACHE.get_or_init(|| BoundedCache::new(4 << 20))
}

fn highlight(code: &str, syntax: &SyntaxReference, set: &SyntaxSet) -> Option<String> {
    let mut generator = ClassedHTMLGenerator::new_with_class_style(syntax, set, CLASS_STYLE);
    for line in LinesWithEndings::from(code) {
        generator
            .parse_html_for_line_which_includes_newline(line)
            .ok()?;
    }
    Some(generator.finalize())
}

/// CSS for the highlighted spans (`highlight.css`): one palette of colour variables per colour
/// scheme and one set of class rules, so the dark scheme can never lose to a more specific light
/// selector (syntect's generated theme CSS had exactly that bug).
pub(crate) fn highlight_css() -> &'static str {
    include_str!("highlight.css")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_grammars_load() {
        for source in COMPACT_SYNTAXES {
            if let Err(error) = SyntaxDefinition::load_from_str(source, true, None) {
                panic!("compact grammar does not load: {error}");
            }
        }
        for lang in ["py", "python", "sh", "bash", "shell", "zsh", "yaml", "yml"] {
            let (syntax, _) = find_syntax(lang).expect(lang);
            assert!(
                syntax.name.ends_with("(vramdoc)"),
                "{lang}: {}",
                syntax.name
            );
        }
        assert_eq!(
            find_syntax("json").map(|(s, _)| s.name.as_str()),
            Some("JSON")
        );
        assert!(find_syntax("text").is_none());
        assert!(find_syntax("nosuchlang").is_none());
    }

    /// The committed dump is what the grammars build to today (syntect's dumps are
    /// deterministic); `VRAMDOC_BLESS=1 cargo test compact_dump` rewrites it after a grammar edit.
    #[test]
    fn compact_dump_matches_the_grammars() {
        let fresh = syntect::dumps::dump_binary(&build_compact_set());
        if std::env::var_os("VRAMDOC_BLESS").is_some() {
            let path = concat!(
                env!("CARGO_MANIFEST_DIR"),
                "/src/markdown/syntaxes/compact.packdump"
            );
            std::fs::write(path, &fresh).unwrap();
            return;
        }
        assert!(
            fresh == COMPACT_DUMP,
            "src/markdown/syntaxes/compact.packdump is out of date: run `VRAMDOC_BLESS=1 cargo test compact_dump` and commit it"
        );
        let loaded: SyntaxSet = syntect::dumps::from_reader(COMPACT_DUMP).unwrap();
        let names: Vec<&str> = loaded.syntaxes().iter().map(|s| s.name.as_str()).collect();
        assert_eq!(
            names,
            ["Python (vramdoc)", "Shell (vramdoc)", "YAML (vramdoc)"]
        );
    }
}
