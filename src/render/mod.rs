//! The tera environment: the default templates (compiled in), a site's overrides, and the `t`
//! function that reads the current page's locale bundle.
//!
//! Templates: `base.html` (layout), `guide.html` (a guide page), `index.html` (a language's
//! list of guides), `root.html` (language chooser) and `guide.md` (the Markdown edition). A site
//! overrides any of them with a file of the same name in its `templates/`. HTML and XML are
//! autoescaped; `.md` is not.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use fluent_bundle::{FluentArgs, FluentValue};
use tera::{Context, Kwargs, State, Tera, Value};

use crate::assets;
use crate::diagnostics::Diagnostic;
use crate::i18n::Locales;

/// Renders pages through tera.
pub struct Renderer {
    tera: Tera,
}

impl Renderer {
    /// Loads the embedded templates, then `site_root/templates/*` over them, and registers `t`.
    pub fn new(site_root: &Path, locales: Arc<Locales>) -> Result<Renderer, Vec<Diagnostic>> {
        let mut sources: Vec<(String, String)> = assets::TEMPLATES
            .iter()
            .map(|(name, text)| (name.to_string(), text.to_string()))
            .collect();
        let mut errors = Vec::new();
        let dir = site_root.join("templates");
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
        if !errors.is_empty() {
            return Err(errors);
        }
        let mut tera = Tera::new();
        tera.autoescape_on([".html", ".xml"]);
        let loc = locales.clone();
        tera.register_function("t", move |kwargs: Kwargs, state: &State<'_>| -> String {
            translate(&loc, kwargs, state)
        });
        tera.add_raw_templates(sources.iter().map(|(n, t)| (n.as_str(), t.as_str()))).map_err(|e| {
            vec![Diagnostic::error(format!("template error: {e}"))
                .in_file("templates")
                .with_help("fix the template named in the message (a site's templates/ override the defaults)")]
        })?;
        Ok(Renderer { tera })
    }

    /// Renders `template` with `ctx`.
    pub fn render(&self, template: &str, ctx: &Context) -> Result<String, Diagnostic> {
        self.tera.render(template, ctx).map_err(|e| {
            let mut msg = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                msg.push_str(&format!(": {s}"));
                source = s.source();
            }
            Diagnostic::error(format!("rendering `{template}` failed: {msg}"))
                .in_file(format!("templates/{template}"))
        })
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
