//! What listings show of a page (the language indexes, feeds, sitemap, `llms.txt` and search
//! parts), in their one order, and the digests of it that their jobs' inputs are made of: fed
//! page by page by the plan from its sources and by a manifest shard's header from its entries,
//! so the two agree whenever the pages do.

use super::stamp::{Digest, Hasher};

/// What the language indexes, feeds, sitemap and `llms.txt` show of one page: the one list of
/// fields their templates receive and their jobs' input digests are made of (see
/// [`Listing`]), so that the two cannot drift apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Listed<'a> {
    /// The guide's slug.
    pub(crate) slug: &'a str,
    /// The page's language.
    pub(crate) lang: &'a str,
    /// Title.
    pub(crate) title: &'a str,
    /// `date:`.
    pub(crate) date: Option<&'a str>,
    /// `description:`.
    pub(crate) description: Option<&'a str>,
}

impl Listed<'_> {
    /// The order of a language's index: newest first, undated last, ties by slug, so every
    /// language lists the same guides in the same order.
    pub(crate) fn index_order(&self, other: &Listed<'_>) -> std::cmp::Ordering {
        (other.date.cmp(&self.date)).then(self.slug.cmp(other.slug))
    }
}

/// What a shard's pages contribute to the language indexes (per language) and to the sitemap:
/// fed page by page in guide order, by the plan from its sources and by a shard's header from
/// its entries, so the two agree whenever the pages do.
pub(crate) struct Listing {
    per_lang: Vec<Hasher>,
    mapped: Hasher,
    /// Per language: the slugs, source hashes and notices of its pages (what its search index
    /// shows of them, with the catalog and estimator the figures come from: see
    /// `store::listing_inputs`).
    text: Vec<Hasher>,
}

impl Listing {
    /// An empty listing for a site of `languages` languages.
    pub(crate) fn new(languages: usize) -> Listing {
        Listing {
            per_lang: (0..languages).map(|_| Hasher::new()).collect(),
            mapped: Hasher::new(),
            text: (0..languages).map(|_| Hasher::new()).collect(),
        }
    }

    /// Adds a page: its language's position in the site (`None`: not a site language) and what
    /// the indexes and sitemap show of it.
    /// Every field of [`Listed`] is hashed (destructured, so a new field cannot be forgotten);
    /// the sitemap also shows which languages the guide exists in (`langs`).
    /// `notices`: the digest of a translation's notices (the status page and `llms.txt` show
    /// which sections are not current).
    pub(crate) fn page(
        &mut self,
        at: Option<usize>,
        page: &Listed<'_>,
        langs: &str,
        notices: Option<&Digest>,
    ) {
        let Listed {
            slug,
            lang,
            title,
            date,
            description,
        } = *page;
        let mut fields = Hasher::new();
        fields
            .part(slug)
            .part(lang)
            .part(title)
            .part(date.unwrap_or(""))
            .part(date.map_or("0", |_| "1"))
            .part(description.unwrap_or(""))
            .part(description.map_or("0", |_| "1"))
            .part(notices.map_or([0; 16], |d| d.0));
        let fields = fields.finish();
        if let Some(h) = at.and_then(|i| self.per_lang.get_mut(i)) {
            h.digest(&fields);
        }
        self.mapped.digest(&fields).part(langs);
    }

    /// Adds what a page's search index shows of it: its source (`source`: the hash of its bytes,
    /// which hold its title, date, description, text and scenario) and a translation's notices
    /// (spliced into the text it shows).
    pub(crate) fn text(
        &mut self,
        at: Option<usize>,
        slug: &str,
        source: &Digest,
        notices: Option<&Digest>,
    ) {
        if let Some(h) = at.and_then(|i| self.text.get_mut(i)) {
            h.part(slug)
                .digest(source)
                .part(notices.map_or([0; 16], |d| d.0));
        }
    }

    /// The per-language digests of the search indexes' inputs.
    pub(crate) fn searched(&self) -> Vec<Digest> {
        self.text.iter().map(Hasher::finish).collect()
    }

    /// The per-language digests and the sitemap's.
    pub(crate) fn finish(&self) -> (Vec<Digest>, Digest) {
        let listed = self.per_lang.iter().map(Hasher::finish).collect();
        (listed, self.mapped.finish())
    }
}
