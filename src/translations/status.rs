//! Each translated section's state against the source page and the records: current (its source
//! section's hash is the one recorded), stale (it changed since, or was never recorded) or
//! missing (the translation has no such section); and the translation's sections the source
//! does not have, or has in another order.

use std::collections::BTreeMap;

use serde::Serialize;

use super::hash::section_hash;
use super::records::Record;
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

/// A source section as staleness needs it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SourceSection {
    pub(crate) id: String,
    pub(crate) hash: Digest,
}

impl SourceSection {
    /// The id and normalized hash of each of `sections`.
    pub(crate) fn of(sections: &[Section<'_>]) -> Vec<SourceSection> {
        sections
            .iter()
            .map(|s| SourceSection {
                id: s.id.clone(),
                hash: section_hash(s.text),
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

/// Compares a translation's sections with the source's and the translation's records.
pub(crate) fn compare(
    source: &[SourceSection],
    translation: &[Section<'_>],
    records: Option<&BTreeMap<String, Record>>,
) -> PageStatus {
    let has = |id: &str| translation.iter().any(|t| t.id == id);
    let sections = source
        .iter()
        .map(|s| {
            let recorded = records.and_then(|r| r.get(&s.id)).map(|r| r.hash);
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
        .filter(|t| !source.iter().any(|s| s.id == t.id))
        .map(|t| t.id.clone())
        .collect();
    let shared_source = source.iter().map(|s| s.id.as_str()).filter(|id| has(id));
    let shared_translation = translation
        .iter()
        .map(|t| t.id.as_str())
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
    use super::super::records::stored_text;
    use super::super::sections::sections;
    use super::*;

    const EN: &str = "Intro.\n\n## A\n\nAlpha text.\n\n## B\n\nBeta text.\n\n## C\n\nGamma.\n";
    const ES: &str = "Intro es.\n\n## Uno {#a}\n\nAlfa.\n\n## Dos {#b}\n\nBeta.\n\n## Tres {#c}\n\nGama.\n";

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
        p.sections.iter().map(|s| (s.id.as_str(), s.state)).collect()
    }

    #[test]
    fn marked_is_current_and_an_edit_makes_its_section_stale() {
        let records = marked(EN);
        let now = SourceSection::of(&sections(EN));
        let p = compare(&now, &sections(ES), Some(&records));
        assert!(p.complete(), "{p:?}");
        let edited = EN.replace("Beta text", "Beta words");
        let p = compare(&SourceSection::of(&sections(&edited)), &sections(ES), Some(&records));
        use State::*;
        assert_eq!(states(&p), [("_intro", Current), ("a", Current), ("b", Stale), ("c", Current)]);
        // Never marked: stale.
        let p = compare(&now, &sections(ES), None);
        assert!(p.sections.iter().all(|s| s.state == Stale));
    }

    #[test]
    fn missing_extra_duplicate_and_misordered_sections() {
        let now = SourceSection::of(&sections(EN));
        let es = "## Dos {#b}\n\nx\n\n## Uno {#a}\n\ny\n\n## Otro\n\nz\n\n## Otro\n";
        let p = compare(&now, &sections(es), Some(&marked(EN)));
        use State::*;
        assert_eq!(states(&p), [("_intro", Missing), ("a", Current), ("b", Current), ("c", Missing)]);
        assert_eq!(p.extra, ["otro", "otro"]);
        assert_eq!(p.duplicates, ["otro"]);
        assert!(p.misordered);
        assert!(!p.complete());
    }
}
