//! The site configuration, `vramdoc.yaml` at the site root.
//!
//! ```yaml
//! title: GPU memory guides          # or a map per language: { en: ..., es: ..., zh: ... }
//! base_url: https://example.org/docs/
//! languages: [en, es, zh]
//! default_language: en
//! markdown: { unsafe_html: false }  # true keeps raw HTML and javascript:/data: URLs in guides
//! ```

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use serde::Deserialize;

use crate::diagnostics::Diagnostic;

/// The file name of the site configuration.
pub const CONFIG_FILE: &str = "vramdoc.yaml";

/// A site's configuration.
#[derive(Debug, Clone)]
pub struct SiteConfig {
    /// Site title per language (a single title applies to every language).
    pub titles: BTreeMap<String, String>,
    /// Absolute URL the site is served from, with a trailing slash (used for the sitemap and
    /// `hreflang` links); pages link to each other relatively, so a subpath works too.
    pub base_url: String,
    /// Languages, in the order the language chooser lists them.
    pub languages: Vec<String>,
    /// The language `x-default` points to and whose strings fill gaps in the others.
    pub default_language: String,
    /// `markdown.unsafe_html`: keep raw HTML and links with unsafe URL schemes in guides
    /// (dropped with a warning by default).
    pub unsafe_html: bool,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    title: RawTitle,
    base_url: String,
    languages: Vec<String>,
    default_language: Option<String>,
    #[serde(default)]
    markdown: RawMarkdown,
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
    pub fn load(root: &Path) -> Result<SiteConfig, Vec<Diagnostic>> {
        let path = root.join(CONFIG_FILE);
        let text = std::fs::read_to_string(&path).map_err(|e| {
            vec![Diagnostic::error(format!("cannot read the site configuration: {e}"))
                .in_file(&path)
                .with_help(format!(
                    "create {CONFIG_FILE} with `title`, `base_url`, `languages` and `default_language`"
                ))]
        })?;
        Self::parse(&text, Path::new(CONFIG_FILE))
    }

    /// Parses a configuration's text; `shown` is the path used in messages.
    pub fn parse(text: &str, shown: &Path) -> Result<SiteConfig, Vec<Diagnostic>> {
        let source: Arc<str> = Arc::from(text);
        let raw: RawConfig = yaml_serde::from_str(text).map_err(|e| {
            let mut d = Diagnostic::error(format!("invalid site configuration: {e}"))
                .in_file(shown)
                .with_source(source.clone());
            if let Some(loc) = e.location() {
                d = d.at(loc.line(), loc.column());
            }
            vec![d]
        })?;
        let mut errors = Vec::new();
        if raw.languages.is_empty() {
            errors.push(Diagnostic::error("`languages` is empty").in_file(shown));
        }
        for lang in &raw.languages {
            if lang.parse::<unic_langid::LanguageIdentifier>().is_err() || lang.is_empty() {
                errors.push(
                    Diagnostic::error(format!("`{lang}` in `languages` is not a language tag"))
                        .in_file(shown)
                        .with_help("use tags such as en, es, zh"),
                );
            }
        }
        let default_language = raw
            .default_language
            .unwrap_or_else(|| raw.languages.first().cloned().unwrap_or_default());
        if !raw.languages.contains(&default_language) {
            errors.push(
                Diagnostic::error(format!(
                    "default_language `{default_language}` is not in `languages`"
                ))
                .in_file(shown),
            );
        }
        let mut base_url = raw.base_url.trim().to_string();
        if !(base_url.starts_with("http://") || base_url.starts_with("https://")) {
            errors.push(
                Diagnostic::error(format!(
                    "base_url `{base_url}` is not an absolute http(s) URL"
                ))
                .in_file(shown)
                .with_help("write it like https://example.org/ or https://example.org/docs/"),
            );
        }
        if !base_url.ends_with('/') {
            base_url.push('/');
        }
        let titles = match raw.title {
            RawTitle::One(t) => raw
                .languages
                .iter()
                .map(|l| (l.clone(), t.clone()))
                .collect(),
            RawTitle::PerLanguage(map) => {
                let mut titles = BTreeMap::new();
                for lang in &raw.languages {
                    match map.get(lang).or_else(|| map.get(&default_language)) {
                        Some(t) => {
                            titles.insert(lang.clone(), t.clone());
                        }
                        None => errors.push(
                            Diagnostic::error(format!("`title` has no entry for `{lang}`"))
                                .in_file(shown),
                        ),
                    }
                }
                titles
            }
        };
        if errors.is_empty() {
            Ok(SiteConfig {
                titles,
                base_url,
                languages: raw.languages,
                default_language,
                unsafe_html: raw.markdown.unsafe_html,
            })
        } else {
            Err(errors)
        }
    }

    /// The site title in `lang`.
    pub fn title(&self, lang: &str) -> &str {
        self.titles
            .get(lang)
            .or_else(|| self.titles.get(&self.default_language))
            .map(String::as_str)
            .unwrap_or("")
    }
}
