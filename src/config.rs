//! The site configuration, `vramdoc.yaml` at the site root.
//!
//! ```yaml
//! title: GPU memory guides          # or a map per language: { en: ..., es: ..., zh: ... }
//! base_url: https://example.org/docs/
//! languages: [en, es, zh]
//! default_language: en
//! follow_external_symlinks: false   # read files that symlinks lead to outside the site
//! markdown: { unsafe_html: false }  # true keeps raw HTML and javascript:/data: URLs in guides
//! translations: { stale: error }      # `warning`: stale or missing sections do not fail `check`
//! ```
//!
//! Every problem is reported at once, each at its line in the file.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::diagnostics::Diagnostic;
use crate::yaml_input::{Seg, YamlPositions};

/// The file name of the site configuration.
pub(crate) use crate::site_paths::CONFIG_FILE;

/// A site's configuration.
#[derive(Debug, Clone)]
pub(crate) struct SiteConfig {
    /// Site title per language (a single title applies to every language).
    pub(crate) titles: BTreeMap<String, String>,
    /// Absolute URL the site is served from, with a trailing slash (used for the sitemap and
    /// `hreflang` links); pages link to each other relatively, so a subpath works too.
    pub(crate) base_url: String,
    /// Languages, in the order the language chooser lists them.
    pub(crate) languages: Vec<String>,
    /// The language `x-default` points to and whose strings fill gaps in the others.
    pub(crate) default_language: String,
    /// Whether the build reads files (pages, templates, locales, data) that symlinks lead to
    /// outside the site root; off, such a symlink is an error.
    pub(crate) follow_external_symlinks: bool,
    /// `markdown.unsafe_html`: keep raw HTML and links with unsafe URL schemes in guides
    /// (dropped with a warning by default).
    pub(crate) unsafe_html: bool,
    /// `translations.stale: warning`: `check` reports stale and missing translated sections as
    /// warnings instead of failing.
    pub(crate) stale_translations_warn: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    title: RawTitle,
    base_url: String,
    languages: Vec<String>,
    default_language: Option<String>,
    #[serde(default)]
    follow_external_symlinks: bool,
    #[serde(default)]
    markdown: RawMarkdown,
    #[serde(default)]
    translations: RawTranslations,
}

/// The `translations:` section.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawTranslations {
    #[serde(default)]
    stale: StaleIs,
}

/// What a stale or missing translated section is to `check`.
#[derive(Deserialize, Default, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
enum StaleIs {
    #[default]
    Error,
    Warning,
}

/// The `markdown:` section.
#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawMarkdown {
    #[serde(default)]
    unsafe_html: bool,
}

#[derive(Deserialize)]
#[serde(untagged)]
enum RawTitle {
    One(String),
    PerLanguage(BTreeMap<String, String>),
}

impl SiteConfig {
    /// Reads and checks `root/vramdoc.yaml`.
    pub(crate) fn load(root: &Path) -> Result<SiteConfig, Vec<Diagnostic>> {
        let path = root.join(CONFIG_FILE);
        if let Err(e) = std::fs::metadata(&path) {
            return Err(vec![Diagnostic::error(format!(
                "cannot read the site configuration: {e}"
            ))
            .in_file(&path)
            .with_help(format!(
                "create {CONFIG_FILE} with `title`, `base_url`, `languages` and `default_language`"
            ))]);
        }
        let text = crate::site_files::read_to_string(&path, Path::new(CONFIG_FILE))
            .map_err(|e| vec![e])?;
        Self::parse(&text, Path::new(CONFIG_FILE))
    }

    /// Parses a configuration's text; `shown` is the path used in messages.
    pub(crate) fn parse(text: &str, shown: &Path) -> Result<SiteConfig, Vec<Diagnostic>> {
        let source: Arc<str> = Arc::from(text);
        let raw = read_raw(text, shown, &source)?;
        let mut check = ConfigChecker {
            at: YamlPositions::of(text),
            shown,
            source,
            errors: Vec::new(),
        };
        check.languages(&raw.languages);
        let default_language = check.default_language(raw.default_language, &raw.languages);
        let base_url = check.base_url(&raw.base_url);
        let titles = check.titles(raw.title, &raw.languages, &default_language);
        if check.errors.is_empty() {
            Ok(SiteConfig {
                titles,
                base_url,
                languages: raw.languages,
                default_language,
                follow_external_symlinks: raw.follow_external_symlinks,
                unsafe_html: raw.markdown.unsafe_html,
                stale_translations_warn: raw.translations.stale == StaleIs::Warning,
            })
        } else {
            Err(check.errors)
        }
    }

    /// The site title in `lang`.
    pub(crate) fn title(&self, lang: &str) -> &str {
        self.titles
            .get(lang)
            .or_else(|| self.titles.get(&self.default_language))
            .map(String::as_str)
            .unwrap_or("")
    }
}

/// Deserializes the configuration's YAML; a syntax or shape error is the only problem reported,
/// at the parser's line and column.
fn read_raw(text: &str, shown: &Path, source: &Arc<str>) -> Result<RawConfig, Vec<Diagnostic>> {
    yaml_serde::from_str(text).map_err(|e| {
        let mut d = Diagnostic::error(format!("invalid site configuration: {e}"))
            .in_file(shown)
            .with_source(source.clone());
        if let Some(loc) = e.location() {
            d = d.at(loc.line(), loc.column());
        }
        vec![d]
    })
}

/// Collects the configuration's problems, each located in the file's text.
struct ConfigChecker<'a> {
    /// Where the configuration's keys and values were written.
    at: YamlPositions,
    /// The path used in messages.
    shown: &'a Path,
    /// The text again, shown as each problem's snippet.
    source: Arc<str>,
    /// The problems found so far, in the order they were found.
    errors: Vec<Diagnostic>,
}

impl ConfigChecker<'_> {
    /// Records `d` at `pos` (its key's line, or its list item's), with the file as snippet.
    fn push(&mut self, d: Diagnostic, pos: Option<(usize, usize)>) {
        let d = d.in_file(self.shown).with_source(self.source.clone());
        self.errors.push(match pos {
            Some((line, col)) => d.at(line, col),
            None => d,
        });
    }

    /// The line and column of the top-level `k:`, if written.
    fn key(&self, k: &str) -> Option<(usize, usize)> {
        self.at.key(&[Seg::key(k)])
    }

    /// The line and column of `lang:` in the `title:` mapping.
    fn title_entry(&self, lang: &str) -> Option<(usize, usize)> {
        self.at.key(&[Seg::key("title"), Seg::key(lang)])
    }

    /// Checks that `languages` is not empty and holds valid tags, each once (ignoring case).
    fn languages(&mut self, languages: &[String]) {
        if languages.is_empty() {
            self.push(
                Diagnostic::error("`languages` is empty").with_help("list them, e.g. [en, es, zh]"),
                self.key("languages"),
            );
        }
        let mut seen: Vec<&str> = Vec::new();
        for (i, lang) in languages.iter().enumerate() {
            let item = [Seg::key("languages"), Seg::Index(i)];
            let pos = self.at.value(&item).or_else(|| self.key("languages"));
            if lang.parse::<unic_langid::LanguageIdentifier>().is_err() || lang.is_empty() {
                self.push(
                    Diagnostic::error(format!("`{lang}` in `languages` is not a language tag"))
                        .with_help("use tags such as en, es, zh"),
                    pos,
                );
            } else if seen.iter().any(|s| s.eq_ignore_ascii_case(lang)) {
                // Case too: `en` and `EN` would share one folder on case-insensitive disks.
                self.push(
                    Diagnostic::error(format!("`{lang}` is listed twice in `languages`"))
                        .with_help("list each language once"),
                    pos,
                );
            }
            seen.push(lang);
        }
    }

    /// The default language: `default_language` or else the first language, which must be one
    /// of `languages`.
    fn default_language(&mut self, given: Option<String>, languages: &[String]) -> String {
        let default_language =
            given.unwrap_or_else(|| languages.first().cloned().unwrap_or_default());
        if !languages.contains(&default_language) {
            self.push(
                Diagnostic::error(format!(
                    "default_language `{default_language}` is not in `languages`"
                ))
                .with_help(format!(
                    "set it to one of {}, or add it to `languages`",
                    languages.join(", ")
                )),
                self.key("default_language")
                    .or_else(|| self.key("languages")),
            );
        }
        default_language
    }

    /// The base URL, trimmed and with a trailing slash, after checking that it is an absolute
    /// http(s) URL with nothing that would need escaping in an attribute.
    fn base_url(&mut self, given: &str) -> String {
        let mut base_url = given.trim().to_string();
        let scheme = base_url.starts_with("http://") || base_url.starts_with("https://");
        let host = base_url.split("://").nth(1).unwrap_or("");
        if !scheme || host.is_empty() || host.starts_with('/') {
            self.push(
                Diagnostic::error(format!(
                    "base_url `{base_url}` is not an absolute http(s) URL"
                ))
                .with_help("write it like https://example.org/ or https://example.org/docs/"),
                self.key("base_url"),
            );
        } else if let Some(why) = query_fragment_or_credentials(host) {
            self.push(
                Diagnostic::error(format!("base_url `{base_url}` has {why}"))
                    .with_help("give only the scheme, host and path the site is served from, e.g. https://example.org/docs/; every page's URL is made by appending to it"),
                self.key("base_url"),
            );
        } else if base_url.contains(|c: char| c.is_whitespace() || c == '"' || c == '<' || c == '>')
        {
            self.push(
                Diagnostic::error(format!(
                    "base_url `{base_url}` contains a space, quote or angle bracket"
                ))
                .with_help("percent-encode it (a space is %20)"),
                self.key("base_url"),
            );
        }
        if !base_url.ends_with('/') {
            base_url.push('/');
        }
        base_url
    }

    /// The title of each language: the single title for all, or each language's entry (the
    /// default language's when it has none); an entry for an unlisted language is a problem.
    fn titles(
        &mut self,
        title: RawTitle,
        languages: &[String],
        default_language: &str,
    ) -> BTreeMap<String, String> {
        let map = match title {
            RawTitle::One(t) => {
                if let Some(msg) = crate::content::published::refusal("`title`", &t) {
                    self.push(
                        Diagnostic::error(msg).with_help(crate::content::published::HELP),
                        self.key("title"),
                    );
                }
                return languages.iter().map(|l| (l.clone(), t.clone())).collect();
            }
            RawTitle::PerLanguage(map) => map,
        };
        for lang in map.keys().filter(|l| !languages.contains(l)) {
            self.push(
                Diagnostic::error(format!(
                    "`title` has an entry for `{lang}`, which is not in `languages`"
                ))
                .with_help("remove it, or add the language to `languages`"),
                self.key("title"),
            );
        }
        for (lang, t) in &map {
            if let Some(msg) = crate::content::published::refusal(&format!("the `{lang}` title"), t)
            {
                self.push(
                    Diagnostic::error(msg).with_help(crate::content::published::HELP),
                    self.title_entry(lang).or(self.key("title")),
                );
            }
        }
        let mut titles = BTreeMap::new();
        for lang in languages {
            match map.get(lang).or_else(|| map.get(default_language)) {
                Some(t) => {
                    titles.insert(lang.clone(), t.clone());
                }
                None => self.push(
                    Diagnostic::error(format!("`title` has no entry for `{lang}`")),
                    self.key("title"),
                ),
            }
        }
        titles
    }
}

/// What a base URL (after `scheme://`) has that no page URL may inherit: a query or fragment
/// (pages are appended after it, so every URL would be wrong) or credentials (`user:pass@`,
/// published in the sitemap and feeds).
fn query_fragment_or_credentials(after_scheme: &str) -> Option<&'static str> {
    let authority = after_scheme.split(['/', '?', '#']).next().unwrap_or("");
    if after_scheme.contains('?') {
        Some("a query (`?...`)")
    } else if after_scheme.contains('#') {
        Some("a fragment (`#...`)")
    } else if authority.contains('@') {
        Some("credentials (`user:password@`), which would be published in the sitemap and feeds")
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_items_are_located_inline_and_as_blocks() {
        let item = |text: &str, i: usize| {
            let at = YamlPositions::of(text);
            at.value(&[Seg::key("languages"), Seg::Index(i)])
        };
        let inline = "title: T\nlanguages: [en, es,  en]\n";
        assert_eq!(item(inline, 0), Some((2, 13)));
        assert_eq!(item(inline, 2), Some((2, 22)));
        let block = "languages:\n  - en\n  # c\n  - es\nbase_url: x\n";
        assert_eq!(item(block, 1), Some((4, 5)));
        assert_eq!(item(block, 2), None);
        assert_eq!(
            YamlPositions::of(block).key(&[Seg::key("base_url")]),
            Some((5, 1))
        );
    }
}
