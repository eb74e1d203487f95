//! One language's Fluent bundle, built from the embedded defaults plus a site's own files.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::resolver::errors::{ReferenceKind, ResolverError};
use fluent_bundle::{FluentArgs, FluentError, FluentResource, FluentValue};
use intl_memoizer::concurrent::IntlLangMemoizer;
use intl_memoizer::Memoizable;
use unic_langid::LanguageIdentifier;

use super::numbers::NumberFormat;
use crate::assets;
use crate::diagnostics::Diagnostic;

/// A language's messages.
pub(crate) struct Bundle {
    inner: FluentBundle<FluentResource>,
    keys: BTreeSet<String>,
    /// Where each message that wins is defined.
    defined: BTreeMap<String, MessageOrigin>,
    /// Problems found while loading: duplicate ids, cycles, references to nothing.
    warnings: Vec<Diagnostic>,
}

/// Where a message is defined: its file (as shown), 1-based line and the file's text.
#[derive(Debug, Clone)]
pub(crate) struct MessageOrigin {
    /// `locales/<lang>/<file>.ftl`.
    pub(crate) file: String,
    /// 1-based line of `id =`.
    pub(crate) line: usize,
    /// The file's text, for snippets.
    pub(crate) source: Arc<str>,
    /// True for a site's own file (which may override a built-in message once).
    site: bool,
}

impl MessageOrigin {
    /// A warning located at this message.
    pub(crate) fn warning(&self, message: String) -> Diagnostic {
        Diagnostic::warning(message)
            .in_file(&self.file)
            .at(self.line, 1)
            .with_source(self.source.clone())
    }
}

impl Bundle {
    /// Loads the embedded `locales/<lang>/*.ftl`, then the site's files of the same language
    /// (whose messages override the embedded ones).
    pub(crate) fn load(lang: &str, site_root: Option<&Path>) -> Result<Bundle, Vec<Diagnostic>> {
        let mut bundle = Bundle {
            inner: new_fluent_bundle(lang)?,
            keys: BTreeSet::new(),
            defined: BTreeMap::new(),
            warnings: Vec::new(),
        };
        let mut errors = Vec::new();
        let mut sources = embedded_sources(lang);
        if let Some(root) = site_root {
            sources.extend(site_sources(root, lang, &mut errors));
        }
        for source in sources {
            let resource = parse(&source, &mut errors);
            bundle.record(&source, &resource);
            bundle.inner.add_resource_overriding(resource);
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        bundle.warnings.extend(bundle.static_problems());
        Ok(bundle)
    }

    /// Records the messages of `resource` (parsed from `source`): their ids and where each is
    /// defined, warning of an id defined twice at the same level (built-in or site).
    fn record(&mut self, source: &FtlSource, resource: &FluentResource) {
        let mut lines = message_lines(&source.text).into_iter();
        for entry in resource.entries() {
            if let fluent_syntax::ast::Entry::Message(m) = entry {
                let id = m.id.name.to_string();
                let line = lines.find(|(i, _)| *i == id).map_or(1, |(_, l)| l);
                let origin = MessageOrigin {
                    file: source.path.clone(),
                    line,
                    source: source.text.clone(),
                    site: source.site,
                };
                if let Some(first) = self.defined.get(&id).filter(|o| o.site == source.site) {
                    self.warnings.push(
                        origin
                            .warning(format!(
                                "message `{id}` is defined twice (first at {}:{}); this one wins",
                                first.file, first.line
                            ))
                            .with_help("keep one definition of each message id"),
                    );
                }
                self.keys.insert(id.clone());
                self.defined.insert(id, origin);
            }
        }
    }

    /// Messages that cannot format whatever the arguments: a cycle, or a reference to a message,
    /// term or function that does not exist. (A missing variable depends on the caller and is
    /// reported when a page formats the message.)
    fn static_problems(&self) -> Vec<Diagnostic> {
        let mut out = Vec::new();
        for (id, origin) in &self.defined {
            let Some(pattern) = self.inner.get_message(id).and_then(|m| m.value()) else {
                continue;
            };
            let mut errs = Vec::new();
            let _ = self.inner.format_pattern(pattern, None, &mut errs);
            let problems: BTreeSet<String> = errs
                .iter()
                .filter(|e| !is_missing_variable(e))
                .map(describe)
                .collect();
            for p in problems {
                out.push(
                    origin
                        .warning(format!("message `{id}` cannot be formatted: {p}"))
                        .with_help("fix the reference; a page would show `{…}` in its place"),
                );
            }
        }
        out
    }

    /// Problems found while loading this language's files.
    pub(crate) fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// Where message `key` is defined, if this language has it.
    pub(crate) fn origin(&self, key: &str) -> Option<&MessageOrigin> {
        self.defined.get(key)
    }

    /// True if the message exists in this language.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// Every message id of this language.
    pub(crate) fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.keys.iter().cloned()
    }

    /// Formats a message, or `None` if this language lacks it; with the problems met while
    /// formatting (a missing variable, a cycle), described.
    pub(crate) fn format(&self, key: &str, args: &FluentArgs<'_>) -> Option<(String, Vec<String>)> {
        let msg = self.inner.get_message(key)?;
        let pattern = msg.value()?;
        let mut errs = Vec::new();
        let out: Cow<'_, str> = self.inner.format_pattern(pattern, Some(args), &mut errs);
        let problems = errs.iter().map(describe).collect();
        Some((out.into_owned(), problems))
    }
}

/// A Fluent file to load: its path as shown, its text, and whether it is the site's own.
struct FtlSource {
    /// `locales/<lang>/<file>.ftl`.
    path: String,
    /// The file's text.
    text: Arc<str>,
    /// True for a site's own file.
    site: bool,
}

/// An empty Fluent bundle for `lang`: no isolation marks, numbers formatted by ICU4X, Fluent's
/// built-in functions.
fn new_fluent_bundle(lang: &str) -> Result<FluentBundle<FluentResource>, Vec<Diagnostic>> {
    let langid: LanguageIdentifier = lang.parse().map_err(|_| {
        vec![Diagnostic::error(format!(
            "`{lang}` is not a valid language tag"
        ))]
    })?;
    let mut inner = FluentBundle::new_concurrent(vec![langid]);
    inner.set_use_isolating(false);
    inner.set_formatter(Some(format_number));
    if let Err(e) = inner.add_builtins() {
        return Err(vec![Diagnostic::error(format!("fluent builtins: {e:?}"))]);
    }
    Ok(inner)
}

/// The embedded `locales/<lang>/*.ftl`.
fn embedded_sources(lang: &str) -> Vec<FtlSource> {
    assets::LOCALES
        .iter()
        .filter(|(path, _)| path.starts_with(&format!("{lang}/")) && path.ends_with(".ftl"))
        .map(|(path, text)| FtlSource {
            path: format!("locales/{path}"),
            text: Arc::<str>::from(*text),
            site: false,
        })
        .collect()
}

/// The site's `locales/<lang>/*.ftl` under `root`, sorted by name (none when the folder does
/// not exist); a file that cannot be read goes to `errors`.
fn site_sources(root: &Path, lang: &str, errors: &mut Vec<Diagnostic>) -> Vec<FtlSource> {
    let dir = crate::site_paths::SitePaths::new(root).locale(lang);
    let Ok(entries) = std::fs::read_dir(&dir) else {
        return Vec::new();
    };
    let mut files: Vec<_> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "ftl"))
        .collect();
    files.sort();
    let mut sources = Vec::new();
    for f in files {
        let shown = format!(
            "locales/{lang}/{}",
            f.file_name().unwrap_or_default().to_string_lossy()
        );
        match crate::site_files::read_to_string(&f, Path::new(&shown)) {
            Ok(text) => sources.push(FtlSource {
                path: shown,
                text: Arc::from(text),
                site: true,
            }),
            Err(e) => errors.push(e),
        }
    }
    sources
}

/// `source` parsed: what Fluent could read of it, with each syntax error (file, line and
/// column) added to `errors`.
fn parse(source: &FtlSource, errors: &mut Vec<Diagnostic>) -> FluentResource {
    match FluentResource::try_new(source.text.to_string()) {
        Ok(r) => r,
        Err((r, errs)) => {
            for e in errs {
                let (line, col) = line_col(&source.text, e.pos.start);
                errors.push(
                    Diagnostic::error(format!("invalid Fluent syntax: {}", e.kind))
                        .in_file(&source.path)
                        .at(line, col)
                        .with_source(source.text.clone())
                        .with_help("see https://projectfluent.org/fluent/guide/ for the syntax"),
                );
            }
            r
        }
    }
}

/// True for a reference to a variable the caller did not pass.
fn is_missing_variable(e: &FluentError) -> bool {
    matches!(
        e,
        FluentError::ResolverError(ResolverError::Reference(ReferenceKind::Variable { .. }))
    )
}

/// A formatting problem in words.
fn describe(e: &FluentError) -> String {
    match e {
        FluentError::ResolverError(ResolverError::Reference(ReferenceKind::Variable { id })) => {
            format!("no value for the variable `${id}`")
        }
        FluentError::ResolverError(ResolverError::Cyclic) => {
            "it refers to itself (a cycle of references)".into()
        }
        FluentError::ResolverError(r) => r.to_string(),
        other => other.to_string(),
    }
}

/// `(id, line)` of every message definition (`id =` at the start of a line), in file order.
fn message_lines(text: &str) -> Vec<(String, usize)> {
    text.lines()
        .enumerate()
        .filter_map(|(i, l)| {
            let id: String = l
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '-' || *c == '_')
                .collect();
            let rest = l[id.len()..].trim_start();
            (l.starts_with(|c: char| c.is_ascii_alphabetic()) && rest.starts_with('='))
                .then_some((id, i + 1))
        })
        .collect()
}

impl Bundle {}

/// 1-based line and column of a byte offset.
fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let before = &text[..offset.min(text.len())];
    let line = before.matches('\n').count() + 1;
    let col = before
        .rsplit('\n')
        .next()
        .map(|l| l.chars().count())
        .unwrap_or(0)
        + 1;
    (line, col)
}

/// ICU4X number formatting for one language, memoized per bundle.
struct IcuNumbers(NumberFormat);

impl Memoizable for IcuNumbers {
    type Args = ();
    type Error = String;
    fn construct(lang: LanguageIdentifier, _: ()) -> Result<Self, String> {
        NumberFormat::new(&lang.to_string()).map(IcuNumbers)
    }
}

/// Fluent's formatter hook: numbers are formatted by ICU4X in the bundle's locale (Fluent's own
/// `NUMBER()` would print "6.14" in Spanish). Fraction digits follow the `NUMBER()` options:
/// integers print with none, other values with up to two unless asked otherwise.
fn format_number(value: &FluentValue<'_>, memoizer: &IntlLangMemoizer) -> Option<String> {
    let FluentValue::Number(n) = value else {
        return None;
    };
    let frac = match (
        n.options.minimum_fraction_digits,
        n.options.maximum_fraction_digits,
    ) {
        (Some(min), _) => min,
        (None, Some(max)) => max.min(if n.value.fract() == 0.0 { 0 } else { max }),
        (None, None) if n.value.fract() == 0.0 => 0,
        (None, None) => 2,
    };
    memoizer
        .with_try_get::<IcuNumbers, _, _>((), |f| f.0.decimal(n.value, frac))
        .ok()
}
