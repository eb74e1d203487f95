//! Embeds the default templates, locale bundles and static assets into the binary, so `vramdoc`
//! works on a site that has none of its own (a site's own files override these by name).
use std::fmt::Write as _;
use std::path::Path;

fn main() {
    let mut out = String::new();
    for (konst, dir) in [
        ("TEMPLATES", "templates"),
        ("LOCALES", "locales"),
        ("STATIC", "static"),
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
