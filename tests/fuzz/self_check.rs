//! The harness checks itself before the real targets: a reader that is quadratic, one that
//! holds a thousand times its input, and a linear one, each judged by the same bounds. A harness
//! that let the first two pass would pass everything.

use std::hint::black_box;

use crate::harness::MAIN_STACK;
use crate::{check_family, Family, Target};

fn never_random(_: &mut crate::harness::Rng, _: usize) -> Vec<u8> {
    Vec::new()
}

/// Runs the family named in the input's first byte: `q` quadratic, `m` memory-hungry, else
/// linear.
fn run(input: &[u8]) {
    match input.first() {
        Some(b'q') => {
            // Each byte rescans the bytes before it, as the quadratic readers found here did.
            for i in 0..input.len() {
                for j in 0..i {
                    black_box(j);
                }
            }
        }
        Some(b'm') => {
            let held = vec![1u8; input.len() * 4096];
            black_box(&held);
        }
        _ => {
            for b in input {
                black_box(b);
            }
        }
    }
}

const FAMILIES: &[Family] = families![
    "quadratic" => |n| vec![b'q'; n],
    "memory-hungry" => |n| vec![b'm'; n],
    "linear" => |n| vec![b'l'; n],
];

/// Failures when the bounds do not catch the two bad readers or reject the good one.
pub(crate) fn run_self_check() -> Vec<String> {
    let t = Target {
        name: "self-check",
        stack: MAIN_STACK,
        run,
        random: never_random,
        max_random: 0,
        families: FAMILIES,
        family_size: 1 << 10,
    };
    println!("fuzz self-check: the bounds must catch the first two of these");
    let mut failures = Vec::new();
    for f in FAMILIES {
        let caught = check_family(&t, f).is_err();
        if caught != (f.name != "linear") {
            failures.push(format!(
                "self-check: the harness {} the {} reader",
                if caught { "rejected" } else { "let through" },
                f.name
            ));
        }
    }
    failures
}
