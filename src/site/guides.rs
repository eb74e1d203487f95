//! A guide's computed data (one estimate per guide, shared by its translations) and the parts of
//! its front matter that describe it.

use yaml_serde::Value as Yaml;

use super::manifest::Hasher;
use crate::content::Page;
use crate::diagnostics::Diagnostic;
use crate::estimate::GpuCatalog;
use crate::expand::{self, GuideData};

/// Computes the data of the guide whose `scenario:` page is `page`.
pub(crate) fn compute_one(page: &Page, catalog: &GpuCatalog) -> Result<GuideData, Vec<Diagnostic>> {
    let (scenario, line) = page
        .front
        .scenario
        .as_ref()
        .map(|(v, l)| (v, *l))
        .unwrap_or((&Yaml::Null, 1));
    expand::guide_data(scenario, &page.front.variants, catalog).map_err(|e| {
        let line = e
            .line
            .or_else(|| {
                let key = e.key.as_deref()?;
                page.front
                    .scenario_key_line(key.rsplit('.').next().unwrap_or(key))
            })
            .unwrap_or(line);
        vec![
            Diagnostic::error(format!("invalid scenario: {}", e.message))
                .in_file(page.src.shown())
                .at(line, 1)
                .with_source(page.text.clone())
                .with_help(
                    "see the README's scenario keys; the estimator's defaults are nanoGPT's",
                ),
        ]
    })
}

/// Hash of what a guide's pages show from its data. The catalog of other GPUs is left out: only
/// pages that name `catalog.` depend on it (see the page job's inputs).
pub(crate) fn data_hash(d: &GuideData) -> super::manifest::Digest {
    let mut h = Hasher::new();
    d.shown_parts(|part| {
        h.part(part);
    });
    h.finish()
}

/// The (id, label) pairs of a page's variants, in its language.
pub(crate) fn variant_labels(p: &Page) -> Vec<(String, String)> {
    p.front
        .variants
        .iter()
        .map(|v| (v.id.clone(), v.label.clone()))
        .collect()
}
