//! Each translated section's state against the source page and the records: current (its source
//! section's hash is the one recorded), stale (it changed since, or was never recorded) or
//! missing (the translation has no such section); and the translation's sections the source
//! does not have, or has in another order.

use serde::{Deserialize, Serialize};

use super::sections::{duplicate_ids, Section};
use crate::site::manifest::Digest;

/// A translated section's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum State {
    /// Translated from the source section as it is now.
    Current,
    /// The source section changed after it was translated (or it was never marked).
    Stale,
    /// The translation has no such section.
    Missing,
}

impl State {
    /// The state's name, as `check` and `status` print it.
    pub(crate) fn name(self) -> &'static str {
        match self {
            State::Current => "current",
            State::Stale => "stale",
            State::Missing => "missing",
        }
    }
}

/// A section as staleness needs it: its id and normalized hash (kept in each page's summary).
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) struct SourceSection {
    pub(crate) id: String,
    pub(crate) hash: Digest,
}

impl SourceSection {
    /// The id and normalized hash of each of `sections`.
    pub(crate) fn of(sections: &[Section<'_>]) -> Vec<SourceSection> {
        let hashes = super::hash::section_hashes(sections.iter().map(|s| s.text));
        (sections.iter().zip(hashes))
            .map(|(s, hash)| SourceSection {
                id: s.id.clone(),
                hash,
            })
            .collect()
    }
}

/// One source section's state in a translation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SectionState {
    pub(crate) id: String,
    pub(crate) state: State,
}

/// A translation page against its source.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub(crate) struct PageStatus {
    /// Per source section, in the source's order.
    pub(crate) sections: Vec<SectionState>,
    /// Sections of the translation the source does not have.
    pub(crate) extra: Vec<String>,
    /// Ids used by more than one section of the translation.
    pub(crate) duplicates: Vec<String>,
    /// True when the shared sections come in another order than the source's.
    pub(crate) misordered: bool,
}

impl PageStatus {
    /// True when every section is current and the sections line up.
    pub(crate) fn complete(&self) -> bool {
        self.aligned() && self.sections.iter().all(|s| s.state == State::Current)
    }

    /// True when the translation has no extra, duplicated or misordered sections.
    pub(crate) fn aligned(&self) -> bool {
        self.extra.is_empty() && self.duplicates.is_empty() && !self.misordered
    }

    /// The state of section `id`, if the source has it.
    pub(crate) fn state_of(&self, id: &str) -> Option<State> {
        self.sections.iter().find(|s| s.id == id).map(|s| s.state)
    }
}

/// Compares a translation's section ids with the source's sections and the hashes recorded for
/// the translation (`recorded`: a section id's recorded hash, if any).
pub(crate) fn compare(
    source: &[SourceSection],
    translation: &[&str],
    recorded: impl Fn(&str) -> Option<Digest>,
) -> PageStatus {
    let has = |id: &str| translation.contains(&id);
    let sections = source
        .iter()
        .map(|s| {
            let recorded = recorded(&s.id);
            let state = match (has(&s.id), recorded) {
                (false, _) => State::Missing,
                (true, Some(h)) if h == s.hash => State::Current,
                (true, _) => State::Stale,
            };
            SectionState {
                id: s.id.clone(),
                state,
            }
        })
        .collect();
    let extra = translation
        .iter()
        .filter(|t| !source.iter().any(|s| s.id == **t))
        .map(|t| t.to_string())
        .collect();
    let shared_source = source.iter().map(|s| s.id.as_str()).filter(|id| has(id));
    let shared_translation = translation
        .iter()
        .copied()
        .filter(|id| source.iter().any(|s| s.id == *id));
    PageStatus {
        sections,
        extra,
        duplicates: duplicate_ids(translation),
        misordered: !shared_source.eq(shared_translation),
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use super::super::hash::section_hash;
    use super::super::records::{stored_text, Record};
    use super::super::sections::{ids, sections};
    use super::*;

    fn compare_texts(en: &str, es: &str, records: Option<&BTreeMap<String, Record>>) -> PageStatus {
        let es = sections(es);
        compare(&SourceSection::of(&sections(en)), &ids(&es), |id| {
            records.and_then(|r| r.get(id)).map(|r| r.hash)
        })
    }

    const EN: &str = "Intro.\n\n## A\n\nAlpha text.\n\n## B\n\nBeta text.\n\n## C\n\nGamma.\n";
    const ES: &str =
        "Intro es.\n\n## Uno {#a}\n\nAlfa.\n\n## Dos {#b}\n\nBeta.\n\n## Tres {#c}\n\nGama.\n";

    fn marked(en: &str) -> BTreeMap<String, Record> {
        sections(en)
            .iter()
            .map(|s| {
                let r = Record {
                    hash: section_hash(s.text),
                    source: stored_text(s.text),
                };
                (s.id.clone(), r)
            })
            .collect()
    }

    fn states(p: &PageStatus) -> Vec<(&str, State)> {
        p.sections
            .iter()
            .map(|s| (s.id.as_str(), s.state))
            .collect()
    }

    #[test]
    fn marked_is_current_and_an_edit_makes_its_section_stale() {
        let records = marked(EN);
        let p = compare_texts(EN, ES, Some(&records));
        assert!(p.complete(), "{p:?}");
        let edited = EN.replace("Beta text", "Beta words");
        let p = compare_texts(&edited, ES, Some(&records));
        use State::*;
        assert_eq!(
            states(&p),
            [
                ("_intro", Current),
                ("a", Current),
                ("b", Stale),
                ("c", Current)
            ]
        );
        // Never marked: stale.
        let p = compare_texts(EN, ES, None);
        assert!(p.sections.iter().all(|s| s.state == Stale));
    }

    #[test]
    fn missing_extra_duplicate_and_misordered_sections() {
        let es = "## Dos {#b}\n\nx\n\n## Uno {#a}\n\ny\n\n## Otro\n\nz\n\n## Otro\n";
        let p = compare_texts(EN, es, Some(&marked(EN)));
        use State::*;
        assert_eq!(
            states(&p),
            [
                ("_intro", Missing),
                ("a", Current),
                ("b", Current),
                ("c", Missing)
            ]
        );
        assert_eq!(p.extra, ["otro", "otro"]);
        assert_eq!(p.duplicates, ["otro"]);
        assert!(p.misordered);
        assert!(!p.complete());
    }
}
