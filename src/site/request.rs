//! What a plan is asked for: which site and output folder, for a build or a check, which sources
//! to look at, when, and against which previous build.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use super::manifest::{Manifest, StoredManifest};

/// How a plan finds out which sources changed.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Scan<'a> {
    /// Stat every guide folder and page (a page is read only if its stamp changed).
    Everything,
    /// Only these paths (relative to the root, as a file watcher reported them) changed since the
    /// previous manifest was written: the other guides are taken from it without a system call.
    Only(&'a BTreeSet<PathBuf>),
}

/// The previous build, as a plan gets it.
pub(crate) enum Previous {
    /// None: a first build, `--force`, or an unreadable manifest.
    Nothing,
    /// Read from the output folder. Unless `decode_all` (the manifest is kept in memory after
    /// the build), a shard whose recorded stamps match what `stat` says now is left undecoded.
    Stored {
        manifest: StoredManifest,
        decode_all: bool,
    },
    /// Kept in memory by `serve` since its last build.
    Remembered(Manifest),
}

/// What a plan is for: a build trusts its manifest unless the observe stage finds a language's
/// folder or index or a page's folder gone from the output (then it verifies as `check` does);
/// `check` always verifies that every recorded output is still there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Purpose {
    /// Render the jobs whose inputs changed.
    Build,
    /// Also re-render jobs whose recorded files are missing from the output folder.
    Check,
}

/// What to plan: which site, against which output folder, how, and when.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PlanRequest<'a> {
    /// The site root.
    pub(crate) root: &'a Path,
    /// The output folder.
    pub(crate) out: &'a Path,
    /// A build, or a check.
    pub(crate) purpose: Purpose,
    /// Which sources are looked at.
    pub(crate) scan: Scan<'a>,
    /// When the build started (ns since the epoch): stamps younger than 2 s before it are not
    /// recorded.
    pub(crate) now: u64,
}
