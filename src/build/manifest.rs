//! The build manifest: what each output was built from, so the next build renders only what
//! changed. Stored as `.vramdoc-manifest.json` in the output folder.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

/// The manifest's file name inside the output folder.
pub const FILE: &str = ".vramdoc-manifest.json";

/// Bump when the manifest's shape or the meaning of its hashes changes.
const FORMAT: u32 = 4;

/// What the previous build recorded.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    format: u32,
    /// Per source file (`content/<slug>/<lang>.md`): its hash and what parsing it gave.
    pub sources: BTreeMap<String, SourceEntry>,
    /// Per guide with a scenario: the hash of its scenario inputs and of its computed data.
    pub guide_data: BTreeMap<String, DataEntry>,
    /// Per output job (`page:<lang>/<slug>`, `index:<lang>`, `root`, `sitemap`, `style`).
    pub jobs: BTreeMap<String, JobEntry>,
}

/// A source file's hash and the parts of its front matter other outputs depend on.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SourceEntry {
    /// blake3 of the file's bytes.
    pub hash: String,
    /// Size and modification time (ns since the epoch) when hashed: unchanged, the file is not
    /// read again.
    pub stamp: (u64, u128),
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
    /// Hash of the page's `scenario:` and variant ids/overrides (empty when none).
    pub scenario_hash: String,
    /// True when the body reads other GPUs (`catalog.`), so the page depends on the catalog.
    pub uses_catalog: bool,
}

/// A guide's scenario inputs and the hash of what they computed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DataEntry {
    /// Hash of scenario, variants, GPU catalog and estimator version.
    pub inputs: String,
    /// Hash of the computed data (what pages actually show).
    pub data: String,
}

/// One output job: the hash of its inputs and the files it wrote, with their hashes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct JobEntry {
    /// Hash of everything the job's outputs depend on.
    pub inputs: String,
    /// Output paths (relative, `/`-separated) and the blake3 of their bytes.
    pub files: BTreeMap<String, String>,
}

impl Manifest {
    /// An empty manifest of the current format.
    pub fn new() -> Manifest {
        Manifest {
            format: FORMAT,
            ..Manifest::default()
        }
    }

    /// Reads the manifest of an output folder; `None` if absent, unreadable or of another format.
    pub fn read(out: &Path) -> Option<Manifest> {
        let text = std::fs::read_to_string(out.join(FILE)).ok()?;
        let m: Manifest = serde_json::from_str(&text).ok()?;
        (m.format == FORMAT).then_some(m)
    }

    /// The manifest as stable, compact JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
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

    /// The digest's first 128 bits in hex (ample for telling versions of a file apart).
    pub fn finish(&self) -> String {
        self.0.finalize().to_hex()[..32].to_string()
    }
}

/// blake3 of some bytes: its first 128 bits in hex.
pub fn hash(bytes: &[u8]) -> String {
    blake3::hash(bytes).to_hex()[..32].to_string()
}
