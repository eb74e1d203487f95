//! One language's Fluent bundle, built from the embedded defaults plus a site's own files.

use std::borrow::Cow;
use std::collections::BTreeSet;
use std::path::Path;
use std::sync::Arc;

use fluent_bundle::concurrent::FluentBundle;
use fluent_bundle::{FluentArgs, FluentResource, FluentValue};
use intl_memoizer::concurrent::IntlLangMemoizer;
use intl_memoizer::Memoizable;
use unic_langid::LanguageIdentifier;

use super::numbers::NumberFormat;
use crate::assets;
use crate::diagnostics::Diagnostic;

/// A language's messages.
pub struct Bundle {
    inner: FluentBundle<FluentResource>,
    keys: BTreeSet<String>,
}

impl Bundle {
    /// Loads the embedded `locales/<lang>/*.ftl`, then the site's files of the same language
    /// (whose messages override the embedded ones).
    pub(crate) fn load(lang: &str, site_root: Option<&Path>) -> Result<Bundle, Vec<Diagnostic>> {
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
        let mut sources: Vec<(String, Arc<str>)> = assets::LOCALES
            .iter()
            .filter(|(path, _)| path.starts_with(&format!("{lang}/")) && path.ends_with(".ftl"))
            .map(|(path, text)| (format!("locales/{path}"), Arc::<str>::from(*text)))
            .collect();
        let mut errors = Vec::new();
        if let Some(root) = site_root {
            let dir = root.join("locales").join(lang);
            if let Ok(entries) = std::fs::read_dir(&dir) {
                let mut files: Vec<_> = entries
                    .flatten()
                    .map(|e| e.path())
                    .filter(|p| p.extension().is_some_and(|x| x == "ftl"))
                    .collect();
                files.sort();
                for f in files {
                    let shown = format!(
                        "locales/{lang}/{}",
                        f.file_name().unwrap_or_default().to_string_lossy()
                    );
                    match crate::site_files::read_to_string(&f, Path::new(&shown)) {
                        Ok(text) => sources.push((shown, Arc::from(text))),
                        Err(e) => errors.push(e),
                    }
                }
            }
        }
        let mut keys = BTreeSet::new();
        for (path, text) in sources {
            let resource = match FluentResource::try_new(text.to_string()) {
                Ok(r) => r,
                Err((r, errs)) => {
                    for e in errs {
                        let (line, col) = line_col(&text, e.pos.start);
                        errors.push(
                            Diagnostic::error(format!("invalid Fluent syntax: {}", e.kind))
                                .in_file(&path)
                                .at(line, col)
                                .with_source(text.clone())
                                .with_help(
                                    "see https://projectfluent.org/fluent/guide/ for the syntax",
                                ),
                        );
                    }
                    r
                }
            };
            for entry in resource.entries() {
                if let fluent_syntax::ast::Entry::Message(m) = entry {
                    keys.insert(m.id.name.to_string());
                }
            }
            inner.add_resource_overriding(resource);
        }
        if errors.is_empty() {
            Ok(Bundle { inner, keys })
        } else {
            Err(errors)
        }
    }

    /// True if the message exists in this language.
    pub fn has(&self, key: &str) -> bool {
        self.keys.contains(key)
    }

    /// Every message id of this language.
    pub fn keys(&self) -> impl Iterator<Item = String> + '_ {
        self.keys.iter().cloned()
    }

    /// Formats a message, or `None` if this language lacks it.
    pub fn format(&self, key: &str, args: &FluentArgs<'_>) -> Option<String> {
        let msg = self.inner.get_message(key)?;
        let pattern = msg.value()?;
        let mut errs = Vec::new();
        let out: Cow<'_, str> = self.inner.format_pattern(pattern, Some(args), &mut errs);
        Some(out.into_owned())
    }
}

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
