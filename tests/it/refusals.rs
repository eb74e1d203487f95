//! Content vramdoc must refuse or accept (issue 11, classes 7–12): every refusal is an error or
//! warning at the right file and line, and equal values in other spellings are accepted.

use crate::support::{Run, SiteTest};

/// Asserts that a failed build reports `message` at `location` (`file:line`) with advice, and
/// wrote no output.
fn refused(t: &SiteTest, location: &str, message: &str) -> Run {
    let run = t.build_err();
    assert!(
        run.stderr.contains(&format!("--> {location}:")),
        "expected `{message}` at {location} in\n{}",
        run.stderr
    );
    assert!(
        run.stderr.contains(message),
        "expected `{message}` in\n{}",
        run.stderr
    );
    assert!(run.stderr.contains("help:"), "no advice:\n{}", run.stderr);
    assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    assert!(!t.root().join("public").exists(), "public/ written");
    run
}

/// A site with one page `content/g/en.md` made of `front` (YAML lines) and `body`.
fn page(front: &str, body: &str) -> SiteTest {
    let t = SiteTest::new();
    t.file(
        "content/g/en.md",
        &format!("---\ntitle: T\nlang: en\n{front}---\n\n{body}\n"),
    );
    t
}

// Class 12: YAML errors located where they are.

#[test]
fn duplicate_front_matter_key_is_reported_at_the_duplicate() {
    let t = page("date: 2026-11-20\ndescription: d\ntitle: Again\n", "x");
    refused(
        &t,
        "content/g/en.md:6",
        "duplicate entry with key \"title\"",
    );
    let t = page(
        "scenario:\n  n_layer: 2\n  n_head: 2\n  n_layer: 3\n  n_embd: 64\n",
        "x",
    );
    refused(
        &t,
        "content/g/en.md:7",
        "duplicate entry with key \"n_layer\"",
    );
}

#[test]
fn alias_bomb_is_reported_where_the_aliases_multiply() {
    let mut front = String::from("a0: &a0 [x, x, x, x, x, x, x, x, x]\n");
    for i in 1..7 {
        let p = format!("*a{}", i - 1);
        front.push_str(&format!("a{i}: &a{i} [{}]\n", vec![p; 9].join(", ")));
    }
    let t = page(&front, "x");
    // a4 (line 8, 9^5 values) is the first entry past the parser's alias-expansion limit.
    let run = refused(&t, "content/g/en.md:8", "repetition limit exceeded");
    assert!(
        !run.stderr.contains("--> content/g/en.md:2:"),
        "{}",
        run.stderr
    );
}

#[test]
fn merge_keys_are_applied_and_a_bad_one_is_located() {
    let t = page(
        "date: 2026-11-20\nbase: &b {author: Ada}\nmeta:\n  x: 1\n  <<: 3\n",
        "x",
    );
    refused(&t, "content/g/en.md:8", "for merging");
    let t = SiteTest::new();
    t.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-11-20\nsizes: &s {n_layer: 2, n_head: 2, n_embd: 64}\nscenario:\n  <<: *s\n  block_size: 64\n  batch_size: 2\n---\n\n{{ scenario.n_embd }} wide.\n",
    );
    t.build_ok();
    assert!(t.output("en/g/index.html").contains("64 wide."));
}

// Class 10: dates are calendar dates.

#[test]
fn impossible_dates_and_bogus_updated_are_refused_at_their_line() {
    for (front, line, found) in [
        ("date: 2026-02-30\n", 4, "`date` must be a calendar date"),
        ("date: 2026-13-01\n", 4, "there is no month 13"),
        ("date: 2025-02-29\n", 4, "2025-02 has 28 days"),
        ("date: 2026-11-20T25:00\n", 4, "the time `25:00`"),
        ("date: 2026-11-20 10:61\n", 4, "the time"),
        ("date: 2026-11-20X\n", 4, "must be followed by nothing"),
        (
            "date: 2026-11-20\nupdated: bogus\n",
            5,
            "`updated` must be a calendar date",
        ),
        (
            "date: 2026-11-20\nupdated: 2026-04-31\n",
            5,
            "2026-04 has 30 days",
        ),
    ] {
        let t = page(front, "x");
        refused(&t, &format!("content/g/en.md:{line}"), found);
    }
}

#[test]
fn real_dates_with_times_are_accepted_and_published() {
    let t = page(
        "date: 2024-02-29T09:30:00+01:00\nupdated: 2024-03-01 10:30:15.5Z\n",
        "x",
    );
    t.build_ok();
    assert!(t.output("sitemap.xml").contains("2024-02-29"));
}

/// A small scenario that builds fast.
const SCENARIO: &str = "scenario:\n  n_layer: 2\n  n_head: 2\n  n_embd: 64\n  block_size: 64\n  batch_size: 2\n  gpu: rtx-4070\n";

// Class 7: variants and function arguments.

#[test]
fn duplicate_variant_ids_list_labels_and_unknown_keys_are_errors_at_their_line() {
    let front = format!(
        "{SCENARIO}variants:\n  - id: half\n    label: Half\n    set: {{ batch_size: 1 }}\n  - id: half\n    label: [Other]\n    colour: red\n    set:\n      batch_size: 4\n      dtype: [float16]\n"
    );
    let t = page(&front, "{{ options_table() }}");
    let run = refused(
        &t,
        "content/g/en.md:15",
        "duplicate variant id `half` (first used at line 12)",
    );
    for (line, message) in [
        (16, "the label of variant `half` must be text, found a list"),
        (17, "unknown key `colour` in variant 2"),
        (
            20,
            "`dtype` in variant `half` must be a number, string or boolean",
        ),
    ] {
        assert!(
            run.stderr.contains(message)
                && run.stderr.contains(&format!("--> content/g/en.md:{line}:")),
            "expected `{message}` at line {line} in\n{}",
            run.stderr
        );
    }
}

#[test]
fn a_variant_setting_the_estimator_refuses_is_located_at_its_key() {
    let front = format!(
        "{SCENARIO}variants:\n  - id: v\n    set:\n      batch_size: 4\n      flavour: 1\n"
    );
    refused(
        &page(&front, "x"),
        "content/g/en.md:15",
        "variant `v`, `flavour`",
    );
}

#[test]
fn variant_labels_are_per_language_and_shown_in_the_options_table() {
    let t = SiteTest::new();
    for (lang, label) in [("en", "Quarter batch"), ("es", "Cuarto de lote")] {
        t.file(
            &format!("content/g/{lang}.md"),
            &format!("---\ntitle: T\nlang: {lang}\ndate: 2026-11-20\n{SCENARIO}variants:\n  - id: q\n    label: \"{label}\"\n    set: {{ batch_size: 1 }}\n---\n\n{{{{ options_table() }}}}\n"),
        );
    }
    t.build_ok();
    assert!(t.output("en/g/index.md").contains("| Quarter batch †"));
    assert!(t.output("es/g/index.md").contains("| Cuarto de lote †"));
}

#[test]
fn extra_unknown_or_repeated_function_arguments_are_errors() {
    for (expr, message) in [
        (
            "percent(bytes.logits, bytes.peak, bytes.total)",
            "`percent()` takes 2 argument(s) without a name, 3 given",
        ),
        (
            "percent(bytes.logits, bytes.peak, x=1)",
            "`percent()` has no argument `x`",
        ),
        ("params_table(1)", "`params_table()` takes 0 argument(s)"),
        (
            "options_table(sort=\"x\")",
            "`options_table()` has no argument `sort`",
        ),
        (
            "breakdown_table(variant=\"a\", variant=\"b\")",
            "`variant` is given twice",
        ),
        (
            "chart(\"sweep\", \"block_size\")",
            "`chart()` takes 1 argument(s)",
        ),
        (
            "chart(\"sweep\", ovr=\"block_size\")",
            "`chart()` has no argument `ovr`",
        ),
        (
            "percent(bytes.logits, bytes.peak) | bytes",
            "`| bytes` cannot follow `percent()`",
        ),
    ] {
        let t = page(SCENARIO, &format!("Text.\n\n{{{{ {expr} }}}}\n"));
        refused(&t, "content/g/en.md:15", message);
    }
}

// Class 8: non-finite numbers are never published.

#[test]
fn percent_of_huge_numbers_is_an_error_not_inf_or_nan() {
    let huge = "9".repeat(400);
    for expr in [
        format!("percent({huge}, 1)"),
        format!("percent(-{huge}, 1)"),
        format!("percent({huge}, {huge})"),
        format!("percent(1, {huge}0)"),
    ] {
        let t = page(SCENARIO, &format!("Share: {{{{ {expr} }}}}.\n"));
        let run = refused(&t, "content/g/en.md:13", "is not a finite number");
        assert!(!run.stderr.contains("inf%"), "{}", run.stderr);
    }
    // Huge but finite is fine, and an ordinary ratio is unchanged.
    let t = page(SCENARIO, "Share: {{ percent(1, 4) }}.\n");
    t.build_ok();
    assert!(t.output("en/g/index.html").contains("Share: 25%."));
}

// Class 11: translations agree by value.

#[test]
fn translations_with_reordered_keys_and_equal_numbers_agree() {
    let t = SiteTest::new();
    let en = format!("{SCENARIO}  dropout: 0.1\nvariants:\n  - id: v\n    set: {{ batch_size: 4, dropout: 0.0 }}\n");
    let es = "scenario:\n  gpu: rtx-4070\n  dropout: 0.10\n  batch_size: 2.0\n  block_size: 64\n  n_embd: 64\n  n_head: 2\n  n_layer: 2\nvariants:\n  - id: v\n    label: Lote 4\n    set: { dropout: 0, batch_size: 4.0 }\n";
    for (lang, front) in [("en", en.as_str()), ("es", es)] {
        t.file(
            &format!("content/g/{lang}.md"),
            &format!("---\ntitle: T\nlang: {lang}\ndate: 2026-11-20\n{front}---\n\n{{{{ bytes.peak | int }}}} {{{{ variants.v.bytes.peak | int }}}}\n"),
        );
    }
    t.build_ok();
    let digits = |s: String| -> String { s.chars().filter(char::is_ascii_digit).collect() };
    let (en, es) = (t.output("en/g/index.md"), t.output("es/g/index.md"));
    let body = |s: &str| s.rsplit("---").next().unwrap().to_string();
    assert_eq!(digits(body(&en)), digits(body(&es)));
}

#[test]
fn disagreeing_translations_name_the_key_both_values_and_the_line() {
    let t = SiteTest::new();
    let front = format!("{SCENARIO}variants:\n  - id: v\n    set: {{ batch_size: 4 }}\n");
    t.file(
        "content/g/en.md",
        &format!("---\ntitle: T\nlang: en\n{front}---\nx\n"),
    );
    t.file(
        "content/g/es.md",
        &format!(
            "---\ntitle: T\nlang: es\n{}---\nx\n",
            front.replace("batch_size: 2", "batch_size: 3")
        ),
    );
    let run = refused(
        &t,
        "content/g/es.md:9",
        "disagree on `scenario.batch_size`: `2` in content/g/en.md, `3` here",
    );
    assert!(!run.stderr.contains("content/g/es.md:1:"), "{}", run.stderr);
    t.file(
        "content/g/es.md",
        &format!(
            "---\ntitle: T\nlang: es\n{}---\nx\n",
            front.replace("batch_size: 4", "batch_size: 5")
        ),
    );
    refused(
        &t,
        "content/g/es.md:13",
        "disagree on `variants.v.set.batch_size`: `4` in content/g/en.md, `5` here",
    );
    t.file(
        "content/g/es.md",
        &format!(
            "---\ntitle: T\nlang: es\n{}  dropout: 0.2\n---\nx\n",
            SCENARIO
        ),
    );
    refused(
        &t,
        "content/g/es.md:11",
        "disagree on `scenario.dropout`: `(not set)` in content/g/en.md, `0.2` here",
    );
}

// Class 9: messages that cannot be shown as written are warnings naming file and key, and
// `vramdoc check` fails on them.

/// A site whose guide page renders, for the message tests.
fn message_site() -> SiteTest {
    let t = SiteTest::new();
    t.guide("g", "en", "T", "Body.");
    t
}

/// Runs `vramdoc check` after a build and asserts it failed mentioning each of `wanted`.
fn check_fails_with(t: &SiteTest, wanted: &[&str]) {
    let run = t.run(&["check"]);
    assert_ne!(run.code, 0, "check passed:\n{}", run.stdout);
    for w in wanted {
        assert!(run.stdout.contains(w), "expected `{w}` in\n{}", run.stdout);
    }
}

#[test]
fn unknown_t_key_in_a_template_is_a_warning_at_its_line() {
    let t = message_site();
    t.file(
        "templates/guide.html",
        "{% extends \"base.html\" %}{% block main %}\n<p>{{ t(key='no-such-key') }}</p>\n{% endblock main %}",
    );
    let run = t.build_ok();
    assert!(
        run.stderr
            .contains("`t()` asks for the message `no-such-key`, which no locale has")
            && run.stderr.contains("--> templates/guide.html:2:"),
        "{}",
        run.stderr
    );
    check_fails_with(&t, &["templates/guide.html:2", "no-such-key"]);
}

#[test]
fn unknown_t_key_computed_in_a_template_is_a_warning_naming_the_template() {
    let t = message_site();
    t.file(
        "templates/guide.html",
        "{% extends \"base.html\" %}{% block main %}<p>{{ t(key='status-' ~ lang) }}</p>{% endblock main %}",
    );
    let run = t.build_ok();
    assert!(
        run.stderr.contains("no locale has the message `status-en`")
            && run.stderr.contains("templates/guide.html"),
        "{}",
        run.stderr
    );
    check_fails_with(&t, &["status-en"]);
}

#[test]
fn fluent_missing_variable_cycle_and_duplicate_id_are_warnings_naming_file_and_key() {
    let t = message_site();
    t.file(
        "locales/en/site.ftl",
        "toc-title = Contents\ntoc-title = Contents, again\nloop-a = { loop-b }\nloop-b = { loop-a }\nexact-bytes = { $bytes } bytes, { $missing }\n",
    );
    for lang in ["es", "zh"] {
        t.file(
            &format!("locales/{lang}/site.ftl"),
            "loop-a = a\nloop-b = b\n",
        );
    }
    t.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\nscenario:\n  n_layer: 2\n  n_head: 2\n  n_embd: 64\n  block_size: 64\n  batch_size: 2\n  gpu: rtx-4070\n---\n\n{{ bytes.peak | bytes }}\n",
    );
    let run = t.build_ok();
    for (location, message) in [
        (
            "locales/en/site.ftl:2",
            "message `toc-title` is defined twice (first at locales/en/site.ftl:1)",
        ),
        (
            "locales/en/site.ftl:3",
            "message `loop-a` cannot be formatted: it refers to itself",
        ),
        (
            "locales/en/site.ftl:4",
            "message `loop-b` cannot be formatted",
        ),
        (
            "locales/en/site.ftl:5",
            "message `exact-bytes` did not format for `en`: no value for the variable `$missing`",
        ),
    ] {
        assert!(
            run.stderr.contains(message) && run.stderr.contains(&format!("--> {location}:")),
            "expected `{message}` at {location} in\n{}",
            run.stderr
        );
    }
    check_fails_with(
        &t,
        &[
            "toc-title",
            "loop-a",
            "loop-b",
            "`$missing`",
            "locales/en/site.ftl:5",
        ],
    );
}

#[test]
fn a_site_message_overriding_a_builtin_one_is_not_a_duplicate() {
    let t = message_site();
    t.file("locales/en/site.ftl", "toc-title = On this page\n");
    let run = t.build_ok();
    assert!(!run.stderr.contains("defined twice"), "{}", run.stderr);
    assert!(!run.stderr.contains("warning"), "{}", run.stderr);
}

#[test]
fn every_message_key_built_at_run_time_exists_in_every_locale() {
    use vramdoc::estimate::{Dtype, WhatIfKind};
    let mut keys = vramdoc::expand::runtime_message_keys();
    for kind in WhatIfKind::ALL {
        for dtype in [Dtype::Float32, Dtype::Bfloat16, Dtype::Float16] {
            keys.push(vramdoc::present::option_key(kind, dtype));
        }
    }
    assert!(keys.len() > 20, "{keys:?}");
    for lang in ["en", "es", "zh"] {
        let loc = vramdoc::i18n::Localizer::builtin(lang).unwrap();
        let missing: Vec<&String> = keys.iter().filter(|k| !loc.has_own(k)).collect();
        assert!(missing.is_empty(), "`{lang}` lacks {missing:?}");
    }
}
