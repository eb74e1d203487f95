//! One part of a language's index: its pages' sections put together as the file the script
//! reads, and the sections read back from a part's previous file, so a part re-indexing one
//! edited page takes the others' from there instead of rendering them again.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap as HashMap;
use serde::{Deserialize, Serialize};

use super::page::SearchSection;
use super::synonyms;

/// Format version of the index object (`v`), checked by the script.
const VERSION: u32 = 3;

/// What opens a part's file, before its JSON object.
const PREFIX: &str = "/* vramdoc search index part: generated, do not edit. */\n(window.vramdocSearch = window.vramdocSearch || []).push(";
/// What closes it.
const SUFFIX: &str = ");\n";

/// One page to index, in the order the language index lists it.
pub(crate) struct Doc<'a> {
    pub(crate) slug: &'a str,
    pub(crate) title: &'a str,
    pub(crate) description: Option<&'a str>,
    pub(crate) sections: &'a [SearchSection],
}

/// One part of the index, as written to its file (pushed onto `window.vramdocSearch`).
#[derive(Serialize)]
struct Index<'a> {
    /// Format version.
    v: u32,
    /// The language.
    lang: &'a str,
    /// This part's number.
    part: usize,
    /// In part 0 only: the numbers of the language's parts (those with guides, and 0).
    #[serde(skip_serializing_if = "Option::is_none")]
    parts: Option<Vec<usize>>,
    /// In part 0 only: the synonym groups, each a token and its members' terms, which the
    /// script turns a query's members into.
    #[serde(skip_serializing_if = "Option::is_none")]
    syn: Option<Vec<synonyms::IndexedGroup>>,
    /// Per page: title, link relative to the language folder, description.
    docs: Vec<(&'a str, String, &'a str)>,
    /// Per section (all pages of the part, in order): its page, heading, anchor and excerpt.
    sections: Vec<(u32, &'a str, &'a str, &'a str)>,
    /// Per term, sorted: its postings (see [`push_posting`]).
    terms: BTreeMap<&'a str, Vec<i64>>,
}

/// Adds a posting to a term's flat list: the section number as the difference `delta` from the
/// previous posting's (the first: the number itself) and the term's weight there. A weight of 1
/// (most postings: a body word once) is one negative number, `-(delta + 1)`; any other weight
/// follows its delta, `delta, weight`.
fn push_posting(list: &mut Vec<i64>, delta: u32, weight: u32) {
    if weight == 1 {
        list.push(-i64::from(delta) - 1);
    } else {
        list.extend([i64::from(delta), i64::from(weight)]);
    }
}

/// A part's file read back: what [`Index`] wrote, owned.
#[derive(Deserialize)]
struct Written {
    v: u32,
    docs: Vec<(String, String, String)>,
    sections: Vec<(u32, String, String, String)>,
    terms: HashMap<String, Vec<i64>>,
}

/// Builds part `part` of the index of `lang` from its pages (in the order given). `parts` lists
/// the language's parts, given to part 0.
pub(crate) fn index_part(
    lang: &str,
    part: usize,
    parts: Option<&[usize]>,
    docs: &[Doc<'_>],
) -> (String, Vec<u8>) {
    let mut index = Index {
        v: VERSION,
        lang,
        part,
        parts: parts.map(|p| {
            let mut all = vec![0];
            all.extend(p.iter().copied().filter(|&i| i != 0));
            all
        }),
        syn: (part == 0).then(|| synonyms::groups(lang)),
        docs: Vec::with_capacity(docs.len()),
        sections: Vec::new(),
        terms: BTreeMap::new(),
    };
    // Per term: the last section it was seen in and its postings so far.
    let mut postings: HashMap<&str, (u32, Vec<i64>)> = HashMap::default();
    for (doc_no, d) in docs.iter().enumerate() {
        let doc_no = doc_no as u32;
        index.docs.push((
            d.title,
            format!("{}/index.html", d.slug),
            d.description.unwrap_or(""),
        ));
        for s in d.sections {
            let sec_no = index.sections.len() as u32;
            for (term, &weight) in &s.weights {
                match postings.get_mut(term.as_str()) {
                    Some((last, list)) => {
                        push_posting(list, sec_no - *last, weight);
                        *last = sec_no;
                    }
                    None => {
                        let mut list = Vec::with_capacity(2);
                        push_posting(&mut list, sec_no, weight);
                        postings.insert(term, (sec_no, list));
                    }
                }
            }
            (index.sections).push((doc_no, &s.heading, &s.anchor, &s.excerpt));
        }
    }
    index.terms = postings
        .into_iter()
        .map(|(t, (_, list))| (t, list))
        .collect();
    let json = serde_json::to_string(&index).unwrap_or_default();
    let mut bytes = Vec::with_capacity(json.len() + PREFIX.len() + SUFFIX.len());
    bytes.extend_from_slice(PREFIX.as_bytes());
    bytes.extend_from_slice(json.as_bytes());
    bytes.extend_from_slice(SUFFIX.as_bytes());
    (super::part_path(lang, part), bytes)
}

/// The sections of each page (by slug) of a part's previous file, exactly as [`index_part`] was
/// given them; `None` when the file is not one this version writes.
pub(crate) fn previous_sections(bytes: &[u8]) -> Option<HashMap<String, Vec<SearchSection>>> {
    let json = (bytes.strip_prefix(PREFIX.as_bytes()))?.strip_suffix(SUFFIX.as_bytes())?;
    let written: Written = serde_json::from_slice(json).ok()?;
    if written.v != VERSION {
        return None;
    }
    let mut sections: Vec<SearchSection> = (written.sections.iter())
        .map(|(_, heading, anchor, excerpt)| SearchSection {
            excerpt: excerpt.clone(),
            ..SearchSection::new(heading.clone(), anchor.clone())
        })
        .collect();
    for (term, list) in written.terms {
        let (mut at, mut next) = (0u32, list.iter());
        while let Some(&first) = next.next() {
            let (delta, weight) = match first {
                d if d < 0 => (-d - 1, 1),
                d => (d, *next.next()?),
            };
            at = at.checked_add(u32::try_from(delta).ok()?)?;
            let s = sections.get_mut(at as usize)?;
            s.weights.insert(term.clone(), u32::try_from(weight).ok()?);
        }
    }
    let mut pages: HashMap<String, Vec<SearchSection>> = HashMap::default();
    for ((doc, ..), section) in written.sections.iter().zip(sections) {
        let (_, link, _) = written.docs.get(*doc as usize)?;
        let slug = link.strip_suffix("/index.html")?;
        pages.entry(slug.to_string()).or_default().push(section);
    }
    Some(pages)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn section(heading: &str, anchor: &str, terms: &[(&str, u32)], excerpt: &str) -> SearchSection {
        let mut s = SearchSection::new(heading.into(), anchor.into());
        s.weights = terms.iter().map(|(t, w)| (t.to_string(), *w)).collect();
        s.excerpt = excerpt.into();
        s
    }

    #[test]
    fn a_part_read_back_gives_each_page_its_sections() {
        let a = vec![
            section("", "", &[("alpha", 12), ("oom", 3)], "intro"),
            section("Fix", "fix", &[("fix", 6), ("oom", 1)], "6.14 GiB"),
        ];
        let b = vec![section("", "", &[("beta", 12), ("oom", 2)], "")];
        let docs = [
            Doc {
                slug: "a",
                title: "A",
                description: None,
                sections: &a,
            },
            Doc {
                slug: "b",
                title: "B",
                description: Some("d"),
                sections: &b,
            },
        ];
        let (path, bytes) = index_part("en", 3, None, &docs);
        assert_eq!(path, "en/search/03.js");
        let back = previous_sections(&bytes).expect("a part this version wrote");
        assert_eq!(back["a"], a);
        assert_eq!(back["b"], b);
        // Written again from what was read back: the same bytes.
        let again = [
            Doc {
                sections: &back["a"],
                ..docs[0]
            },
            Doc {
                sections: &back["b"],
                ..docs[1]
            },
        ];
        assert_eq!(index_part("en", 3, None, &again).1, bytes);
        assert!(previous_sections(b"not a part").is_none());
    }
}
