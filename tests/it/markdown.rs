//! Markdown rendering: extensions, heading ids, code highlighting, escaping, the stray
//! emphasis lint, and a snapshot of a representative guide body.

use std::collections::BTreeMap;
use vramdoc::markdown::{highlight_css, render_html, slugify, stray_emphasis_markers, Heading};

fn html(markdown: &str) -> String {
    render_html(markdown).html
}

#[test]
fn tables_are_wrapped_for_horizontal_scrolling() {
    let out = html("| key | value |\n|-----|------:|\n| n_layer | 6 |\n");
    assert!(
        out.contains("<div class=\"table-wrap\" tabindex=\"0\">\n<table>"),
        "{out}"
    );
    assert!(out.contains("</table>\n</div>"), "{out}");
    assert!(out.contains("<th>key</th>"), "{out}");
    assert!(out.contains("<td data-label=\"key\">n_layer</td>"), "{out}");
    assert!(
        out.contains("<td style=\"text-align: right\" data-label=\"value\">6</td>"),
        "{out}"
    );
}

#[test]
fn table_cells_are_labelled_with_their_escaped_column_header() {
    let out = html("| a `<b>` & c | d |\n|---|---|\n| 1 | 2 |\n| 3 |\n");
    assert!(
        out.contains("data-label=\"a &lt;b&gt; &amp; c\">1</td>"),
        "{out}"
    );
    assert!(out.contains("data-label=\"d\">2</td>"), "{out}");
    assert!(
        out.contains("data-label=\"a &lt;b&gt; &amp; c\">3</td>"),
        "{out}"
    );
}

#[test]
fn strikethrough_and_task_lists() {
    let out = html("~~16~~ 8\n\n- [x] lower batch_size\n- [ ] enable flash\n");
    assert!(out.contains("<del>16</del> 8"), "{out}");
    assert!(
        out.contains("<input disabled=\"\" type=\"checkbox\" checked=\"\"/>"),
        "{out}"
    );
    assert!(
        out.contains("<input disabled=\"\" type=\"checkbox\"/>"),
        "{out}"
    );
}

#[test]
fn footnotes_are_numbered_by_reference_and_gathered_at_the_end() {
    let md = "[^b]: Second note.\n\nFirst[^a] then second[^b].\n\n[^a]: First note.\n\nAfter.\n";
    let out = html(md);
    assert!(out.contains("<a href=\"#fn-a\">1</a>"), "{out}");
    assert!(out.contains("<a href=\"#fn-b\">2</a>"), "{out}");
    let section = out
        .find("<section class=\"footnotes\">")
        .expect("footnote section");
    assert!(
        out.find("<p>After.</p>").expect("body text") < section,
        "{out}"
    );
    let first = out.find("id=\"fn-a\"").expect("definition a");
    let second = out.find("id=\"fn-b\"").expect("definition b");
    assert!(section < first && first < second, "{out}");
    assert!(out.trim_end().ends_with("</section>"), "{out}");
}

#[test]
fn no_footnote_section_without_footnotes() {
    assert!(!html("plain text\n").contains("footnotes"));
}

#[test]
fn headings_get_ids_anchor_links_and_plain_text() {
    let rendered = render_html("## Why `batch_size` *matters*\n");
    assert_eq!(
        rendered.headings,
        vec![Heading {
            level: 2,
            id: "why-batch_size-matters".into(),
            text: "Why batch_size matters".into(),
        }]
    );
    assert!(rendered.html.starts_with(
        "<h2 id=\"why-batch_size-matters\">Why <code>batch_size</code> <em>matters</em>"
    ));
    assert!(rendered.html.contains(
        "<a class=\"anchor\" href=\"#why-batch_size-matters\" aria-labelledby=\"why-batch_size-matters\">#</a></h2>"
    ));
}

#[test]
fn chinese_and_spanish_heading_ids() {
    let rendered = render_html(
        "# 显存不足的原因\n\n### ¿Qué hace `batch_size`?\n\n## 为什么会 OOM？（原因）\n",
    );
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        ["显存不足的原因", "qué-hace-batch_size", "为什么会-oom-原因"]
    );
    let levels: Vec<u8> = rendered.headings.iter().map(|h| h.level).collect();
    assert_eq!(levels, [1, 3, 2]);
    assert!(rendered.html.contains("<h1 id=\"显存不足的原因\">"));
}

#[test]
fn duplicate_headings_get_numbered_ids() {
    let rendered = render_html("## Fix\n\n## Fix\n\n## Fix\n\n## Fix 1\n");
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["fix", "fix-1", "fix-2", "fix-1-1"]);
}

#[test]
fn explicit_heading_ids_are_kept_and_avoided() {
    let rendered = render_html("## Setup\n\n## Other {#setup .wide}\n");
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["setup-1", "setup"]);
    assert_eq!(rendered.headings[1].text, "Other");
    assert!(rendered
        .html
        .contains("<h2 id=\"setup\" class=\"wide\">Other"));
}

#[test]
fn heading_text_skips_raw_html_tags() {
    let rendered = render_html(
        "## Logits: <span class=\"figure\" title=\"6,593,445,888 bytes\">6.14 GiB</span>\n",
    );
    assert_eq!(rendered.headings[0].text, "Logits: 6.14 GiB");
    assert_eq!(rendered.headings[0].id, "logits-6-14-gib");
}

#[test]
fn headings_without_letters_still_get_an_id() {
    let rendered = render_html("## ???\n\n## !!!\n");
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(ids, ["section", "section-1"]);
}

#[test]
fn slugs() {
    assert_eq!(slugify("¿Qué hace batch_size?"), "qué-hace-batch_size");
    assert_eq!(slugify("显存不足的原因"), "显存不足的原因");
    assert_eq!(slugify("  Peak -- memory (GiB)  "), "peak-memory-gib");
    assert_eq!(slugify("Ünïcödé ÉTÉ"), "ünïcödé-été");
}

#[test]
fn known_language_is_highlighted_with_classes() {
    let out = html("```python\nbatch_size = 8  # was 16\n```\n");
    assert!(
        out.starts_with(
            "<pre class=\"code\" tabindex=\"0\" data-lang=\"python\"><code class=\"language-python\">"
        ),
        "{out}"
    );
    assert!(out.contains("<span class=\"hl-"), "{out}");
    assert!(out.contains("hl-comment"), "{out}");
    assert!(out.trim_end().ends_with("</code></pre>"), "{out}");
    assert!(
        !out.contains("style="),
        "class-based, no inline colours: {out}"
    );
}

#[test]
fn language_tokens_match_extensions_and_aliases() {
    for lang in ["py", "bash", "shell", "yaml", "rust"] {
        let out = html(&format!("```{lang}\nx = 1\n```\n"));
        assert!(out.contains("<span class=\"hl-"), "{lang}: {out}");
        assert!(
            out.contains(&format!("data-lang=\"{lang}\"")),
            "{lang}: {out}"
        );
    }
}

/// Runs of text that lie inside a `<span>` carrying `class` (nested spans included), in order.
fn spans_with_class(html: &str, class: &str) -> Vec<String> {
    let mut runs = Vec::new();
    let mut current = String::new();
    let mut stack: Vec<bool> = Vec::new();
    let mut rest = html;
    while !rest.is_empty() {
        let inside = stack.iter().any(|has| *has);
        if let Some(tag_rest) = rest.strip_prefix('<') {
            let end = tag_rest.find('>').map_or(tag_rest.len(), |i| i + 1);
            let tag = &tag_rest[..end];
            if let Some(attrs) = tag.strip_prefix("span class=\"") {
                let classes = &attrs[..attrs.find('"').unwrap_or(attrs.len())];
                stack.push(classes.split(' ').any(|c| c == class));
            } else if tag.starts_with("/span") {
                stack.pop();
            }
            rest = &tag_rest[end..];
        } else {
            let end = rest.find('<').unwrap_or(rest.len());
            if inside {
                current.push_str(&rest[..end]);
            } else if !current.is_empty() {
                runs.push(std::mem::take(&mut current));
            }
            rest = &rest[end..];
        }
        if !stack.iter().any(|has| *has) && !current.is_empty() {
            runs.push(std::mem::take(&mut current));
        }
    }
    runs
}

#[test]
fn python_keywords_are_whole_words_only() {
    let out = html("```python\niffy = format_x if is_ok else None\nfor x in range(3): pass\n```\n");
    assert_eq!(
        spans_with_class(&out, "hl-keyword"),
        ["=", "if", "else", "for", "in", "pass"]
    );
    assert_eq!(spans_with_class(&out, "hl-constant"), ["None", "3"]);
    assert_eq!(spans_with_class(&out, "hl-support"), ["range"]);
}

#[test]
fn python_strings_comments_and_definitions() {
    let md = "```python\ndef f(x='a#b'):  # real comment\n    return \"\"\"two\nlines\"\"\" + r\"\\d\"\n```\n";
    let out = html(md);
    assert_eq!(spans_with_class(&out, "hl-comment"), ["# real comment\n"]);
    assert_eq!(spans_with_class(&out, "hl-entity"), ["f"]);
    assert_eq!(spans_with_class(&out, "hl-storage"), ["def"]);
    let strings = spans_with_class(&out, "hl-string").concat();
    assert!(strings.contains("a#b"), "{out}");
    assert!(strings.contains("two\nlines"), "{out}");
}

#[test]
fn shell_comments_options_and_variables() {
    let md = "```bash\nexport CUDA_VISIBLE_DEVICES=0  # first GPU\npython train.py --batch_size=8 url#frag \"$HOME\"\n```\n";
    let out = html(md);
    assert_eq!(spans_with_class(&out, "hl-comment"), ["# first GPU\n"]);
    assert_eq!(spans_with_class(&out, "hl-parameter"), ["--batch_size"]);
    assert_eq!(spans_with_class(&out, "hl-support"), ["export"]);
    assert_eq!(
        spans_with_class(&out, "hl-variable"),
        ["CUDA_VISIBLE_DEVICES", "--batch_size", "$HOME"]
    );
    assert!(out.contains("url#frag"), "{out}");
}

#[test]
fn python_names_with_non_ascii_letters_stay_whole() {
    // Names are matched with ASCII classes plus "any non-ASCII character": a keyword inside a
    // name that uses Chinese letters is still not a keyword.
    let out = html("```python\n批次if = 变量 + 1\nprint(形状)\n```\n");
    assert_eq!(spans_with_class(&out, "hl-keyword"), ["=", "+"]);
    assert_eq!(spans_with_class(&out, "hl-constant"), ["1"]);
    assert_eq!(spans_with_class(&out, "hl-support"), ["print"]);
}

#[test]
fn yaml_keys_scalars_and_comments() {
    let md = "```yaml\n# nanoGPT config\nn_layer: 12  # depth\nlr: 6e-4\ncompile: true\nout_dir: out-shakespeare#1\ngpu: \"a100-80gb\"\nlayers:\n  - name: attn\n  - 3\nnote: ~\n```\n";
    let out = html(md);
    assert_eq!(
        spans_with_class(&out, "hl-tag"),
        ["n_layer", "lr", "compile", "out_dir", "gpu", "layers", "name", "note"]
    );
    assert_eq!(
        spans_with_class(&out, "hl-comment"),
        ["# nanoGPT config\n", "# depth\n"]
    );
    assert_eq!(
        spans_with_class(&out, "hl-constant"),
        ["12", "6e-4", "true", "3", "~"]
    );
    assert_eq!(
        spans_with_class(&out, "hl-string").concat(),
        "&quot;a100-80gb&quot;"
    );
    assert!(out.contains("out-shakespeare#1"), "{out}");
}

#[test]
fn unknown_or_missing_language_is_escaped_plain_text() {
    let out = html("```nosuchlang\na < b && c\n```\n");
    assert_eq!(
        out,
        "<pre class=\"code\" tabindex=\"0\" data-lang=\"nosuchlang\"><code class=\"language-nosuchlang\">a &lt; b &amp;&amp; c\n</code></pre>\n"
    );
    let out = html("```\nplain\n```\n\n    indented\n");
    assert!(
        out.contains("<pre class=\"code\" tabindex=\"0\"><code>plain\n</code></pre>"),
        "{out}"
    );
    assert!(
        out.contains("<pre class=\"code\" tabindex=\"0\"><code>indented\n</code></pre>"),
        "{out}"
    );
}

#[test]
fn info_string_attributes_do_not_leak_into_the_language() {
    let out = html("```python title=\"train.py\"\nx = 1\n```\n");
    assert!(out.contains("data-lang=\"python\""), "{out}");
    assert!(!out.contains("title"), "{out}");
}

#[test]
fn code_is_escaped_and_never_reinterpreted() {
    let md = "```python\nprint(\"<script>alert(1)</script>\")  # {{ batch_size }}\n```\n\n```\n<script>x</script> {{ y }}\n```\n\nInline `<b>{{ z }}</b>`.\n";
    let out = html(md);
    assert!(!out.contains("<script>"), "{out}");
    assert!(out.contains("&lt;script&gt;"), "{out}");
    assert!(out.contains("{{ batch_size }}"), "{out}");
    assert!(
        out.contains("&lt;script&gt;x&lt;/script&gt; {{ y }}"),
        "{out}"
    );
    assert!(
        out.contains("<code>&lt;b&gt;{{ z }}&lt;/b&gt;</code>"),
        "{out}"
    );
}

#[test]
fn inline_raw_html_and_svg_images_pass_through() {
    let md = "Logits take <span class=\"figure\" title=\"6,593,445,888 bytes\">6.14 GiB</span>.\n\n![Breakdown](breakdown.svg)\n";
    let out = html(md);
    assert!(
        out.contains("<span class=\"figure\" title=\"6,593,445,888 bytes\">6.14 GiB</span>"),
        "{out}"
    );
    assert!(
        out.contains("<img src=\"breakdown.svg\" alt=\"Breakdown\" />"),
        "{out}"
    );
}

#[test]
fn smart_punctuation_is_off() {
    let out = html("Set \"dtype\" to 'bfloat16' -- or not...\n");
    assert!(out.contains("\"dtype\""), "{out}");
    assert!(out.contains("'bfloat16' -- or not..."), "{out}");
}

/// The `--name: #rrggbb` declarations of a CSS block.
fn colour_vars(block: &str) -> BTreeMap<String, String> {
    block
        .split(';')
        .filter_map(|decl| {
            let decl = decl.rsplit(['{', '}']).next()?;
            let (name, value) = decl.split_once(':')?;
            let (name, value) = (name.trim(), value.trim());
            (name.starts_with("--") && value.starts_with('#') && value.len() == 7)
                .then(|| (name.to_string(), value.to_string()))
        })
        .collect()
}

/// WCAG 2 contrast ratio of two `#rrggbb` colours.
fn contrast(a: &str, b: &str) -> f64 {
    let luminance = |hex: &str| {
        let channel = |i: usize| {
            let c = f64::from(u8::from_str_radix(&hex[i..i + 2], 16).unwrap()) / 255.0;
            if c <= 0.03928 {
                c / 12.92
            } else {
                ((c + 0.055) / 1.055).powf(2.4)
            }
        };
        0.2126 * channel(1) + 0.7152 * channel(3) + 0.0722 * channel(5)
    };
    let (x, y) = (luminance(a), luminance(b));
    (x.max(y) + 0.05) / (x.min(y) + 0.05)
}

/// Token colours are variables set once per scheme, and every one of them (and the code's own
/// text colour) reads at WCAG AA (4.5:1) on the code background of its scheme.
#[test]
fn highlight_colours_are_readable_in_both_schemes() {
    let css = highlight_css();
    let site_css = include_str!("../../static/style.css");
    let dark_at = |s: &str| {
        // `@media screen and (prefers-color-scheme: dark)`: paper stays light.
        s.find("(prefers-color-scheme: dark)").expect("dark block")
    };
    let (light_hl, dark_hl) = css.split_at(dark_at(&css));
    let (light_site, dark_site) = site_css.split_at(dark_at(site_css));
    for (scheme, hl, site) in [
        ("light", light_hl, light_site),
        ("dark", dark_hl, dark_site),
    ] {
        let mut hl = colour_vars(hl);
        let site = colour_vars(site);
        assert!(hl.len() >= 6, "{scheme}: token colours {hl:?}");
        let bg = &site["--code-bg"];
        hl.insert("--fg".to_string(), site["--fg"].clone());
        for (name, colour) in &hl {
            let ratio = contrast(colour, bg);
            assert!(
                ratio >= 4.5,
                "{scheme}: {name} {colour} on {bg} is {ratio:.2}:1"
            );
        }
    }
    assert_eq!(
        colour_vars(light_hl).keys().collect::<Vec<_>>(),
        colour_vars(dark_hl).keys().collect::<Vec<_>>()
    );
    // Token rules only name variables, so the schemes cannot outrank each other.
    for line in css.lines().filter(|l| l.starts_with(".hl-")) {
        assert!(line.contains("var(--hl-"), "{line}");
    }
    assert_eq!(css.matches('{').count(), css.matches('}').count());
}

#[test]
fn stray_markers_after_cjk_punctuation_are_detected() {
    // The closing `**` follows a punctuation mark and precedes a letter, so CommonMark
    // cannot close the emphasis: both markers stay literal.
    let out = html("**注意：**显存不足时先减小 batch_size。\n");
    assert!(!out.contains("<strong>"), "{out}");
    let found = stray_emphasis_markers(&out);
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].contains("**注意：**显存"), "{found:?}");
}

#[test]
fn stray_markers_with_spanish_quotes_and_underscores() {
    let out = html("Es **“importante”**ya.\n\nY __nota:__dato.\n");
    let found = stray_emphasis_markers(&out);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].contains("**“importante”**ya"), "{found:?}");
    assert!(found[1].contains("__nota:__dato"), "{found:?}");
}

#[test]
fn valid_emphasis_and_code_are_not_stray_markers() {
    let md = "**注意：** 显存不足。\n\n`f(**kwargs)` and `__init__`\n\n```python\ndef f(**kwargs): return __name__\n```\n\n<span title=\"a**b\">x</span>\n";
    let out = html(md);
    assert!(out.contains("<strong>注意：</strong>"), "{out}");
    assert_eq!(stray_emphasis_markers(&out), Vec::<String>::new());
}

#[test]
fn distant_stray_markers_are_reported_separately() {
    let text = format!("**a:**b {} **c:**d", "x".repeat(40));
    let found = stray_emphasis_markers(&html(&text));
    assert_eq!(found.len(), 2, "{found:?}");
}

const GUIDE: &str = r#"# 显存不足：原因与对策

The logits buffer alone takes <span class="figure" title="6,593,445,888 bytes">6.14 GiB</span>[^shape].

## ¿Qué hace `batch_size`?

| Option | batch_size | Peak |
|--------|-----------:|-----:|
| current | 16 | ~~10 GiB~~ 12.3 GiB |
| smaller | 8 | 7.1 GiB |

- [x] lower `batch_size`
- [ ] enable `flash`

```python
batch_size = 8                    # was 16
gradient_accumulation_steps = 64  # keeps the effective batch at 512
```

![Peak memory by micro-batch size](sweep.svg)

## ¿Qué hace `batch_size`?

```text
{{ not_a_placeholder }} <b>bold?</b>
```

[^shape]: Shape (65536, 50304) in bf16.
"#;

#[test]
fn representative_guide_snapshot() {
    let rendered = render_html(GUIDE);
    insta::assert_snapshot!(rendered.html);
    let ids: Vec<&str> = rendered.headings.iter().map(|h| h.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "显存不足-原因与对策",
            "qué-hace-batch_size",
            "qué-hace-batch_size-1"
        ]
    );
}

#[test]
fn rendering_is_deterministic() {
    assert_eq!(render_html(GUIDE), render_html(GUIDE));
}
