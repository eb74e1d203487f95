//! Hashing and stamps: the digests every build record is keyed by, and what `stat` says of a
//! file, so a build can tell a changed source without reading it.

use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The first 128 bits of a blake3 digest (ample for telling versions of a file apart).
#[derive(Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub(crate) struct Digest(pub [u8; 16]);

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
pub(crate) struct Hasher(Vec<u8>);

impl Hasher {
    /// A fresh hasher.
    pub(crate) fn new() -> Hasher {
        Hasher(Vec::new())
    }

    /// Adds one part.
    pub(crate) fn part(&mut self, bytes: impl AsRef<[u8]>) -> &mut Self {
        let b = bytes.as_ref();
        self.0.extend_from_slice(&(b.len() as u64).to_le_bytes());
        self.0.extend_from_slice(b);
        self
    }

    /// Adds a digest as one part.
    pub(crate) fn digest(&mut self, d: &Digest) -> &mut Self {
        self.part(d.0)
    }

    /// The digest.
    pub(crate) fn finish(&self) -> Digest {
        hash(&self.0)
    }
}

/// The digest of some bytes.
pub(crate) fn hash(bytes: &[u8]) -> Digest {
    blake3::hash(bytes).into()
}

/// What one `stat` says of a file or folder: everything a [`Stamp`] is made of (size,
/// modification and status-change times in nanoseconds, inode number; the last two on Unix).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct FileStat([u64; 4]);

impl FileStat {
    /// Size, modification and status-change times (ns), inode.
    pub(crate) fn fields(&self) -> &[u64; 4] {
        &self.0
    }

    /// From the standard library's metadata; `None` when the platform gives no times.
    pub(crate) fn from_metadata(meta: &std::fs::Metadata) -> Option<FileStat> {
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
    pub(crate) fn of_path(path: &Path) -> Option<FileStat> {
        FileStat::from_metadata(&std::fs::metadata(path).ok()?)
    }

    /// Stats `rel` (following symbolic links) relative to the open folder `dir`: the kernel walks
    /// only `rel`'s components, not the whole path from the root.
    #[cfg(unix)]
    pub(crate) fn at(dir: &rustix::fd::OwnedFd, rel: &str) -> Option<FileStat> {
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
    pub(crate) fn of(stat: &FileStat, now_ns: u64) -> Option<Stamp> {
        let [_, modified, changed, _] = stat.0;
        let latest = modified.max(changed);
        (latest.saturating_add(RACY_WINDOW_NS) < now_ns).then_some(Stamp(stat.0))
    }

    /// Size, modification and status-change times (ns), inode, as recorded.
    pub(crate) fn fields(&self) -> &[u64; 4] {
        &self.0
    }

    /// True when `stat` has this stamp.
    pub(crate) fn matches(&self, stat: &FileStat) -> bool {
        self.0 == stat.0
    }
}

/// Nanoseconds since the epoch, now.
pub(crate) fn now_ns() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .ok()
        .and_then(|d| u64::try_from(d.as_nanos()).ok())
        .unwrap_or(u64::MAX)
}

/// Feeds one guide to a shard's stamp digest: its slug, its folder's stamp fields and, per
/// language of the site in order, its page's stamp fields or an empty part when it has none. The
/// build feeds what `stat` says now, the manifest what it recorded: equal digests, unchanged
/// guides.
pub(crate) fn feed_stamps(
    h: &mut Hasher,
    slug: &str,
    folder: &[u64; 4],
    pages: &[Option<[u64; 4]>],
) {
    let fields = |f: &[u64; 4]| {
        let mut b = [0u8; 32];
        for (chunk, x) in b.chunks_exact_mut(8).zip(f) {
            chunk.copy_from_slice(&x.to_le_bytes());
        }
        b
    };
    h.part(slug).part(fields(folder));
    for page in pages {
        match page {
            Some(f) => h.part(fields(f)),
            None => h.part([]),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
