//! Hostile and unusual Python configs through the real binary (issue 18, classes 1, 5 and 12):
//! long chains and deep values never crash the process, thousands of statements take linear
//! time and print a bounded report, and forms Python reads its own way are read that way or
//! refused at their line. The large inputs are generated here.

use std::time::{Duration, Instant};

use crate::estimate_pyconfig::run_stdin;
use crate::support::{Run, SiteTest};

/// Runs `vramdoc estimate --format json c.py` on `text`, asserting it took less than `limit`
/// (debug build on a shared machine: several times the time measured, far below the time
/// before the fix).
fn estimate(text: &str, limit: Duration) -> Run {
    let t = SiteTest::new();
    t.file("c.py", text);
    let start = Instant::now();
    let run = t.run(&["estimate", "--format", "json", "c.py"]);
    let took = start.elapsed();
    assert!(took < limit, "took {took:?}:\n{}", tail(&run.stderr));
    assert!(
        run.code == 0 || run.code == 1,
        "exit {} (a crash):\n{}",
        run.code,
        tail(&run.stderr)
    );
    run
}

/// The scenario of a successful run.
fn scenario(run: &Run) -> serde_json::Value {
    assert_eq!(run.code, 0, "failed:\n{}", tail(&run.stderr));
    let v: serde_json::Value = serde_json::from_str(&run.stdout).expect("json");
    v["scenario"].clone()
}

/// The end of a long text, for assertion messages.
fn tail(text: &str) -> &str {
    let start = text.len().saturating_sub(2000);
    let start = (start..text.len())
        .find(|&i| text.is_char_boundary(i))
        .unwrap_or(text.len());
    &text[start..]
}

/// `n` copies of `item` joined by `sep`.
fn chain(item: &str, sep: &str, n: usize) -> String {
    vec![item; n].join(sep)
}

const FAST: Duration = Duration::from_secs(10);

#[test]
fn chains_up_to_the_cap_are_evaluated_without_recursion() {
    // 10,000 operands: 9,999 operators, under the cap of 10,000 in a row.
    let n = 10_000;
    let cases = [
        (
            format!("n_layer = {}\n", chain("1", "+", n)),
            "n_layer",
            10_000,
        ),
        (
            format!("n_layer = 3*{}\n", chain("1", " * ", n - 1)),
            "n_layer",
            3,
        ),
        (
            format!("n_layer = 10001-{}\n", chain("1", "-", n - 1)),
            "n_layer",
            2,
        ),
        (
            format!("n_layer = {} and 6\n", chain("1", " and ", n - 1)),
            "n_layer",
            6,
        ),
        (
            format!("n_layer = {} or 7\n", chain("0", " or ", n - 1)),
            "n_layer",
            7,
        ),
        (
            format!("n_layer = len('ab'{})\n", "[0]".repeat(n)),
            "n_layer",
            1,
        ),
    ];
    for (text, key, want) in cases {
        let s = scenario(&estimate(&text, FAST));
        assert_eq!(s[key], want, "{}", &text[..60]);
    }
    let compare = format!("compile = {}\n", chain("1", " < 2 > ", n / 2));
    assert_eq!(scenario(&estimate(&compare, FAST))["compile"], true);
}

/// Expressions of 10,001 operators (or trailers) in a row, one past the cap.
fn chains_past_the_cap() -> [String; 9] {
    let n = 10_002;
    [
        chain("1", "+", n),
        chain("1", "*", n),
        chain("1", "-", n),
        chain("1", " and ", n),
        chain("1", " or ", n),
        chain("1", "<", n),
        format!("x{}", "[0]".repeat(n - 1)),
        format!("a{}", ".b".repeat(n - 1)),
        format!("f{}", "()".repeat(n - 1)),
    ]
}

#[test]
fn chains_past_the_cap_on_a_keys_line_are_errors_at_their_line_never_a_crash() {
    let chains = chains_past_the_cap();
    // All of them reported, each at its line, saying what to do.
    let keys: String = chains.iter().map(|c| format!("n_layer = {c}\n")).collect();
    let run = estimate(&keys, FAST);
    assert_eq!(run.code, 1, "{}", tail(&run.stderr));
    for line in 1..=chains.len() {
        assert!(
            run.stderr.contains(&format!("c.py:{line}:1")),
            "line {line}: {}",
            tail(&run.stderr)
        );
    }
    assert_eq!(
        run.stderr
            .matches("more than 10000 operators, calls, subscripts or attributes in a row")
            .count(),
        chains.len()
    );
    assert!(run.stderr.contains("compute the value and write it"));
}

#[test]
fn chains_past_the_cap_elsewhere_are_skipped_with_a_note_at_their_line() {
    let chains = chains_past_the_cap();
    let others: String = chains.iter().map(|c| format!("y = {c}\n")).collect();
    let run = estimate(&format!("{others}n_layer = 3\n"), FAST);
    assert_eq!(scenario(&run)["n_layer"], 3);
    for line in 1..=chains.len() {
        assert!(
            run.stderr.contains(&format!("c.py:{line}: skipped")),
            "line {line}: {}",
            tail(&run.stderr)
        );
    }
    assert_eq!(run.stderr.matches("chain too long").count(), chains.len());
}

#[test]
fn nesting_chains_are_capped_too() {
    let n = 20_000;
    for expr in [
        format!("{}1", "- ".repeat(n)),
        format!("{}1", "not ".repeat(n)),
        format!("{}1", "1 if 1 else ".repeat(n)),
        format!("{}1", "2 ** ".repeat(n)),
    ] {
        let run = estimate(&format!("n_layer = {expr}\n"), FAST);
        assert_eq!(run.code, 1, "{}", tail(&run.stderr));
        assert!(
            run.stderr.contains("c.py:1:1") && run.stderr.contains("nested too deeply"),
            "{}",
            tail(&run.stderr)
        );
    }
}

#[test]
fn set_takes_the_same_chains_and_refuses_past_the_cap() {
    let t = SiteTest::new();
    let ok = format!("--set=n_layer={}", chain("1", "+", 5_000));
    let run = t.run(&["estimate", "--format", "json", &ok]);
    assert_eq!(scenario(&run)["n_layer"], 5_000);
    // The 10,001st `+` is the value's 20,002nd character.
    let long = format!("--set=n_layer={}", chain("1", "+", 20_000));
    let run = t.run(&["estimate", &long]);
    assert_eq!(run.code, 1, "{}", tail(&run.stderr));
    assert!(
        run.stderr.contains("column 20002 of the value") && run.stderr.contains("chain too long"),
        "{}",
        tail(&run.stderr)
    );
}

#[test]
fn values_built_line_by_line_are_bounded_in_depth_and_size() {
    // Each line nests the list one level deeper: 20,000 levels would overflow the stack when
    // the value is dropped or printed.
    let deep = format!("x = []\n{}n_layer = 4\n", "x = [x]\n".repeat(20_000));
    let run = estimate(&deep, FAST);
    assert_eq!(scenario(&run)["n_layer"], 4);
    assert!(
        run.stderr
            .contains("c.py:33: skipped `x = [x]`: tuples and lists nested more than 32"),
        "{}",
        tail(&run.stderr)
    );
    // 100,000 copies of a 100,000-item list would want hundreds of gigabytes.
    let big =
        "a = [0] * 100000\nb = [a] * 100000\nc = [a] * 5 + [a] * 6\nn_layer = len(a) // 1000\n";
    let run = estimate(big, FAST);
    assert_eq!(scenario(&run)["n_layer"], 100);
    for line in ["c.py:2: skipped", "c.py:3: skipped"] {
        assert!(
            run.stderr.contains(line) && run.stderr.contains("more than 1048576 items"),
            "{}",
            tail(&run.stderr)
        );
    }
}

#[test]
fn copying_a_large_list_line_after_line_is_bounded_by_the_runs_work_budget() {
    let copies = format!("a = [0] * 1000000\n{}n_layer = 4\n", "b = a\n".repeat(1000));
    let run = estimate(&copies, FAST);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("c.py:1002:11")
            && run.stderr.contains("more than 4194304 items in all"),
        "{}",
        tail(&run.stderr)
    );
}

#[test]
fn many_failing_lines_print_the_first_200_errors_and_a_count() {
    let run = estimate(&"n_layer = undefined_name\n".repeat(20_000), FAST);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr
            .ends_with("... and 19800 more not shown (19800 errors, 0 warnings)\n"),
        "{}",
        tail(&run.stderr)
    );
    assert_eq!(run.stderr.matches("NameError").count(), 200);
}

#[test]
fn many_skipped_lines_print_the_first_200_notes_and_a_count() {
    let run = estimate(
        &format!("{}n_layer = 5\n", "print(1)\n".repeat(20_000)),
        FAST,
    );
    assert_eq!(scenario(&run)["n_layer"], 5);
    assert_eq!(run.stderr.matches(": skipped `print(1)`").count(), 200);
    // The 19,800 other print lines and the note on the missing meta.pkl.
    assert!(
        run.stderr
            .contains("note: ... and 19801 more notes not shown"),
        "{}",
        tail(&run.stderr)
    );
    // Many names, each assigned once: recorded in linear time.
    let names: String = (0..20_000).map(|i| format!("a{i} = {i}\n")).collect();
    let run = estimate(&format!("{names}n_layer = a7\n"), FAST);
    assert_eq!(scenario(&run)["n_layer"], 7);
}

#[test]
fn the_configurator_line_ends_the_file_with_a_note() {
    let run = estimate(
        "n_layer = 3\nexec(open('configurator.py').read())\nn_layer = 5\n",
        FAST,
    );
    assert_eq!(scenario(&run)["n_layer"], 3);
    assert!(
        run.stderr.contains(
            "c.py:2: read up to `exec(open('configurator.py').read())`, where train.py applies \
             the command line: the rest of the file is not read"
        ),
        "{}",
        run.stderr
    );
}

#[test]
fn identifiers_are_read_in_nfkc_form_as_python_reads_them() {
    // U+FF4E FULLWIDTH LATIN SMALL LETTER N: Python binds `n_layer`.
    let s = scenario(&estimate(
        "\u{ff4e}_layer = 3\nn_head = \u{ff4e}_layer\n",
        FAST,
    ));
    assert_eq!(
        (s["n_layer"].clone(), s["n_head"].clone()),
        (3.into(), 3.into())
    );
}

#[test]
fn a_string_for_a_bool_key_is_refused_with_what_to_write() {
    for (text, help) in [
        ("bias = 'False'\n", "write `bias = False`"),
        ("compile = \"true\"\n", "write `compile = True`"),
    ] {
        let run = estimate(text, FAST);
        assert_eq!(run.code, 1, "{text}: {}", run.stdout);
        assert!(
            run.stderr.contains("c.py:1:1")
                && run.stderr.contains("which Python takes for true")
                && run.stderr.contains(help),
            "{}",
            run.stderr
        );
    }
    // Booleans, and strings for string keys, are fine.
    let s = scenario(&estimate("bias = True\ndtype = 'float16'\n", FAST));
    assert_eq!(
        (s["bias"].clone(), s["dtype"].clone()),
        (true.into(), "float16".into())
    );
}

#[test]
fn old_mac_line_endings_are_lines_as_python_reads_them() {
    let s = scenario(&estimate("n_layer = 3\rn_head = 3\r\nn_embd = 96\r", FAST));
    assert_eq!(
        (
            s["n_layer"].clone(),
            s["n_head"].clone(),
            s["n_embd"].clone()
        ),
        (3.into(), 3.into(), 96.into())
    );
    let run = estimate("n_layer = 3\rbatch_size = oops\r", FAST);
    assert!(run.stderr.contains("c.py:2:14"), "{}", run.stderr);
}

#[test]
fn del_is_honoured_and_deleting_a_key_is_refused_at_its_line() {
    let run = estimate("x = 3\ndel x\nn_layer = x\n", FAST);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("c.py:3:11") && run.stderr.contains("NameError: name 'x'"),
        "{}",
        run.stderr
    );
    let run = estimate("n_layer = 3\ndel n_layer\n", FAST);
    assert_eq!(run.code, 1);
    assert!(
        run.stderr.contains("c.py:2:1")
            && run.stderr.contains("`del n_layer` deletes `n_layer`")
            && run.stderr.contains("remove `n_layer` from the `del`"),
        "{}",
        run.stderr
    );
}

#[test]
fn annotated_assignments_on_standard_input_are_python() {
    let t = SiteTest::new();
    let json = |r: &Run| scenario(r);
    let r = run_stdin(
        &t,
        &["estimate", "--format", "json", "-"],
        b"n_layer: int = 4\n",
    );
    assert_eq!(json(&r)["n_layer"], 4);
    // Lines of `key: value` alone stay a YAML scenario.
    let r = run_stdin(
        &t,
        &["estimate", "--format", "json", "-"],
        b"n_layer: 5\ngpu: rtx-4070\n",
    );
    assert_eq!(json(&r)["n_layer"], 5);
}
