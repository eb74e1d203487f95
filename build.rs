//! Embeds the default templates, locale bundles and static assets into the binary, so `vramdoc`
//! works on a site that has none of its own (a site's own files override these by name).
use std::fmt::Write as _;
use std::path::Path;

#[path = "src/fingerprint.rs"]
#[allow(dead_code, unreachable_pub)]
mod fingerprint;

fn main() {
    let mut out = String::new();
    write_fingerprints(&mut out);
    for (konst, dir) in [
        ("TEMPLATES", "templates"),
        ("LOCALES", "locales"),
        ("STATIC", "static"),
        ("MODELS", "data/models"),
    ] {
        println!("cargo:rerun-if-changed={dir}");
        let mut files = Vec::new();
        collect(Path::new(dir), &mut files);
        files.sort();
        writeln!(
            out,
            "/// Embedded `{dir}/` files: (path relative to `{dir}/`, contents)."
        )
        .unwrap();
        writeln!(out, "pub(crate) static {konst}: &[(&str, &str)] = &[").unwrap();
        for f in files {
            let rel = f
                .strip_prefix(dir)
                .unwrap()
                .to_string_lossy()
                .replace('\\', "/");
            let abs = std::fs::canonicalize(&f).unwrap();
            writeln!(
                out,
                "    ({rel:?}, include_str!({:?})),",
                abs.display().to_string()
            )
            .unwrap();
        }
        writeln!(out, "];").unwrap();
    }
    let dest = Path::new(&std::env::var("OUT_DIR").unwrap()).join("embedded.rs");
    std::fs::write(dest, out).unwrap();
}

/// `ESTIMATOR_FINGERPRINT` and `MANIFEST_FINGERPRINT`: see `src/fingerprint.rs`.
fn write_fingerprints(out: &mut String) {
    // Read when the script runs, not when it was compiled: a build script compiled in another
    // checkout (a copied `target/`) would otherwise fingerprint that checkout's sources.
    let root = std::env::var("CARGO_MANIFEST_DIR").unwrap();
    let root = Path::new(&root);
    for (konst, trees) in [
        ("ESTIMATOR_FINGERPRINT", fingerprint::ESTIMATOR_TREES),
        ("MANIFEST_FINGERPRINT", fingerprint::MANIFEST_TREES),
    ] {
        let files = fingerprint::files_under(root, trees);
        let mut contents = Vec::new();
        for (rel, path) in &files {
            println!("cargo:rerun-if-changed={}", path.display());
            contents.push((rel.as_str(), std::fs::read(path).unwrap()));
        }
        for tree in trees {
            println!("cargo:rerun-if-changed={tree}");
        }
        let print = fingerprint::fingerprint(contents.iter().map(|(r, b)| (*r, b.as_slice())));
        writeln!(
            out,
            "/// Fingerprint of `{}` (`src/fingerprint.rs`).\npub(crate) const {konst}: &str = {print:?};",
            trees.join("`, `")
        )
        .unwrap();
    }
}

fn collect(dir: &Path, files: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        println!("cargo:rerun-if-changed={}", p.display());
        if p.is_dir() {
            collect(&p, files);
        } else {
            files.push(p);
        }
    }
}
