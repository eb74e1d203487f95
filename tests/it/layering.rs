//! ARCHITECTURE.md's layering claims, checked over the sources: each `src/site/` stage file uses
//! only the stages listed before it (and the shared types of `mod.rs`; the order is read from
//! ARCHITECTURE.md itself, so the document and the `use` lines cannot drift apart, and a new
//! stage file must be listed there); nothing outside `src/cli/` (and `main.rs`) mentions clap;
//! and the layers below the commands (scenario, out-of-memory parsing, the estimator, the site
//! build, page expansion, presentation, translations) never print.

use std::collections::BTreeMap;
use std::path::Path;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// The stage names of the `site/` row of ARCHITECTURE.md's module table, in order
/// (`pages`/`status_page`/`sitewide` count as consecutive stages).
fn listed_order() -> Vec<String> {
    let doc = std::fs::read_to_string(Path::new(ROOT).join("ARCHITECTURE.md")).unwrap();
    let row = doc
        .lines()
        .find(|l| l.starts_with("| `site/` |"))
        .expect("ARCHITECTURE.md has a site/ row");
    let list = &row[row.find("before it").expect("the row states the rule")..];
    let mut names = Vec::new();
    for (i, part) in list.split('`').enumerate() {
        // Odd parts are inside backticks; stage names are plain identifiers followed by ` (`
        // (their description) or `/` (pages/status_page/sitewide).
        let next = list.split('`').nth(i + 1).unwrap_or("");
        if i % 2 == 1
            && part.chars().all(|c| c.is_ascii_lowercase() || c == '_')
            && (next.starts_with(" (") || next.starts_with('/'))
        {
            names.push(part.to_owned());
        }
    }
    names
}

/// The sibling stages a source file names as `super::stage`, outside comments, with the line.
fn used_stages(text: &str, stages: &[String]) -> Vec<(String, usize)> {
    let mut used = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let code = line.split("//").next().unwrap_or("");
        let mut rest = code;
        while let Some(i) = rest.find("super::") {
            rest = &rest[i + "super::".len()..];
            let group = rest
                .strip_prefix('{')
                .map(|g| g.split('}').next().unwrap_or(""));
            let names: Vec<&str> = match group {
                Some(g) => g.split(',').map(|p| p.trim()).collect(),
                None => vec![rest],
            };
            for name in names {
                let ident: String = name
                    .chars()
                    .take_while(|c| c.is_ascii_alphanumeric() || *c == '_')
                    .collect();
                if stages.contains(&ident) {
                    used.push((ident, n + 1));
                }
            }
        }
    }
    used
}

#[test]
fn every_site_stage_uses_only_the_stages_listed_before_it() {
    let order = listed_order();
    assert!(
        order.len() >= 15,
        "stages read from ARCHITECTURE.md: {order:?}"
    );
    assert_eq!(order.last().map(String::as_str), Some("mod"));
    let rank: BTreeMap<&str, usize> = order
        .iter()
        .enumerate()
        .map(|(i, n)| (n.as_str(), i))
        .collect();
    let dir = Path::new(ROOT).join("src/site");
    let mut problems = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(&dir).unwrap().flatten().collect();
    entries.sort_by_key(|e| e.file_name());
    for entry in entries {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(stem) = name.strip_suffix(".rs") else {
            continue;
        };
        if stem.ends_with("_tests") {
            continue; // unit tests of a stage live beside it and may use anything
        }
        let Some(&mine) = rank.get(stem) else {
            problems.push(format!(
                "src/site/{name} is not listed in ARCHITECTURE.md's site/ row"
            ));
            continue;
        };
        let text = std::fs::read_to_string(entry.path()).unwrap();
        for (used, line) in used_stages(&text, &order) {
            if rank[used.as_str()] >= mine && used != stem {
                problems.push(format!(
                    "src/site/{name}:{line} uses `{used}`, listed after `{stem}`"
                ));
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}

/// Every `.rs` file under `src/` (relative path, text), sorted.
fn sources() -> Vec<(String, String)> {
    fn walk(dir: &Path, out: &mut Vec<(String, String)>) {
        for entry in std::fs::read_dir(dir).unwrap().flatten() {
            let path = entry.path();
            if path.is_dir() {
                walk(&path, out);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let rel = path
                    .strip_prefix(ROOT)
                    .unwrap()
                    .to_string_lossy()
                    .replace('\\', "/");
                out.push((rel, std::fs::read_to_string(&path).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(&Path::new(ROOT).join("src"), &mut out);
    out.sort();
    out
}

/// The code of a line: what comes before a `//` comment.
fn code(line: &str) -> &str {
    line.split("//").next().unwrap_or("")
}

#[test]
fn only_cli_knows_clap() {
    let mut problems = Vec::new();
    for (rel, text) in sources() {
        if rel.starts_with("src/cli/") || rel == "src/main.rs" {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            // A path into the crate (`clap::Args`, `use clap::Parser`, `use clap;`) is the only way
            // to reach it; the word alone in a string or a name is not a use.
            let code = code(line);
            if code.contains("clap::") || code.contains("use clap") {
                problems.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "clap outside src/cli/:\n{}",
        problems.join("\n")
    );
}

#[test]
fn the_layers_below_the_commands_print_nothing() {
    // `terminal::visible_line` only makes text safe to show; these write to stdout or stderr
    // (a drawn progress bar included: the site build takes a hidden one unless `cli/` gives it
    // one, and tells its running notes to `BuildOptions::notify`).
    const PRINTING: [&str; 10] = [
        "print_out",
        "eprint_line",
        "eprint_note",
        "println!",
        "eprintln!",
        "print!",
        "io::stdout",
        "io::stderr",
        "ProgressBar::new",
        "is_terminal",
    ];
    let mut problems = Vec::new();
    for (rel, text) in sources() {
        // Unit-test files (`*_tests.rs`) may report what they measured.
        let layer = [
            "src/scenario/",
            "src/oom/",
            "src/estimate/",
            "src/site/",
            "src/expand/",
            "src/present/",
            "src/translations/",
        ]
        .iter()
        .any(|d| rel.starts_with(d));
        if !layer || rel.ends_with("_tests.rs") {
            continue;
        }
        for (n, line) in text.lines().enumerate() {
            if PRINTING.iter().any(|p| code(line).contains(p)) {
                problems.push(format!("{rel}:{}: {}", n + 1, line.trim()));
            }
        }
    }
    assert!(
        problems.is_empty(),
        "printing below cli/:\n{}",
        problems.join("\n")
    );
}

/// The name a line defines, if it defines a type: a struct, enum or trait anywhere, or a type
/// alias at the top level of a module (an indented `type` is an impl's associated type, such as
/// `type Output`, or an alias local to a function).
fn defined_type(line: &str) -> Option<&str> {
    let top = !line.starts_with(char::is_whitespace);
    let mut rest = line.trim_start();
    if let Some(r) = rest.strip_prefix("pub") {
        rest = match r.strip_prefix('(') {
            Some(r) => r.split_once(") ")?.1,
            None => r.strip_prefix(' ')?,
        };
    }
    let (kw, r) = rest.split_once(' ')?;
    if !(matches!(kw, "struct" | "enum" | "trait") || (kw == "type" && top)) {
        return None;
    }
    let end = r
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(r.len());
    Some(&r[..end]).filter(|n| n.starts_with(|c: char| c.is_ascii_uppercase()))
}

/// One type per concept: no two types of the crate share a name (two `Value`s or `Request`s
/// meant four different things before; each is named for what it holds).
#[test]
fn every_type_name_means_one_type() {
    let mut seen: std::collections::BTreeMap<&str, Vec<String>> = Default::default();
    let files = sources();
    for (path, text) in &files {
        for (i, line) in text.lines().enumerate() {
            if let Some(name) = defined_type(code(line)) {
                seen.entry(name)
                    .or_default()
                    .push(format!("{path}:{}", i + 1));
            }
        }
    }
    assert!(seen.len() > 300, "too few types found: {}", seen.len());
    let twice: Vec<String> = seen
        .iter()
        .filter(|(_, at)| at.len() > 1)
        .map(|(name, at)| format!("{name}: {}", at.join(", ")))
        .collect();
    assert!(
        twice.is_empty(),
        "names given to several types:\n{}",
        twice.join("\n")
    );
}
