//! Charts: localized labels in en/es/zh, capacity and largest-fit markers, determinism,
//! degenerate inputs, and values far above capacity.

use vramdoc::chart::{
    breakdown_svg, breakdown_svg_in, sweep_svg, sweep_svg_in, BreakdownChart, ChartError, Layout,
    Segment, SweepChart, SweepPoint,
};

const GIB: u64 = 1 << 30;
/// Documented colours of the capacity line and the largest-fit marker.
const CAPACITY_STROKE: &str = "stroke=\"#C00020\"";
const FIT_STROKE: &str = "stroke=\"#009E73\"";

fn en_format(v: f64) -> String {
    format!("{v:.1}")
}

fn es_format(v: f64) -> String {
    format!("{v:.1}").replace('.', ",")
}

/// The contents of every `<text>` element, trimmed.
fn texts(svg: &str) -> Vec<String> {
    svg.split("<text")
        .skip(1)
        .filter_map(|chunk| {
            let start = chunk.find('>')? + 1;
            let end = chunk.find("</text>")?;
            Some(chunk[start..end].trim().to_owned())
        })
        .collect()
}

/// The attribute text of every element named `name` (`""` for all elements).
fn tags<'a>(svg: &'a str, name: &'a str) -> impl Iterator<Item = &'a str> + 'a {
    svg.split('<')
        .skip(1)
        .filter(move |tag| tag.starts_with(name) && !tag.starts_with('/'))
        .map(|tag| &tag[..tag.find('>').unwrap_or(tag.len())])
}

/// The value of attribute `name` in `tag`.
fn attr<'a>(tag: &'a str, name: &str) -> Option<&'a str> {
    let key = format!(" {name}=\"");
    let start = tag.find(&key)? + key.len();
    Some(&tag[start..start + tag[start..].find('"')?])
}

/// The vertices of a `points="x,y x,y"` attribute.
fn points(tag: &str) -> Vec<(f64, f64)> {
    attr(tag, "points")
        .unwrap_or("")
        .split_whitespace()
        .map(|pair| {
            let (x, y) = pair.split_once(',').expect("x,y pair");
            (x.parse().expect("x"), y.parse().expect("y"))
        })
        .collect()
}

/// Every coordinate the SVG places something at (vertices, anchors, rectangle corners).
fn coordinates(svg: &str) -> Vec<(f64, f64)> {
    let number = |tag: &str, name: &str| attr(tag, name)?.parse::<f64>().ok();
    let mut out = Vec::new();
    for tag in tags(svg, "") {
        out.extend(points(tag));
        for (x, y) in [("x", "y"), ("cx", "cy")] {
            if let (Some(x), Some(y)) = (number(tag, x), number(tag, y)) {
                out.push((x, y));
                if let (Some(w), Some(h)) = (number(tag, "width"), number(tag, "height")) {
                    out.push((x + w, y + h));
                }
            }
        }
    }
    out
}

fn assert_text(texts: &[String], label: &str) {
    assert!(
        texts.iter().any(|t| t == label),
        "{label:?} not among {texts:?}"
    );
}

/// The SVG without its `<style>` (which names every colour for the dark scheme).
fn drawing(svg: &str) -> String {
    match (svg.find("<style>"), svg.find("</style>")) {
        (Some(a), Some(b)) => format!("{}{}", &svg[..a], &svg[b + "</style>".len()..]),
        _ => svg.to_owned(),
    }
}

/// The picture's size from the `<svg>` tag.
fn picture_size(svg: &str) -> (f64, f64) {
    let tag = tags(svg, "svg").next().expect("svg tag");
    let number = |name| attr(tag, name).and_then(|v| v.parse().ok()).expect("size");
    (number("width"), number("height"))
}

fn assert_inside_picture(svg: &str) {
    let (width, height) = picture_size(svg);
    let coords = coordinates(svg);
    assert!(coords.len() > 10, "expected a drawing, found {coords:?}");
    for (x, y) in coords {
        let inside = (0.0..=width).contains(&x) && (0.0..=height).contains(&y);
        assert!(inside, "({x}, {y}) outside {width}×{height}");
    }
}

/// Total length of the polylines drawn with `stroke` (dashed lines are many short ones).
fn stroke_length(svg: &str, stroke: &str) -> f64 {
    tags(svg, "polyline")
        .filter(|tag| tag.contains(stroke))
        .flat_map(|tag| {
            let vertices = points(tag);
            let lengths: Vec<f64> = vertices
                .windows(2)
                .map(|p| (p[1].0 - p[0].0).hypot(p[1].1 - p[0].1))
                .collect();
            lengths
        })
        .sum()
}

/// Centres of the `<circle>`s whose tag contains all of `parts`.
fn circles(svg: &str, parts: &[&str]) -> Vec<(String, String)> {
    tags(svg, "circle")
        .filter(|tag| parts.iter().all(|p| tag.contains(p)))
        .map(|tag| {
            let centre = |name| attr(tag, name).unwrap_or_default().to_owned();
            (centre("cx"), centre("cy"))
        })
        .collect()
}

/// The largest tick value among the text labels that parse as numbers.
fn largest_tick(svg: &str) -> f64 {
    texts(svg)
        .iter()
        .filter_map(|t| t.replace(',', ".").parse::<f64>().ok())
        .fold(f64::NEG_INFINITY, f64::max)
}

struct Labels {
    title: &'static str,
    axis: &'static str,
    /// Segment labels separated by `|`.
    segments: &'static str,
    capacity: &'static str,
}

const EN: Labels = Labels {
    title: "Training memory at batch_size 16: peak 12.31 GiB",
    axis: "GiB",
    segments: "Weights|Gradients|Optimizer state|Activations|Logits|CUDA overhead",
    capacity: "RTX 4070: 11.72 GiB",
};
const ES: Labels = Labels {
    title: "Memoria de entrenamiento con batch_size 16: pico 12,31 GiB",
    axis: "GiB",
    segments: "Pesos|Gradientes|Estado del optimizador|Activaciones|Logits|Sobrecarga de CUDA",
    capacity: "RTX 4070: 11,72 GiB",
};
const ZH: Labels = Labels {
    title: "batch_size 为 16 时的训练显存：峰值 12.31 GiB",
    axis: "GiB",
    segments: "权重|梯度|优化器状态|激活值|logits|CUDA 开销",
    capacity: "RTX 4070：11.72 GiB",
};

fn breakdown<'a>(
    labels: &Labels,
    capacity: bool,
    format: &'a dyn Fn(f64) -> String,
) -> BreakdownChart<'a> {
    let bytes = [GIB / 4, GIB / 4, GIB, 9 * GIB / 2, 6_593_445_888, GIB / 2];
    BreakdownChart {
        title: labels.title.into(),
        axis_label: labels.axis.into(),
        segments: labels
            .segments
            .split('|')
            .zip(bytes)
            .map(|(label, bytes)| Segment {
                label: label.into(),
                bytes,
            })
            .collect(),
        capacity: capacity.then(|| (labels.capacity.into(), 12_584_878_080)),
        format_gib: format,
    }
}

fn sweep<'a>(capacity: bool, max_fit: bool, format: &'a dyn Fn(f64) -> String) -> SweepChart<'a> {
    SweepChart {
        title: "不同微批大小下的峰值显存".into(),
        x_label: "微批大小（batch_size）".into(),
        y_label: "峰值显存（GiB）".into(),
        series_label: "峰值显存".into(),
        range_label: "范围（上下文与碎片）".into(),
        points: [1u64, 2, 4, 8, 16, 32]
            .iter()
            .map(|&x| SweepPoint {
                x,
                peak_bytes: GIB + x * 700 * (1 << 20),
                range: None,
            })
            .collect(),
        capacity: capacity.then(|| ("RTX 4070：11.72 GiB".into(), 12_584_878_080)),
        max_fit: max_fit.then(|| ("能放下的最大值：8".into(), 8)),
        format_gib: format,
        format_x: &|x| x.to_string(),
        format_bytes: &|b| format!("{:.2} GiB", b as f64 / GIB as f64),
        log2_x: true,
    }
}

#[test]
fn breakdown_contains_localized_labels_in_every_language() {
    for (labels, format) in [
        (&EN, &en_format as &dyn Fn(f64) -> String),
        (&ES, &es_format),
        (&ZH, &en_format),
    ] {
        let svg = breakdown_svg(&breakdown(labels, true, format)).expect("chart");
        let texts = texts(&svg);
        let expected = labels
            .segments
            .split('|')
            .chain([labels.capacity, labels.axis]);
        for label in expected {
            assert_text(&texts, label);
        }
        assert!(
            svg.contains(&format!("<title>{}</title>", labels.title)),
            "title element"
        );
        assert!(texts.join(" ").contains(labels.title), "title (wrapped)");
        assert!(
            !texts.iter().any(|t| t.ends_with('…')),
            "nothing cut: {texts:?}"
        );
        assert_inside_picture(&svg);
    }
}

#[test]
fn spanish_ticks_use_the_given_formatter() {
    let svg = breakdown_svg(&breakdown(&ES, true, &es_format)).expect("chart");
    let texts = texts(&svg);
    assert_text(&texts, "0,0");
    assert!(!texts.iter().any(|t| t == "0.0"), "{texts:?}");
}

#[test]
fn sweep_contains_localized_labels_and_power_of_two_ticks() {
    let svg = sweep_svg(&sweep(true, true, &en_format)).expect("chart");
    let texts = texts(&svg);
    for label in [
        "峰值显存",
        "微批大小（batch_size）",
        "峰值显存（GiB）",
        "RTX 4070：11.72 GiB",
        "能放下的最大值：8",
    ] {
        assert_text(&texts, label);
    }
    for tick in ["1", "2", "4", "8", "16", "32"] {
        assert_text(&texts, tick);
    }
    assert!(svg.contains("<title>不同微批大小下的峰值显存</title>"));
    assert_inside_picture(&svg);
}

#[test]
fn sweep_labels_in_english_and_spanish() {
    for (series, x_label, fit) in [
        (
            "peak memory",
            "micro-batch size (batch_size)",
            "largest that fits: 8",
        ),
        (
            "memoria pico",
            "tamaño del microlote (batch_size)",
            "el mayor que cabe: 8",
        ),
    ] {
        let chart = SweepChart {
            series_label: series.into(),
            x_label: x_label.into(),
            max_fit: Some((fit.into(), 8)),
            ..sweep(true, true, &es_format)
        };
        let texts = texts(&sweep_svg(&chart).expect("chart"));
        for label in [series, x_label, fit] {
            assert_text(&texts, label);
        }
    }
}

#[test]
fn capacity_line_only_when_given() {
    // The legend key is a 24-unit dashed stroke; the line itself spans the plot.
    let with = breakdown_svg(&breakdown(&EN, true, &en_format)).expect("chart");
    let without = breakdown_svg(&breakdown(&EN, false, &en_format)).expect("chart");
    assert!(stroke_length(&with, CAPACITY_STROKE) > 100.0, "{with}");
    assert_eq!(stroke_length(&without, CAPACITY_STROKE), 0.0);
    assert!(!texts(&without).iter().any(|t| t == EN.capacity));

    let with = sweep_svg(&sweep(true, false, &en_format)).expect("chart");
    let without = sweep_svg(&sweep(false, false, &en_format)).expect("chart");
    assert!(stroke_length(&with, CAPACITY_STROKE) > 300.0, "{with}");
    assert_eq!(stroke_length(&without, CAPACITY_STROKE), 0.0);
}

#[test]
fn max_fit_marker_only_when_given() {
    let with = sweep_svg(&sweep(true, true, &en_format)).expect("chart");
    let without = sweep_svg(&sweep(true, false, &en_format)).expect("chart");
    // Legend ring, vertical line, ring around the point at x = 8.
    assert_eq!(drawing(&with).matches(FIT_STROKE).count(), 3, "{with}");
    assert!(!drawing(&without).contains(FIT_STROKE));
    assert!(!texts(&without).iter().any(|t| t.starts_with("能放下")));

    // The ring sits on the fourth data point (x = 1, 2, 4, 8): same centre.
    let mut points = circles(&with, &["r=\"4\"", "fill=\"#0072B2\""]);
    points.sort_by_key(|(cx, _)| cx.parse::<i64>().unwrap_or(0));
    let rings = circles(&with, &["r=\"9\"", FIT_STROKE]);
    // The legend's dot is the first circle drawn left of every data point; x = 32 (22.9 GiB)
    // is beyond the axis, which stops at 1.6 × the capacity, so it has no dot.
    assert_eq!(
        points.len(),
        6,
        "five points and the legend dot: {points:?}"
    );
    assert_eq!(rings, vec![points[4].clone()], "ring on x = 8");
}

#[test]
fn same_input_gives_identical_bytes() {
    let a = breakdown_svg(&breakdown(&ZH, true, &en_format)).expect("chart");
    let b = breakdown_svg(&breakdown(&ZH, true, &en_format)).expect("chart");
    assert_eq!(a, b);
    let a = sweep_svg(&sweep(true, true, &es_format)).expect("chart");
    let b = sweep_svg(&sweep(true, true, &es_format)).expect("chart");
    assert_eq!(a, b);
}

#[test]
fn labels_are_xml_escaped_literal_text() {
    let mut chart = breakdown(&EN, true, &en_format);
    chart.segments[0].label = "<weights> & \"bias\"".into();
    chart.title = "a < b".into();
    let svg = breakdown_svg(&chart).expect("chart");
    assert!(
        svg.contains("&lt;weights&gt; &amp; &quot;bias&quot;"),
        "{svg}"
    );
    assert!(svg.contains("<title>a &lt; b</title>"));
    assert!(!svg.contains("<weights>"));
}

#[test]
fn font_sizes_are_clean_numbers() {
    let svg = sweep_svg(&sweep(true, true, &en_format)).expect("chart");
    for size in svg.split("font-size=\"").skip(1) {
        let value = &size[..size.find('"').expect("closing quote")];
        assert!(value.len() <= 5, "noisy font size {value}");
    }
}

#[test]
fn empty_inputs_are_errors() {
    let mut chart = breakdown(&EN, true, &en_format);
    chart.segments.clear();
    assert_eq!(breakdown_svg(&chart), Err(ChartError::NoSegments));

    let mut chart = sweep(true, true, &en_format);
    chart.points.clear();
    assert_eq!(sweep_svg(&chart), Err(ChartError::NoPoints));
}

#[test]
fn bad_sweep_points_are_errors_that_explain() {
    let mut chart = sweep(true, false, &en_format);
    chart.points.swap(1, 2);
    let error = sweep_svg(&chart).expect_err("unsorted");
    assert_eq!(
        error,
        ChartError::UnsortedX {
            previous: 4,
            next: 2
        }
    );
    assert!(error.to_string().contains("ascending"), "{error}");

    let mut chart = sweep(true, false, &en_format);
    chart.points[0].x = 0;
    assert_eq!(sweep_svg(&chart), Err(ChartError::ZeroOnLogAxis));
    chart.log2_x = false;
    assert!(sweep_svg(&chart).is_ok(), "x = 0 is fine on a linear axis");
}

#[test]
fn zero_and_single_values_give_a_sensible_chart() {
    let mut chart = breakdown(&EN, false, &en_format);
    for segment in &mut chart.segments {
        segment.bytes = 0;
    }
    let svg = breakdown_svg(&chart).expect("all-zero breakdown");
    assert!(largest_tick(&svg) > 0.0, "axis still has a range");
    assert_inside_picture(&svg);

    for log2_x in [true, false] {
        let chart = SweepChart {
            points: vec![SweepPoint {
                x: 4,
                peak_bytes: 0,
                range: None,
            }],
            log2_x,
            ..sweep(false, false, &en_format)
        };
        let svg = sweep_svg(&chart).expect("single zero point");
        assert!(texts(&svg).iter().any(|t| t == "4"), "tick at the only x");
        assert_inside_picture(&svg);
    }
}

#[test]
fn values_far_above_capacity_stay_on_the_axis() {
    // 80 GiB of activations against a 12 GiB card: the axis must reach the bar's end.
    let mut chart = breakdown(&EN, true, &en_format);
    chart.segments[3].bytes = 80 * GIB;
    let total_gib = chart.segments.iter().map(|s| s.bytes).sum::<u64>() as f64 / GIB as f64;
    let svg = breakdown_svg(&chart).expect("chart");
    assert!(
        largest_tick(&svg) >= total_gib * 0.9,
        "ticks reach {} of {total_gib}",
        largest_tick(&svg)
    );
    assert_inside_picture(&svg);

    // And a capacity far above every point: the axis must reach the capacity line.
    let mut chart = sweep(true, true, &en_format);
    chart.capacity = Some(("H200: 140 GiB".into(), 140 * GIB));
    let svg = sweep_svg(&chart).expect("chart");
    assert!(
        largest_tick(&svg) >= 140.0 * 0.9,
        "ticks reach {}",
        largest_tick(&svg)
    );
    assert_inside_picture(&svg);
}

/// Layout: wrapping, overlap, legends and shading.
mod layout;
