//! Property tests for the parsers guides go through: random bytes and random front matter to
//! the page parser (`content::parse`), random `{{ }}` expressions to the expression parser and
//! evaluator (`expand::expand`). Nothing panics, and every error points at a line.
//! CI fixes the seed (`PROPTEST_RNG_SEED` in `.ci/run`), so a run explores the same cases.

use std::path::Path;
use std::sync::{Arc, OnceLock};

use proptest::prelude::*;
use vramdoc::content;
use vramdoc::diagnostics::Diagnostic;
use vramdoc::estimate::GpuCatalog;
use vramdoc::expand::{self, ChartCache, ExpandContext, GuideData};
use vramdoc::i18n::Localizer;

/// Parses `bytes` as `content/g/en.md`; every error must carry a line.
fn parse_page(bytes: &[u8]) -> Result<(), TestCaseError> {
    let dir: Arc<Path> = Arc::from(Path::new("content/g"));
    if let Err(errors) = content::parse(content::page_source("g", "en", &dir), bytes) {
        prop_assert!(!errors.is_empty(), "an error result without errors");
        for e in &errors {
            prop_assert!(e.is_error(), "a warning as a parse error: {e}");
            prop_assert!(e.line.is_some(), "unlocated error: {e}");
            prop_assert!(e.file.is_some(), "error without a file: {e}");
            // Rendering with a snippet must not panic either.
            let _ = e.render();
        }
    }
    Ok(())
}

/// A YAML value, valid or not: scalars, quoting mistakes, flow collections, nesting.
fn yaml_value() -> impl Strategy<Value = String> {
    let leaf = prop_oneof![
        Just("en".to_string()),
        Just("true".to_string()),
        Just("2026-11-20".to_string()),
        Just("2026-13-45".to_string()),
        Just("\"quoted: # value\"".to_string()),
        Just("'unclosed".to_string()),
        Just("\"unclosed".to_string()),
        Just("~".to_string()),
        Just("&a [1, *a]".to_string()),
        Just("!!binary x".to_string()),
        Just("|\n  block\n  text".to_string()),
        "-?[0-9]{1,25}(\\.[0-9]{0,5})?",
        "[ -~]{0,20}",
        "\\PC{0,10}",
    ];
    leaf.prop_recursive(3, 24, 4, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(|v| format!("[{}]", v.join(", "))),
            prop::collection::vec(("[a-z_]{1,8}", inner.clone()), 0..4).prop_map(|v| {
                let pairs: Vec<String> = v.into_iter().map(|(k, x)| format!("{k}: {x}")).collect();
                format!("{{ {} }}", pairs.join(", "))
            }),
            prop::collection::vec(inner, 1..4)
                .prop_map(|v| v.iter().map(|x| format!("\n  - {x}")).collect::<String>()),
        ]
    })
}

/// A key of a guide's front matter, known or not.
fn yaml_key() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("title"),
        Just("lang"),
        Just("date"),
        Just("updated"),
        Just("translated"),
        Just("type"),
        Just("layout"),
        Just("description"),
        Just("scenario"),
        Just("variants"),
        Just("? complex"),
        Just("\"quoted key\""),
        Just("- item"),
        Just("  indented"),
        Just("\ttab"),
    ]
    .prop_map(str::to_string)
}

/// A page: front matter lines between `---` delimiters (sometimes missing or unclosed), then a
/// body.
fn page_text() -> impl Strategy<Value = String> {
    (
        prop::collection::vec((yaml_key(), yaml_value()), 0..8),
        prop_oneof![
            Just("---\n"),
            Just("---\r\n"),
            Just("\u{feff}---\n"),
            Just("")
        ],
        prop_oneof![Just("---\n"), Just("...\n"), Just("")],
        "\\PC{0,40}",
    )
        .prop_map(|(pairs, open, close, body)| {
            let yaml: String = pairs.iter().map(|(k, v)| format!("{k}: {v}\n")).collect();
            format!("{open}{yaml}{close}{body}")
        })
}

/// An expression's inside: names, paths, filters and calls from the grammar's pieces, or near
/// misses of it.
fn expr_inner() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("bytes"),
        Just("params"),
        Just("scenario"),
        Just("variants"),
        Just("catalog"),
        Just("gpu"),
        Just("fits"),
        Just("v1"),
        Just("rtx-4090"),
        Just("name"),
        Just("peak"),
        Just("logits"),
        Just("batch_size"),
        Just("capacity_bytes"),
        Just("non_embedding"),
        Just("percent"),
        Just("chart"),
        Just("breakdown_table"),
        Just("options_table"),
        Just("params_table"),
        Just("over"),
        Just("variant"),
        Just("\"breakdown\""),
        Just("\"sweep\""),
        Just("\"batch_size\""),
        Just("'unclosed"),
        Just("bytes"),
        Just("int"),
        Just("count"),
        Just("gib"),
        Just("verdict"),
        Just("."),
        Just("|"),
        Just("("),
        Just(")"),
        Just(","),
        Just("="),
        Just(" "),
        Just("\n"),
        Just("-"),
        Just("0"),
        Just("1e999"),
        Just("-3.5"),
        Just("18446744073709551616"),
        Just("{{"),
        Just("}"),
        Just("é"),
        Just("显存"),
    ];
    prop::collection::vec(piece, 0..12).prop_map(|v| v.concat())
}

/// A well-formed expression over real and unknown names, so the evaluator (lookups, filters,
/// calls, tables, charts) runs as well as the parser.
fn grammatical_expr() -> impl Strategy<Value = String> {
    let name = prop_oneof![
        Just("bytes"),
        Just("params"),
        Just("scenario"),
        Just("variants"),
        Just("v1"),
        Just("catalog"),
        Just("rtx-4090"),
        Just("gpu"),
        Just("name"),
        Just("capacity_bytes"),
        Just("peak"),
        Just("logits"),
        Just("total"),
        Just("fits"),
        Just("batch_size"),
        Just("dtype"),
        Just("effective_batch"),
        Just("headroom_bytes"),
        Just("nope"),
    ];
    let path = prop::collection::vec(name, 1..5).prop_map(|v| v.join("."));
    let filter = prop::option::of(prop_oneof![
        Just("bytes"),
        Just("gib"),
        Just("mib"),
        Just("int"),
        Just("count"),
        Just("verdict"),
        Just("upper"),
    ]);
    let arg = prop_oneof![
        path.clone(),
        Just("\"breakdown\"".to_string()),
        Just("\"sweep\"".to_string()),
        Just("over=\"batch_size\"".to_string()),
        Just("over=\"block_size\"".to_string()),
        Just("over=\"n_layer\"".to_string()),
        Just("variant=\"v1\"".to_string()),
        Just("variant=v2".to_string()),
        "-?[0-9]{1,4}(\\.[0-9]{1,2})?",
    ];
    let call = (
        prop_oneof![
            Just("percent"),
            Just("chart"),
            Just("breakdown_table"),
            Just("options_table"),
            Just("params_table"),
            Just("nope"),
        ],
        prop::collection::vec(arg, 0..3),
    )
        .prop_map(|(f, args)| format!("{f}({})", args.join(", ")));
    (prop_oneof![path, call], filter).prop_map(|(e, f)| match f {
        Some(f) => format!("{e} | {f}"),
        None => e,
    })
}

/// A body with expressions (inline, alone on a line, unclosed, in code) between text.
fn body_text() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        grammatical_expr().prop_map(|e| format!("{{{{ {e} }}}}")),
        grammatical_expr().prop_map(|e| format!("\n\n{{{{ {e} }}}}\n\n")),
        expr_inner().prop_map(|e| format!("{{{{ {e} }}}}")),
        expr_inner().prop_map(|e| format!("\n\n{{{{{e}}}}}\n\n")),
        expr_inner().prop_map(|e| format!("`{{{{ {e} }}}}`")),
        Just("\n```\n{{ inside code }}\n```\n".to_string()),
        Just("{{ never closed".to_string()),
        "[ -~\\n]{0,12}",
        "\\PC{0,6}",
    ];
    prop::collection::vec(part, 0..6).prop_map(|v| v.concat())
}

/// The data of a small guide with one variant, computed once.
fn guide() -> &'static (Localizer, GuideData, GpuCatalog) {
    static GUIDE: OnceLock<(Localizer, GuideData, GpuCatalog)> = OnceLock::new();
    GUIDE.get_or_init(|| {
        let catalog = GpuCatalog::builtin();
        let scenario = yaml_serde::from_str(
            "n_layer: 2\nn_head: 2\nn_embd: 64\nblock_size: 64\nbatch_size: 4\ngpu: rtx-4070\n",
        )
        .unwrap();
        let variants = [vramdoc::content::Variant {
            id: "v1".into(),
            label: "Half".into(),
            set: vec![vramdoc::content::variants::Setting {
                key: "batch_size".into(),
                value: yaml_serde::Value::from(2),
                line: 1,
            }],
            line: 1,
        }];
        let data = expand::guide_data(&scenario, &variants, &catalog).unwrap();
        (Localizer::builtin("en").unwrap(), data, catalog)
    })
}

/// Expands `body` (starting at line 7), with or without scenario data; errors must be located
/// within the body's lines.
fn expand_body(body: &str, with_data: bool) -> Result<(), TestCaseError> {
    let (loc, data, catalog) = guide();
    let labels = vec![("v1".to_string(), "Half".to_string())];
    let charts = ChartCache::default();
    let ctx = ExpandContext {
        loc,
        data: with_data.then_some(data),
        variant_labels: &labels,
        catalog,
        charts: &charts,
        error: None,
    };
    let source: Arc<str> = Arc::from(format!("---\ntitle: t\nlang: en\n---\n\n\n{body}"));
    let last_line = 7 + body.matches('\n').count();
    if let Err(errors) = expand::expand(body, None, 7, &ctx, Path::new("content/g/en.md"), &source)
    {
        prop_assert!(!errors.is_empty());
        for e in &errors {
            let line = e.line;
            prop_assert!(
                line.is_some_and(|l| (7..=last_line).contains(&l)),
                "error not located in the body (lines 7..={last_line}): {e}"
            );
            prop_assert!(e.column.is_some(), "no column: {e}");
            let _: &Diagnostic = e;
            let _ = e.render();
        }
    }
    Ok(())
}

/// Markdown mixing text, links, images, code and raw HTML with event handlers and script URLs.
fn hostile_markdown() -> impl Strategy<Value = String> {
    let part = prop_oneof![
        Just("<script>alert(1)</script>"),
        Just("<SCRIPT>"),
        Just("<img src=x onerror=alert(1)>"),
        Just("<a href=\"javascript:x\" onclick=\"y\">"),
        Just("<!-- c -->"),
        Just("</div>"),
        Just("<div\n"),
        Just("[t](javascript:alert(1))"),
        Just("[t](JaVa\tScRiPt:x)"),
        Just("![i](data:text/html,x)"),
        Just("<javascript:alert(1)>"),
        Just("[r]: javascript:x\n"),
        Just("[r]"),
        Just("[t](https://example.org/)"),
        Just("`<b>`"),
        Just("\n```\n<script>\n```\n"),
        Just("\n    <script>\n"),
        Just("\n\n"),
        Just("\n> "),
        Just("\n- "),
        Just("**"),
        Just("["),
        Just("]"),
        Just("("),
        Just(")"),
        Just("\\"),
        Just("&#106;avascript:"),
        Just("text "),
    ];
    prop::collection::vec(part, 0..16).prop_map(|v| v.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(20_000))]

    #[test]
    fn page_parser_survives_random_bytes(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        parse_page(&bytes)?;
    }

    #[test]
    fn page_parser_survives_random_front_matter(text in page_text()) {
        parse_page(text.as_bytes())?;
    }

    #[test]
    fn raw_html_and_script_urls_never_reach_the_html(md in hostile_markdown()) {
        let (clean, _) = vramdoc::markdown::strip_unsafe_html(&md);
        // Rendered keeping raw HTML, as a Markdown edition's reader (Jekyll) would: what the
        // source-level strip left must be clean by itself.
        let html = vramdoc::markdown::render_html_with(&clean, true).html.to_ascii_lowercase();
        // Text is escaped (`&lt;`), so every `<` in the output opens a real tag.
        for tag in html.split('<').skip(1) {
            let tag = &tag[..tag.find('>').unwrap_or(tag.len())];
            prop_assert!(
                !tag.starts_with("script") && !tag.starts_with("img src=x"),
                "raw <{tag}> from {md:?}:\n{html}"
            );
            let handler = tag.match_indices(" on").any(|(i, _)| {
                let name = tag[i + 3..].trim_start_matches(|c: char| c.is_ascii_alphabetic());
                name.starts_with('=')
            });
            prop_assert!(!handler, "event handler in <{tag}> from {md:?}:\n{html}");
            for bad in ["=\"javascript:", "=\"data:", "=javascript:"] {
                prop_assert!(!tag.contains(bad), "`{bad}` in <{tag}> from {md:?}:\n{html}");
            }
        }
    }

    #[test]
    fn expressions_never_panic_and_errors_are_located(body in body_text(), with_data: bool) {
        expand_body(&body, with_data)?;
    }
}
