//! Guide front matter: a page's `---` block of YAML and its checks, as `vramdoc build` reads
//! `content/<guide>/en.md` (on a rayon worker, hence the smaller stack), then renders the errors.

use std::path::Path;
use std::sync::Arc;

use crate::harness::{mutate, Rng, WORKER_STACK};
use crate::yaml::{mapping, DICT};
use crate::{yaml_families, Family, Target};

fn run_page(input: &[u8]) {
    let dir: Arc<Path> = Arc::from(Path::new("content/g"));
    if let Err(errors) =
        vramdoc::content::parse(vramdoc::content::page_source("g", "en", &dir), input)
    {
        let _ = vramdoc::diagnostics::render_capped(&errors);
    }
}

fn random_page(rng: &mut Rng, max: usize) -> Vec<u8> {
    let size = rng.size(max.min(80 << 10));
    let yaml = mapping(rng, size);
    let open = rng.pick(&["---\n", "---\r\n", "\u{feff}---\n", "", "--- \n"]);
    let close = rng.pick(&["---\n", "...\n", "", "---"]);
    let lang = if rng.one_in(3) {
        ""
    } else {
        "title: T\nlang: en\n"
    };
    let body = "Body text {{ bytes }}\n".repeat(rng.size(64));
    let mut bytes = format!("{open}{lang}{yaml}{close}{body}").into_bytes();
    if rng.one_in(2) {
        mutate(rng, &mut bytes, DICT, max);
    }
    bytes
}

/// `yaml` as the front matter of an English page with a short body.
fn page(yaml: &str) -> Vec<u8> {
    format!("---\ntitle: T\nlang: en\n{yaml}---\nBody.\n").into_bytes()
}

/// `count` variants in block form (flow braces would meet the bracket cap first).
fn variants(n: usize, id: fn(usize) -> String) -> Vec<u8> {
    let mut yaml = String::from("scenario:\n  n_layer: 2\nvariants:\n");
    let mut i = 0;
    while yaml.len() < n {
        yaml.push_str(&format!(
            "  - id: {}\n    label: L\n    set:\n      batch_size: 2\n",
            id(i)
        ));
        i += 1;
    }
    page(&yaml)
}

const FAMILIES: &[Family] = yaml_families!(
    page,
    "many variants" => |n| variants(n, |i| format!("v{i}")),
    "many duplicate variants" => |n| variants(n, |_| "v".to_string()),
);

/// `vramdoc build` reading `content/g/en.md`.
pub(crate) fn target() -> Target {
    Target {
        name: "front-matter",
        stack: WORKER_STACK,
        run: run_page,
        random: random_page,
        max_random: 256 << 10,
        families: FAMILIES,
        // Under the 64 KiB cap at 16n, so the parser, not the cap, is measured.
        family_size: 3 << 10,
    }
}
