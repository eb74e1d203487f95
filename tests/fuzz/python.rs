//! The Python config evaluator: nanoGPT-style config files (`vramdoc estimate config.py`) and
//! `--set KEY=VALUE` values, both evaluated in train.py's globals.

use crate::harness::{mutate, repeat_to, Rng, MAIN_STACK};
use crate::{Family, Target};

/// Scenario keys and other names configs use.
const NAMES: &[&str] = &[
    "n_layer",
    "n_head",
    "n_embd",
    "block_size",
    "batch_size",
    "dropout",
    "bias",
    "dtype",
    "gradient_accumulation_steps",
    "vocab_size",
    "init_from",
    "dataset",
    "compile",
    "device",
    "out_dir",
    "learning_rate",
    "max_iters",
    "x",
    "y",
    "config",
    "os",
    "math",
    "time",
    "torch",
    "undefined",
];

/// Tokens the mutator inserts.
const DICT: &[&str] = &[
    "+",
    "-",
    "*",
    "/",
    "//",
    "%",
    "**",
    " and ",
    " or ",
    " not ",
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    ",",
    ":",
    ".",
    "=",
    "==",
    " if ",
    " else ",
    "\n",
    "\n    ",
    "\t",
    "\\\n",
    "#",
    "'",
    "\"",
    "'''",
    "f'",
    "b'",
    "r'",
    "1e999",
    "0x",
    "_",
    "9999999999999999999999",
    "None",
    "True",
    "lambda",
    "def ",
    "import ",
    "exec(open('configurator.py').read())",
    "del ",
    ";",
    "@",
    "print(1)",
    "ｎ_layer",
    "\r",
    "\u{feff}",
    "\\x1b]0;T\\x07",
];

/// A Python expression of depth at most `depth`, from the forms configs use and a few they
/// should not.
fn expr(rng: &mut Rng, depth: usize, out: &mut String) {
    if depth == 0 || rng.one_in(3) {
        match rng.below(9) {
            0 => out.push_str(&rng.below(100_000).to_string()),
            1 => out.push_str(&format!("{}.{}", rng.below(100), rng.below(1000))),
            2 => out.push_str(rng.pick(&[
                "'float16'",
                "'bfloat16'",
                "\"gpt2\"",
                "'resume'",
                "'a\\nb'",
                "''",
                "'\\x00'",
            ])),
            3 => out.push_str(rng.pick(&["True", "False", "None"])),
            4 => out.push_str(&format!("{}e{}", rng.below(10), rng.below(400))),
            _ => out.push_str(rng.pick(NAMES)),
        }
        return;
    }
    match rng.below(10) {
        0 | 1 => {
            expr(rng, depth - 1, out);
            out.push_str(rng.pick(&[
                " + ", " - ", " * ", " / ", " // ", " % ", " ** ", " and ", " or ", " == ", " < ",
            ]));
            expr(rng, depth - 1, out);
        }
        2 => {
            // `not` binds looser than comparisons: `a == not b` is not Python.
            let not = rng.one_in(4);
            out.push_str(if not {
                "(not "
            } else {
                rng.pick(&["-", "+", "~"])
            });
            expr(rng, depth - 1, out);
            if not {
                out.push(')');
            }
        }
        3 => {
            out.push_str(rng.pick(&[
                "int",
                "float",
                "str",
                "max",
                "min",
                "len",
                "bool",
                "os.environ.get",
                "math.sqrt",
                "torch.cuda.is_available",
                "dict",
                "f",
            ]));
            out.push('(');
            for i in 0..rng.below(3) {
                if i > 0 {
                    out.push_str(", ");
                }
                expr(rng, depth - 1, out);
            }
            out.push(')');
        }
        4 => {
            let (open, close) = *rng.pick(&[&("[", "]"), &("(", ")"), &("{", "}")]);
            out.push_str(open);
            for _ in 0..rng.below(4) {
                expr(rng, depth - 1, out);
                out.push_str(", ");
            }
            out.push_str(close);
        }
        5 => {
            expr(rng, depth - 1, out);
            out.push('[');
            expr(rng, depth - 1, out);
            out.push(']');
        }
        6 => {
            // In parentheses: a conditional cannot be an operand or a condition bare.
            out.push('(');
            expr(rng, depth - 1, out);
            out.push_str(" if ");
            expr(rng, depth - 1, out);
            out.push_str(" else ");
            expr(rng, depth - 1, out);
            out.push(')');
        }
        7 => {
            out.push('(');
            expr(rng, depth - 1, out);
            out.push(')');
        }
        8 => {
            out.push_str(rng.pick(&["os", "config", "x"]));
            out.push('.');
            out.push_str(rng.pick(&["path", "environ", "get", "n_layer"]));
        }
        _ => {
            out.push_str("f'{");
            out.push_str(rng.pick(NAMES));
            out.push_str("}'");
        }
    }
}

/// The body of a compound statement: `pass;` first, so a comment or a nested block after it
/// still leaves a statement in the body.
fn block(rng: &mut Rng, indent: usize, out: &mut String) {
    out.push_str(&" ".repeat(indent));
    out.push_str("pass; ");
    statement(rng, indent, out);
}

/// One statement (or a small block) at `indent`.
fn statement(rng: &mut Rng, indent: usize, out: &mut String) {
    let pad = " ".repeat(indent);
    let kind = rng.below(12);
    if matches!(kind, 6 | 7) && !out.is_empty() && !out.ends_with('\n') {
        out.push('\n');
    }
    out.push_str(&pad);
    // A compound statement cannot follow `;`: it ends its line.
    let end = if matches!(kind, 6 | 7) {
        "\n"
    } else {
        rng.pick(&["\n", "\n", "\n", "; ", "\r\n", "  # trailing\n"])
    };
    match kind {
        0..=4 => {
            out.push_str(rng.pick(NAMES));
            out.push_str(rng.pick(&[" = ", " += ", ": int = ", " *= ", "="]));
            expr(rng, 4, out);
        }
        5 => out.push_str(rng.pick(&[
            "import os",
            "from math import sqrt",
            "import torch.nn as nn",
            "exec(open('configurator.py').read())",
            "del x",
            "pass",
            "print(n_layer)",
            "x, y = 1, 2",
            "global x",
            "assert n_layer > 0",
        ])),
        6 if indent < 12 => {
            out.push_str("if ");
            expr(rng, 2, out);
            out.push_str(":\n");
            block(rng, indent + 4, out);
            if rng.one_in(2) {
                out.push_str(&format!("\n{pad}else:\n"));
                block(rng, indent + 4, out);
            }
        }
        7 if indent < 12 => {
            out.push_str(rng.pick(&[
                "def f(a, b=1):",
                "for i in range(3):",
                "with open('x') as f:",
                "class C:",
                "while False:",
            ]));
            out.push('\n');
            block(rng, indent + 4, out);
        }
        8 => {
            out.push_str("# ");
            out.push_str(rng.pick(&["comment", "n_layer = 4", "-*- coding: latin-1 -*-", "é显存"]));
        }
        9 => {
            out.push_str("'''");
            out.push_str(rng.pick(&["doc", "multi\nline", ""]));
            out.push_str("'''");
        }
        _ => expr(rng, 3, out),
    }
    out.push_str(end);
}

/// A config: statements, then mutations.
fn random_config(rng: &mut Rng, max: usize) -> Vec<u8> {
    let target = rng.size(max);
    let mut text = String::new();
    while text.len() < target {
        statement(rng, 0, &mut text);
    }
    let mut bytes = text.into_bytes();
    if rng.one_in(2) {
        mutate(rng, &mut bytes, DICT, max);
    }
    bytes.truncate(max);
    bytes
}

fn run_config(input: &[u8]) {
    let _ = vramdoc::fuzzing::estimate(("config.py", input), &[], &[]);
}

/// A chain `head op op ... op` of `n` bytes, assigned to a scenario key or another name.
fn chain(lhs: &str, head: &str, unit: &str, n: usize) -> Vec<u8> {
    format!("{lhs} = {head}{}\n", repeat_to(unit, n)).into_bytes()
}

const CONFIG_FAMILIES: &[Family] = families![
    "chain + (key)" => |n| chain("n_layer", "1", "+1", n),
    "chain + (other name)" => |n| chain("x", "1", "+1", n),
    "chain *" => |n| chain("n_layer", "1", "*1", n),
    "chain -" => |n| chain("x", "1", "-1", n),
    "chain and" => |n| chain("bias", "True", " and True", n),
    "chain or" => |n| chain("x", "0", " or 0", n),
    "chain ==" => |n| chain("x", "1", "==1", n),
    "chain x[0]" => |n| [b"x = [0]\n".as_slice(), &chain("y", "x", "[0]", n)].concat(),
    "chain a.b" => |n| chain("y", "os", ".path", n),
    "chain f()" => |n| chain("y", "f", "()", n),
    "chain unary -" => |n| chain("n_layer", "", "-", n),
    "chain not" => |n| chain("bias", "", "not ", n),
    "chain **" => |n| chain("x", "2", "**1", n),
    "chain if-else" => |n| chain("x", "1", " if 1 else 1", n),
    "nesting ((" => |n| format!("x = {}1{}\n", "(".repeat(n / 2), ")".repeat(n / 2)).into_bytes(),
    "nesting [[ unclosed" => |n| format!("x = {}\n", "[".repeat(n)).into_bytes(),
    "nesting if blocks" => |n| {
        let mut s = String::new();
        let mut depth = 0;
        while s.len() < n {
            s.push_str(&format!("{}if True:\n", " ".repeat(depth)));
            depth += 1;
        }
        s.push_str(&format!("{}n_layer = 2\n", " ".repeat(depth)));
        s.into_bytes()
    },
    "many print(1)" => |n| repeat_to("print(1)\n", n).into_bytes(),
    "many failing key lines" => |n| repeat_to("n_layer = six\n", n).into_bytes(),
    "many failing other lines" => |n| repeat_to("x = foo()\n", n).into_bytes(),
    "many assignments" => |n| repeat_to("batch_size = 8\n", n).into_bytes(),
    "many ; statements" => |n| format!("{}\n", repeat_to("x=1;", n)).into_bytes(),
    "many skipped defs" => |n| repeat_to("def f():\n    return 1\n", n).into_bytes(),
    "huge integer" => |n| format!("n_layer = {}\n", "9".repeat(n)).into_bytes(),
    "long list literal" => |n| format!("x = [{}]\n", repeat_to("1, ", n)).into_bytes(),
    "many call arguments" => |n| format!("x = max({}1)\n", repeat_to("1, ", n)).into_bytes(),
    "big value per statement" => |n| {
        let mut s = String::new();
        for i in 0.. {
            if s.len() >= n {
                break;
            }
            s.push_str(&format!("a{i} = [0] * 1000000\n"));
        }
        s.into_bytes()
    },
    "nested repetition" => |n| format!("#{}\nx = [[0] * 1000000] * 1000000\n", "c".repeat(n)).into_bytes(),
    "string repetition" => |n| format!("#{}\nx = ['a' * 1000000] * 1000000\n", "c".repeat(n)).into_bytes(),
    "long string" => |n| format!("dataset = '{}'\n", "a".repeat(n)).into_bytes(),
    "long comment" => |n| format!("#{}\nn_layer = 2\n", "c".repeat(n)).into_bytes(),
    "string concatenation" => |n| chain("dataset", "'a'", " 'a'", n),
    "control characters" => |n| format!("dataset = '{}'\n", repeat_to("\x1b]0;T\x07\\x00", n)).into_bytes(),
    "invalid UTF-8" => |n| [b"x = '".as_slice(), &vec![0xff; n], b"'\n"].concat(),
    "line continuations" => |n| format!("n_layer = 1{}\n", repeat_to(" \\\n+1", n)).into_bytes(),
];

/// `vramdoc estimate config.py`.
pub(crate) fn config() -> Target {
    Target {
        name: "python-config",
        stack: MAIN_STACK,
        run: run_config,
        random: random_config,
        max_random: 256 << 10,
        families: CONFIG_FAMILIES,
        family_size: 16 << 10,
    }
}

/// The config `--set` values are evaluated in.
const SET_CONFIG: &[u8] = b"x = [0]\ndef f():\n    return f\n";

fn run_set(input: &[u8]) {
    let value = String::from_utf8_lossy(input);
    let _ = vramdoc::fuzzing::estimate(
        ("config.py", SET_CONFIG),
        &[],
        &[format!("n_layer={value}")],
    );
}

fn random_set(rng: &mut Rng, max: usize) -> Vec<u8> {
    let mut text = String::new();
    let target = rng.size(max);
    while text.len() < target {
        if !text.is_empty() {
            text.push_str(rng.pick(&["+", "*", " and ", ", ", " or "]));
        }
        expr(rng, 5, &mut text);
    }
    let mut bytes = text.into_bytes();
    if rng.one_in(2) {
        mutate(rng, &mut bytes, DICT, max);
    }
    bytes
}

const SET_FAMILIES: &[Family] = families![
    "chain +" => |n| format!("1{}", repeat_to("+1", n)).into_bytes(),
    "chain *" => |n| format!("1{}", repeat_to("*1", n)).into_bytes(),
    "chain x[0]" => |n| format!("x{}", repeat_to("[0]", n)).into_bytes(),
    "chain f()" => |n| format!("f{}", repeat_to("()", n)).into_bytes(),
    "chain a.b" => |n| format!("os{}", repeat_to(".path", n)).into_bytes(),
    "nesting ((" => |n| format!("{}1{}", "(".repeat(n / 2), ")".repeat(n / 2)).into_bytes(),
    "huge integer" => |n| "9".repeat(n).into_bytes(),
    "nested repetition" => |n| format!("[[0] * 1000000] * 1000000{}", " ".repeat(n)).into_bytes(),
];

/// `vramdoc estimate config.py --set n_layer=VALUE`.
pub(crate) fn set_value() -> Target {
    Target {
        name: "python-set",
        stack: MAIN_STACK,
        run: run_set,
        random: random_set,
        max_random: 64 << 10,
        families: SET_FAMILIES,
        family_size: 16 << 10,
    }
}
