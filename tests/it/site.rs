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
        "## Estados del modelo {#model-states}\n\nPesos, gradientes y estado del optimizador.\n",
    );
    t.guide(
        "memory-basics",
        "zh",
        "显存都去哪儿了",
        "## 模型状态 {#model-states}\n\n权重、梯度和优化器状态。\n",
    );
    t.mark("es", "memory-basics").mark("zh", "memory-basics");
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
    assert!(t.output("index.html").contains("href=\"zh/index.html\""));
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
            "`date` must be a calendar date",
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
    let first = t.clean_build_into("out-1");
    assert!(
        first.len() > 10,
        "the build wrote only {} files",
        first.len()
    );
    assert_eq!(first, t.clean_build_into("out-2"));
}

#[test]
fn every_subcommand_has_help() {
    use clap::CommandFactory;
    let t = SiteTest::new();
    // The subcommands come from the parser itself, so a new one is covered without editing here.
    let names: Vec<String> = vramdoc::cli::Cli::command()
        .get_subcommands()
        .map(|c| c.get_name().to_string())
        .filter(|n| n != "help")
        .collect();
    assert!(names.len() >= 3, "subcommands: {names:?}");
    let mut runs = vec![vec!["--help".to_string()]];
    runs.extend(names.iter().map(|n| vec![n.clone(), "--help".to_string()]));
    for args in runs {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let run = t.run(&args);
        assert_eq!(run.code, 0, "vramdoc {args:?}: {}", run.stderr);
        assert!(
            run.stdout.contains("Usage"),
            "vramdoc {args:?}: {}",
            run.stdout
        );
        if let [name, _] = args[..] {
            assert!(
                run.stdout.contains(&format!("vramdoc {name}")),
                "{}",
                run.stdout
            );
        }
    }
}

/// What docs readers expect beside the pages: a feed and a 404 page per language, `llms.txt`,
/// a favicon, the copy-button script, canonical and Open Graph tags, links that open from disk,
/// and one index order (date, then slug) in every language.
#[test]
fn feeds_404_pages_llms_txt_and_head_tags() {
    let t = SiteTest::new();
    // Same date; the titles sort differently in each language, the slugs do not.
    for (slug, en, es) in [("b-guide", "Alpha", "Zeta"), ("a-guide", "Zeta", "Alpha")] {
        t.guide(slug, "en", en, "Text.");
        t.guide(slug, "es", es, "Texto.");
    }
    t.build_ok();
    for lang in ["en", "es"] {
        let index = t.output(&format!("{lang}/index.html"));
        let a = index.find("a-guide/index.html").expect("a-guide listed");
        let b = index.find("b-guide/index.html").expect("b-guide listed");
        assert!(a < b, "{lang}: equal dates are ordered by slug");
        assert!(
            index.contains(&format!("href=\"../{lang}/atom.xml\"")),
            "{index}"
        );
        let feed = t.output(&format!("{lang}/atom.xml"));
        assert!(feed.starts_with("<?xml"), "{feed}");
        assert!(feed.contains(&format!(
            "<id>https://example.org/docs/{lang}/a-guide/</id>"
        )));
        assert!(feed.contains("<updated>2026-11-20T00:00:00Z</updated>"));
        assert_eq!(feed.matches("<entry>").count(), 2);
        let not_found = t.output(&format!("{lang}/404.html"));
        // Links relative to its folder, and the script that sets a <base> on that folder when
        // the page is served for a deeper path: the part of the address up to `/<lang>/`.
        assert!(not_found.contains("href=\"a-guide/index.html\""));
        assert!(not_found.contains("href=\"../style.css\""), "{not_found}");
        assert!(not_found.contains(&format!("data-lang=\"{lang}\" data-base=\"/docs/\"")));
        assert!(!not_found.contains("rel=\"canonical\""));
    }
    assert!(t.output("404.html").contains("href=\"es/index.html\""));
    let llms = t.output("llms.txt");
    assert!(llms.starts_with("# Test site\n"), "{llms}");
    assert!(
        llms.contains("- [Zeta](https://example.org/docs/en/a-guide/index.md)"),
        "{llms}"
    );
    assert!(
        llms.contains("- [Alpha](https://example.org/docs/es/a-guide/index.md)"),
        "{llms}"
    );
    assert!(t.output("favicon.svg").starts_with("<svg"));
    assert!(t.output("vramdoc.js").contains("copy-code"));
    let page = t.output("en/a-guide/index.html");
    for tag in [
        "<link rel=\"canonical\" href=\"https://example.org/docs/en/a-guide/\">",
        "<meta property=\"og:title\" content=\"Zeta\">",
        "<meta property=\"og:type\" content=\"article\">",
        "<meta property=\"og:locale\" content=\"en_US\">",
        "<link rel=\"icon\" href=\"../../favicon.svg\"",
        "<a href=\"../index.html\">Test site</a>",
        "<a href=\"../../es/a-guide/index.html\" hreflang=\"es\"",
    ] {
        assert!(page.contains(tag), "missing {tag}:\n{page}");
    }
    // Editing a title re-renders the index (with its feed and 404 page) and the guide whose
    // next/previous link shows that title; in Spanish, nothing.
    t.guide("a-guide", "en", "Zeta 2", "Text.");
    let run = t.build_ok();
    assert!(
        run.stdout.contains("en: rebuilt 2, unchanged 0")
            && run.stdout.contains("es: rebuilt 0, unchanged 2"),
        "{}",
        run.stdout
    );
    assert!(t.output("en/b-guide/index.html").contains("Zeta 2"));
    assert!(t.output("en/atom.xml").contains("Zeta 2"));
    assert!(t.output("en/404.html").contains("Zeta 2"));
    assert!(t.output("llms.txt").contains("[Zeta 2]"));
}

/// Each guide page links the guides before and after it in its language's index (newest first,
/// undated last, ties by slug) and offers the whole list, which `<lang>/guides.js` holds in the
/// same order; a guide missing in a language is skipped there.
#[test]
fn previous_next_links_and_the_guide_list_follow_the_index_order() {
    let t = SiteTest::new();
    let dated = |slug: &str, lang: &str, title: &str, date: Option<&str>| {
        let date = date.map(|d| format!("date: {d}\n")).unwrap_or_default();
        t.file(
            &format!("content/{slug}/{lang}.md"),
            &format!("---\ntitle: \"{title}\"\nlang: {lang}\n{date}---\n\nText.\n"),
        );
    };
    for lang in ["en", "es"] {
        dated("old", lang, &format!("Old {lang}"), Some("2026-01-05"));
        dated("new", lang, &format!("New {lang}"), Some("2026-11-20"));
        dated(
            "b-same",
            lang,
            &format!("B same {lang}"),
            Some("2026-06-01"),
        );
        dated("undated", lang, &format!("Undated {lang}"), None);
    }
    dated("a-same", "en", "A same en", Some("2026-06-01"));
    t.build_ok();
    let order = |lang: &str| -> Vec<&str> {
        match lang {
            "en" => vec!["new", "a-same", "b-same", "old", "undated"],
            _ => vec!["new", "b-same", "old", "undated"],
        }
    };
    for lang in ["en", "es"] {
        let slugs = order(lang);
        let index = t.output(&format!("{lang}/index.html"));
        let at: Vec<usize> = (slugs.iter())
            .map(|s| index.find(&format!("\"{s}/index.html\"")).expect(s))
            .collect();
        assert!(at.windows(2).all(|w| w[0] < w[1]), "{lang}: {index}");
        let list = t.output(&format!("{lang}/guides.js"));
        let listed: Vec<usize> = (slugs.iter())
            .map(|s| list.find(&format!("\"s\":\"{s}\"")).expect(s))
            .collect();
        assert!(listed.windows(2).all(|w| w[0] < w[1]), "{list}");
        assert_eq!(list.matches("\"s\":").count(), slugs.len(), "{list}");
        for (i, slug) in slugs.iter().enumerate() {
            let page = t.output(&format!("{lang}/{slug}/index.html"));
            let prev = page
                .split("rel=\"prev\" href=\"../")
                .nth(1)
                .map(|r| &r[..r.find('/').unwrap()]);
            let next = page
                .split("rel=\"next\" href=\"../")
                .nth(1)
                .map(|r| &r[..r.find('/').unwrap()]);
            let want_prev = i.checked_sub(1).map(|p| slugs[p]);
            let want_next = slugs.get(i + 1).copied();
            assert_eq!((prev, next), (want_prev, want_next), "{lang}/{slug}");
            if let Some(p) = want_prev {
                let title = if p == "a-same" {
                    "A same en".to_string()
                } else {
                    format!(
                        "{} {lang}",
                        p[..1].to_uppercase() + &p[1..].replace('-', " ")
                    )
                };
                assert!(page.contains(&title), "{lang}/{slug} lacks {title}");
            }
            assert!(page.contains("data-list=\"../guides.js\""), "{page}");
            assert!(page.contains("<a href=\"../index.html\">"), "{page}");
        }
    }
    // Editing a body keeps every link; a new date moves the guide and fixes both neighbourhoods.
    t.build_later(false);
    let before = t.output("en/b-same/index.html");
    t.file(
        "content/b-same/en.md",
        "---\ntitle: \"B same en\"\nlang: en\ndate: 2026-06-01\n---\n\nOther text.\n",
    );
    let run = t.build_ok();
    assert!(
        run.stdout.contains("en: rebuilt 1, unchanged 4"),
        "{}",
        run.stdout
    );
    let after = t.output("en/b-same/index.html");
    let pager = |p: &str| p[p.find("<nav class=\"pager\"").unwrap()..].to_string();
    assert_eq!(pager(&before), pager(&after));
    dated("old", "es", "Old es", Some("2026-12-01"));
    let run = t.build_ok();
    assert!(
        run.stdout.contains("es: rebuilt 4, unchanged 0"),
        "{}",
        run.stdout
    );
    let page = t.output("es/old/index.html");
    assert!(!page.contains("rel=\"prev\""), "{page}");
    assert!(
        page.contains("rel=\"next\" href=\"../new/index.html\""),
        "{page}"
    );
    // What a clean build makes (both at the same clock, so that they record the same stamps).
    t.build_later(false);
    let incremental = t.snapshot_output();
    t.build_later(true);
    assert!(incremental == t.snapshot_output());
}
