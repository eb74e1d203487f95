//! The site generator end to end, through the real binary on fixture sites.

use crate::support::SiteTest;

/// A guide in all three languages with headings, a table, code and a footnote.
fn three_language_site() -> SiteTest {
    let t = SiteTest::new();
    t.guide("memory-basics", "en", "Where the memory goes", "## Model states\n\nWeights, gradients and optimizer state.\n\n| part | bytes/param |\n|---|---|\n| weights | 4 |\n\n```python\nbatch_size = 8\n```\n");
    t.guide(
        "memory-basics",
        "es",
        "Adónde va la memoria",
        "## Estados del modelo\n\nPesos, gradientes y estado del optimizador.\n",
    );
    t.guide(
        "memory-basics",
        "zh",
        "显存都去哪儿了",
        "## 模型状态\n\n权重、梯度和优化器状态。\n",
    );
    t
}

#[test]
fn builds_every_language_with_switcher_and_hreflang() {
    let t = three_language_site();
    let run = t.build_ok();
    assert!(
        run.stdout.contains("built 3 pages")
            && run.stdout.contains("en: rebuilt 1,")
            && run.stdout.contains("zh: rebuilt 1,"),
        "{}",
        run.stdout
    );
    for (lang, title, other) in [
        ("en", "Where the memory goes", "Español"),
        ("es", "Adónde va la memoria", "中文"),
        ("zh", "显存都去哪儿了", "English"),
    ] {
        let html = t.output(&format!("{lang}/memory-basics/index.html"));
        assert!(html.contains(&format!("<html lang=\"{lang}\">")), "{lang}");
        assert!(html.contains(&format!("<h1>{title}</h1>")), "{lang}");
        assert!(html.contains(other), "{lang} switcher lacks {other}");
        for alt in ["en", "es", "zh", "x-default"] {
            assert!(
                html.contains(&format!("hreflang=\"{alt}\"")),
                "{lang} lacks hreflang {alt}"
            );
        }
        assert!(html.contains("href=\"https://example.org/docs/en/memory-basics/\""));
        // Relative links so the site works from a domain root or a subpath.
        assert!(html.contains("href=\"../../style.css\""));
        let md = t.output(&format!("{lang}/memory-basics/index.md"));
        assert!(md.starts_with("---\ntitle: "), "{md}");
        assert!(md.contains(&format!("lang: {lang}\n")));
    }
    let es = t.output("es/memory-basics/index.html");
    assert!(es.contains("20/11/2026"), "Spanish date format");
    let zh = t.output("zh/memory-basics/index.html");
    assert!(zh.contains("2026年11月20日"), "Chinese date format");
    for lang in ["en", "es", "zh"] {
        assert!(t
            .output(&format!("{lang}/index.html"))
            .contains("memory-basics/"));
    }
    assert!(t.output("index.html").contains("href=\"zh/\""));
    let sitemap = t.output("sitemap.xml");
    assert!(sitemap.contains("<loc>https://example.org/docs/es/memory-basics/</loc>"));
    assert!(sitemap.contains("<xhtml:link rel=\"alternate\" hreflang=\"zh\" href=\"https://example.org/docs/zh/memory-basics/\"/>"));
    assert!(!t.output("style.css").is_empty());
}

#[test]
fn full_page_snapshot_per_language() {
    let t = three_language_site();
    t.build_ok();
    for lang in ["en", "es", "zh"] {
        insta::assert_snapshot!(
            format!("guide_page_{lang}"),
            t.output(&format!("{lang}/memory-basics/index.html"))
        );
    }
    insta::assert_snapshot!("markdown_edition_en", t.output("en/memory-basics/index.md"));
}

#[test]
fn seed_shaped_front_matter_parses_and_is_kept() {
    let t = SiteTest::new();
    t.file(
        "content/oom-notes/es.md",
        "---\naudio: false\ngenerated: true\nimage: false\nlang: es\nlayout: post\nmodel: x-ai/grok-4-fast\ntitle: Solución de Errores de Memoria de la GPU\ntranslated: true\ntype: note\n---\n\nSí, estás experimentando un error de falta de memoria.\n",
    );
    t.build_ok();
    let html = t.output("es/oom-notes/index.html");
    assert!(
        html.contains("Esta página se tradujo automáticamente"),
        "machine-translated notice"
    );
    let md = t.output("es/oom-notes/index.md");
    for kept in [
        "model: x-ai/grok-4-fast",
        "layout: post",
        "type: note",
        "translated: true",
        "audio: false",
    ] {
        assert!(md.contains(kept), "{kept} missing from\n{md}");
    }
}

#[test]
fn crlf_and_byte_order_mark_are_accepted() {
    let t = SiteTest::new();
    let text =
        "\u{feff}---\r\ntitle: Windows\r\nlang: en\r\n---\r\n\r\n## Heading\r\n\r\nBody text.\r\n";
    t.bytes("content/crlf/en.md", text.as_bytes());
    t.build_ok();
    let html = t.output("en/crlf/index.html");
    assert!(html.contains("<h1>Windows</h1>"));
    assert!(!html.contains('\r'));
}

#[test]
fn titles_are_escaped() {
    let t = SiteTest::new();
    t.guide("xss", "en", "<script>alert(1)</script>", "Body.");
    t.build_ok();
    let html = t.output("en/xss/index.html");
    assert!(!html.contains("<script>alert(1)</script>"));
    assert!(html.contains("&lt;script&gt;alert(1)&lt;/script&gt;"));
    assert!(!t
        .output("en/index.html")
        .contains("<script>alert(1)</script>"));
}

#[test]
fn failed_build_reports_everything_and_leaves_previous_output_untouched() {
    let t = three_language_site();
    t.build_ok();
    let before = t.snapshot_output();
    t.file(
        "content/broken/en.md",
        "---\ntitle: \"unclosed\nlang: en\n---\nbody\n",
    );
    t.file(
        "content/broken/es.md",
        "---\ntitle: Mal idioma\nlang: en\n---\n",
    );
    t.file("content/Not_A_Slug/en.md", "---\ntitle: x\nlang: en\n---\n");
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/broken/en.md:"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("invalid YAML"), "{}", run.stderr);
    assert!(
        run.stderr.contains("content/broken/es.md:3:1"),
        "{}",
        run.stderr
    );
    assert!(
        run.stderr.contains("`Not_A_Slug` is not a valid slug"),
        "{}",
        run.stderr
    );
    assert!(run.stderr.contains("3 errors"), "{}", run.stderr);
    assert_eq!(
        before,
        t.snapshot_output(),
        "public/ changed after a failed build"
    );
    let leftovers: Vec<_> = std::fs::read_dir(t.root())
        .unwrap()
        .flatten()
        .map(|e| e.file_name())
        .filter(|n| n.to_string_lossy().contains("staging"))
        .collect();
    assert!(
        leftovers.is_empty(),
        "staging folder left behind: {leftovers:?}"
    );
}

#[test]
fn each_front_matter_error_names_file_line_and_fix() {
    let cases: &[(&str, &str, &str)] = &[
        (
            "no front matter here\n",
            "content/case/en.md:1:1",
            "missing front matter",
        ),
        (
            "---\ntitle: x\nlang: en\n",
            "content/case/en.md:1:1",
            "unclosed front matter",
        ),
        (
            "---\ntitle: x\nlang: en\n  bad: [\n---\n",
            "content/case/en.md:",
            "invalid YAML",
        ),
        ("---\nlang: en\n---\n", "content/case/en.md:2", "no `title`"),
        ("---\ntitle: x\n---\n", "content/case/en.md:2", "no `lang`"),
        (
            "---\ntitle: x\nlang: en\ntranslated: sometimes\n---\n",
            "content/case/en.md:4:1",
            "`translated` must be true or false",
        ),
        (
            "---\ntitle: {a: 1}\nlang: en\n---\n",
            "content/case/en.md:2:1",
            "`title` must be a string",
        ),
        (
            "---\ntitle: x\nlang: en\ndate: yesterday\n---\n",
            "content/case/en.md:4:1",
            "`date` must look like",
        ),
        (
            "---\ntitle: x\nlang: es\n---\n",
            "content/case/en.md:3:1",
            "does not match the file name",
        ),
    ];
    for (text, location, message) in cases {
        let t = SiteTest::new();
        t.file("content/case/en.md", text);
        let run = t.build_err();
        assert!(
            run.stderr.contains(location),
            "{message}: expected {location} in\n{}",
            run.stderr
        );
        assert!(
            run.stderr.contains(message),
            "expected {message} in\n{}",
            run.stderr
        );
        assert!(
            run.stderr.contains("help:"),
            "no advice for {message}:\n{}",
            run.stderr
        );
        assert!(
            !t.root().join("public").exists(),
            "{message}: public/ written"
        );
    }
}

#[test]
fn unknown_language_file_and_missing_config_are_errors() {
    let t = SiteTest::new();
    t.guide("g", "en", "x", "y");
    t.file("content/g/fr.md", "---\ntitle: x\nlang: fr\n---\n");
    let run = t.build_err();
    assert!(
        run.stderr.contains("content/g/fr.md") && run.stderr.contains("not a configured language"),
        "{}",
        run.stderr
    );

    let t = SiteTest::new();
    std::fs::remove_file(t.root().join("vramdoc.yaml")).unwrap();
    let run = t.build_err();
    assert!(run.stderr.contains("vramdoc.yaml"), "{}", run.stderr);
}

#[test]
fn refuses_to_replace_a_folder_it_did_not_write() {
    let t = SiteTest::new();
    t.guide("g", "en", "x", "y");
    t.file("public/precious.txt", "mine");
    let run = t.build_err();
    assert!(
        run.stderr.contains("not written by vramdoc"),
        "{}",
        run.stderr
    );
    assert_eq!(t.output("precious.txt"), "mine");
}

#[test]
fn site_templates_and_locales_override_the_defaults() {
    let t = three_language_site();
    t.file("templates/guide.html", "{% extends \"base.html\" %}{% block main %}CUSTOM {{ page.title }} {{ t(key='toc-title') }}{% endblock main %}");
    t.file("locales/es/custom.ftl", "toc-title = Índice propio\n");
    t.build_ok();
    assert!(t
        .output("en/memory-basics/index.html")
        .contains("CUSTOM Where the memory goes Contents"));
    assert!(t
        .output("es/memory-basics/index.html")
        .contains("CUSTOM Adónde va la memoria Índice propio"));
}

#[test]
fn missing_locale_key_falls_back_with_a_warning() {
    let t = three_language_site();
    t.file("locales/en/extra.ftl", "only-english = Only in English\n");
    t.file(
        "templates/guide.html",
        "{% extends \"base.html\" %}{% block main %}{{ t(key='only-english') }}{% endblock main %}",
    );
    let run = t.build_ok();
    assert!(
        run.stderr
            .contains("locale `es` has no message `only-english`"),
        "{}",
        run.stderr
    );
    assert!(t
        .output("es/memory-basics/index.html")
        .contains("Only in English"));
}

#[test]
fn invalid_fluent_syntax_is_located() {
    let t = three_language_site();
    t.file("locales/zh/broken.ftl", "good = 好\nbad = { $\n");
    let run = t.build_err();
    assert!(
        run.stderr.contains("locales/zh/broken.ftl:2"),
        "{}",
        run.stderr
    );
}

#[test]
fn two_builds_are_byte_identical() {
    let t = three_language_site();
    t.build_ok();
    let first = t.snapshot_output();
    t.build_ok();
    assert_eq!(first, t.snapshot_output());
}

#[test]
fn every_subcommand_has_help() {
    let t = SiteTest::new();
    for args in [&["--help"][..], &["build", "--help"]] {
        let run = t.run(args);
        assert_eq!(run.code, 0);
        assert!(run.stdout.contains("Usage"), "{}", run.stdout);
    }
}
