//! The build manifest: what each output was built from, so the next build renders only what
//! changed. Stored in the output folder as `.vramdoc-manifest/`: the guides split into 64 shards
//! by slug plus one shard for the site-wide jobs, each a magic header and then postcard's compact
//! binary form. Shards are read in parallel, and a build rewrites only the shards whose bytes
//! changed (on a 10,000-guide site an edit rewrites about 100 KB, not the 7 MB of the whole).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use rayon::prelude::*;
use serde::{Deserialize, Serialize};

/// The manifest's folder inside the output folder.
pub const DIR: &str = ".vramdoc-manifest";

/// Present in [`DIR`] while a build moves files into the output folder; a manifest found with it
/// (a build that stopped half-way) is not trusted.
pub const DIRTY: &str = ".vramdoc-manifest/dirty";

/// Guide shards (the site-wide jobs have one more).
const SHARDS: usize = 64;

/// The first bytes of every shard; the last four are the format, bumped whenever the manifest's
/// shape or the meaning of its hashes changes (an older manifest is then ignored: a full build).
const MAGIC: &[u8; 20] = b"vramdoc-manifest\x08\0\0\0";

/// What the previous build recorded.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Manifest {
    /// Per guide folder (its slug): the folder's stamp and its pages' entries.
    pub guides: BTreeMap<String, GuideEntry>,
    /// The site-wide jobs (`index:<lang>`, `root`, `sitemap`, `style`).
    pub site_jobs: BTreeMap<String, JobEntry>,
    /// The digest of each shard's bytes as last read or written, so unchanged shards are not
    /// rewritten; `None` when there is nothing on disk yet.
    stored: Option<Vec<Digest>>,
    /// Guides whose entries changed since `stored` was recorded (their shards are re-encoded).
    touched: BTreeSet<String>,
}

impl Manifest {
    /// True when nothing was recorded (no previous build).
    pub fn is_empty(&self) -> bool {
        self.guides.is_empty() && self.site_jobs.is_empty()
    }

    /// A manifest of these entries, with nothing on disk yet.
    pub fn new(
        guides: BTreeMap<String, GuideEntry>,
        site_jobs: BTreeMap<String, JobEntry>,
    ) -> Self {
        Manifest {
            guides,
            site_jobs,
            stored: None,
            touched: BTreeSet::new(),
        }
    }

    /// Marks guides whose entries changed (added, edited or deleted) since the shards on disk.
    pub fn touch(&mut self, slugs: impl IntoIterator<Item = String>) {
        self.touched.extend(slugs);
    }

    /// Carries over which shard bytes are on disk from the manifest this one replaces.
    pub fn stored_as(mut self, previous: Option<Vec<Digest>>) -> Self {
        self.stored = previous;
        self
    }

    /// The shard digests on disk (see [`Manifest::stored_as`]).
    pub fn stored(&self) -> Option<Vec<Digest>> {
        self.stored.clone()
    }

    /// Reads the manifest of an output folder; `None` if absent, unreadable, of another format,
    /// or left by a build that stopped half-way.
    pub fn read(out: &Path) -> Option<Manifest> {
        let dir = out.join(DIR);
        if out.join(DIRTY).exists() {
            return None;
        }
        let shards: Vec<Option<(Vec<u8>, Digest)>> = (0..=SHARDS)
            .into_par_iter()
            .map(|i| {
                let bytes = std::fs::read(dir.join(shard_name(i))).ok()?;
                let digest = hash(&bytes);
                Some((bytes, digest))
            })
            .collect();
        let shards: Vec<(Vec<u8>, Digest)> = shards.into_iter().collect::<Option<_>>()?;
        let stored = shards.iter().map(|(_, d)| *d).collect();
        let decoded: Vec<Option<Vec<(String, GuideEntry)>>> = shards[..SHARDS]
            .par_iter()
            .map(|(bytes, _)| postcard::from_bytes(bytes.strip_prefix(MAGIC.as_slice())?).ok())
            .collect();
        let mut guides: Vec<(String, GuideEntry)> = Vec::new();
        for shard in decoded {
            guides.extend(shard?);
        }
        let site = shards[SHARDS].0.strip_prefix(MAGIC.as_slice())?;
        let site_jobs: Vec<(String, JobEntry)> = postcard::from_bytes(site).ok()?;
        Some(Manifest {
            guides: guides.into_iter().collect(),
            site_jobs: site_jobs.into_iter().collect(),
            stored: Some(stored),
            touched: BTreeSet::new(),
        })
    }

    /// The shards whose bytes differ from those on disk (all of them when nothing is): paths
    /// relative to the output folder and bytes (deterministic: entries in order). Records them
    /// as stored. Only the shards of guides marked with [`Manifest::touch`] (and the site-wide
    /// shard) are encoded to compare.
    pub fn changed_shards(&mut self) -> Vec<(String, Vec<u8>)> {
        let mut wanted = [self.stored.is_none(); SHARDS + 1];
        wanted[SHARDS] = true;
        for slug in std::mem::take(&mut self.touched) {
            wanted[shard_of(&slug)] = true;
        }
        let mut by_shard: Vec<Vec<(&String, &GuideEntry)>> = vec![Vec::new(); SHARDS];
        for (slug, guide) in &self.guides {
            let i = shard_of(slug);
            if wanted[i] {
                by_shard[i].push((slug, guide));
            }
        }
        let site: Vec<(&String, &JobEntry)> = self.site_jobs.iter().collect();
        let encoded: Vec<(usize, Vec<u8>, Digest)> = (0..=SHARDS)
            .into_par_iter()
            .filter(|&i| wanted[i])
            .map(|i| {
                let bytes = if i < SHARDS {
                    encode(&by_shard[i])
                } else {
                    encode(&site)
                };
                let digest = hash(&bytes);
                (i, bytes, digest)
            })
            .collect();
        let mut stored = self
            .stored
            .take()
            .unwrap_or_else(|| vec![Digest::default(); SHARDS + 1]);
        let mut changed = Vec::new();
        for (i, bytes, digest) in encoded {
            if stored[i] != digest {
                changed.push((format!("{DIR}/{}", shard_name(i)), bytes));
            }
            stored[i] = digest;
        }
        self.stored = Some(stored);
        changed
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
fn shard_of(slug: &str) -> usize {
    let h = slug.bytes().fold(0xcbf2_9ce4_8422_2325_u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    });
    (h % SHARDS as u64) as usize
}

/// A shard's bytes: the magic header, then the entries.
fn encode<T: Serialize>(entries: &[T]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(MAGIC.len() + 256 * entries.len() + 64);
    bytes.extend_from_slice(MAGIC);
    // Serializing plain structs, strings and vectors into a vector cannot fail.
    postcard::to_extend(&entries, bytes).unwrap_or_default()
}

/// A guide folder as the previous build saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuideEntry {
    /// The folder's stamp when listed; unchanged, its list of pages is reused without listing it
    /// again (adding, removing or renaming a file changes a folder's stamp).
    pub folder: Option<Stamp>,
    /// Per language (sorted): the page's source and output. A vector, not a map: a guide has a
    /// few pages, and a 10,000-guide manifest decodes much faster without a tree node per guide.
    pub pages: Vec<(String, PageEntry)>,
    /// The guide's computed data, when it has a scenario.
    pub data: Option<DataEntry>,
}

/// One page: what its source was and what its job wrote (file names relative to the page's
/// folder `<lang>/<slug>/`), kept together so a build finds both without a lookup.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PageEntry {
    /// The source file.
    pub source: SourceEntry,
    /// The page job's entry.
    pub output: Option<JobEntry>,
}

/// A source file's hash and the parts of its front matter other outputs depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// blake3 of the file's bytes.
    pub hash: Digest,
    /// The file's stamp when hashed: unchanged, the file is not read again.
    pub stamp: Option<Stamp>,
    /// The index entry built from it.
    pub summary: Summary,
}

/// The parts of a page that indexes and the sitemap show.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Summary {
    /// Title.
    pub title: String,
    /// `date:`.
    pub date: Option<String>,
    /// `description:`.
    pub description: Option<String>,
    /// `updated:` (else `date:`), for translation status.
    pub updated: Option<String>,
    /// Hash of the page's `scenario:` and variant ids/overrides; `None` without a scenario.
    pub scenario_hash: Option<Digest>,
    /// True when the body reads other GPUs (`catalog.`), so the page depends on the catalog.
    pub uses_catalog: bool,
}

/// A guide's scenario inputs and the hash of what they computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataEntry {
    /// Hash of scenario, variants, GPU catalog and estimator version.
    pub inputs: Digest,
    /// Hash of the computed data (what pages actually show).
    pub data: Digest,
}

/// One output job: the hash of its inputs and the files it wrote, with their hashes (paths
/// relative to the job's folder: the site root, or a page's `<lang>/<slug>/`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEntry {
    /// Hash of everything the job's outputs depend on.
    pub inputs: Digest,
    /// Output paths (relative, `/`-separated, sorted) and the hash of their bytes.
    pub files: Vec<(String, Digest)>,
}

impl JobEntry {
    /// The recorded hash of output `path`.
    pub fn file(&self, path: &str) -> Option<&Digest> {
        self.files.iter().find(|(p, _)| p == path).map(|(_, h)| h)
    }

    /// The output paths.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.iter().map(|(p, _)| p.as_str())
    }
}

/// The first 128 bits of a blake3 digest (ample for telling versions of a file apart).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Digest(pub [u8; 16]);

/// Stored as one 16-byte string (a derived tuple would encode and decode byte by byte).
impl Serialize for Digest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_bytes(&self.0)
    }
}

impl<'de> Deserialize<'de> for Digest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Digest, D::Error> {
        struct Bytes16;
        impl serde::de::Visitor<'_> for Bytes16 {
            type Value = Digest;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("16 bytes")
            }
            fn visit_bytes<E: serde::de::Error>(self, v: &[u8]) -> Result<Digest, E> {
                v.try_into()
                    .map(Digest)
                    .map_err(|_| E::invalid_length(v.len(), &self))
            }
        }
        d.deserialize_bytes(Bytes16)
    }
}

impl fmt::Debug for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

impl fmt::Display for Digest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

impl From<blake3::Hash> for Digest {
    fn from(h: blake3::Hash) -> Digest {
        let mut d = [0; 16];
        d.copy_from_slice(&h.as_bytes()[..16]);
        Digest(d)
    }
}

/// A blake3 hasher fed with length-prefixed parts, so `("ab","c")` and `("a","bc")` differ. The
/// parts are gathered and hashed at once: hashers here take many small parts (titles, slugs,
/// digests), and a blake3 update per part cost more than the hashing.
#[derive(Default)]
pub struct Hasher(Vec<u8>);

impl Hasher {
    /// A fresh hasher.
    pub fn new() -> Hasher {
        Hasher(Vec::new())
    }

    /// Adds one part.
    pub fn part(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        let b = bytes.as_ref();
        self.0.extend_from_slice(&(b.len() as u64).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }

    /// Adds a digest as one part.
    pub fn digest(&mut self, d: &Digest) -> &mut Self {
        self.part(d.0)
    }

    /// The digest.
    pub fn finish(&self) -> Digest {
        hash(&self.0)
    }
}

/// The digest of some bytes.
pub fn hash(bytes: &[u8]) -> Digest {
    blake3::hash(bytes).into()
}

/// What one `stat` says of a file or folder: everything a [`Stamp`] is made of (size,
/// modification and status-change times in nanoseconds, inode number; the last two on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FileStat([u64; 4]);

impl FileStat {
    /// From the standard library's metadata; `None` when the platform gives no times.
    pub fn from_metadata(meta: &std::fs::Metadata) -> Option<FileStat> {
        let modified = meta
            .modified()
            .ok()?
            .duration_since(std::time::UNIX_EPOCH)
            .ok()
            .and_then(|d| u64::try_from(d.as_nanos()).ok())?;
        #[cfg(unix)]
        let (changed, inode) = {
            use std::os::unix::fs::MetadataExt;
            (nanos(meta.ctime(), meta.ctime_nsec())?, meta.ino())
        };
        #[cfg(not(unix))]
        let (changed, inode) = (modified, 0);
        Some(FileStat([meta.len(), modified, changed, inode]))
    }

    /// Stats `path`.
    pub fn of_path(path: &Path) -> Option<FileStat> {
        FileStat::from_metadata(&std::fs::metadata(path).ok()?)
    }

    /// Stats `rel` (following symbolic links) relative to the open folder `dir`: the kernel walks
    /// only `rel`'s components, not the whole path from the root.
    #[cfg(unix)]
    pub fn at(dir: &rustix::fd::OwnedFd, rel: &str) -> Option<FileStat> {
        let st = rustix::fs::statat(dir, rel, rustix::fs::AtFlags::empty()).ok()?;
        // The fields' integer types differ between platforms.
        let unsigned = |x: i128| u64::try_from(x).ok();
        Some(FileStat([
            unsigned(st.st_size.into())?,
            nanos(st.st_mtime, st.st_mtime_nsec)?,
            nanos(st.st_ctime, st.st_ctime_nsec)?,
            unsigned(st.st_ino.into())?,
        ]))
    }
}

/// Seconds and nanoseconds since the epoch (as `stat` gives them) in nanoseconds.
#[cfg(unix)]
fn nanos(secs: impl TryInto<u64>, nsecs: impl TryInto<u64>) -> Option<u64> {
    let secs: u64 = secs.try_into().ok()?;
    let nsecs: u64 = nsecs.try_into().ok()?;
    secs.checked_mul(1_000_000_000)?.checked_add(nsecs)
}

/// What tells one version of a file or folder from another without reading it: its
/// [`FileStat`]. A status change cannot be faked by tools that restore modification times.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp([u64; 4]);

/// A stamp whose times are this close to the build's start is not recorded: a change made within
/// the file system's timestamp granularity (up to 2 s on some) could leave it unchanged.
const RACY_WINDOW_NS: u64 = 2_000_000_000;

impl Stamp {
    /// The stamp of `stat`, unless its times are too recent to trust against `now_ns`
    /// (nanoseconds since the epoch when the build started).
    pub fn of(stat: &FileStat, now_ns: u64) -> Option<Stamp> {
        let [_, modified, changed, _] = stat.0;
        let latest = modified.max(changed);
        (latest.saturating_add(RACY_WINDOW_NS) < now_ns).then_some(Stamp(stat.0))
    }

    /// True when `stat` has this stamp.
    pub fn matches(&self, stat: &FileStat) -> bool {
        self.0 == stat.0
    }
}

/// Nanoseconds since the epoch, now.
pub fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
        .unwrap_or(u64::MAX)
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
                    },
                },
                output: Some(job(slug.as_bytes())),
            };
            let entry = GuideEntry {
                folder: None,
                pages: vec![("en".into(), page)],
                data: None,
            };
            guides.insert(slug.to_string(), entry);
        }
        Manifest::new(guides, [("root".to_string(), job(b"x"))].into())
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

    #[test]
    fn recent_stamps_are_not_trusted() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let stat = FileStat::from_metadata(&f.as_file().metadata().unwrap()).unwrap();
        assert_eq!(Stamp::of(&stat, now_ns()), None);
        let later = now_ns() + 10 * RACY_WINDOW_NS;
        let stamp = Stamp::of(&stat, later).unwrap();
        assert!(stamp.matches(&stat));
        assert_eq!(stamp.0[0], 0);
        #[cfg(unix)]
        {
            let dir = f.path().parent().unwrap();
            let fd = rustix::fs::open(
                dir,
                rustix::fs::OFlags::RDONLY | rustix::fs::OFlags::DIRECTORY,
                rustix::fs::Mode::empty(),
            )
            .unwrap();
            let name = f.path().file_name().unwrap().to_str().unwrap();
            assert_eq!(FileStat::at(&fd, name), Some(stat));
        }
    }

    #[test]
    fn digest_prints_as_hex() {
        assert_eq!(hash(b"").to_string(), &blake3::hash(b"").to_hex()[..32]);
    }
}
