//! Charts on built pages agree with the page: the breakdown bar has the table's components and
//! figures, sweeps are linear, mark the largest value that fits over every integer and keep
//! the capacity region readable, and the HTML page offers a narrow drawing to phones.

use crate::support::SiteTest;

/// GPT-2 small in bfloat16 (autocast copies) at micro-batch 16 on a 12 GB card, with a table
/// and the three charts.
const GUIDE: &str = "---\ntitle: \"T\"\nlang: LANG\ndate: 2026-11-20\nscenario:\n  n_layer: 12\n  n_head: 12\n  n_embd: 768\n  block_size: 1024\n  batch_size: 16\n  gradient_accumulation_steps: 32\n  dtype: bfloat16\n  compile: true\n  gpu: rtx-3060-12gb\n---\n\n{{ breakdown_table() }}\n\n{{ chart(\"breakdown\") }}\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n\n{{ chart(\"sweep\", over=\"block_size\") }}\n";

fn site(langs: &[&str]) -> SiteTest {
    let t = SiteTest::new();
    for lang in langs {
        t.file(
            &format!("content/g/{lang}.md"),
            &GUIDE.replace("LANG", lang),
        );
    }
    t.build_ok();
    t
}

/// The words of every `<text>` of an SVG, joined by single spaces (legends wrap labels).
fn svg_words(svg: &str) -> String {
    let words: Vec<&str> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| t.split_once('>')?.1.split("</text>").next())
        .flat_map(str::split_whitespace)
        .collect();
    words.join(" ")
}

/// `(label, figure)` of the table rows in a Markdown edition: the first two cells, tags removed.
fn table_rows(md: &str) -> Vec<(String, String)> {
    let strip = |cell: &str| {
        let mut out = String::new();
        let mut in_tag = false;
        for c in cell.chars() {
            match c {
                '<' => in_tag = true,
                '>' => in_tag = false,
                c if !in_tag => out.push(c),
                _ => {}
            }
        }
        out.replace("**", "").trim().to_owned()
    };
    md.lines()
        .filter(|l| l.starts_with("| "))
        .filter_map(|l| {
            let cells: Vec<&str> = l.split('|').collect();
            Some((strip(cells.get(1)?), strip(cells.get(2)?)))
        })
        .collect()
}

/// The x tick labels of a sweep: the numbers drawn on the x axis, left to right.
fn x_ticks(svg: &str) -> Vec<f64> {
    let mut ticks: Vec<(f64, f64)> = svg
        .split("<text")
        .skip(1)
        .filter_map(|t| {
            let (tag, rest) = t.split_once('>')?;
            if !tag.contains("text-anchor=\"middle\"") {
                return None;
            }
            let value: f64 = rest.split("</text>").next()?.trim().parse().ok()?;
            let x = tag.split("x=\"").nth(1)?.split('"').next()?.parse().ok()?;
            Some((x, value))
        })
        .collect();
    ticks.sort_by(|a, b| a.0.total_cmp(&b.0));
    ticks.into_iter().map(|(_, v)| v).collect()
}

#[test]
fn breakdown_legend_has_the_table_components_and_figures() {
    let t = site(&["en", "es"]);
    for lang in ["en", "es"] {
        let md = t.output(&format!("{lang}/g/index.md"));
        let rows = table_rows(&md);
        for file in ["breakdown.svg", "breakdown-narrow.svg"] {
            let words = svg_words(&t.output(&format!("{lang}/g/{file}")));
            // Every component row of the table (the first six and the overhead), by itself:
            // the autocast copies are their own segment, not folded into the activations.
            let components: Vec<&(String, String)> = rows
                .iter()
                .skip(1)
                .take(6)
                .chain(
                    rows.iter()
                        .filter(|(l, _)| l.starts_with("CUDA") || l.starts_with("Contexto")),
                )
                .collect();
            assert_eq!(components.len(), 7, "{rows:?}");
            for (label, figure) in components {
                let sep = ": ";
                let entry = format!("{label}{sep}{figure}");
                let entry: String = entry.split_whitespace().collect::<Vec<_>>().join(" ");
                assert!(
                    words.contains(&entry),
                    "{lang} {file}: {entry:?} not in {words}"
                );
            }
            assert!(
                !words.contains('…'),
                "{lang} {file}: a label was cut: {words}"
            );
        }
    }
}

#[test]
fn sweeps_are_linear_and_mark_the_largest_fit_over_every_integer() {
    let t = site(&["en"]);
    let svg = t.output("en/g/sweep-batch-size.svg");
    let ticks = x_ticks(&svg);
    assert!(ticks.len() >= 3, "{ticks:?}");
    let steps: Vec<f64> = ticks.windows(2).map(|w| w[1] - w[0]).collect();
    assert!(
        steps.iter().all(|s| (s - steps[0]).abs() < 1e-9),
        "evenly spaced ticks on a linear axis: {ticks:?}"
    );
    let words = svg_words(&svg);
    let fit: u64 = words
        .split("largest whose high end fits: ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no largest-fit label: {words}"));
    // The estimator's own verdicts: `fit` fits, `fit + 1` does not.
    for (batch, verdict) in [(fit, "fits"), (fit + 1, "")] {
        let r = t.run(&[
            "estimate",
            "--set",
            "n_layer=12",
            "--set",
            "n_head=12",
            "--set",
            "n_embd=768",
            "--set",
            "block_size=1024",
            "--set",
            &format!("batch_size={batch}"),
            "--set",
            "gradient_accumulation_steps=32",
            "--set",
            "dtype='bfloat16'",
            "--set",
            "compile=True",
            "--gpu",
            "rtx-3060-12gb",
            "--format",
            "json",
        ]);
        assert_eq!(r.code, 0, "{}", r.stderr);
        let json: serde_json::Value = serde_json::from_str(&r.stdout).expect("json");
        let got = json["verdict"].as_str().unwrap_or_default();
        if verdict == "fits" {
            assert_eq!(got, "fits", "batch {batch}");
        } else {
            assert_ne!(
                got, "fits",
                "batch {batch} fits too: {fit} is not the largest"
            );
        }
    }
    assert!(
        !fit.is_power_of_two(),
        "this scenario's largest fit (11) is not a power of two: {fit}"
    );
}

#[test]
fn sweep_axis_stops_near_the_capacity_and_marks_what_lies_beyond() {
    let t = SiteTest::new();
    t.file(
        "content/big/en.md",
        "---\ntitle: \"Big\"\nlang: en\ndate: 2026-11-20\nscenario:\n  n_layer: 12\n  n_head: 12\n  n_embd: 768\n  block_size: 1024\n  batch_size: 128\n  gpu: rtx-3060-12gb\n---\n\n{{ chart(\"sweep\", over=\"batch_size\") }}\n",
    );
    t.build_ok();
    let svg = t.output("en/big/sweep-batch-size.svg");
    let y_ticks: Vec<f64> = svg
        .split("<text")
        .skip(1)
        .filter(|t| t.contains("text-anchor=\"end\""))
        .filter_map(|t| {
            t.split_once('>')?
                .1
                .split("</text>")
                .next()?
                .trim()
                .parse()
                .ok()
        })
        .collect();
    let top = y_ticks.iter().copied().fold(0.0, f64::max);
    // 11.69 GiB of capacity: the axis ends by 1.6 × 11.69 × 1.08 ≈ 20.2 GiB, far below the
    // total at micro-batch 128.
    assert!(top > 11.0 && top <= 20.2, "y ticks {y_ticks:?}");
    let words = svg_words(&svg);
    assert!(
        words.contains("128: "),
        "the value at 128 is written at the top: {words}"
    );
}

#[test]
fn html_offers_phones_the_narrow_drawing_and_markdown_links_the_wide_one() {
    let t = site(&["en"]);
    // The short answer links the first chart by its id.
    let html = t
        .output("en/g/index.html")
        .replacen("<picture id=\"charts\">", "<picture>", 1);
    for file in ["breakdown", "sweep-batch-size", "sweep-block-size"] {
        let picture = format!(
            "<picture><source media=\"(max-width: 540px)\" srcset=\"{file}-narrow.svg\"><img src=\"{file}.svg\""
        );
        assert!(html.contains(&picture), "{file}: {html}");
        let narrow = t.output(&format!("en/g/{file}-narrow.svg"));
        assert!(narrow.starts_with("<svg width=\"360\""), "{narrow}");
        // Text of 13 units or more: at least 11 px when shown 330 px wide or wider.
        for size in narrow.split("font-size=\"").skip(1) {
            let size: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(size * 330.0 / 360.0 >= 11.0, "{file}: font-size {size}");
        }
        let wide = t.output(&format!("en/g/{file}.svg"));
        for size in wide.split("font-size=\"").skip(1) {
            let size: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(size * 508.0 / 720.0 >= 11.0, "{file}: font-size {size}");
        }
        // Both schemes: the SVG recolours itself for a dark reader.
        assert!(
            wide.contains("@media (prefers-color-scheme: dark)"),
            "{wide}"
        );
    }
    let md = t.output("en/g/index.md");
    assert!(md.contains("/en/g/breakdown.svg)"), "{md}");
    assert!(!md.contains("narrow") && !md.contains("<picture>"), "{md}");
    let css = t.output("style.css");
    assert!(
        !css.contains("background: #fff; border"),
        "the stylesheet no longer forces a white background on charts"
    );
}
