//! Issue 18, the site's part, through the real binary: template loops are bounded, control
//! characters never reach published text, outputs deleted by hand come back, `base_url` and
//! `--out` are checked before anything is written, `llms.txt` escapes titles, leap seconds and
//! ignored files are reported.

use std::time::{Duration, Instant};

use crate::support::{SiteTest, CONFIG};

/// A small scenario on a card of the site's own catalog (`gpu: own`), with a variant and both
/// charts, so the GPU name and the variant label reach the feed, the tables and the SVGs.
const SCENARIO: &str = "scenario:\n  n_layer: 2\n  n_head: 2\n  n_embd: 64\n  block_size: 64\n  batch_size: 4\n  gpu: own\nvariants:\n  - id: half\n    label: LABEL\n    set: { batch_size: 2 }\n";

const BODY: &str =
    "{{ options_table() }}\n\n{{ chart(\"breakdown\") }}\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n";

/// A site with one computed guide whose title, description, variant label and GPU name are given.
fn computed_site(title: &str, description: &str, label: &str, gpu_name: &str) -> SiteTest {
    let site = SiteTest::new();
    site.file(
        "data/gpus.yaml",
        &format!("gpus:\n  - id: own\n    name: {gpu_name}\n    capacity_bytes: 12884901888\n"),
    );
    site.file(
        "content/g/en.md",
        &format!(
            "---\ntitle: {title}\nlang: en\ndate: 2026-11-20\ndescription: {description}\n{}---\n\n{BODY}",
            SCENARIO.replace("LABEL", label)
        ),
    );
    site
}

/// Fails unless `text` is well-formed XML: every character an XML 1.0 `Char`, and the element
/// structure and entities well formed (quick-xml's reader).
fn assert_well_formed_xml(name: &str, text: &str) {
    let bad = text.chars().find(|c| {
        let c = *c as u32;
        !(c == 0x9
            || c == 0xA
            || c == 0xD
            || (0x20..=0xD7FF).contains(&c)
            || (0xE000..=0xFFFD).contains(&c)
            || c >= 0x10000)
    });
    assert_eq!(bad, None, "{name} holds a character XML forbids");
    let mut reader = quick_xml::Reader::from_str(text);
    let mut depth = 0i64;
    loop {
        match reader.read_event() {
            Ok(quick_xml::events::Event::Eof) => break,
            Ok(quick_xml::events::Event::Start(_)) => depth += 1,
            Ok(quick_xml::events::Event::End(_)) => depth -= 1,
            Ok(quick_xml::events::Event::GeneralRef(r)) => {
                let known =
                    ["lt", "gt", "amp", "quot", "apos"].contains(&&*r) || r.starts_with('#');
                assert!(known, "{name}: unknown entity &{};", &*r);
            }
            Ok(_) => {}
            Err(e) => panic!("{name} is not well-formed XML: {e}"),
        }
    }
    assert_eq!(depth, 0, "{name}: unclosed elements");
}

#[test]
fn templates_that_grow_text_in_memory_are_refused_at_their_line() {
    let site = SiteTest::new();
    site.guide("g", "en", "T", "Body.");
    // Forty doublings want a terabyte; the output bound never sees a variable.
    site.file(
        "templates/root.html",
        "{% set s = \"x\" %}\n{% for i in range(end=40) %}\n{% set s = s ~ s %}\n{% endfor %}{{ s | length }}",
    );
    let start = Instant::now();
    let run = site.build_err();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert!(
        run.stderr.contains("`s` is set from itself inside a loop")
            && run.stderr.contains("templates/root.html:3:1"),
        "{}",
        run.stderr
    );
    // Text captured by a filter block or a block set escapes the output bound too.
    site.file(
        "templates/root.html",
        "{% filter upper %}{% for i in range(end=1000) %}xx{% endfor %}{% endfilter %}",
    );
    let run = site.build_err();
    assert!(
        run.stderr.contains("`{% filter %}` block"),
        "{}",
        run.stderr
    );
    assert!(!site.root().join("public").exists());
}

#[test]
fn nested_template_loops_stop_with_an_error_naming_the_template() {
    let site = SiteTest::new();
    site.guide("g", "en", "T", "Body.");
    // Output: 10^10 iterations writing 2 bytes each grew to 1.4 GB before.
    site.file(
        "templates/root.html",
        "{% for i in range(end=100000) %}{% for j in range(end=100000) %}xx{% endfor %}{% endfor %}",
    );
    let start = Instant::now();
    let run = site.build_err();
    assert!(
        start.elapsed() < Duration::from_secs(30),
        "{:?}",
        start.elapsed()
    );
    assert!(
        run.stderr.contains("rendering `root.html` stopped")
            && run.stderr.contains("templates/root.html"),
        "{}",
        run.stderr
    );
    assert!(!site.root().join("public").exists());
    // Loops that write nothing are bounded too.
    site.file(
        "templates/root.html",
        "{% for i in range(end=100000) %}{% for j in range(end=100000) %}{% endfor %}{% endfor %}",
    );
    let run = site.build_err();
    assert!(
        run.stderr.contains("more than 1000000 values"),
        "{}",
        run.stderr
    );
    // One loop may not write more than 16 MiB either.
    site.file(
        "templates/root.html",
        &format!(
            "{{% for i in range(end=100000) %}}{}{{% endfor %}}",
            "x".repeat(200)
        ),
    );
    let run = site.build_err();
    assert!(
        run.stderr.contains("it wrote more than 16 MiB"),
        "{}",
        run.stderr
    );
    // A template within bounds still builds.
    site.file(
        "templates/root.html",
        "{% for i in range(end=1000) %}{{ i }} {% endfor %}",
    );
    site.build_ok();
    assert!(site.output("index.html").contains("999"));
}

#[test]
fn control_characters_are_refused_at_their_line_wherever_text_is_published() {
    // Each published text in turn carries U+0007 (a YAML escape), the others are clean.
    let cases = [
        (
            computed_site("\"Bell \\a\"", "d", "half", "Card"),
            "content/g/en.md:2:1",
            "`title`",
        ),
        (
            computed_site("t", "\"x\\x1b[31m\"", "half", "Card"),
            "content/g/en.md:5:1",
            "`description`",
        ),
        (
            computed_site("t", "d", "\"Half\\u0000\"", "Card"),
            "content/g/en.md:",
            "label of variant `half`",
        ),
        (
            computed_site("t", "d", "half", "\"Card\\x7f\""),
            "data/gpus.yaml:2:1",
            "GPU catalog entry \"own\"",
        ),
    ];
    for (site, place, what) in cases {
        let run = site.build_err();
        assert!(run.stderr.contains(place), "{place}:\n{}", run.stderr);
        assert!(run.stderr.contains(what), "{what}:\n{}", run.stderr);
        assert!(
            run.stderr.contains("control character") && run.stderr.contains("U+00"),
            "{}",
            run.stderr
        );
        assert!(!site.root().join("public").exists());
    }
    let site = SiteTest::new();
    site.file(
        "vramdoc.yaml",
        &CONFIG.replace("es: Sitio de prueba", "es: \"Sitio\\r\""),
    );
    site.guide("g", "en", "T", "Body.");
    let run = site.build_err();
    assert!(run.stderr.contains("vramdoc.yaml:3:3"), "{}", run.stderr);
    assert!(run.stderr.contains("the `es` title"), "{}", run.stderr);
}

#[test]
fn feeds_and_charts_are_well_formed_xml_with_hostile_but_allowed_text() {
    let site = computed_site(
        "\"A ]]> <b>&amp; \\t tab\"",
        "\"<![CDATA[ x ]]> & y\"",
        "\"Half ]]> & <i>\"",
        "\"Card ]]> & <x>\"",
    );
    site.build_ok();
    assert_well_formed_xml("en/atom.xml", &site.output("en/atom.xml"));
    assert_well_formed_xml("sitemap.xml", &site.output("sitemap.xml"));
    let charts: Vec<_> = std::fs::read_dir(site.root().join("public/en/g"))
        .unwrap()
        .flatten()
        .filter(|e| e.path().extension().is_some_and(|x| x == "svg"))
        .collect();
    assert!(charts.len() >= 2, "{} charts", charts.len());
    for c in charts {
        let text = std::fs::read_to_string(c.path()).unwrap();
        assert_well_formed_xml(&c.path().display().to_string(), &text);
    }
}

#[test]
fn a_build_restores_outputs_deleted_by_hand() {
    let site = SiteTest::new();
    site.guide("a", "en", "A", "Body a.")
        .guide("b", "en", "B", "Body b.");
    site.guide("a", "es", "A es", "Cuerpo.");
    site.build_ok();
    let whole = site.snapshot_output();
    std::fs::remove_dir_all(site.root().join("public/en")).unwrap();
    let run = site.build_ok();
    assert!(run.stdout.contains("en: rebuilt 2"), "{}", run.stdout);
    assert_eq!(site.snapshot_output(), whole);
    std::fs::remove_dir_all(site.root().join("public/es/a")).unwrap();
    std::fs::remove_dir_all(site.root().join("public/en/b")).unwrap();
    site.build_ok();
    assert_eq!(site.snapshot_output(), whole);
    // A language's index alone.
    std::fs::remove_file(site.root().join("public/es/index.html")).unwrap();
    site.build_ok();
    assert_eq!(site.snapshot_output(), whole);
    // One file inside a page folder, and files at the top and in a language folder: their
    // folders changed after the last build, so the recorded outputs are verified.
    // (File times come from the kernel's coarse clock, a tick of up to 10 ms: a deletion made in
    // the same tick as the last build's final write is not told apart from it.)
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::remove_file(site.root().join("public/en/a/index.md")).unwrap();
    let run = site.build_ok();
    assert!(run.stdout.contains("en: rebuilt 1"), "{}", run.stdout);
    assert_eq!(site.snapshot_output(), whole);
    std::thread::sleep(std::time::Duration::from_millis(50));
    std::fs::remove_file(site.root().join("public/sitemap.xml")).unwrap();
    std::fs::remove_file(site.root().join("public/es/atom.xml")).unwrap();
    site.build_ok();
    assert_eq!(site.snapshot_output(), whole);
    // Nothing deleted: nothing rebuilt, and the next build trusts the output again.
    let run = site.build_ok();
    assert!(run.stdout.contains("en: rebuilt 0"), "{}", run.stdout);
}

#[test]
fn base_url_with_a_query_fragment_or_credentials_is_refused_at_its_line() {
    for (url, why) in [
        ("https://x.org/?a=1&b=2", "a query"),
        ("https://x.org/docs/#frag", "a fragment"),
        ("https://user:pass@x.org/", "credentials"),
    ] {
        let site = SiteTest::new();
        site.file(
            "vramdoc.yaml",
            &CONFIG.replace("https://example.org/docs/", url),
        );
        site.guide("g", "en", "T", "Body.");
        let run = site.build_err();
        assert!(
            run.stderr.contains("vramdoc.yaml:5:1"),
            "{url}:\n{}",
            run.stderr
        );
        assert!(run.stderr.contains(why), "{url}:\n{}", run.stderr);
    }
}

#[test]
fn llms_txt_escapes_titles_instead_of_dropping_brackets_or_breaking_lines() {
    let site = SiteTest::new();
    site.file(
        "content/g/en.md",
        "---\ntitle: \"Fits [12 GB]]]>\\n# Injected heading\\n- injected item\"\nlang: en\ndescription: \"One\\n## two\"\n---\n\nBody.\n",
    );
    site.build_ok();
    let llms = site.output("llms.txt");
    for line in llms.lines() {
        assert!(
            !line.starts_with("# Injected")
                && !line.starts_with("- injected")
                && !line.starts_with("## two"),
            "{llms}"
        );
    }
    assert!(
        llms.contains("- [Fits \\[12 GB\\]\\]\\]\\> # Injected heading - injected item](https://example.org/docs/en/g/index.md): One ## two"),
        "{llms}"
    );
}

#[test]
fn a_refused_out_leaves_nothing_and_dot_dot_creates_no_stray_folder() {
    let site = SiteTest::new();
    site.guide("g", "en", "T", "Body.");
    let run = site.run(&["build", "--out", "content/x"]);
    assert_ne!(run.code, 0);
    assert!(
        run.stderr.contains("inside the site's content/ folder"),
        "{}",
        run.stderr
    );
    let content: Vec<_> = std::fs::read_dir(site.root().join("content"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .collect();
    assert_eq!(content, vec![std::ffi::OsString::from("g")]);
    // A folder vramdoc did not write is refused before its lock file is made.
    site.file("mine/notes.txt", "keep");
    let run = site.run(&["build", "--out", "mine"]);
    assert!(
        run.stderr.contains("not written by vramdoc"),
        "{}",
        run.stderr
    );
    assert!(!site.root().join(".mine.lock").exists());
    let run = site.run(&["build", "--out", "public/x/../../public"]);
    assert_eq!(run.code, 0, "{}", run.stderr);
    assert!(site.root().join("public/en/g/index.html").is_file());
    assert!(!site.root().join("public/x").exists());
}

#[test]
fn a_leap_second_is_refused_at_its_line() {
    let site = SiteTest::new();
    site.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-12-31T23:59:60Z\n---\n\nBody.\n",
    );
    let run = site.build_err();
    assert!(run.stderr.contains("content/g/en.md:4:1"), "{}", run.stderr);
    assert!(run.stderr.contains("leap second"), "{}", run.stderr);
    site.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\ndate: 2026-12-31T23:59:59Z\n---\n\nBody.\n",
    );
    site.build_ok();
    assert!(site
        .output("en/g/index.html")
        .contains("datetime=\"2026-12-31T23:59:59Z\""));
}

#[test]
fn files_the_build_does_not_read_are_named_in_warnings() {
    let site = SiteTest::new();
    site.file(
        "content/g/en.md",
        "---\ntitle: T\nlang: en\n---\n\n## </script><script>\n\nBody.\n",
    );
    site.file("content/g/es.markdown", "---\ntitle: T\nlang: es\n---\n");
    site.file("content/g/diagram.png", "png");
    site.file("content/stray.md", "notes");
    site.file("content/.drafts/h/en.md", "---\ntitle: T\nlang: en\n---\n");
    site.file("content/.gitkeep", "");
    std::fs::create_dir_all(site.root().join("content/empty")).unwrap();
    let run = site.build_ok();
    for expected in [
        "guide folder `empty` has no page",
        "`es.markdown` is not read",
        "`content/stray.md` is not read",
        "hidden folder `content/.drafts` is not read",
        "raw HTML `</script>` was dropped",
        "raw HTML `<script>` was dropped",
        "content/g/en.md:6:13",
    ] {
        assert!(run.stderr.contains(expected), "{expected}:\n{}", run.stderr);
    }
    assert!(
        !run.stderr.contains("diagram.png") && !run.stderr.contains(".gitkeep"),
        "{}",
        run.stderr
    );
}
