//! YAML: the command line's scenario files (`vramdoc estimate run.yaml`); the generator and the
//! adversarial shapes are shared with guide front matter ([`crate::front_matter`]).

use crate::harness::{mutate, repeat_to, Rng, MAIN_STACK};
use crate::{Family, Target};

/// Keys of a scenario (and of a guide's front matter), and a few unknown ones.
pub(crate) const KEYS: &[&str] = &[
    "n_layer",
    "n_head",
    "n_embd",
    "block_size",
    "batch_size",
    "vocab_size",
    "dtype",
    "optimizer",
    "gpu",
    "bias",
    "dropout",
    "compile",
    "gradient_accumulation_steps",
    "other_processes",
    "lora_targets",
    "title",
    "lang",
    "date",
    "updated",
    "description",
    "scenario",
    "variants",
    "error",
    "type",
    "unknown_key",
    "? complex",
    "\"quoted\"",
    "- item",
    "<<",
];

pub(crate) const DICT: &[&str] = &[
    "[",
    "]",
    "{",
    "}",
    ",",
    ": ",
    "- ",
    "\n",
    "\n  ",
    "\t",
    "&a ",
    "*a",
    "!!str ",
    "!!binary ",
    "!<tag:x> ",
    "%YAML 1.2\n",
    "---\n",
    "...\n",
    "|\n",
    ">-\n",
    "'",
    "\"",
    "\\u0000",
    "#",
    "?",
    "~",
    ".inf",
    "0x1F",
    "1e999",
    "99999999999999999999",
    "2026-13-45",
    "\u{feff}",
    "\u{0}",
    "\u{1b}]0;T\u{7}",
    "\r",
];

/// A YAML value of depth at most `depth`, written at `indent` (block forms need it); inside a
/// flow collection (`flow`) only flow forms.
pub(crate) fn value(rng: &mut Rng, depth: usize, indent: usize, flow: bool, out: &mut String) {
    if depth == 0 || rng.one_in(2) {
        let leaf = match rng.below(8) {
            0 => rng.below(100_000).to_string(),
            1 => format!("{}.{}", rng.below(10), rng.below(100)),
            2 => rng
                .pick(&[
                    "float16",
                    "bfloat16",
                    "adamw",
                    "rtx-4070",
                    "a100-80gb",
                    "true",
                    "no",
                    "~",
                    "null",
                    "2026-11-20",
                    "\"2.1 GiB\"",
                    "'x'",
                    "\"\\x1b\"",
                    ".nan",
                    "-0",
                    "0o17",
                    "1_000",
                ])
                .to_string(),
            3 => "9".repeat(1 + rng.size(40)),
            4 => format!("&a{} {}", 1 + rng.below(3), rng.below(10)),
            5 => "*a0".to_string(),
            6 => format!(
                "\"{}\"",
                rng.pick(&["quoted: # value", "é显存", "\\u00e9", "tab\\there"])
            ),
            _ if flow => rng.pick(&["!!int 3", "!!float x", "!!str 1"]).to_string(),
            _ => rng
                .pick(&["|\n  block\n  text", ">\n  folded", "!!int 3", "!!float x"])
                .replace('\n', &format!("\n{}", " ".repeat(indent))),
        };
        out.push_str(&leaf);
        return;
    }
    match rng.below(if flow { 2 } else { 4 }) {
        0 => {
            out.push('[');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push_str(", ");
                }
                value(rng, depth - 1, indent, true, out);
            }
            out.push(']');
        }
        1 => {
            out.push('{');
            for i in 0..rng.below(4) {
                if i > 0 {
                    out.push_str(", ");
                }
                out.push_str(rng.pick(KEYS));
                out.push_str(": ");
                value(rng, depth - 1, indent, true, out);
            }
            out.push('}');
        }
        2 => {
            for _ in 0..1 + rng.below(3) {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
                out.push_str("- ");
                value(rng, depth - 1, indent + 4, false, out);
            }
        }
        _ => {
            for _ in 0..1 + rng.below(3) {
                out.push('\n');
                out.push_str(&" ".repeat(indent + 2));
                out.push_str(rng.pick(KEYS));
                out.push_str(": ");
                value(rng, depth - 1, indent + 2, false, out);
            }
        }
    }
}

/// A mapping of `KEY: value` lines up to about `target` bytes.
pub(crate) fn mapping(rng: &mut Rng, target: usize) -> String {
    let mut text = String::from("anchor: &a0 1\n");
    while text.len() < target {
        text.push_str(rng.pick(KEYS));
        text.push_str(": ");
        value(rng, 3, 0, false, &mut text);
        text.push('\n');
    }
    text
}

fn random_scenario(rng: &mut Rng, max: usize) -> Vec<u8> {
    let size = rng.size(max);
    let body = mapping(rng, size);
    let text = if rng.one_in(3) {
        let indented: String = body.lines().map(|l| format!("  {l}\n")).collect();
        format!("scenario:\n{indented}")
    } else {
        body
    };
    let mut bytes = text.into_bytes();
    if rng.one_in(2) {
        mutate(rng, &mut bytes, DICT, max);
    }
    bytes
}

fn run_scenario(input: &[u8]) {
    let _ = vramdoc::fuzzing::estimate(("run.yaml", input), &[], &[]);
}

/// `key: ` then `n` bytes of `[` (or another opener), closed or not.
pub(crate) fn nested(key: &str, open: &str, close: &str, n: usize) -> String {
    let depth = n / (open.len() + close.len());
    format!("{key}: {}1{}\n", open.repeat(depth), close.repeat(depth))
}

/// Aliases doubling at each level (the billion laughs).
pub(crate) fn laughs(n: usize) -> String {
    let mut s = String::from("a0: &a0 [1, 1]\n");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("a{}: &a{} [*a{i}, *a{i}]\n", i + 1, i + 1));
        i += 1;
    }
    s
}

/// The same with block sequences, which no bracket count sees.
pub(crate) fn block_laughs(n: usize) -> String {
    let mut s = String::from("a0: &a0\n- 1\n- 1\n");
    let mut i = 0;
    while s.len() < n {
        s.push_str(&format!("a{}: &a{}\n- *a{i}\n- *a{i}\n", i + 1, i + 1));
        i += 1;
    }
    s
}

/// Block mappings indented one level deeper on each line.
pub(crate) fn deep_blocks(n: usize) -> String {
    let mut s = String::new();
    let mut depth = 0;
    while s.len() < n {
        s.push_str(&format!("{}a:\n", " ".repeat(depth)));
        depth += 1;
    }
    s.push_str(&format!("{}b: 1\n", " ".repeat(depth)));
    s
}

/// The YAML shapes both readers face; `wrap` places them (a scenario file as is, a page
/// between `---` lines); more families may follow.
#[macro_export]
macro_rules! yaml_families {
    ($wrap:path $(, $name:literal => $make:expr)* $(,)?) => {
        $crate::families![
            $($name => $make,)*
            "flow [[ closed" => |n| $wrap(&$crate::yaml::nested("n_layer", "[", "]", n)),
            "flow [[ unclosed" => |n| $wrap(&format!("n_layer: {}\n", "[".repeat(n))),
            "flow {a: {a:" => |n| $wrap(&$crate::yaml::nested("n_layer", "{a: ", "}", n)),
            "flow list long" => |n| $wrap(&format!("lora_targets: [{}]\n", $crate::harness::repeat_to("c_attn, ", n))),
            "block nesting" => |n| $wrap(&$crate::yaml::deep_blocks(n)),
            "block sequence nesting" => |n| $wrap(&format!("n_layer:\n{}1\n", $crate::harness::repeat_to("- ", n))),
            "many keys" => |n| $wrap(&(0..n / 12).map(|i| format!("key{i}: {i}\n")).collect::<String>()),
            "duplicate keys" => |n| $wrap(&$crate::harness::repeat_to("n_layer: 4\n", n)),
            "alias laughs" => |n| $wrap(&$crate::yaml::laughs(n)),
            "alias laughs (block)" => |n| $wrap(&$crate::yaml::block_laughs(n)),
            "many aliases" => |n| $wrap(&format!("a: &a 1\nb: [{}]\n", $crate::harness::repeat_to("*a, ", n))),
            "long scalar" => |n| $wrap(&format!("title: {}\n", "x".repeat(n))),
            "huge integer" => |n| $wrap(&format!("n_layer: {}\n", "9".repeat(n))),
            "long quoted escapes" => |n| $wrap(&format!("title: \"{}\"\n", $crate::harness::repeat_to("\\u00e9\\x1b", n))),
            "many documents" => |n| $wrap(&$crate::harness::repeat_to("n_layer: 1\n---\n", n)),
            "many tags" => |n| $wrap(&format!("n_layer: {}1\n", $crate::harness::repeat_to("!!int ", n))),
            "control characters" => |n| $wrap(&format!("title: \"{}\"\n", $crate::harness::repeat_to("\u{1b}]0;T\u{7}", n))),
            "long comment" => |n| $wrap(&format!("#{}\nn_layer: 2\n", "c".repeat(n))),
        ]
    };
}

fn as_is(s: &str) -> Vec<u8> {
    s.as_bytes().to_vec()
}

const FAMILIES: &[Family] = yaml_families!(as_is);

/// `vramdoc estimate run.yaml`.
pub(crate) fn cli_scenario() -> Target {
    let _ = repeat_to;
    Target {
        name: "yaml-scenario",
        stack: MAIN_STACK,
        run: run_scenario,
        random: random_scenario,
        max_random: 256 << 10,
        families: FAMILIES,
        // Under the 64 KiB cap at 16n, so the parser, not the cap, is measured.
        family_size: 3 << 10,
    }
}
