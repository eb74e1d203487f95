//! What one page gives the index: its sections (heading, anchor, weighted terms and text),
//! collected from the events the page's renderer parses, so the index holds the page as readers
//! see it (computed figures and tables included) with the anchors the renderer gave its
//! headings, without reading or parsing the page again.

use pulldown_cmark::{Event, Tag, TagEnd};
use rustc_hash::FxHashMap as HashMap;

use super::synonyms::{self, IndexedGroup};
use super::terms;

/// The most characters of a section's text an index keeps (its excerpt): all of most sections,
/// so snippets come from where the terms are and quoted phrases are checked against the text
/// itself, while a long section (a table of figures) cannot grow the index without bound.
/// `static/search.js` (`FULL_TEXT`) must use the same figure.
pub(crate) const EXCERPT_CHARS: usize = 600;

/// Weight of a term in a page's title (added to its first section).
const TITLE_WEIGHT: u32 = 12;
/// Weight of a term in a section's heading.
const HEADING_WEIGHT: u32 = 6;
/// Weight of a term in the page's description (added to its first section).
const DESCRIPTION_WEIGHT: u32 = 3;
/// The most one term weighs in one section (a term repeated 100 times is not 100 times better).
const MAX_WEIGHT: u32 = 60;

/// A section of a page: its heading and anchor (both empty for the text before the first
/// heading), its terms with their weights and the start of its text.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SearchSection {
    pub(crate) heading: String,
    pub(crate) anchor: String,
    pub(crate) weights: HashMap<String, u32>,
    /// The start of its body text, whitespace collapsed, at most [`EXCERPT_CHARS`] characters.
    pub(crate) excerpt: String,
}

impl SearchSection {
    pub(crate) fn new(heading: String, anchor: String) -> SearchSection {
        SearchSection {
            heading,
            anchor,
            weights: HashMap::default(),
            excerpt: String::new(),
        }
    }

    /// Adds the terms of `text`, each occurrence weighing `weight`, and the token of each synonym
    /// group a run of them belongs to.
    fn add(&mut self, text: &str, weight: u32, groups: &[IndexedGroup]) {
        let weights = &mut self.weights;
        let mut bump = |t: &str| match weights.get_mut(t) {
            Some(w) => *w = (*w + weight).min(MAX_WEIGHT),
            None => {
                weights.insert(t.to_string(), weight.min(MAX_WEIGHT));
            }
        };
        let mut recent = synonyms::Recent::new(groups);
        terms(text, |t| {
            bump(t);
            recent.push(t, &mut bump);
        });
    }

    /// Adds body text: its terms, and its start to the excerpt.
    fn add_text(&mut self, text: &str, groups: &[IndexedGroup]) {
        self.add(text, 1, groups);
        let mut have = self.excerpt.chars().count();
        for word in text.split_whitespace() {
            if have >= EXCERPT_CHARS {
                break;
            }
            if !self.excerpt.is_empty() {
                self.excerpt.push(' ');
                have += 1;
            }
            for c in word.chars().take(EXCERPT_CHARS.saturating_sub(have)) {
                self.excerpt.push(c);
                have += 1;
            }
        }
    }
}

/// What a page contributes to its first section besides its text: title, slug, description and
/// the out-of-memory message it explains.
pub(crate) struct Head<'a> {
    pub(crate) title: &'a str,
    pub(crate) slug: &'a str,
    pub(crate) description: Option<&'a str>,
    pub(crate) error: Option<&'a str>,
}

/// Gathers a page's sections from the Markdown events its renderer parses (fed one by one to
/// [`Collector::event`]); [`Collector::finish`] gives each section its heading's rendered id.
pub(crate) struct Collector {
    groups: Vec<IndexedGroup>,
    sections: Vec<SearchSection>,
    /// The text of the heading being read, if one is.
    heading: Option<String>,
    /// Body text not yet added to the last section.
    text: String,
}

impl Collector {
    /// A collector for a page in `lang`, its first section holding `head`.
    pub(crate) fn new(lang: &str, head: &Head<'_>) -> Collector {
        let groups = synonyms::groups(lang);
        let mut first = SearchSection::new(String::new(), String::new());
        first.add(head.title, TITLE_WEIGHT, &groups);
        first.add(head.slug, TITLE_WEIGHT, &groups);
        first.add(head.description.unwrap_or(""), DESCRIPTION_WEIGHT, &groups);
        first.add(head.error.unwrap_or(""), DESCRIPTION_WEIGHT, &groups);
        Collector {
            groups,
            sections: vec![first],
            heading: None,
            text: String::new(),
        }
    }

    /// Takes one event of the parse: text and code go to the section being read, a heading
    /// starts the next one.
    pub(crate) fn event(&mut self, event: &Event<'_>) {
        match event {
            Event::Start(Tag::Heading { .. }) => {
                self.flush();
                self.heading = Some(String::new());
            }
            Event::End(TagEnd::Heading(_)) => {
                if let Some(words) = self.heading.take() {
                    let mut s = SearchSection::new(words.trim().to_string(), String::new());
                    let heading = s.heading.clone();
                    s.add(&heading, HEADING_WEIGHT, &self.groups);
                    self.sections.push(s);
                }
            }
            Event::Text(t) | Event::Code(t) => match &mut self.heading {
                Some(words) => words.push_str(t),
                None => self.text.push_str(t),
            },
            Event::SoftBreak | Event::HardBreak | Event::End(_) if self.heading.is_none() => {
                self.text.push(' ');
            }
            _ => {}
        }
    }

    fn flush(&mut self) {
        if let Some(s) = self.sections.last_mut() {
            s.add_text(&self.text, &self.groups);
        }
        self.text.clear();
    }

    /// The page's sections; `ids` are the ids the renderer gave its headings, in order.
    pub(crate) fn finish(mut self, ids: &[&str]) -> Vec<SearchSection> {
        self.flush();
        for (s, id) in self.sections.iter_mut().skip(1).zip(ids) {
            s.anchor = id.to_string();
        }
        self.sections
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pulldown_cmark::Parser;

    #[test]
    fn sections_follow_headings_and_take_the_given_ids() {
        let head = Head {
            title: "T",
            slug: "t",
            description: None,
            error: None,
        };
        let mut c = Collector::new("en", &head);
        let md = "intro\n\n## Un título\n\ntexto | 6.14 GiB\n\n## B\n";
        for e in Parser::new_ext(md, crate::markdown::options()) {
            c.event(&e);
        }
        let s = c.finish(&["un-título", "own"]);
        let anchors: Vec<&str> = s.iter().map(|s| s.anchor.as_str()).collect();
        assert_eq!(anchors, ["", "un-título", "own"]);
        assert!(s[1].weights.contains_key("texto"));
        assert_eq!(s[1].weights.get("14"), Some(&1));
        assert_eq!(s[1].excerpt, "texto | 6.14 GiB");
        assert_eq!(s[0].weights.get("t"), Some(&24));
    }
}
