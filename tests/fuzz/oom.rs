//! The out-of-memory message parser, through `vramdoc diagnose FILE` (the whole report: the
//! parse, the diagnosis and its table).

use std::path::PathBuf;

use vramdoc::cli::diagnose::DiagnoseArgs;

use crate::harness::{mutate, repeat_to, Rng, MAIN_STACK};
use crate::{Family, Target};

const V2: &str = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 6.14 GiB. GPU 0 has a total capacity of 11.69 GiB of which 2.68 GiB is free. Process 1822 has 2.07 GiB memory in use. Including non-PyTorch memory, this process has 7.04 GiB memory in use. Of the allocated memory 6.78 GiB is allocated by PyTorch, and 106.52 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.\n";
const V1: &str = "RuntimeError: CUDA out of memory. Tried to allocate 6.14 GiB (GPU 0; 11.76 GiB total capacity;\n 8.91 GiB already allocated; 1.36 GiB free; 9.18 GiB reserved in total by PyTorch) If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.\n";
const FRAME: &str = "  File \"train.py\", line 331, in <module>\n    logits, loss = model(X, Y)\n";

const DICT: &[&str] = &[
    "out of memory",
    "Tried to allocate",
    " GiB",
    " MiB",
    " KiB",
    " bytes",
    " B",
    "Process ",
    " has ",
    "GPU ",
    "total capacity of",
    "of which",
    "is free",
    "this process has",
    "allocated memory",
    " and ",
    "reserved",
    "(",
    ")",
    ";",
    ".",
    "\n",
    "  ",
    "\t",
    "\u{0}",
    "\u{1b}[31m",
    "99999999999999999999",
    "1e308",
    "-1",
    "0.",
    "Traceback (most recent call last):\n",
    FRAME,
    "显存",
    "é",
];

fn random_message(rng: &mut Rng, max: usize) -> Vec<u8> {
    let target = rng.size(max);
    let mut text = String::new();
    while text.len() < target {
        match rng.below(6) {
            0 => text.push_str(V1),
            1 => text.push_str(FRAME),
            2 => text.push_str(&format!(
                "Process {} has {}.{:02} {} memory in use. ",
                rng.below(100_000),
                rng.size(100_000),
                rng.below(100),
                rng.pick(&["GiB", "MiB", "KiB", "bytes"])
            )),
            3 => text.push_str(rng.pick(&[
                "Traceback (most recent call last):\n",
                "step 100: loss 2.1\n",
                "\n",
                "    return forward_call(*args, **kwargs)\n",
            ])),
            _ => text.push_str(V2),
        }
    }
    let mut bytes = text.into_bytes();
    mutate(rng, &mut bytes, DICT, max);
    bytes
}

fn run_message(input: &[u8]) {
    let Ok(dir) = tempfile::tempdir() else { return };
    let path: PathBuf = dir.path().join("oom.txt");
    if std::fs::write(&path, input).is_err() {
        return;
    }
    let args = DiagnoseArgs {
        file: Some(path),
        ..DiagnoseArgs::default()
    };
    let _ = vramdoc::cli::diagnose::report(&args);
}

/// The message with `middle` repeated to `n` bytes where the process lines go.
fn with_processes(unit: &str, n: usize) -> Vec<u8> {
    let (head, tail) = V2.split_at(V2.find("Process").unwrap_or(0));
    format!("{head}{}{tail}", repeat_to(unit, n)).into_bytes()
}

const FAMILIES: &[Family] = families![
    "many Process lines" => |n| with_processes("Process 1234 has 1.00 GiB memory in use.\n", n),
    "many Process words" => |n| with_processes("Process x ", n),
    "message repeated" => |n| repeat_to(V2, n).into_bytes(),
    "PyTorch 1 repeated" => |n| repeat_to(V1, n).into_bytes(),
    "long traceback first" => |n| format!("Traceback (most recent call last):\n{}{V2}", repeat_to(FRAME, n)).into_bytes(),
    "long log, no message" => |n| repeat_to("step 100: loss 2.1, time 120ms\n", n).into_bytes(),
    "out of memory repeated" => |n| repeat_to("out of memory ", n).into_bytes(),
    "one long line" => |n| format!("CUDA out of memory. Tried to allocate {} GiB", "9".repeat(n)).into_bytes(),
    "long whitespace" => |n| V2.replace(' ', &" ".repeat(n / V2.len().max(1) + 1)).into_bytes(),
    "many ; in PyTorch 1" => |n| format!("CUDA out of memory. Tried to allocate 1 GiB (GPU 0;{})", repeat_to(" 1 GiB free;", n)).into_bytes(),
    "control characters" => |n| repeat_to("\u{1b}]0;T\u{7}\u{0}\r", n).into_bytes(),
    "invalid UTF-8" => |n| [V2.as_bytes(), &vec![0xc3; n]].concat(),
];

/// `vramdoc diagnose oom.txt`.
pub(crate) fn target() -> Target {
    Target {
        name: "oom-message",
        stack: MAIN_STACK,
        run: run_message,
        random: random_message,
        max_random: 256 << 10,
        families: FAMILIES,
        // A message repeated is quadratic by a small factor: it shows only at this size.
        family_size: 32 << 10,
    }
}
