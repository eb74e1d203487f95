//! The `{{ }}` expression language of guide bodies: finding expressions outside code, parsing
//! and evaluating them against a small guide's data (`expand::expand`, on a rayon worker in
//! `vramdoc build`), then rendering the errors.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use vramdoc::estimate::GpuCatalog;
use vramdoc::expand::{self, ChartCache, ExpandContext, GuideData};
use vramdoc::i18n::Localizer;

use crate::harness::{mutate, repeat_to, Rng, WORKER_STACK};
use crate::{Family, Target};

/// Names, functions and filters of the language, and near misses.
const NAMES: &[&str] = &[
    "bytes",
    "params",
    "scenario",
    "variants",
    "v1",
    "catalog",
    "rtx-4090",
    "gpu",
    "name",
    "capacity_bytes",
    "peak",
    "logits",
    "total",
    "fits",
    "batch_size",
    "dtype",
    "headroom_bytes",
    "nope",
    "effective_batch",
];
const CALLS: &[&str] = &[
    "percent",
    "chart",
    "breakdown_table",
    "options_table",
    "params_table",
    "diagnosis",
    "nope",
];
const FILTERS: &[&str] = &["bytes", "gib", "mib", "int", "count", "verdict", "upper"];
const DICT: &[&str] = &[
    "{{",
    "}}",
    "{",
    "}",
    "(",
    ")",
    ".",
    "|",
    ",",
    "=",
    "\"",
    "'",
    "`",
    "```\n",
    "\n    ",
    "\n",
    "1e999",
    "-3.5",
    "18446744073709551616",
    "<script>",
    "é",
    "显存",
    "\u{0}",
    "\u{1b}",
];

/// A small guide's data, computed once per process.
fn guide() -> &'static (Localizer, GuideData, GpuCatalog) {
    static GUIDE: OnceLock<(Localizer, GuideData, GpuCatalog)> = OnceLock::new();
    GUIDE.get_or_init(|| {
        let catalog = GpuCatalog::builtin();
        let scenario = yaml_serde::from_str(
            "n_layer: 2\nn_head: 2\nn_embd: 64\nblock_size: 64\nbatch_size: 4\ngpu: rtx-4070\n",
        )
        .expect("the scenario is valid YAML");
        let variants = [vramdoc::content::Variant {
            id: "v1".into(),
            label: "Half".into(),
            set: vec![vramdoc::content::variants::Setting {
                key: "batch_size".into(),
                value: yaml_serde::Value::from(2),
                line: 1,
            }],
            line: 1,
        }];
        let data = expand::guide_data(&scenario, &variants, &catalog).expect("the guide computes");
        let loc = Localizer::builtin("en").expect("the English bundle loads");
        (loc, data, catalog)
    })
}

fn run_body(input: &[u8]) {
    let body = String::from_utf8_lossy(input);
    let (loc, data, catalog) = guide();
    let labels = vec![("v1".to_string(), "Half".to_string())];
    let charts = ChartCache::default();
    let ctx = ExpandContext {
        loc,
        data: Some(data),
        variant_labels: &labels,
        catalog,
        charts: &charts,
        error: None,
    };
    let source: Arc<str> = Arc::from(format!("---\ntitle: t\nlang: en\n---\n{body}"));
    if let Err(errors) = expand::expand(&body, None, 5, &ctx, Path::new("content/g/en.md"), &source)
    {
        let _ = vramdoc::diagnostics::render_capped(&errors);
    }
}

/// One expression from the grammar (or close to it).
fn expression(rng: &mut Rng, out: &mut String) {
    out.push_str("{{ ");
    if rng.one_in(2) {
        let parts: Vec<&str> = (0..1 + rng.below(4)).map(|_| rng.pick(NAMES)).collect();
        out.push_str(&parts.join("."));
    } else {
        out.push_str(rng.pick(CALLS));
        out.push('(');
        for i in 0..rng.below(4) {
            if i > 0 {
                out.push_str(", ");
            }
            out.push_str(rng.pick(&[
                "\"breakdown\"",
                "\"sweep\"",
                "over=\"batch_size\"",
                "over=\"n_layer\"",
                "variant=\"v1\"",
                "bytes.peak",
                "3",
                "-1.5",
                "1e999",
                "'x'",
                "over=",
            ]));
        }
        out.push(')');
    }
    if rng.one_in(3) {
        out.push_str(" | ");
        out.push_str(rng.pick(FILTERS));
    }
    out.push_str(" }}");
}

fn random_body(rng: &mut Rng, max: usize) -> Vec<u8> {
    let target = rng.size(max);
    let mut text = String::new();
    while text.len() < target {
        match rng.below(8) {
            0 | 1 => expression(rng, &mut text),
            2 => {
                text.push_str("\n\n");
                expression(rng, &mut text);
                text.push_str("\n\n");
            }
            3 => text.push_str(rng.pick(&[
                "`{{ code }}`",
                "\n```\n{{ fenced }}\n```\n",
                "\n    {{ indented }}\n",
                "{{ never closed",
                "}}",
                "> quote {{ bytes.peak }}\n",
                "- item\n",
                "<div>{{ bytes.peak }}</div>",
            ])),
            _ => text.push_str(rng.pick(&[
                "Some text. ",
                "The peak is ",
                "\n\n## Heading\n\n",
                "显存不足 ",
                "é ",
            ])),
        }
    }
    let mut bytes = text.into_bytes();
    if rng.one_in(2) {
        mutate(rng, &mut bytes, DICT, max);
    }
    bytes
}

const FAMILIES: &[Family] = families![
    "many expressions" => |n| repeat_to("{{ bytes.peak }} ", n).into_bytes(),
    "many block expressions" => |n| repeat_to("\n{{ bytes.peak | gib }}\n", n).into_bytes(),
    "many failing expressions" => |n| repeat_to("{{ nope.nope }} ", n).into_bytes(),
    "long path" => |n| format!("{{{{ bytes{} }}}}", repeat_to(".peak", n)).into_bytes(),
    "many arguments" => |n| format!("{{{{ percent({}1) }}}}", repeat_to("1, ", n)).into_bytes(),
    "long string argument" => |n| format!("{{{{ chart(\"{}\") }}}}", "a".repeat(n)).into_bytes(),
    "huge number argument" => |n| format!("{{{{ percent({}) }}}}", "9".repeat(n)).into_bytes(),
    "unclosed {{ repeated" => |n| repeat_to("{{ ", n).into_bytes(),
    "braces {{{{" => |n| format!("{}bytes{}", "{".repeat(n / 2), "}".repeat(n / 2)).into_bytes(),
    "in inline code" => |n| repeat_to("`{{ x }}` ", n).into_bytes(),
    "in many fences" => |n| repeat_to("```\n{{ x }}\n```\n", n).into_bytes(),
    "nested quotes and lists" => |n| format!("{}{{{{ bytes.peak }}}}\n", repeat_to("> - ", n)).into_bytes(),
    "long line of text" => |n| format!("{} {{{{ bytes.peak }}}}", "a".repeat(n)).into_bytes(),
    "charts repeated" => |n| repeat_to("\n{{ chart(\"breakdown\") }}\n", n).into_bytes(),
];

/// `vramdoc build` expanding a guide body.
pub(crate) fn target() -> Target {
    Target {
        name: "expressions",
        stack: WORKER_STACK,
        run: run_body,
        random: random_body,
        max_random: 256 << 10,
        families: FAMILIES,
        family_size: 16 << 10,
    }
}
