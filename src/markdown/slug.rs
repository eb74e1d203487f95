//! Heading slugs and page-unique ids.

use std::collections::{HashMap, HashSet};

/// Slug used when a heading has no letters or digits at all (e.g. `## ???`).
const EMPTY_SLUG: &str = "section";

/// Turns heading text into an id: lower-case, letters and digits of every script kept,
/// `_` kept, every run of other characters (spaces, punctuation, symbols) collapsed into one
/// `-`, no leading or trailing `-`.
pub(crate) fn slugify(text: &str) -> String {
    let mut slug = String::with_capacity(text.len());
    let mut pending_hyphen = false;
    for c in text.chars() {
        if is_slug_char(c) {
            if pending_hyphen && !slug.is_empty() {
                slug.push('-');
            }
            pending_hyphen = false;
            slug.extend(c.to_lowercase());
        } else {
            pending_hyphen = true;
        }
    }
    slug
}

/// Letters and digits of any script, `_`, and combining marks (so decomposed `é` survives).
fn is_slug_char(c: char) -> bool {
    c.is_alphanumeric() || c == '_' || ('\u{0300}'..='\u{036F}').contains(&c)
}

/// Hands out ids that are unique within one page: `id`, then `id-1`, `id-2`, ...
#[derive(Debug, Default)]
pub(crate) struct IdRegistry {
    used: HashSet<String>,
    /// Per base, the next suffix to try: 10,000 identical headings cost linear time, not
    /// quadratic.
    next_suffix: HashMap<String, usize>,
}

impl IdRegistry {
    /// Marks an id as taken (an explicit `{#id}`), so generated ids avoid it.
    pub(crate) fn reserve(&mut self, id: &str) {
        self.used.insert(id.to_owned());
    }

    /// Returns `base` (or [`EMPTY_SLUG`] when empty) made unique by a numeric suffix.
    pub(crate) fn unique(&mut self, base: &str) -> String {
        let base = if base.is_empty() { EMPTY_SLUG } else { base };
        if self.used.insert(base.to_owned()) {
            return base.to_owned();
        }
        let next = self.next_suffix.entry(base.to_owned()).or_insert(1);
        loop {
            let candidate = format!("{base}-{next}");
            *next += 1;
            if self.used.insert(candidate.clone()) {
                return candidate;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn collapses_runs_and_trims() {
        assert_eq!(slugify("  Hello,  World!  "), "hello-world");
        assert_eq!(slugify("a -- b"), "a-b");
    }

    #[test]
    fn keeps_scripts_and_underscore() {
        assert_eq!(slugify("¿Qué hace batch_size?"), "qué-hace-batch_size");
        assert_eq!(slugify("显存不足的原因"), "显存不足的原因");
        assert_eq!(slugify("为什么会 OOM？（原因）"), "为什么会-oom-原因");
        assert_eq!(slugify("Cafe\u{301} au lait"), "cafe\u{301}-au-lait");
    }

    #[test]
    fn registry_suffixes_and_respects_reserved() {
        let mut ids = IdRegistry::default();
        ids.reserve("intro-1");
        assert_eq!(ids.unique("intro"), "intro");
        assert_eq!(ids.unique("intro"), "intro-2");
        assert_eq!(ids.unique(""), "section");
        assert_eq!(ids.unique(""), "section-1");
    }
}
