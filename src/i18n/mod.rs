//! Locale bundles: every UI string of every language, number formatting, and fallback.
//!
//! Strings live in Fluent files, `locales/<lang>/*.ftl`. The defaults are compiled into the binary
//! (see `assets`); a site's own `locales/<lang>/*.ftl` add or override messages. A message missing in
//! a language falls back to the default language, and loading reports a warning naming the key.
//! Fluent's `NUMBER()` and every numeric argument are formatted by ICU4X (see [`numbers`]).

mod bundle;
pub mod numbers;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::Arc;

use fluent_bundle::{FluentArgs, FluentValue};

use crate::diagnostics::Diagnostic;
pub use bundle::Bundle;
pub use numbers::NumberFormat;

/// The UI strings and number formats of one language, with the default language behind it.
pub struct Localizer {
    lang: String,
    bundle: Arc<Bundle>,
    fallback: Option<Arc<Bundle>>,
    numbers: NumberFormat,
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

    /// The language tag, e.g. `es`.
    pub fn lang(&self) -> &str {
        &self.lang
    }

    /// The message `key` with no arguments; the key itself if no language has it.
    pub fn t(&self, key: &str) -> String {
        self.t_args(key, &[])
    }

    /// The message `key` formatted with named arguments.
    pub fn t_args(&self, key: &str, args: &[(&str, FluentValue<'_>)]) -> String {
        let mut fargs = FluentArgs::new();
        for (name, value) in args {
            fargs.set(*name, value.clone());
        }
        self.t_fluent(key, &fargs)
    }

    /// The message `key` formatted with prepared Fluent arguments.
    pub fn t_fluent(&self, key: &str, args: &FluentArgs<'_>) -> String {
        if let Some(s) = self.bundle.format(key, args) {
            return s;
        }
        if let Some(s) = self.fallback.as_ref().and_then(|b| b.format(key, args)) {
            return s;
        }
        key.to_string()
    }

    /// True if this language or the default language has `key`.
    pub fn has(&self, key: &str) -> bool {
        self.bundle.has(key) || self.fallback.as_ref().is_some_and(|b| b.has(key))
    }

    /// The locale's number formats.
    pub fn numbers(&self) -> &NumberFormat {
        &self.numbers
    }

    /// A byte size such as "6.14 GiB" / "6,14 GiB".
    pub fn bytes(&self, n: u64) -> String {
        self.numbers.bytes(n)
    }

    /// A range of byte sizes, "12.10–13.40 GiB" (see [`NumberFormat::byte_range`]).
    pub fn byte_range(&self, low: u64, high: u64) -> String {
        self.numbers.byte_range(low, high)
    }

    /// A grouped whole number.
    pub fn int(&self, n: u64) -> String {
        self.numbers.int(n)
    }

    /// A short count such as "29.94M" / "2994万".
    pub fn count(&self, n: u64) -> String {
        self.numbers.count(n)
    }

    /// A decimal with exactly `frac_digits` fraction digits.
    pub fn decimal(&self, x: f64, frac_digits: usize) -> String {
        self.numbers.decimal(x, frac_digits)
    }

    /// A ratio as a percentage.
    pub fn percent(&self, ratio: f64) -> String {
        self.numbers.percent(ratio)
    }
}

/// The bundles of every configured language of a site.
pub struct Locales {
    default: String,
    by_lang: BTreeMap<String, Arc<Localizer>>,
    missing: Vec<(String, String)>,
}

impl Locales {
    /// Loads the built-in bundles plus `site_root/locales/<lang>/*.ftl` for each language.
    ///
    /// Returns the bundles and warnings (keys missing in a language), or every error found
    /// (unreadable files, Fluent syntax errors with file and line, unknown languages).
    pub fn load(
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
        for (lang, bundle) in bundles {
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
                }),
            );
        }
        Ok(Locales {
            default: default.to_string(),
            by_lang,
            missing,
        })
    }

    /// The localizer of `lang`, if configured.
    pub fn get(&self, lang: &str) -> Option<&Arc<Localizer>> {
        self.by_lang.get(lang)
    }

    /// The default language's tag.
    pub fn default_lang(&self) -> &str {
        &self.default
    }

    /// `(lang, key)` pairs the default language has and `lang` lacks.
    pub fn missing_keys(&self) -> &[(String, String)] {
        &self.missing
    }

    /// One warning per missing key: it falls back to the default language.
    pub fn missing_key_warnings(&self) -> Vec<Diagnostic> {
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
