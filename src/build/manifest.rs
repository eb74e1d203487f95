//! The build manifest: what each output was built from, so the next build renders only what
//! changed. Stored as `.vramdoc-manifest` in the output folder: a magic header, then the
//! [`Manifest`] in postcard's compact binary form (a 10,000-guide site's manifest reads in a few
//! milliseconds, where JSON took 70).

use std::collections::BTreeMap;
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The manifest's file name inside the output folder.
pub const FILE: &str = ".vramdoc-manifest";

/// The first bytes of the file; the last four are the format, bumped whenever the manifest's
/// shape or the meaning of its hashes changes (an older manifest is then ignored: a full build).
const MAGIC: &[u8; 20] = b"vramdoc-manifest\x05\0\0\0";

/// What the previous build recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// Per guide folder (its slug): the folder's stamp and its pages' entries.
    pub guides: BTreeMap<String, GuideEntry>,
    /// Per output job (`page:<lang>/<slug>`, `index:<lang>`, `root`, `sitemap`, `style`).
    pub jobs: BTreeMap<String, JobEntry>,
}

/// A guide folder as the previous build saw it.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct GuideEntry {
    /// The folder's stamp when listed; unchanged, its list of pages is reused without listing it
    /// again (adding, removing or renaming a file changes a folder's stamp).
    pub folder: Option<Stamp>,
    /// Per language (sorted): the page's source entry. A vector, not a map: a guide has a few
    /// pages, and a 10,000-guide manifest decodes much faster without a tree node per guide.
    pub pages: Vec<(String, SourceEntry)>,
    /// The guide's computed data, when it has a scenario.
    pub data: Option<DataEntry>,
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

/// One output job: the hash of its inputs and the files it wrote, with their hashes.
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

impl Manifest {
    /// Reads the manifest of an output folder; `None` if absent, unreadable or of another format.
    pub fn read(out: &Path) -> Option<Manifest> {
        let bytes = std::fs::read(out.join(FILE)).ok()?;
        let body = bytes.strip_prefix(MAGIC.as_slice())?;
        postcard::from_bytes(body).ok()
    }

    /// The manifest's bytes (deterministic: every map is ordered).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut bytes = MAGIC.to_vec();
        // Serializing plain structs and ordered maps into a vector cannot fail.
        bytes.extend(postcard::to_stdvec(self).unwrap_or_default());
        bytes
    }
}

/// The first 128 bits of a blake3 digest (ample for telling versions of a file apart).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Digest(pub [u8; 16]);

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

/// A blake3 hasher fed with length-prefixed parts, so `("ab","c")` and `("a","bc")` differ.
#[derive(Default)]
pub struct Hasher(blake3::Hasher);

impl Hasher {
    /// A fresh hasher.
    pub fn new() -> Hasher {
        Hasher(blake3::Hasher::new())
    }

    /// Adds one part.
    pub fn part(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        let b = bytes.as_ref();
        self.0.update(&(b.len() as u64).to_le_bytes());
        self.0.update(b);
        self
    }

    /// Adds a digest as one part.
    pub fn digest(&mut self, d: &Digest) -> &mut Self {
        self.part(d.0)
    }

    /// The digest.
    pub fn finish(&self) -> Digest {
        self.0.finalize().into()
    }
}

/// The digest of some bytes.
pub fn hash(bytes: &[u8]) -> Digest {
    blake3::hash(bytes).into()
}

/// What tells one version of a file or folder from another without reading it: size, modification
/// and status-change times in nanoseconds, and inode number (the last two on Unix; a status change
/// cannot be faked by tools that restore modification times).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stamp([u64; 4]);

/// A stamp whose times are this close to the build's start is not recorded: a change made within
/// the file system's timestamp granularity (up to 2 s on some) could leave it unchanged.
const RACY_WINDOW_NS: u64 = 2_000_000_000;

impl Stamp {
    /// The stamp of `meta`, unless the platform gives no times or they are too recent to trust
    /// against `now_ns` (nanoseconds since the epoch when the build started).
    pub fn of(meta: &std::fs::Metadata, now_ns: u64) -> Option<Stamp> {
        let nanos = |t: std::time::SystemTime| {
            t.duration_since(std::time::UNIX_EPOCH)
                .ok()
                .and_then(|d| u64::try_from(d.as_nanos()).ok())
        };
        let modified = nanos(meta.modified().ok()?)?;
        #[cfg(unix)]
        let (changed, inode) = {
            use std::os::unix::fs::MetadataExt;
            let secs = u64::try_from(meta.ctime()).ok()?;
            let nsecs = u64::try_from(meta.ctime_nsec()).ok()?;
            (
                secs.checked_mul(1_000_000_000)?.checked_add(nsecs)?,
                meta.ino(),
            )
        };
        #[cfg(not(unix))]
        let (changed, inode) = (modified, 0);
        let latest = modified.max(changed);
        (latest.saturating_add(RACY_WINDOW_NS) < now_ns).then_some(Stamp([
            meta.len(),
            modified,
            changed,
            inode,
        ]))
    }

    /// True when `meta` has this stamp.
    pub fn matches(&self, meta: &std::fs::Metadata) -> bool {
        Stamp::of(meta, u64::MAX) == Some(*self)
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

    #[test]
    fn manifest_round_trips_and_rejects_other_formats() {
        let mut m = Manifest::default();
        m.jobs.insert(
            "root".into(),
            JobEntry {
                inputs: hash(b"x"),
                files: vec![("index.html".to_string(), hash(b"y"))],
            },
        );
        let bytes = m.to_bytes();
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join(FILE), &bytes).unwrap();
        assert_eq!(Manifest::read(dir.path()), Some(m));
        let mut other = bytes.clone();
        other[16] = 4;
        std::fs::write(dir.path().join(FILE), &other).unwrap();
        assert_eq!(Manifest::read(dir.path()), None);
        std::fs::write(dir.path().join(FILE), &bytes[..bytes.len() - 3]).unwrap();
        assert_eq!(Manifest::read(dir.path()), None);
    }

    #[test]
    fn recent_stamps_are_not_trusted() {
        let f = tempfile::NamedTempFile::new().unwrap();
        let meta = f.as_file().metadata().unwrap();
        assert_eq!(Stamp::of(&meta, now_ns()), None);
        let later = now_ns() + 10 * RACY_WINDOW_NS;
        let stamp = Stamp::of(&meta, later).unwrap();
        assert!(stamp.matches(&meta));
        assert_eq!(stamp.0[0], 0);
    }

    #[test]
    fn digest_prints_as_hex() {
        assert_eq!(hash(b"").to_string(), &blake3::hash(b"").to_hex()[..32]);
    }
}
