//! `vramdoc check`: everything that would make the published site wrong, without writing it.
//!
//! Reports (and exits non-zero on any of them): build errors and warnings (rendered in a scratch
//! folder), output that is stale against its sources, UI strings missing in a locale, guides
//! missing a translation, translated sections whose source changed since they were translated
//! (stale, with a word diff of the change) or that a translation lacks (missing), sections that do
//! not line up with the source's, internal links or images in the output that lead nowhere, words
//! a language's glossary rejects (`glossary`), and verdicts given in prose without the total their
//! table row shows (`prose-figure`). Stale and missing sections are warnings instead when the site
//! sets `translations.stale: warning`.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Serialize;

use crate::diagnostics::Diagnostic;
use crate::site::{self, plan::Plan};
use crate::translations::guides::{read_guides, translations, SectionRow};
use crate::translations::status::State;

/// One problem found by `check`.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
pub(crate) struct Problem {
    /// `error`, `warning`, `stale`, `missing-string`, `missing-translation`,
    /// `stale-translation`, `missing-section`, `translation-sections`, `broken-link`, `glossary`
    /// or `prose-figure`.
    pub(crate) kind: &'static str,
    /// The file concerned, if any.
    pub(crate) file: Option<String>,
    /// What is wrong.
    pub(crate) message: String,
}

/// A guide's translation status in one language.
#[derive(Debug, Clone, Copy, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub(crate) enum TranslationStatus {
    /// Present, every section current and in line with the source.
    UpToDate,
    /// No file for this language.
    Missing,
    /// A section stale or missing, or the sections not in line with the source's.
    Outdated,
}

/// Everything `check` found.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct CheckReport {
    /// The languages, in site order (the columns of `translations`).
    pub(crate) languages: Vec<String>,
    /// Guide slug → status per language.
    pub(crate) translations: BTreeMap<String, Vec<TranslationStatus>>,
    /// Every translated section (per guide, translation language and source section) and its
    /// state.
    pub(crate) sections: Vec<SectionRow>,
    /// Every problem.
    pub(crate) problems: Vec<Problem>,
    /// What the site asked to be told of without failing (`translations.stale: warning`).
    pub(crate) warnings: Vec<Problem>,
}

impl CheckReport {
    /// True when nothing is wrong.
    pub(crate) fn ok(&self) -> bool {
        self.problems.is_empty()
    }

    /// The report for a terminal: problems, then the translation-status table.
    pub(crate) fn to_text(&self) -> String {
        let mut out = String::new();
        for p in self.problems.iter().chain(&self.warnings) {
            match &p.file {
                Some(f) => out.push_str(&format!("{}: {f}: {}\n", p.kind, p.message)),
                None => out.push_str(&format!("{}: {}\n", p.kind, p.message)),
            }
        }
        let width = self
            .translations
            .keys()
            .map(|k| k.chars().count())
            .max()
            .unwrap_or(5)
            .max(5);
        out.push_str(&format!("\n{:width$}", "guide"));
        for l in &self.languages {
            out.push_str(&format!("  {l:<10}"));
        }
        out.push('\n');
        for (guide, row) in &self.translations {
            out.push_str(&format!("{guide:width$}"));
            for s in row {
                let text = match s {
                    TranslationStatus::UpToDate => "up to date",
                    TranslationStatus::Missing => "missing",
                    TranslationStatus::Outdated => "outdated",
                };
                out.push_str(&format!("  {text:<10}"));
            }
            out.push('\n');
        }
        out.push_str(&if self.ok() {
            "\ncheck passed\n".to_string()
        } else {
            format!("\ncheck failed: {} problem(s)\n", self.problems.len())
        });
        out
    }
}

/// Checks the site at `root` against its output folder `out`.
pub(crate) fn check(root: &Path, out: &Path) -> CheckReport {
    let mut problems = Vec::new();
    // Missing-string warnings are reported below from `missing_keys`, as problems.
    let (site, _missing_string_warnings) = match site::load_site(root) {
        Ok(x) => x,
        Err(errors) => {
            return CheckReport {
                languages: Vec::new(),
                translations: BTreeMap::new(),
                sections: Vec::new(),
                problems: diag_problems(&errors),
                warnings: Vec::new(),
            };
        }
    };
    problems.extend(load_problems(&site));
    let languages = site.config.languages.clone();
    problems.extend(located_problems(
        "glossary",
        &crate::glossary::check_site(root, &languages),
    ));
    problems.extend(located_problems(
        "prose-figure",
        &crate::prose_figures::check_site(root),
    ));
    let previous = || site::previous_manifest(out, false, true);
    let request = site::plan::PlanRequest {
        root,
        out,
        purpose: site::plan::Purpose::Check,
        scan: site::plan::Scan::Everything,
        now: site::manifest::now_ns(),
    };
    let plan = match site::plan::plan(&site, &request, previous) {
        Ok(p) => p,
        Err(errors) => {
            problems.extend(diag_problems(&errors));
            return CheckReport {
                languages,
                translations: BTreeMap::new(),
                sections: Vec::new(),
                problems,
                warnings: Vec::new(),
            };
        }
    };
    problems.extend(diag_problems(&plan.warnings));
    let never_built = !plan.incremental;
    let mut drift = Drift::default();
    let translations = translation_status(root, &site.config, &mut drift);
    let Drift {
        sections,
        problems: translation_problems,
        warnings,
    } = drift;
    problems.extend(translation_problems);
    let (errors, lint) = site::dry_run(&site, &plan, root);
    problems.extend(diag_problems(&errors));
    problems.extend(diag_problems(&lint));
    if never_built {
        problems.push(Problem {
            kind: "stale",
            file: Some(out.display().to_string()),
            message: "the site has not been built here yet; run `vramdoc build`".into(),
        });
    } else {
        problems.extend(stale_problems(&plan));
        problems.extend(broken_links(out));
    }
    CheckReport {
        languages,
        translations,
        sections,
        problems,
        warnings,
    }
}

/// What loading the site warned of: problems in the Fluent files and the templates, and UI
/// strings missing in a locale.
fn load_problems(site: &site::SiteContext) -> Vec<Problem> {
    let mut problems = diag_problems(site.locales.load_warnings());
    problems.extend(diag_problems(site.renderer.warnings()));
    for (lang, key) in site.locales.missing_keys() {
        problems.push(Problem {
            kind: "missing-string",
            file: Some(format!("locales/{lang}")),
            message: format!("locale `{lang}` has no message `{key}`"),
        });
    }
    problems
}

/// The output the plan would render again (out of date) or remove (its source is gone).
fn stale_problems(plan: &Plan) -> Vec<Problem> {
    let rerendered = plan.jobs.iter().filter(|j| j.render).map(|job| Problem {
        kind: "stale",
        file: None,
        message: format!("`{}` is out of date; run `vramdoc build`", plan.job_id(job)),
    });
    let removed = plan.removed.iter().map(|gone| Problem {
        kind: "stale",
        file: None,
        message: format!(
            "`{}` belongs to a deleted source; run `vramdoc build`",
            gone.id
        ),
    });
    rerendered.chain(removed).collect()
}

/// Located diagnostics of one kind (`glossary`, `prose-figure`) as problems of that kind.
fn located_problems(kind: &'static str, diags: &[Diagnostic]) -> Vec<Problem> {
    diags
        .iter()
        .map(|d| Problem {
            kind,
            file: d.file.as_ref().map(|_| d.location()),
            message: d.message.clone(),
        })
        .collect()
}

fn diag_problems(diags: &[Diagnostic]) -> Vec<Problem> {
    diags
        .iter()
        .map(|d| Problem {
            kind: if d.is_error() { "error" } else { "warning" },
            file: d.file.as_ref().map(|_| d.location()),
            message: d.message.clone(),
        })
        .collect()
}

/// What translation status adds to a report.
#[derive(Default)]
struct Drift {
    sections: Vec<SectionRow>,
    problems: Vec<Problem>,
    warnings: Vec<Problem>,
}

/// Guide × language status from each translation's sections; missing translations, stale and
/// missing sections and sections out of line with the source are problems (stale and missing
/// sections warnings instead when the site says so).
fn translation_status(
    root: &Path,
    config: &crate::config::SiteConfig,
    drift: &mut Drift,
) -> BTreeMap<String, Vec<TranslationStatus>> {
    let (guides, errors) = read_guides(root, config);
    // Page errors are the plan's to report; the records files are only read here.
    drift.problems.extend(diag_problems(
        &guides
            .iter()
            .filter_map(|g| g.records_error.clone())
            .collect::<Vec<_>>(),
    ));
    drop(errors);
    let default = &config.default_language;
    let mut table = BTreeMap::new();
    for guide in &guides {
        let slug = &guide.slug;
        let (source, list) = translations(guide, &config.languages, default, None);
        let mut row = Vec::new();
        for lang in &config.languages {
            if lang == default {
                let have = guide.bodies.contains_key(lang);
                row.push(if have {
                    TranslationStatus::UpToDate
                } else {
                    TranslationStatus::Missing
                });
                continue;
            }
            let Some(t) = list.iter().find(|t| t.lang == *lang) else {
                row.push(TranslationStatus::Missing);
                continue;
            };
            drift.sections.extend(t.rows(&source));
            let file = Some(format!("content/{slug}/{lang}.md"));
            let Some(page) = &t.status else {
                drift.problems.push(Problem {
                    kind: "missing-translation",
                    file,
                    message: format!("guide `{slug}` has no `{lang}` translation"),
                });
                row.push(TranslationStatus::Missing);
                continue;
            };
            let sink = if config.stale_translations_warn {
                &mut drift.warnings
            } else {
                &mut drift.problems
            };
            let tracked = guide.records.contains_key(lang);
            if !tracked {
                sink.push(Problem {
                    kind: "stale-translation",
                    file: file.clone(),
                    message: format!("was never marked: nothing records what it was translated from, so readers see no notices; once it is up to date with content/{slug}/{default}.md, run `vramdoc translations mark {lang} {slug}`"),
                });
            }
            for s in &page.sections {
                let message = match s.state {
                    State::Current => continue,
                    State::Stale if !tracked => continue,
                    State::Missing if !tracked => format!(
                        "has no section `{}` (content/{slug}/{default}.md has it)",
                        s.id
                    ),
                    State::Missing => format!(
                        "has no section `{}` (content/{slug}/{default}.md has it); readers see the {default} section",
                        s.id
                    ),
                    State::Stale => stale_message(t.diffs.get(&s.id), &s.id, slug, lang, default),
                };
                let kind = match s.state {
                    State::Missing => "missing-section",
                    _ => "stale-translation",
                };
                sink.push(Problem {
                    kind,
                    file: file.clone(),
                    message,
                });
            }
            let misaligned = page.extra.iter().map(|id| format!("section `{id}` is not in content/{slug}/{default}.md; give its heading the id of the section it translates, `{{#id}}`"))
                .chain(page.duplicates.iter().map(|id| format!("more than one section has the id `{id}`")))
                .chain(page.misordered.then(|| format!("the sections are not in the order of content/{slug}/{default}.md")));
            for message in misaligned {
                drift.problems.push(Problem {
                    kind: "translation-sections",
                    file: file.clone(),
                    message,
                });
            }
            row.push(if page.complete() {
                TranslationStatus::UpToDate
            } else {
                TranslationStatus::Outdated
            });
        }
        table.insert(slug.clone(), row);
    }
    table
}

/// The message for a stale section: the word diff of its source since it was marked.
fn stale_message(
    diff: Option<&Vec<String>>,
    id: &str,
    slug: &str,
    lang: &str,
    default: &str,
) -> String {
    let mark = format!("update it, then run `vramdoc translations mark {lang} {slug} {id}`");
    match diff.filter(|d| !d.is_empty()) {
        Some(lines) => format!(
            "section `{id}` changed in content/{slug}/{default}.md since it was translated ({mark}):\n{}",
            lines
                .iter()
                .map(|l| format!("    {l}"))
                .collect::<Vec<_>>()
                .join("\n")
        ),
        None => format!(
            "section `{id}` has no record of what it was translated from; if it is up to date, run `vramdoc translations mark {lang} {slug} {id}`"
        ),
    }
}

/// Relative links and images in the output's HTML pages whose target does not exist.
fn broken_links(out: &Path) -> Vec<Problem> {
    // The site's one directory walker (sorted, with a depth limit against symlink loops).
    let (files, _) = crate::site_files::walk(out, "", true);
    let pages = files
        .into_iter()
        .filter(|p| p.extension().is_some_and(|x| x == "html"));
    let mut problems = Vec::new();
    for page in pages {
        let Ok(html) = std::fs::read_to_string(&page) else {
            continue;
        };
        let dir = page.parent().unwrap_or(out);
        for target in link_targets(&html) {
            let path = target.split(['#', '?']).next().unwrap_or("");
            if path.is_empty()
                || path.contains(':')
                || path.starts_with("//")
                || path.starts_with('/')
            {
                continue;
            }
            let mut resolved = dir.join(path);
            if path.ends_with('/') {
                resolved.push("index.html");
            }
            if !resolved.exists() {
                problems.push(Problem {
                    kind: "broken-link",
                    file: Some(
                        page.strip_prefix(out)
                            .unwrap_or(&page)
                            .display()
                            .to_string(),
                    ),
                    message: format!("`{target}` leads nowhere"),
                });
            }
        }
    }
    problems
}

/// Values of `href="..."` and `src="..."` attributes.
fn link_targets(html: &str) -> Vec<String> {
    let mut out = Vec::new();
    for attr in ["href=\"", "src=\""] {
        let mut rest = html;
        while let Some(i) = rest.find(attr) {
            let after = &rest[i + attr.len()..];
            if let Some(end) = after.find('"') {
                out.push(after[..end].replace("&amp;", "&"));
            }
            rest = &after[after.find('"').map_or(after.len(), |e| e + 1)..];
        }
    }
    out
}
