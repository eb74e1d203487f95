//! The build manifest: what each output was built from, so the next build renders only what
//! changed. Stored in the output folder as `.vramdoc-manifest/`: the guides split into 64 shards
//! by slug plus one shard for the site-wide jobs, each a magic header and then postcard's compact
//! binary form. Shards are read in parallel, and a build rewrites only the shards whose bytes
//! changed (on a 10,000-guide site an edit rewrites about 100 KB, not the 7 MB of the whole).
//!
//! A guide shard opens with a [`ShardHeader`]: the digest of every stamp it records, its page
//! counts, and what its pages contribute to the language indexes, the sitemap and the search
//! index parts. A build whose stats hash to the same stamp digest knows the shard's guides are
//! unchanged without decoding it, so a no-change build decodes no guide entry and a one-guide
//! edit decodes one shard.

use std::collections::{BTreeMap, BTreeSet};
use std::io::Read;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::translated::entry_notice_digests;

pub(crate) use super::listing::{Listed, Listing};
pub(crate) use super::model::{
    sort_in_site_order, DataEntry, GuideEntry, JobEntry, NavLink, Neighbours, PageEntry, SiteJob,
    SourceEntry, Summary,
};
pub(crate) use super::stamp::{feed_stamps, hash, now_ns, Digest, FileStat, Hasher, Stamp};

/// The manifest's folder inside the output folder.
pub const DIR: &str = crate::site_paths::MANIFEST_DIR;

/// Present in [`DIR`] while a build moves files into the output folder; a manifest found with it
/// (a build that stopped half-way) is not trusted.
pub(crate) const DIRTY: &str = ".vramdoc-manifest/dirty";

/// Guide shards (the site-wide jobs have one more).
pub(crate) const SHARDS: usize = 64;

/// The first bytes of every shard: `vramdoc-manifest` and the format, the fingerprint of the code
/// that decides the manifest's shape, the meaning of its hashes and what the pages hold (all of
/// `src/`, derived by `build.rs`), so a manifest written by other code is ignored (one full
/// build), with nothing to bump by hand.
const MAGIC: [u8; 32] = magic(crate::assets::MANIFEST_FINGERPRINT.as_bytes());

/// `vramdoc-manifest` followed by the 16 bytes of `format`.
const fn magic(format: &[u8]) -> [u8; 32] {
    let name = b"vramdoc-manifest";
    let mut m = [0u8; 32];
    let mut i = 0;
    while i < 16 {
        m[i] = name[i];
        m[16 + i] = format[i];
        i += 1;
    }
    m
}

/// What the previous build recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// Per guide folder (its slug): the folder's stamp and its pages' entries. Only the guides of
    /// decoded shards (see [`OnDisk`]).
    pub guides: BTreeMap<String, GuideEntry>,
    /// The site-wide jobs.
    pub(crate) site_jobs: BTreeMap<SiteJob, JobEntry>,
    /// What is on disk, so unchanged and undecoded shards are not rewritten; `None` when nothing
    /// is yet.
    stored: Option<OnDisk>,
    /// Guides whose entries changed since `stored` was recorded (their shards are re-encoded).
    touched: BTreeSet<String>,
    /// The site-wide inputs shard headers are written against.
    context: ShardContext,
}

/// What the output folder holds of each shard, carried from the manifest read to the one written.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct OnDisk {
    /// Per shard (the guide shards, then the site's): the digest of its bytes as last read or
    /// written; unknown (default) for a shard left closed.
    digests: Vec<Digest>,
    /// Per guide shard: left undecoded because nothing in it changed; its bytes stay as they are.
    closed: Vec<bool>,
    /// Per guide shard: its header as last read or written.
    headers: Vec<ShardHeader>,
}

impl OnDisk {
    /// True when decoded guide shard `i` was written against other site-wide inputs than
    /// `context`: it is rewritten (with a header the next build can trust) even if none of its
    /// guides changed.
    fn is_stale(&self, i: usize, context: &Digest) -> bool {
        !self.closed[i] && self.headers[i].context != *context
    }

    /// True when a shard must be rewritten although none of its guides changed.
    pub(crate) fn any_stale(&self, context: &Digest) -> bool {
        (0..SHARDS).any(|i| self.is_stale(i, context))
    }

    /// The guide shards' headers as last read or written.
    pub(crate) fn headers(&self) -> &[ShardHeader] {
        &self.headers
    }
}

/// The site-wide inputs a shard header depends on: when they change, no shard is trusted unread.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ShardContext {
    /// Hash of the site's inputs, the GPU catalog, the estimator version and the languages.
    pub(crate) digest: Digest,
    /// The site's languages, in its order (header counts and digests are per language).
    pub(crate) languages: Vec<String>,
    /// The language translations are made from (what their notices are computed against).
    pub(crate) default_language: String,
}

/// What a guide shard says of itself before its entries.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub(crate) struct ShardHeader {
    /// The [`ShardContext`] digest it was written against.
    pub(crate) context: Digest,
    /// The digest of its guides' slugs and recorded stamps (see [`feed_stamps`]); `None` when a
    /// stamp was too recent to record, so the shard must be decoded and checked file by file.
    pub(crate) stamps: Option<Digest>,
    /// Per language of the context: how many pages the shard's guides have.
    pub(crate) pages: Vec<u32>,
    /// Per language of the context: what its index shows of them (see [`Listing`]).
    pub(crate) listed: Vec<Digest>,
    /// What the sitemap shows of them.
    pub(crate) mapped: Digest,
    /// Per language of the context: what its search index reads of them (see
    /// [`Listing::text`]).
    pub(crate) searched: Vec<Digest>,
}

impl Manifest {
    /// True when nothing was recorded (no previous build).
    pub(crate) fn is_empty(&self) -> bool {
        self.guides.is_empty() && self.site_jobs.is_empty()
    }

    /// A manifest of these entries, with nothing on disk yet.
    pub(crate) fn new(
        guides: BTreeMap<String, GuideEntry>,
        site_jobs: BTreeMap<SiteJob, JobEntry>,
    ) -> Self {
        Manifest {
            guides,
            site_jobs,
            ..Manifest::default()
        }
    }

    /// Marks guides whose entries changed (added, edited or deleted) since the shards on disk.
    pub(crate) fn touch(&mut self, slugs: impl IntoIterator<Item = String>) {
        self.touched.extend(slugs);
    }

    /// Carries over what is on disk from the manifest this one replaces.
    pub(crate) fn stored_as(mut self, previous: Option<OnDisk>) -> Self {
        self.stored = previous;
        self
    }

    /// Sets the site-wide inputs the shard headers are written against.
    pub(crate) fn with_context(mut self, context: ShardContext) -> Self {
        self.context = context;
        self
    }

    /// What is on disk (see [`Manifest::stored_as`]).
    pub(crate) fn stored(&self) -> Option<OnDisk> {
        self.stored.clone()
    }

    /// Takes out the guides of the shards `closed` says, leaving the others.
    pub(crate) fn split_off_shards(
        &mut self,
        closed: &[bool; SHARDS],
    ) -> BTreeMap<String, GuideEntry> {
        let (kept, open) = std::mem::take(&mut self.guides)
            .into_iter()
            .partition(|(slug, _)| closed[shard_of(slug)]);
        self.guides = open;
        kept
    }

    /// Reads and decodes the whole manifest of an output folder; `None` if absent, unreadable,
    /// of another format, or left by a build that stopped half-way.
    pub fn read(out: &Path) -> Option<Manifest> {
        let stored = StoredManifest::read(out)?;
        stored.decode(&[false; SHARDS])
    }

    /// The shards whose bytes differ from those on disk (all of them when nothing is): paths
    /// relative to the output folder and bytes (deterministic: entries in order). Records them
    /// as stored. Only the shards of guides marked with [`Manifest::touch`], stale shards and the
    /// site-wide shard are encoded to compare; a closed shard is never rewritten.
    pub(crate) fn changed_shards(&mut self) -> Vec<(String, Vec<u8>)> {
        let mut wanted = [self.stored.is_none(); SHARDS + 1];
        wanted[SHARDS] = true;
        for slug in std::mem::take(&mut self.touched) {
            wanted[shard_of(&slug)] = true;
        }
        if let Some(on_disk) = &self.stored {
            for (i, w) in wanted.iter_mut().enumerate().take(SHARDS) {
                *w = (*w || on_disk.is_stale(i, &self.context.digest)) && !on_disk.closed[i];
            }
        }
        let mut by_shard: Vec<Vec<(&String, &GuideEntry)>> = vec![Vec::new(); SHARDS];
        for (slug, guide) in &self.guides {
            let i = shard_of(slug);
            if wanted[i] {
                by_shard[i].push((slug, guide));
            }
        }
        let site: Vec<(&SiteJob, &JobEntry)> = self.site_jobs.iter().collect();
        let context = &self.context;
        type Encoded = (usize, Vec<u8>, Digest, Option<ShardHeader>);
        let encoded: Vec<Encoded> = (0..=SHARDS)
            .into_par_iter()
            .filter(|&i| wanted[i])
            .map(|i| {
                let (bytes, header) = if i < SHARDS {
                    let header = ShardHeader::of(&by_shard[i], context);
                    (encode(Some(&header), &by_shard[i]), Some(header))
                } else {
                    (encode(None, &site), None)
                };
                let digest = hash(&bytes);
                (i, bytes, digest, header)
            })
            .collect();
        let mut stored = self.stored.take().unwrap_or_else(|| OnDisk {
            digests: vec![Digest::default(); SHARDS + 1],
            closed: vec![false; SHARDS],
            headers: vec![ShardHeader::default(); SHARDS],
        });
        let mut changed = Vec::new();
        for (i, bytes, digest, header) in encoded {
            if stored.digests[i] != digest {
                changed.push((format!("{DIR}/{}", shard_name(i)), bytes));
            }
            stored.digests[i] = digest;
            if let Some(header) = header {
                stored.headers[i] = header;
            }
        }
        self.stored = Some(stored);
        changed
    }
}

/// A manifest as read from disk: every guide shard's header, its entries read and decoded on
/// demand (a no-change build of 10,000 guides reads 64 headers, not 7 MB of entries).
pub(crate) struct StoredManifest {
    dir: PathBuf,
    /// Per guide shard: its header.
    headers: Vec<ShardHeader>,
    /// The site-wide shard's bytes.
    site: Vec<u8>,
}

/// How much of a shard is read to find its header (a header takes about 40 bytes per language).
const HEAD_BYTES: u64 = 4096;

impl StoredManifest {
    /// Reads the site-wide shard and every guide shard's header; `None` if a shard is absent,
    /// unreadable or of another format, or the manifest was left by a build that stopped
    /// half-way.
    pub(crate) fn read(out: &Path) -> Option<StoredManifest> {
        let dir = out.join(DIR);
        if out.join(DIRTY).exists() {
            return None;
        }
        let read_header = |i: usize| -> Option<ShardHeader> {
            let mut head = Vec::with_capacity(HEAD_BYTES as usize);
            let file = std::fs::File::open(dir.join(shard_name(i))).ok()?;
            file.take(HEAD_BYTES).read_to_end(&mut head).ok()?;
            match ShardHeader::parse(&head) {
                Some((header, _)) => Some(header),
                // A header longer than the head (a site of very many languages).
                None if head.len() as u64 == HEAD_BYTES => {
                    let whole = std::fs::read(dir.join(shard_name(i))).ok()?;
                    ShardHeader::parse(&whole).map(|(header, _)| header)
                }
                None => None,
            }
        };
        let (headers, site) = rayon::join(
            || {
                (0..SHARDS)
                    .into_par_iter()
                    .map(read_header)
                    .collect::<Option<Vec<_>>>()
            },
            || std::fs::read(dir.join(shard_name(SHARDS))).ok(),
        );
        let site = site?;
        site.strip_prefix(MAGIC.as_slice())?;
        Some(StoredManifest {
            dir,
            headers: headers?,
            site,
        })
    }

    /// The guide shards' headers.
    pub(crate) fn headers(&self) -> &[ShardHeader] {
        &self.headers
    }

    /// Reads and decodes the site-wide shard and the guide shards not `closed`; `None` if one
    /// does not decode.
    pub(crate) fn decode(&self, closed: &[bool; SHARDS]) -> Option<Manifest> {
        type Decoded = Option<(Vec<(String, GuideEntry)>, Digest)>;
        let decoded: Vec<Decoded> = (0..SHARDS)
            .into_par_iter()
            .map(|i| {
                if closed[i] {
                    return Some((Vec::new(), Digest::default()));
                }
                let bytes = std::fs::read(self.dir.join(shard_name(i))).ok()?;
                let (_, entries) = ShardHeader::parse(&bytes)?;
                let entries = postcard::from_bytes(entries).ok()?;
                Some((entries, hash(&bytes)))
            })
            .collect();
        let mut guides: Vec<(String, GuideEntry)> = Vec::new();
        let mut digests = Vec::with_capacity(SHARDS + 1);
        for shard in decoded {
            let (entries, digest) = shard?;
            guides.extend(entries);
            digests.push(digest);
        }
        let site_jobs: Vec<(SiteJob, JobEntry)> =
            postcard::from_bytes(self.site.strip_prefix(MAGIC.as_slice())?).ok()?;
        digests.push(hash(&self.site));
        Some(Manifest {
            guides: guides.into_iter().collect(),
            site_jobs: site_jobs.into_iter().collect(),
            stored: Some(OnDisk {
                digests,
                closed: closed.to_vec(),
                headers: self.headers.clone(),
            }),
            touched: BTreeSet::new(),
            context: ShardContext::default(),
        })
    }
}

impl ShardHeader {
    /// The header at the start of a guide shard's bytes, and the bytes of the entries after it.
    fn parse(bytes: &[u8]) -> Option<(ShardHeader, &[u8])> {
        let body = bytes.strip_prefix(MAGIC.as_slice())?;
        postcard::take_from_bytes(body).ok()
    }

    /// The header of a shard holding `guides` (sorted by slug), written against `context`.
    fn of(guides: &[(&String, &GuideEntry)], context: &ShardContext) -> ShardHeader {
        let langs = &context.languages;
        let mut stamps = Some(Hasher::new());
        let mut listing = Listing::new(langs.len());
        let mut pages = vec![0u32; langs.len()];
        for (slug, guide) in guides {
            let mut page_langs: Vec<&str> = guide.pages.iter().map(|(l, _)| l.as_str()).collect();
            sort_in_site_order(&mut page_langs, langs);
            let page_langs = page_langs.join(",");
            let notices = entry_notice_digests(guide, &context.default_language);
            for ((lang, page), notices) in guide.pages.iter().zip(&notices) {
                let at = langs.iter().position(|l| l == lang);
                if let Some(i) = at {
                    pages[i] += 1;
                }
                let listed = page.source.summary.listed(slug, lang);
                listing.page(at, &listed, &page_langs, notices.as_ref());
                listing.text(at, slug, &page.source.hash, notices.as_ref());
            }
            let Some(h) = &mut stamps else { continue };
            let recorded = |lang: &String| {
                match guide.pages.iter().find(|(l, _)| l == lang) {
                    // A page whose stamp was too recent makes the shard untrustworthy unread.
                    Some((_, page)) => page.source.stamp.map(|s| Some(*s.fields())),
                    None => Some(None),
                }
            };
            // The translation records file after the pages, as `stat` sees it too.
            let records = match &guide.records {
                Some(r) => r.stamp.map(|s| Some(*s.fields())),
                None => Some(None),
            };
            let per_lang: Option<Vec<Option<[u64; 4]>>> =
                langs.iter().map(recorded).chain([records]).collect();
            let known = guide.pages.iter().all(|(l, _)| langs.contains(l));
            match (guide.folder, per_lang) {
                (Some(folder), Some(per_lang)) if known => {
                    feed_stamps(h, slug, folder.fields(), &per_lang);
                }
                _ => stamps = None,
            }
        }
        let (listed, mapped) = listing.finish();
        ShardHeader {
            context: context.digest,
            stamps: stamps.map(|h| h.finish()),
            pages,
            listed,
            mapped,
            searched: listing.searched(),
        }
    }
}

/// A shard's file name: `00`..`3f` for guides, `site` for the site-wide jobs.
fn shard_name(i: usize) -> String {
    if i < SHARDS {
        format!("{i:02x}")
    } else {
        "site".into()
    }
}

/// The shard a guide's entry lives in (FNV-1a of its slug: stable across platforms and builds).
pub fn shard_of(slug: &str) -> usize {
    let h = slug.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % SHARDS as u64) as usize
}

/// A shard's bytes: the magic header, the shard header (guide shards), then the entries.
fn encode<T: Serialize>(header: Option<&ShardHeader>, entries: &[T]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + 256 * entries.len() + 256);
    bytes.extend_from_slice(&MAGIC);
    // Serializing plain structs, strings and vectors into a vector cannot fail.
    if let Some(h) = header {
        bytes = postcard::to_extend(h, bytes).unwrap_or_default();
    }
    postcard::to_extend(&entries, bytes).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Manifest {
        let job = |x: &[u8]| JobEntry {
            inputs: hash(x),
            files: vec![("index.html".to_string(), hash(b"y"))],
        };
        let mut guides = BTreeMap::new();
        for slug in ["a", "b", "c"] {
            let page = PageEntry {
                source: SourceEntry {
                    hash: hash(slug.as_bytes()),
                    stamp: None,
                    summary: Summary {
                        title: format!("Title {slug}"),
                        date: None,
                        description: None,
                        updated: None,
                        scenario_hash: None,
                        uses_catalog: false,
                        sections: None,
                    },
                },
                output: Some(job(slug.as_bytes())),
                neighbours: None,
            };
            let entry = GuideEntry {
                folder: None,
                pages: vec![("en".into(), page)],
                data: None,
                records: None,
            };
            guides.insert(slug.to_string(), entry);
        }
        Manifest::new(guides, [(SiteJob::Root, job(b"x"))].into())
    }

    fn write(out: &Path, shards: &[(String, Vec<u8>)]) {
        for (path, bytes) in shards {
            let path = out.join(path);
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(path, bytes).unwrap();
        }
    }

    #[test]
    fn manifest_round_trips_and_rewrites_only_changed_shards() {
        let dir = tempfile::tempdir().unwrap();
        let mut m = sample();
        let all = m.changed_shards();
        assert_eq!(all.len(), SHARDS + 1);
        write(dir.path(), &all);
        let mut read = Manifest::read(dir.path()).unwrap();
        assert_eq!((&read.guides, &read.site_jobs), (&m.guides, &m.site_jobs));
        read.touch(["a".to_string(), "b".to_string(), "c".to_string()]);
        assert!(read.changed_shards().is_empty());
        read.guides.get_mut("b").unwrap().pages[0]
            .1
            .source
            .summary
            .title = "New".into();
        read.touch(["b".to_string()]);
        let changed = read.changed_shards();
        assert_eq!(changed.len(), 1);
        assert_eq!(changed[0].0, format!("{DIR}/{}", shard_name(shard_of("b"))));
        write(dir.path(), &changed);
        let again = Manifest::read(dir.path()).unwrap();
        assert_eq!(again.guides["b"].pages[0].1.source.summary.title, "New");
    }

    #[test]
    fn other_formats_half_written_builds_and_missing_shards_are_not_trusted() {
        let dir = tempfile::tempdir().unwrap();
        let all = sample().changed_shards();
        write(dir.path(), &all);
        assert!(Manifest::read(dir.path()).is_some());
        std::fs::write(dir.path().join(DIRTY), b"").unwrap();
        assert!(Manifest::read(dir.path()).is_none());
        std::fs::remove_file(dir.path().join(DIRTY)).unwrap();
        let site = dir.path().join(DIR).join("site");
        let mut other = std::fs::read(&site).unwrap();
        other[16] = 4;
        std::fs::write(&site, &other).unwrap();
        assert!(Manifest::read(dir.path()).is_none());
        write(dir.path(), &all);
        std::fs::remove_file(dir.path().join(DIR).join("00")).unwrap();
        assert!(Manifest::read(dir.path()).is_none());
    }
}
