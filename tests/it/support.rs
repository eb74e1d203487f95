//! Fixture sites for integration tests: write a site into a temp folder, build it with the real
//! binary, and read what came out.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The configuration every fixture site starts with.
pub const CONFIG: &str = "title:\n  en: Test site\n  es: Sitio de prueba\n  zh: 测试站点\nbase_url: https://example.org/docs/\nlanguages: [en, es, zh]\ndefault_language: en\n";

/// A temporary site.
pub struct SiteTest {
    pub dir: tempfile::TempDir,
}

/// The outcome of running the binary.
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl SiteTest {
    /// An empty site with the standard configuration.
    pub fn new() -> Self {
        let t = SiteTest {
            dir: tempfile::tempdir().expect("temp dir"),
        };
        t.file("vramdoc.yaml", CONFIG);
        t
    }

    /// The site root.
    pub fn root(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file under the root (creating folders).
    pub fn file(&self, rel: &str, text: &str) -> &Self {
        self.bytes(rel, text.as_bytes())
    }

    /// Writes raw bytes under the root.
    pub fn bytes(&self, rel: &str, bytes: &[u8]) -> &Self {
        let p = self.root().join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
        self
    }

    /// Writes `content/<slug>/<lang>.md` with a title and a body.
    pub fn guide(&self, slug: &str, lang: &str, title: &str, body: &str) -> &Self {
        self.file(
            &format!("content/{slug}/{lang}.md"),
            &format!("---\ntitle: \"{title}\"\nlang: {lang}\ndate: 2026-11-20\n---\n\n{body}\n"),
        )
    }

    /// Runs `vramdoc <args>` with the site root as working directory.
    pub fn run(&self, args: &[&str]) -> Run {
        let out: Output = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
            .args(args)
            .current_dir(self.root())
            .output()
            .expect("run vramdoc");
        Run {
            code: out.status.code().unwrap_or(-1),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// `vramdoc estimate ARGS --format json`, which must succeed, parsed.
    pub fn estimate_json(&self, args: &[&str]) -> serde_json::Value {
        let mut all = vec!["estimate"];
        all.extend_from_slice(args);
        all.extend_from_slice(&["--format", "json"]);
        let r = self.run(&all);
        assert_eq!(r.code, 0, "{args:?}: {}", r.stderr);
        serde_json::from_str(&r.stdout).expect("estimate's JSON")
    }

    /// Runs `vramdoc translations mark <lang> <slug>` and asserts success.
    pub fn mark(&self, lang: &str, slug: &str) -> &Self {
        let r = self.run(&["translations", "mark", lang, slug]);
        assert_eq!(r.code, 0, "mark failed:\n{}\n{}", r.stdout, r.stderr);
        self
    }

    /// Runs `vramdoc build` and asserts success.
    pub fn build_ok(&self) -> Run {
        let r = self.run(&["build"]);
        assert_eq!(r.code, 0, "build failed:\n{}\n{}", r.stdout, r.stderr);
        r
    }

    /// Runs `vramdoc build` and asserts failure.
    pub fn build_err(&self) -> Run {
        let r = self.run(&["build"]);
        assert_ne!(r.code, 0, "build unexpectedly succeeded:\n{}", r.stdout);
        r
    }

    /// Reads an output file under `public/`.
    pub fn output(&self, rel: &str) -> String {
        let p = self.root().join("public").join(rel);
        std::fs::read_to_string(&p).unwrap_or_else(|e| panic!("read {}: {e}", p.display()))
    }

    /// Every file under `public/` with its bytes, sorted by path.
    pub fn snapshot_output(&self) -> Vec<(PathBuf, Vec<u8>)> {
        self.snapshot_of("public")
    }

    /// Every file under the folder `rel` (relative to the root) with its bytes, sorted by path.
    pub fn snapshot_of(&self, rel: &str) -> Vec<(PathBuf, Vec<u8>)> {
        let mut files = Vec::new();
        collect(&self.root().join(rel), Path::new(""), &mut files);
        files.sort();
        files
    }

    /// Builds the site (`--force` if `force`) through the library as if 3 s had passed since its
    /// files were written (the clock is passed in, so no test sleeps): the sources' stamps are
    /// old enough to be recorded.
    pub fn build_later(&self, force: bool) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos() as u64;
        let opts = vramdoc::site::BuildOptions::new(self.root(), None)
            .quiet(true)
            .force(force)
            .at(now + 3_000_000_000);
        vramdoc::site::build(&opts).unwrap();
    }

    /// A clean build into the fresh output folder `rel` (which must not exist yet), asserting
    /// success; returns what it wrote.
    pub fn clean_build_into(&self, rel: &str) -> Vec<(PathBuf, Vec<u8>)> {
        assert!(!self.root().join(rel).exists(), "{rel} already exists");
        let r = self.run(&["build", "--quiet", "--out", rel]);
        assert_eq!(r.code, 0, "build failed:\n{}\n{}", r.stdout, r.stderr);
        self.snapshot_of(rel)
    }
}

fn collect(dir: &Path, rel: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        let r = rel.join(e.file_name());
        if p.is_dir() {
            collect(&p, &r, out);
        } else {
            out.push((r, std::fs::read(&p).unwrap()));
        }
    }
}

/// The cells of the rows of the Markdown table that follows the header line containing `header`.
pub fn table(md: &str, header: &str) -> Vec<Vec<String>> {
    md.lines()
        .skip_while(|l| !(l.starts_with('|') && l.contains(header)))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            l.trim_matches('|')
                .split(" | ")
                .map(|c| c.trim().trim_matches('*').to_owned())
                .collect()
        })
        .collect()
}

/// `n` as an English page writes a whole number: grouped by threes with commas.
pub fn grouped(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}
