//! A guide's sections as translations share them: the text before the first `##`/`###` heading
//! (id [`INTRO`]) and each `##`/`###` section up to the next one. A section's id is its
//! heading's explicit `{#id}`, else the slug of the heading text (the id the renderer gives the
//! heading), so a translation aligns its sections with the source by writing the source's id
//! after its own heading text.

use pulldown_cmark::{Event, HeadingLevel, Tag, TagEnd};

use crate::markdown::slug::slugify;

/// The id of the text before the first section heading.
pub(crate) const INTRO: &str = "_intro";

/// One section of a page body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Section<'a> {
    /// Its id: explicit `{#id}`, else the heading's slug; [`INTRO`] for the text before.
    pub(crate) id: String,
    /// Its text, heading line included.
    pub(crate) text: &'a str,
    /// Its byte offset in the body.
    pub(crate) start: usize,
    /// Byte offset in `text` where the heading ends (0 for [`INTRO`]).
    pub(crate) heading_end: usize,
}

/// The sections of `body`, in order; the intro only when it holds more than whitespace.
pub(crate) fn sections(body: &str) -> Vec<Section<'_>> {
    // (start, heading end, id) of each `##`/`###` heading.
    let mut heads: Vec<(usize, usize, String)> = Vec::new();
    let mut open: Option<(usize, usize, Option<String>, String)> = None;
    let parser = crate::markdown::parser(body).into_offset_iter();
    for (event, range) in parser {
        match event {
            Event::Start(Tag::Heading {
                level: HeadingLevel::H2 | HeadingLevel::H3,
                id,
                ..
            }) => {
                let id = id.map(|i| i.to_string());
                open = Some((range.start, range.end, id, String::new()));
            }
            Event::Text(t) | Event::Code(t) => {
                if let Some((.., text)) = &mut open {
                    text.push_str(&t);
                }
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some((start, end, id, text)) = open.take() {
                    heads.push((start, end, id.unwrap_or_else(|| slugify(&text))));
                }
            }
            _ => {}
        }
    }
    let mut out = Vec::with_capacity(heads.len() + 1);
    let first = heads.first().map_or(body.len(), |h| h.0);
    if !body[..first].trim().is_empty() {
        out.push(Section {
            id: INTRO.to_string(),
            text: &body[..first],
            start: 0,
            heading_end: 0,
        });
    }
    for (i, (start, end, id)) in heads.iter().enumerate() {
        let next = heads.get(i + 1).map_or(body.len(), |h| h.0);
        out.push(Section {
            id: id.clone(),
            text: &body[*start..next],
            start: *start,
            heading_end: end - start,
        });
    }
    out
}

/// The sections of `page`'s body, split once per page read (its summary and a translation's
/// notices share the split; see [`sections`]).
pub(crate) fn of_page(page: &crate::content::Page) -> Vec<Section<'_>> {
    let body = page.body();
    let bounds = page.sections.get_or_init(|| {
        (sections(body).into_iter())
            .map(|s| (s.id, s.start, s.heading_end))
            .collect()
    });
    let ends = bounds.iter().skip(1).map(|b| b.1).chain([body.len()]);
    (bounds.iter().zip(ends))
        .map(|((id, start, heading_end), end)| Section {
            id: id.clone(),
            text: &body[*start..end],
            start: *start,
            heading_end: *heading_end,
        })
        .collect()
}

/// The ids of `sections`, in order.
pub(crate) fn ids<'a>(sections: &'a [Section<'_>]) -> Vec<&'a str> {
    sections.iter().map(|s| s.id.as_str()).collect()
}

/// Ids that more than one section of a page has, in order of their second use.
pub(crate) fn duplicate_ids(ids: &[&str]) -> Vec<String> {
    let mut seen = std::collections::HashSet::new();
    let mut dups: Vec<String> = Vec::new();
    for id in ids {
        if !seen.insert(*id) && !dups.iter().any(|d| d == id) {
            dups.push(id.to_string());
        }
    }
    dups
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ids_of(body: &str) -> Vec<String> {
        sections(body).into_iter().map(|s| s.id).collect()
    }

    #[test]
    fn splits_at_second_and_third_level_headings_with_slug_or_explicit_id() {
        let body = "Lead text.\n\n## The problem\n\nText.\n\n### Sub part\n\nMore.\n\n#### deep\n\n## El problema {#the-fix}\n\nFin.\n";
        assert_eq!(
            ids_of(body),
            ["_intro", "the-problem", "sub-part", "the-fix"]
        );
        let s = sections(body);
        assert_eq!(s[1].text, "## The problem\n\nText.\n\n");
        assert_eq!(
            &s[3].text[..s[3].heading_end],
            "## El problema {#the-fix}\n"
        );
        assert!(s[2].text.contains("#### deep"));
    }

    #[test]
    fn no_intro_when_blank_and_headings_in_code_are_not_sections() {
        let body = "\n\n## A\n\n```\n## not a heading\n```\n";
        assert_eq!(ids_of(body), ["a"]);
        assert_eq!(sections(body)[0].start, 2);
    }

    #[test]
    fn duplicates_are_named_once() {
        let body = "## A\n\n## A\n\n## B\n\n## A\n";
        assert_eq!(duplicate_ids(&ids(&sections(body))), ["a"]);
    }
}
