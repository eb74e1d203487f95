//! Text measurement for layout, font sizes, and the SVG touches plotters does not make.
//!
//! Without a font file plotters cannot measure text (and its own guess counts UTF-8 bytes,
//! so Chinese comes out 70 % too wide). Layout here uses a per-character estimate calibrated
//! on DejaVu Sans, the widest common default sans-serif (Arial, Helvetica, Noto and Segoe are
//! narrower): full-width scripts 1 em, Latin lower case about 0.6 em, bold 13 % wider.

use plotters::style::{FontFamily, FontStyle, IntoFont, RGBColor, TextStyle};

/// Font family written into the SVG; browsers fall back to a CJK font for Chinese.
const FAMILY: &str = "sans-serif";
/// plotters writes `font-size = size / 1.24` into the SVG; see [`font`].
const PLOTTERS_SCALE: f64 = 1.24;
/// How much wider bold text is than regular (DejaVu Sans Bold against Book).
const BOLD_FACTOR: f64 = 1.13;
/// Appended to text cut to fit.
const ELLIPSIS: char = '…';

/// Estimated width in pixels of regular `text` at `px` pixels per em (generous, rarely short).
pub(crate) fn text_width(text: &str, px: f64) -> f64 {
    text.chars().map(char_em).sum::<f64>() * px
}

fn char_em(c: char) -> f64 {
    if is_wide(c) {
        1.0
    } else if matches!(
        c,
        ' ' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' | 'i' | 'l' | 'j'
    ) {
        0.34
    } else if matches!(c, 'm' | 'w' | 'M' | 'W' | '%' | '@') {
        1.0
    } else if c.is_uppercase() {
        0.76
    } else if c.is_ascii_digit() {
        0.64
    } else {
        0.6
    }
}

/// East Asian wide and full-width characters (CJK ideographs, kana, hangul, full-width forms).
fn is_wide(c: char) -> bool {
    matches!(c as u32,
        0x1100..=0x115F | 0x2E80..=0xA4CF | 0xAC00..=0xD7A3 | 0xF900..=0xFAFF
        | 0xFE30..=0xFE4F | 0xFF00..=0xFF60 | 0xFFE0..=0xFFE6 | 0x20000..=0x3FFFD)
}

/// The largest whole pixel size in `min..=max` at which `text` (bold or not) fits `width`,
/// and the text itself, cut with an ellipsis if it does not fit even at `min`.
pub(crate) fn fit(text: &str, width: f64, (max, min): (u32, u32), bold: bool) -> (String, u32) {
    let scale = if bold { BOLD_FACTOR } else { 1.0 };
    let width_at = |text: &str, px: u32| text_width(text, f64::from(px)) * scale;
    let mut px = max;
    while px > min && width_at(text, px) > width {
        px -= 1;
    }
    if width_at(text, px) <= width {
        return (text.to_owned(), px);
    }
    let budget = width - width_at("…", px);
    let mut cut = String::new();
    let mut used = 0.0;
    for c in text.chars() {
        used += char_em(c) * f64::from(px) * scale;
        if used > budget {
            break;
        }
        cut.push(c);
    }
    let mut cut = cut.trim_end().to_owned();
    cut.push(ELLIPSIS);
    (cut, px)
}

/// A plotters text style that comes out as `px` in the SVG's `font-size` (plotters divides
/// by 1.24; [`finish_svg`] rounds away the floating-point noise that leaves).
pub(crate) fn font(px: u32, color: RGBColor, bold: bool) -> TextStyle<'static> {
    let style = if bold {
        FontStyle::Bold
    } else {
        FontStyle::Normal
    };
    (
        FontFamily::Name(FAMILY),
        f64::from(px) * PLOTTERS_SCALE,
        style,
    )
        .into_font()
        .color(&color)
}

/// Appends `text` XML-escaped.
pub(crate) fn escape_xml(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '&' => out.push_str("&amp;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
}

/// Finishes plotters' SVG: `<title>` (the accessible name) right after the opening `<svg …>`
/// tag, `role="img"`, and font sizes rounded to two decimals (`15.000000000000002` → `15`).
pub(crate) fn finish_svg(svg: &str, title: &str) -> String {
    let mut out = String::with_capacity(svg.len() + title.len() + 32);
    let mut rest = svg;
    if let Some(close) = svg
        .find("<svg")
        .and_then(|start| svg[start..].find('>').map(|end| start + end))
    {
        out.push_str(&svg[..close]);
        out.push_str(" role=\"img\">\n<title>");
        escape_xml(&mut out, title);
        out.push_str("</title>");
        rest = &svg[close + 1..];
    }
    const ATTR: &str = "font-size=\"";
    while let Some(at) = rest.find(ATTR) {
        let value_start = at + ATTR.len();
        out.push_str(&rest[..value_start]);
        rest = &rest[value_start..];
        let value_end = rest.find('"').unwrap_or(rest.len());
        match rest[..value_end].parse::<f64>() {
            Ok(size) => out.push_str(&format!("{}", (size * 100.0).round() / 100.0)),
            Err(_) => out.push_str(&rest[..value_end]),
        }
        rest = &rest[value_end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cjk_counts_one_em_latin_less() {
        assert_eq!(text_width("激活值", 10.0), 30.0);
        assert!(text_width("abc", 10.0) < 20.0);
    }

    #[test]
    fn fit_shrinks_then_cuts() {
        assert_eq!(fit("ab", 100.0, (20, 10), false), ("ab".to_owned(), 20));
        let (text, px) = fit("显存显存", 60.0, (20, 10), false);
        assert_eq!((text.as_str(), px), ("显存显存", 15));
        // Bold is wider: 4 em × 1.13 at 14 px is 63.28 > 60, at 13 px 58.76.
        let (text, px) = fit("显存显存", 60.0, (20, 10), true);
        assert_eq!((text.as_str(), px), ("显存显存", 13));
        let (text, px) = fit("显存显存显存显存", 45.0, (20, 10), false);
        assert_eq!(px, 10);
        assert_eq!(text, "显存显…");
    }

    #[test]
    fn finish_adds_title_and_rounds_font_sizes() {
        let svg = "<svg width=\"1\" height=\"1\">\n<text font-size=\"15.000000000000002\">x</text>\n</svg>\n";
        assert_eq!(
            finish_svg(svg, "a<b"),
            "<svg width=\"1\" height=\"1\" role=\"img\">\n<title>a&lt;b</title>\n<text font-size=\"15\">x</text>\n</svg>\n"
        );
    }
}
