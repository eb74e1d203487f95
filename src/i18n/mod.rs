//! Locale bundles: every UI string of every language, number formatting, and fallback.
//!
//! Strings live in Fluent files, `locales/<lang>/*.ftl`. The defaults are compiled into the binary
//! (see `assets`); a site's own `locales/<lang>/*.ftl` add or override messages. A message missing in
//! a language falls back to the default language, and loading reports a warning naming the key.
//! Fluent's `NUMBER()` and every numeric argument are formatted by ICU4X (see [`numbers`]).

mod bundle;
pub(crate) mod numbers;

use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{Arc, Mutex, PoisonError};

use fluent_bundle::{FluentArgs, FluentValue};

use crate::diagnostics::Diagnostic;
pub(crate) use bundle::Bundle;
pub(crate) use numbers::NumberFormat;

/// The UI strings and number formats of one language, with the default language behind it.
pub struct Localizer {
    lang: String,
    bundle: Arc<Bundle>,
    fallback: Option<Arc<Bundle>>,
    numbers: NumberFormat,
    issues: Arc<Issues>,
}

/// A problem met while formatting a message for a page: an unknown key (`problem` is `None`) or
/// a message that did not format cleanly. Kept until the build reports it (once per kind).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
struct Issue {
    /// The template being rendered, if the message was asked for by one.
    template: Option<String>,
    lang: String,
    key: String,
    problem: Option<String>,
}

/// The issues of every language of a site, shared by its localizers.
#[derive(Debug, Default)]
struct Issues(Mutex<BTreeSet<Issue>>);

impl Issues {
    fn record(&self, issue: Issue) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(issue);
    }
}

thread_local! {
    /// The template this thread is rendering (see [`in_template`]).
    static TEMPLATE: RefCell<Option<String>> = const { RefCell::new(None) };
}

/// Runs `f` (a template render) with `name` recorded as the template asking for messages, so a
/// problem with a message names it.
pub(crate) fn in_template<T>(name: &str, f: impl FnOnce() -> T) -> T {
    let before = TEMPLATE.with(|t| t.replace(Some(name.to_string())));
    let out = f();
    TEMPLATE.with(|t| *t.borrow_mut() = before);
    out
}

impl std::fmt::Debug for Localizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Localizer")
            .field("lang", &self.lang)
            .finish_non_exhaustive()
    }
}

impl Localizer {
    /// The built-in strings of `lang` (falling back to English), with no site overrides.
    pub fn builtin(lang: &str) -> Result<Localizer, Vec<Diagnostic>> {
        let locales = Locales::load(None, &[lang.to_string()], "en")?;
        locales.into_localizer(lang)
    }

    /// [`Localizer::builtin`] for a command's `--lang`: one error naming the flag.
    pub(crate) fn for_flag(lang: &str) -> Result<Localizer, Box<Diagnostic>> {
        Localizer::builtin(lang).map_err(|diags| {
            let detail = diags.first().map(|d| d.render()).unwrap_or_default();
            Box::new(
                Diagnostic::error(format!("--lang {lang}: no such language ({detail})"))
                    .with_help("use en, es or zh"),
            )
        })
    }

    /// The language tag, e.g. `es`.
    pub(crate) fn lang(&self) -> &str {
        &self.lang
    }

    /// The message `key` with no arguments; the key itself if no language has it.
    pub(crate) fn t(&self, key: &str) -> String {
        self.t_args(key, &[])
    }

    /// The message `key` formatted with named arguments.
    pub(crate) fn t_args(&self, key: &str, args: &[(&str, FluentValue<'_>)]) -> String {
        let mut fargs = FluentArgs::new();
        for (name, value) in args {
            fargs.set(*name, value.clone());
        }
        self.t_fluent(key, &fargs)
    }

    /// The message `key` formatted with prepared Fluent arguments. An unknown key gives the key
    /// itself and a message that does not format cleanly gives Fluent's `{…}` text; both are
    /// recorded for the build to report (see [`Locales::take_warnings`]).
    pub(crate) fn t_fluent(&self, key: &str, args: &FluentArgs<'_>) -> String {
        let found = self
            .bundle
            .format(key, args)
            .or_else(|| self.fallback.as_ref().and_then(|b| b.format(key, args)));
        let issue = |problem| Issue {
            template: TEMPLATE.with(|t| t.borrow().clone()),
            lang: self.lang.clone(),
            key: key.to_string(),
            problem,
        };
        match found {
            Some((text, problems)) => {
                for p in problems {
                    self.issues.record(issue(Some(p)));
                }
                text
            }
            None => {
                self.issues.record(issue(None));
                key.to_string()
            }
        }
    }

    /// True if this language's own files (not the default language's) have `key`.
    pub fn has_own(&self, key: &str) -> bool {
        self.bundle.has(key)
    }

    /// True if this language or the default language has `key`.
    pub(crate) fn has(&self, key: &str) -> bool {
        self.bundle.has(key) || self.fallback.as_ref().is_some_and(|b| b.has(key))
    }

    /// The locale's number formats.
    pub(crate) fn numbers(&self) -> &NumberFormat {
        &self.numbers
    }

    /// A byte size such as "6.14 GiB" / "6,14 GiB".
    pub(crate) fn bytes(&self, n: u64) -> String {
        self.numbers.bytes(n)
    }

    /// A range of byte sizes, "12.10–13.40 GiB" (see [`NumberFormat::byte_range`]).
    pub(crate) fn byte_range(&self, low: u64, high: u64) -> String {
        self.numbers.byte_range(low, high)
    }

    /// A grouped whole number.
    pub(crate) fn int(&self, n: u64) -> String {
        self.numbers.int(n)
    }

    /// A short count such as "29.94M" / "2994万".
    pub(crate) fn count(&self, n: u64) -> String {
        self.numbers.count(n)
    }

    /// A decimal with exactly `frac_digits` fraction digits.
    pub(crate) fn decimal(&self, x: f64, frac_digits: usize) -> String {
        self.numbers.decimal(x, frac_digits)
    }

    /// A ratio as a percentage.
    pub(crate) fn percent(&self, ratio: f64) -> String {
        self.numbers.percent(ratio)
    }
}

/// The bundles of every configured language of a site.
pub(crate) struct Locales {
    default: String,
    by_lang: BTreeMap<String, Arc<Localizer>>,
    missing: Vec<(String, String)>,
    warnings: Vec<Diagnostic>,
    issues: Arc<Issues>,
}

impl Locales {
    /// Loads the built-in bundles plus `site_root/locales/<lang>/*.ftl` for each language.
    ///
    /// Returns the bundles and warnings (keys missing in a language), or every error found
    /// (unreadable files, Fluent syntax errors with file and line, unknown languages).
    pub(crate) fn load(
        site_root: Option<&Path>,
        languages: &[String],
        default: &str,
    ) -> Result<Locales, Vec<Diagnostic>> {
        let mut errors = Vec::new();
        let mut bundles = BTreeMap::new();
        let mut wanted: Vec<String> = languages.to_vec();
        if !wanted.iter().any(|l| l == default) {
            wanted.push(default.to_string());
        }
        for lang in &wanted {
            match Bundle::load(lang, site_root) {
                Ok(b) => {
                    bundles.insert(lang.clone(), Arc::new(b));
                }
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let fallback = bundles.get(default).cloned();
        let default_keys: BTreeSet<String> = fallback
            .as_ref()
            .map(|b| b.keys().collect())
            .unwrap_or_default();
        let mut missing = Vec::new();
        let mut by_lang = BTreeMap::new();
        let issues = Arc::new(Issues::default());
        let mut warnings = Vec::new();
        for (lang, bundle) in bundles {
            warnings.extend_from_slice(bundle.warnings());
            for key in &default_keys {
                if !bundle.has(key) {
                    missing.push((lang.clone(), key.clone()));
                }
            }
            let numbers = NumberFormat::new(&lang).map_err(|e| vec![Diagnostic::error(e)])?;
            let fb = if lang == default {
                None
            } else {
                fallback.clone()
            };
            by_lang.insert(
                lang.clone(),
                Arc::new(Localizer {
                    lang: lang.clone(),
                    bundle,
                    fallback: fb,
                    numbers,
                    issues: issues.clone(),
                }),
            );
        }
        Ok(Locales {
            default: default.to_string(),
            by_lang,
            missing,
            warnings,
            issues,
        })
    }

    /// The localizer of `lang`, if configured.
    pub(crate) fn get(&self, lang: &str) -> Option<&Arc<Localizer>> {
        self.by_lang.get(lang)
    }

    /// The default language's tag.
    pub(crate) fn default_lang(&self) -> &str {
        &self.default
    }

    /// `(lang, key)` pairs the default language has and `lang` lacks.
    pub(crate) fn missing_keys(&self) -> &[(String, String)] {
        &self.missing
    }

    /// One warning per missing key: it falls back to the default language.
    pub(crate) fn missing_key_warnings(&self) -> Vec<Diagnostic> {
        self.missing
            .iter()
            .map(|(lang, key)| {
                Diagnostic::warning(format!(
                    "locale `{lang}` has no message `{key}`; using the `{}` text",
                    self.default
                ))
                .in_file(format!("locales/{lang}"))
                .with_help(format!("add `{key} = ...` to a file in locales/{lang}/"))
            })
            .collect()
    }

    /// Problems found in the Fluent files while loading: a message id defined twice (the later
    /// one wins), a cycle, a reference to a message, term or function that does not exist.
    pub(crate) fn load_warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The problems met while formatting messages since the last call, as warnings naming the
    /// file and key, in a stable order; unknown keys in `reported` (already reported with their
    /// template line) are left out.
    pub(crate) fn take_warnings(&self, reported: &BTreeSet<String>) -> Vec<Diagnostic> {
        let issues =
            std::mem::take(&mut *self.issues.0.lock().unwrap_or_else(PoisonError::into_inner));
        let mut out = Vec::new();
        for i in issues {
            let Some(problem) = i.problem else {
                if reported.contains(&i.key) {
                    continue;
                }
                let file = i.template.map_or_else(
                    || format!("locales/{}", self.default),
                    |t| format!("templates/{t}"),
                );
                out.push(
                    Diagnostic::warning(format!(
                        "no locale has the message `{}` (asked for in `{}`); the page shows the key itself",
                        i.key, i.lang
                    ))
                    .in_file(file)
                    .with_help(format!(
                        "add `{} = ...` to a file in locales/{}/, or fix the key",
                        i.key, self.default
                    )),
                );
                continue;
            };
            let origin = self.by_lang.get(&i.lang).and_then(|l| {
                l.bundle
                    .origin(&i.key)
                    .or_else(|| l.fallback.as_ref().and_then(|b| b.origin(&i.key)))
            });
            let message = format!(
                "message `{}` did not format for `{}`: {problem}; the page shows `{{…}}` in its place",
                i.key, i.lang
            );
            let d = match origin {
                Some(o) => o.warning(message),
                None => Diagnostic::warning(message).in_file(format!("locales/{}", i.lang)),
            };
            let help = match &i.template {
                Some(t) => {
                    format!("pass the variable from templates/{t}, or remove it from the message")
                }
                None => "pass the variable, or remove it from the message".to_string(),
            };
            out.push(d.with_help(help));
        }
        out
    }

    fn into_localizer(mut self, lang: &str) -> Result<Localizer, Vec<Diagnostic>> {
        let arc = self
            .by_lang
            .remove(lang)
            .ok_or_else(|| vec![Diagnostic::error(format!("unknown language `{lang}`"))])?;
        Arc::try_unwrap(arc).map_err(|_| vec![Diagnostic::error("localizer still shared")])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fluent_numbers_are_localized_by_icu() {
        for (lang, want) in [("en", "6.14 GiB"), ("es", "6,14 GiB"), ("zh", "6.14 GiB")] {
            let loc = Localizer::builtin(lang).unwrap();
            let got = loc.t_args("test-number", &[("value", FluentValue::from(6.1406))]);
            assert_eq!(got, want, "{lang}");
        }
    }
}
