//! Chart layout: long labels wrap, text never overlaps, legends stack, ranges shade.

use super::*;

#[test]
fn long_labels_wrap_never_cut_nor_overflowing() {
    let mut chart = breakdown(&ZH, true, &en_format);
    chart.title = "显存".repeat(60);
    chart.segments[0].label = "权重".repeat(60);
    for layout in [Layout::Wide, Layout::Narrow] {
        let svg = breakdown_svg_in(&chart, layout).expect("chart");
        let texts = texts(&svg);
        assert!(!texts.iter().any(|t| t.ends_with('…')), "{texts:?}");
        let all = texts.concat();
        assert!(all.contains(&"显存".repeat(60)), "whole title: {texts:?}");
        assert!(all.contains(&"权重".repeat(60)), "whole label: {texts:?}");
        assert!(
            svg.contains(&format!("<title>{}</title>", "显存".repeat(60))),
            "full title kept"
        );
        assert_inside_picture(&svg);
    }
}

/// Text elements' boxes by the generous width estimate do not overlap: (x, y, width, size).
fn assert_no_overlapping_text(svg: &str) {
    let boxes: Vec<(f64, f64, f64, f64)> = tags(svg, "text")
        .zip(texts(svg))
        .filter_map(|(tag, text)| {
            let n = |name| attr(tag, name)?.parse::<f64>().ok();
            let size = n("font-size")?;
            let width = text.chars().count() as f64 * size;
            let x = match attr(tag, "text-anchor") {
                Some("end") => n("x")? - width,
                Some("middle") => n("x")? - width / 2.0,
                _ => n("x")?,
            };
            Some((x, n("y")?, width, size))
        })
        .collect();
    for (i, a) in boxes.iter().enumerate() {
        for b in &boxes[i + 1..] {
            let apart_y = (a.1 - b.1).abs() >= a.3.min(b.3);
            let apart_x = a.0 + a.2 <= b.0 || b.0 + b.2 <= a.0;
            assert!(apart_x || apart_y, "texts at {a:?} and {b:?} overlap");
        }
    }
}

#[test]
fn many_segments_stack_in_the_legend_without_overlap() {
    let format = en_format;
    let chart = BreakdownChart {
        segments: (0..30)
            .map(|i| Segment {
                label: format!("Segment number {i} with a long label: 1.23 GiB"),
                bytes: GIB / 4,
            })
            .collect(),
        ..breakdown(&EN, true, &format)
    };
    for layout in [Layout::Wide, Layout::Narrow] {
        let svg = breakdown_svg_in(&chart, layout).expect("chart");
        assert_inside_picture(&svg);
        let all = texts(&svg).join(" ");
        for i in 0..30 {
            let label = format!("Segment number {i} with a long label: 1.23 GiB");
            assert!(all.contains(&label), "{label} in {all}");
        }
        let mut anchors: Vec<(&str, &str)> = tags(&svg, "text")
            .map(|tag| (attr(tag, "x").unwrap_or(""), attr(tag, "y").unwrap_or("")))
            .collect();
        let count = anchors.len();
        anchors.sort_unstable();
        anchors.dedup();
        assert_eq!(anchors.len(), count, "two texts share a position");
    }
}

#[test]
fn sweep_shades_the_range_only_when_given() {
    let fill = "#B3D4E8";
    let without = drawing(&sweep_svg(&sweep(true, true, &en_format)).expect("chart"));
    assert!(
        !without.to_ascii_uppercase().contains(fill),
        "no band without ranges"
    );
    assert!(!texts(&without).iter().any(|t| t == "范围（上下文与碎片）"));
    let mut chart = sweep(true, true, &en_format);
    for p in &mut chart.points {
        p.range = Some((
            p.peak_bytes - p.peak_bytes / 10,
            p.peak_bytes + p.peak_bytes / 4,
        ));
    }
    let with = sweep_svg(&chart).expect("chart");
    assert!(
        with.to_ascii_uppercase().contains(fill),
        "band drawn: {with}"
    );
    assert_text(&texts(&with), "范围（上下文与碎片）");
    assert_inside_picture(&with);
}

#[test]
fn narrow_drawings_are_360_wide_with_text_for_phones() {
    let breakdown = breakdown(&ES, true, &es_format);
    let sweep = sweep(true, true, &en_format);
    for svg in [
        breakdown_svg_in(&breakdown, Layout::Narrow).expect("chart"),
        sweep_svg_in(&sweep, Layout::Narrow).expect("chart"),
    ] {
        assert_eq!(picture_size(&svg).0, 360.0);
        assert_inside_picture(&svg);
        // Shown 330 px wide or wider (a 390 px phone shows it about 356 px wide), 13 units
        // or more stay at 11 px or more.
        for size in svg.split("font-size=\"").skip(1) {
            let size: f64 = size.split('"').next().unwrap().parse().unwrap();
            assert!(size >= 13.0, "font-size {size}");
        }
    }
}

#[test]
fn sweep_far_above_capacity_keeps_the_axis_near_it_and_writes_the_value() {
    let mut chart = sweep(true, false, &en_format);
    chart.points.push(SweepPoint {
        x: 64,
        peak_bytes: 150 * GIB,
        range: None,
    });
    for layout in [Layout::Wide, Layout::Narrow] {
        let svg = sweep_svg_in(&chart, layout).expect("chart");
        // 11.72 GiB of capacity: the axis stops by 1.6 × 11.72 × 1.08 ≈ 20.3 GiB.
        // The y axis' tick labels are the right-aligned numbers.
        let top = tags(&svg, "text")
            .zip(texts(&svg))
            .filter(|(tag, _)| attr(tag, "text-anchor") == Some("end"))
            .filter_map(|(_, t)| t.parse::<f64>().ok())
            .fold(0.0, f64::max);
        assert!((11.0..=20.3).contains(&top), "ticks reach {top}");
        assert_text(&texts(&svg), "64: 150.00 GiB");
        assert_inside_picture(&svg);
    }
}

#[test]
fn dark_scheme_recolours_every_colour_drawn() {
    let mut chart = sweep(true, true, &en_format);
    for p in &mut chart.points {
        p.range = Some((p.peak_bytes / 2, p.peak_bytes * 2));
    }
    for svg in [
        sweep_svg(&chart).expect("chart"),
        breakdown_svg(&breakdown(&EN, true, &en_format)).expect("chart"),
    ] {
        assert!(svg.contains("@media (prefers-color-scheme: dark)"));
        let body = drawing(&svg);
        for attr in ["fill", "stroke"] {
            for value in body.split(&format!(" {attr}=\"#")).skip(1) {
                let colour = &value[..6];
                let rule = format!("[{attr}=\"#{colour}\"] {{ {attr}: #");
                assert!(svg.contains(&rule), "no dark rule for {attr} #{colour}");
            }
        }
    }
}
