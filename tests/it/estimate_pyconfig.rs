//! `vramdoc estimate FILE...` through the real binary on nanoGPT config files: the config
//! language (every form configs use), several files and overrides in order, train.py itself,
//! a byte-order mark, standard input, and integer overflow reported with a location.

use std::io::Write;
use std::process::{Command, Stdio};

use crate::support::{Run, SiteTest};

/// A file with train.py's shape (our own text): imports, a docstring, the default globals, the
/// dtype chosen from the GPU, the configurator line, and training code vramdoc never reads.
const TRAIN_PY: &str = r#""""
Trains a GPT. A fixture with the shape of nanoGPT's train.py.
"""
import os
import time
import math
from contextlib import nullcontext

import numpy as np
import torch
from torch.nn.parallel import DistributedDataParallel as DDP

# I/O
out_dir = 'out'
eval_interval = 2000
eval_iters = 200
init_from = 'scratch' # 'scratch' or 'resume' or 'gpt2*'
# data
dataset = 'openwebtext'
gradient_accumulation_steps = 5 * 8
batch_size = 12
block_size = 1024
# model
n_layer = 12
n_head = 12
n_embd = 768
dropout = 0.0
bias = False
learning_rate = 6e-4
max_iters = 600000
device = 'cuda'
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
compile = True
config_keys = [k for k,v in globals().items() if not k.startswith('_') and isinstance(v, (int, float, bool, str))]
exec(open('configurator.py').read()) # overrides from command line or config file
config = {k: globals()[k] for k in config_keys}
ddp = int(os.environ.get('RANK', -1)) != -1
if ddp:
    print(f"{ {1: 2} }")
with ctx:
    n_layer = undefined_thing(
"#;

/// Every form of issue 13 in one config.
const ALL_FORMS: &str = r#""""Docstring: a config using the forms real forks use."""
import os
import torch
from math import sqrt
n_head = 4; n_layer = 2 ** 2          # `;` and **
n_embd = n_head * 32                  # a name bound earlier
block_size = int(256.0)               # int(...)
batch_size = 8 \
    + 8                               # backslash continuation
sizes = [
    1,
    2,
]                                     # multi-line brackets
batch_size *= 2                       # augmented assignment
dropout: float = 0.1                  # annotated assignment
bias, compile = True, False           # tuple assignment
dtype = 'bfloat16' if torch.cuda.is_available() and torch.cuda.is_bf16_supported() else 'float16'
if os.path.exists('data/big'):
    gradient_accumulation_steps = 4
elif n_layer > 100:
    gradient_accumulation_steps = 100
else:
    gradient_accumulation_steps = 2
vocab_size = max(64, min(len('abcdef') * 10, 65)) + abs(-1) - round(0.5)
flash = not (bias and compile) or False
eval_batch_size = -7 // 2 + 7 % 3 + int(7 / 2) + 8
print("config loaded", n_embd)
torch._dynamo.config.cache_size_limit = 64
def helper(x):
    return x * 2
with open('x') as f:
    pass
wandb_run_name = 'run-' + str(time.time())
"#;

/// Runs `vramdoc <args>` in the site root with `input` on standard input.
pub(crate) fn run_stdin(t: &SiteTest, args: &[&str], input: &[u8]) -> Run {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vramdoc"))
        .args(args)
        .current_dir(t.root())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("run vramdoc");
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(input)
        .expect("write stdin");
    let out = child.wait_with_output().expect("wait");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

/// The JSON estimate of a successful run.
fn json(r: &Run) -> serde_json::Value {
    assert_eq!(r.code, 0, "failed:\n{}\n{}", r.stdout, r.stderr);
    serde_json::from_str(&r.stdout).unwrap_or_else(|e| panic!("{e}: {}", r.stdout))
}

fn scenario(t: &SiteTest, args: &[&str]) -> (serde_json::Value, String) {
    let mut all = vec!["estimate", "--format", "json"];
    all.extend_from_slice(args);
    let r = t.run(&all);
    (json(&r)["scenario"].clone(), r.stderr)
}

/// A failed run: exit 1 (not a panic's 101), with the stderr.
fn failure(r: &Run) -> &str {
    assert_eq!(r.code, 1, "expected exit 1:\n{}\n{}", r.stdout, r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
    &r.stderr
}

#[test]
fn every_config_form_issue_13_lists_is_evaluated() {
    let t = SiteTest::new();
    t.file("all.py", ALL_FORMS);
    let (s, notes) = scenario(&t, &["all.py", "--gpu", "t4"]);
    assert_eq!(s["n_head"], 4);
    assert_eq!(s["n_layer"], 4);
    assert_eq!(s["n_embd"], 128);
    assert_eq!(s["block_size"], 256);
    assert_eq!(s["batch_size"], 32);
    assert_eq!(s["dropout"], 0.1);
    assert_eq!(
        (s["bias"].clone(), s["compile"].clone()),
        (true.into(), false.into())
    );
    assert_eq!(s["dtype"], "float16", "the T4 has no bf16");
    assert_eq!(s["gradient_accumulation_steps"], 2);
    assert_eq!(s["vocab_size"], 64 + 1);
    assert_eq!(s["flash"], true);
    // -7 // 2 = -4, 7 % 3 = 1, int(3.5) = 3: -4 + 1 + 3 + 8
    assert_eq!(s["eval_batch_size"], 8);
    for line in [27, 28, 29, 31, 33] {
        assert!(
            notes.contains(&format!("all.py:{line}: skipped")),
            "line {line}:\n{notes}"
        );
    }
    assert!(
        notes.contains("torch._dynamo.config.cache_size_limit = 64"),
        "{notes}"
    );
    // The if block follows the disk: a `data/big` folder picks the first branch.
    t.file("data/big/x", "");
    let (s, _) = scenario(&t, &["all.py"]);
    assert_eq!(s["gradient_accumulation_steps"], 4);
    assert_eq!(s["dtype"], "bfloat16");
}

#[test]
fn torch_cuda_follows_the_gpu_and_without_one_assumes_bf16_with_a_note() {
    let t = SiteTest::new();
    t.file(
        "c.py",
        "dtype = 'bfloat16' if torch.cuda.is_bf16_supported() else 'float16'\n",
    );
    let (s, notes) = scenario(&t, &["c.py", "--gpu", "v100-32gb"]);
    assert_eq!(s["dtype"], "float16");
    assert!(!notes.contains("taken as True"), "{notes}");
    let (s, _) = scenario(&t, &["c.py", "--gpu", "rtx-3090"]);
    assert_eq!(s["dtype"], "bfloat16");
    let (s, notes) = scenario(&t, &["c.py"]);
    assert_eq!(s["dtype"], "bfloat16");
    assert!(
        notes.contains("c.py:1: torch.cuda.is_bf16_supported() taken as True"),
        "{notes}"
    );
}

#[test]
fn train_py_then_two_configs_then_overrides_in_order() {
    let t = SiteTest::new();
    t.file("train.py", TRAIN_PY);
    t.file(
        "config/a.py",
        "n_layer = 6\nn_head = 6\nn_embd = 384\nbatch_size = 64\n",
    );
    t.file(
        "config/b.py",
        "batch_size = batch_size // 4\nmax_iters = 100\n",
    );
    let (s, notes) = scenario(
        &t,
        &[
            "train.py",
            "config/a.py",
            "config/b.py",
            "--block_size=256",
            "--gpu",
            "t4",
        ],
    );
    assert_eq!(
        (s["n_layer"].clone(), s["n_embd"].clone()),
        (6.into(), 384.into())
    );
    assert_eq!(s["batch_size"], 16, "b.py reads a.py's value");
    assert_eq!(s["block_size"], 256);
    assert_eq!(s["gradient_accumulation_steps"], 40, "train.py's default");
    assert_eq!(s["dtype"], "float16", "train.py's dtype line on a T4");
    assert!(notes.contains("train.py:34: skipped"), "{notes}");
    assert!(
        !notes.contains("train.py:36"),
        "nothing after the configurator line is read: {notes}"
    );
    // Overrides and files apply in command-line order, as configurator.py does.
    let (s, _) = scenario(&t, &["config/a.py", "--batch_size=8", "config/b.py"]);
    assert_eq!(s["batch_size"], 2);
}

#[test]
fn overrides_follow_configurator_py() {
    let t = SiteTest::new();
    t.file("c.py", "n_layer = 6\nmy_helper = 3\n");
    let (s, _) = scenario(
        &t,
        &["c.py", "--n_layer=8", "--my_helper=5", "--dtype=float16"],
    );
    assert_eq!(
        (s["n_layer"].clone(), s["dtype"].clone()),
        (8.into(), "float16".into())
    );
    let err = t.run(&["estimate", "c.py", "--no_such_key=1"]);
    assert!(
        failure(&err).contains("--no_such_key=1: Unknown config key: no_such_key"),
        "{}",
        err.stderr
    );
    let err = t.run(&["estimate", "--dropout=0"]);
    assert!(
        failure(&err).contains("float") && err.stderr.contains("--dropout=0"),
        "{}",
        err.stderr
    );
    // A non-literal value is a string, as literal_eval refuses it: then the type check fails.
    let err = t.run(&["estimate", "--batch_size=4*2"]);
    assert!(failure(&err).contains("'4*2' (str)"), "{}", err.stderr);
    // --set evaluates an expression in the config's globals.
    let (s, _) = scenario(&t, &["c.py", "--set", "n_embd=n_layer * 64"]);
    assert_eq!(s["n_embd"], 384);
}

#[test]
fn a_key_that_cannot_be_evaluated_is_an_error_at_its_line_and_column() {
    let t = SiteTest::new();
    t.file("c.py", "n_layer = 6\nn_embd = n_layer * get_width()\n");
    let err = t.run(&["estimate", "c.py"]);
    let out = failure(&err);
    assert!(out.contains("c.py:2:20"), "{out}");
    assert!(out.contains("n_embd = n_layer * get_width()"), "{out}");
    t.file("d.py", "import sys\nif sys.argv:\n    batch_size = 4\n");
    let out = failure(&t.run(&["estimate", "d.py"])).to_owned();
    assert!(
        out.contains("d.py:2:4") && out.contains("batch_size"),
        "{out}"
    );
    t.file("e.py", "for i in range(3):\n    n_layer = i\n");
    let out = failure(&t.run(&["estimate", "e.py"])).to_owned();
    assert!(out.contains("e.py:1:1") && out.contains("n_layer"), "{out}");
    t.file("f.py", "x = 'unterminated\n");
    let out = failure(&t.run(&["estimate", "f.py"])).to_owned();
    assert!(
        out.contains("f.py:1:5") && out.contains("unterminated"),
        "{out}"
    );
}

#[test]
fn a_byte_order_mark_is_accepted() {
    let t = SiteTest::new();
    t.bytes(
        "c.py",
        b"\xef\xbb\xbfn_layer = 3\nn_head = 3\nn_embd = 96\n",
    );
    let (s, _) = scenario(&t, &["c.py"]);
    assert_eq!(s["n_layer"], 3);
    t.bytes("c.yaml", b"\xef\xbb\xbfn_layer: 5\n");
    let (s, _) = scenario(&t, &["c.yaml"]);
    assert_eq!(s["n_layer"], 5);
}

#[test]
fn dash_reads_standard_input() {
    let t = SiteTest::new();
    let r = run_stdin(
        &t,
        &["estimate", "--format", "json", "-"],
        b"\xef\xbb\xbfn_layer = 2 * 3\n",
    );
    assert_eq!(json(&r)["scenario"]["n_layer"], 6);
    let r = run_stdin(
        &t,
        &["estimate", "-", "--format=json"],
        b"scenario:\n  n_layer: 7\n",
    );
    assert_eq!(json(&r)["scenario"]["n_layer"], 7);
    let r = run_stdin(&t, &["estimate", "-"], b"n_layer = 2 +\n");
    assert!(failure(&r).contains("<stdin>:1"), "{}", r.stderr);
}

#[test]
fn integer_overflow_is_an_error_with_a_location_never_a_panic() {
    let t = SiteTest::new();
    let min_div = "(-9223372036854775807 - 1) // -1";
    t.file("c.py", &format!("n_layer = 6\nbatch_size = {min_div}\n"));
    let out = failure(&t.run(&["estimate", "c.py"])).to_owned();
    assert!(
        out.contains("c.py:2:14") && out.contains("64 bits"),
        "{out}"
    );
    let set = format!("batch_size={min_div}");
    let out = failure(&t.run(&["estimate", "--set", &set])).to_owned();
    assert!(
        out.contains("--set batch_size=")
            && out.contains("column 1 of the value")
            && out.contains("64 bits"),
        "{out}"
    );
    let over = format!("--batch_size={min_div}");
    assert!(failure(&t.run(&["estimate", &over])).contains("--batch_size="));
    // `% -1` is 0 in Python: a value, which batch_size then refuses.
    let rem = "batch_size=(-9223372036854775807 - 1) % -1";
    assert!(failure(&t.run(&["estimate", "--set", rem])).contains("at least 1"));
    for (n, line) in [
        "n_layer = 2 ** 100000",
        "n_layer = 1 << 64",
        "n_layer = int(float('inf'))",
        "n_layer = int(float('nan'))",
        "n_layer = int(1e300)",
        "n_layer = len('ab' * 10 ** 12)",
        "n_layer = -(-9223372036854775807 - 1)",
        "n_layer = abs(-9223372036854775807 - 1)",
        "n_layer = 99999999999999999999999",
        "n_layer = 9223372036854775807 + 1",
        "n_layer = round(1e300)",
    ]
    .iter()
    .enumerate()
    {
        t.file("o.py", &format!("x = 1\n{line}\n"));
        let r = t.run(&["estimate", "o.py"]);
        assert!(
            failure(&r).contains("o.py:2:"),
            "case {n} `{line}`:\n{}",
            r.stderr
        );
    }
    // A name that is not a key may overflow: it is skipped with a note.
    t.file(
        "h.py",
        "huge = 2 ** 100000\nn_layer = 3\nn_head = 3\nn_embd = 96\n",
    );
    let (s, notes) = scenario(&t, &["h.py"]);
    assert_eq!(s["n_layer"], 3);
    assert!(
        notes.contains("h.py:1: skipped `huge = 2 ** 100000`"),
        "{notes}"
    );
}

#[test]
fn every_error_in_the_inputs_is_reported_at_once() {
    let t = SiteTest::new();
    t.file(
        "a.py",
        "n_layer = 0\nn_head = get_heads()\nn_embd = n_head * 64\n",
    );
    t.file("b.py", "dtype = 'float8'\n");
    let r = t.run(&[
        "estimate",
        "a.py",
        "b.py",
        "--no_key=1",
        "--set",
        "batch_size=0",
    ]);
    let out = failure(&r);
    for needle in [
        "a.py:2:10",
        "a.py:1:1",
        "b.py:1:1",
        "--no_key=1",
        "--set batch_size=0",
    ] {
        assert!(out.contains(needle), "missing {needle}:\n{out}");
    }
    assert!(
        !out.contains("a.py:3"),
        "n_embd follows from n_head's error:\n{out}"
    );
}
