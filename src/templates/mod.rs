//! The tera environment: the default templates (compiled in), a site's overrides, and the `t`
//! function that reads the current page's locale bundle.
//!
//! Templates: `base.html` (layout), `guide.html` (a guide page), `index.html` (a language's
//! list of guides), `root.html` (language chooser) and `guide.md` (the Markdown edition). A site
//! overrides any of them with a file of the same name in its `templates/`. HTML and XML are
//! autoescaped; `.md` is not.

mod growth;
mod limits;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluent_bundle::{FluentArgs, FluentValue};
use tera::{Context, Kwargs, State, Tera, Value};

use crate::assets;
use crate::diagnostics::Diagnostic;
use crate::i18n::Locales;

/// Renders pages through tera.
pub(crate) struct Renderer {
    tera: Tera,
    /// `t(key="...")` calls whose key no locale has, found when loading the templates.
    warnings: Vec<Diagnostic>,
    /// The keys of those calls.
    unknown_keys: BTreeSet<String>,
}

impl Renderer {
    /// Loads the embedded templates, then `site_root/templates/*` over them, and registers `t`.
    pub(crate) fn new(
        site_root: &Path,
        locales: Arc<Locales>,
    ) -> Result<Renderer, Vec<Diagnostic>> {
        let mut sources: Vec<(String, String)> = assets::TEMPLATES
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect();
        let mut errors = Vec::new();
        let dir = crate::site_paths::SitePaths::new(site_root).templates();
        if let Ok(entries) = std::fs::read_dir(&dir) {
            let mut files: Vec<_> = entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.is_file())
                .collect();
            files.sort();
            for f in files {
                let name = f
                    .file_name()
                    .map(|n| n.to_string_lossy().into_owned())
                    .unwrap_or_default();
                let shown = PathBuf::from(format!("templates/{name}"));
                match crate::site_files::read_to_string(&f, &shown) {
                    Ok(text) => {
                        sources.retain(|(n, _)| *n != name);
                        sources.push((name, text));
                    }
                    Err(e) => errors.push(e),
                }
            }
        }
        for (name, text) in &sources {
            errors.extend(growth::check(&format!("templates/{name}"), text));
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        let (warnings, unknown_keys) = unknown_t_keys(&sources, &locales);
        let mut tera = Tera::new();
        tera.autoescape_on([".html", ".xml"]);
        let loc = locales.clone();
        tera.register_function(
            "t",
            move |kwargs: Kwargs, state: &State<'_>| -> tera::TeraResult<String> {
                limits::check_time()?;
                Ok(translate(&loc, kwargs, state))
            },
        );
        tera.register_function("range", limits::range);
        tera.add_raw_templates(sources.iter().map(|(n, t)| (n.as_str(), t.as_str()))).map_err(|e| {
            vec![Diagnostic::error(format!("template error: {e}"))
                .in_file(crate::site_paths::TEMPLATES_DIR)
                .with_help("fix the template named in the message (a site's templates/ override the defaults)")]
        })?;
        Ok(Renderer {
            tera,
            warnings,
            unknown_keys,
        })
    }

    /// Warnings about the templates: `t()` keys that no locale has, at their line.
    pub(crate) fn warnings(&self) -> &[Diagnostic] {
        &self.warnings
    }

    /// The keys of those `t()` calls (already reported; see `Locales::take_warnings`).
    pub(crate) fn unknown_keys(&self) -> &BTreeSet<String> {
        &self.unknown_keys
    }

    /// Renders `template` with `ctx`, within the bounds of [`limits`].
    pub(crate) fn render(&self, template: &str, ctx: &Context) -> Result<String, Diagnostic> {
        let (result, bytes, exceeded) = limits::with_budget(|out| {
            crate::i18n::in_template(template, || self.tera.render_to(template, ctx, out))
        });
        let shown = format!("templates/{template}");
        if let Some(e) = exceeded {
            return Err(Diagnostic::error(format!(
                "rendering `{template}` stopped: {}",
                e.describe()
            ))
            .in_file(shown)
            .with_help(
                "a template's loops must stay within the page they write; look for nested loops over `range()` or large lists",
            ));
        }
        let fail = |msg: String| {
            Diagnostic::error(format!("rendering `{template}` failed: {msg}")).in_file(&shown)
        };
        if let Err(e) = result {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            return Err(fail(msg));
        }
        String::from_utf8(bytes).map_err(|e| fail(e.to_string()))
    }
}

/// `t(key="...", name=value, ...)`: the message `key` in the page's language (`lang` in the
/// context), with the other arguments passed to Fluent (numbers formatted by ICU4X).
fn translate(locales: &Locales, kwargs: Kwargs, state: &State<'_>) -> String {
    let lang: String = state
        .get::<String>("lang")
        .ok()
        .flatten()
        .unwrap_or_else(|| locales.default_lang().to_string());
    let Some(loc) = locales
        .get(&lang)
        .or_else(|| locales.get(locales.default_lang()))
    else {
        return String::new();
    };
    let mut key = String::new();
    let mut args = FluentArgs::new();
    for (k, v) in kwargs.iter() {
        let name = k.to_string();
        if name == "key" {
            key = v.as_str().map(str::to_string).unwrap_or_default();
            continue;
        }
        args.set(name, fluent_value(v));
    }
    loc.t_fluent(&key, &args)
}

/// Every `t(key="literal")` in the templates whose key the default language (behind every
/// other) lacks: a warning at its line, and the set of those keys.
fn unknown_t_keys(
    sources: &[(String, String)],
    locales: &Locales,
) -> (Vec<Diagnostic>, BTreeSet<String>) {
    let mut warnings = Vec::new();
    let mut keys = BTreeSet::new();
    let Some(default) = locales.get(locales.default_lang()) else {
        return (warnings, keys);
    };
    for (name, text) in sources {
        let shared: Arc<str> = Arc::from(text.as_str());
        for (i, line) in text.lines().enumerate() {
            let mut rest = line;
            while let Some(at) = rest.find("t(") {
                let word_start = at == 0
                    || !rest[..at]
                        .chars()
                        .last()
                        .is_some_and(|c| c.is_alphanumeric() || c == '_');
                rest = &rest[at + 2..];
                let Some(args) = rest.trim_start().strip_prefix("key") else {
                    continue;
                };
                let Some(args) = args.trim_start().strip_prefix('=') else {
                    continue;
                };
                let args = args.trim_start();
                let Some(q) = args.chars().next().filter(|c| *c == '"' || *c == '\'') else {
                    continue;
                };
                let Some(end) = args[1..].find(q) else {
                    continue;
                };
                let key = &args[1..1 + end];
                if word_start && !default.has(key) {
                    let col = line[..line.len() - rest.len() - 2].chars().count() + 1;
                    warnings.push(
                        Diagnostic::warning(format!(
                            "`t()` asks for the message `{key}`, which no locale has; pages show the key itself"
                        ))
                        .in_file(format!("templates/{name}"))
                        .at(i + 1, col)
                        .with_source(shared.clone())
                        .with_help(format!(
                            "add `{key} = ...` to a file in locales/{}/, or fix the key",
                            locales.default_lang()
                        )),
                    );
                    keys.insert(key.to_string());
                }
            }
        }
    }
    (warnings, keys)
}

fn fluent_value(v: &Value) -> FluentValue<'static> {
    if let Some(i) = v.as_i64() {
        FluentValue::from(i)
    } else if let Some(f) = v.as_f64() {
        FluentValue::from(f)
    } else if let Some(s) = v.as_str() {
        FluentValue::from(s.to_string())
    } else {
        FluentValue::from(v.to_string())
    }
}
