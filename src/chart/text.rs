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
pub(crate) const BOLD_FACTOR: f64 = 1.13;

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

/// `text` broken into lines no wider than `width` at `px`: at spaces, and anywhere between
/// full-width characters (Chinese has no spaces); a word longer than a line is broken where it
/// must. Nothing is dropped: the lines joined give `text` back, less the spaces broken at.
pub(crate) fn wrap(text: &str, width: f64, px: f64) -> Vec<String> {
    let mut lines = Vec::new();
    let mut line = String::new();
    // Tokens: a run of narrow non-space characters, a single wide character, or one space.
    let mut tokens: Vec<String> = Vec::new();
    for c in text.chars() {
        let joins = !is_wide(c)
            && c != ' '
            && tokens
                .last()
                .and_then(|t| t.chars().last())
                .is_some_and(|last| !is_wide(last) && last != ' ');
        match tokens.last_mut() {
            Some(last) if joins => last.push(c),
            _ => tokens.push(c.to_string()),
        }
    }
    for token in tokens {
        if token == " " {
            if !line.is_empty() {
                line.push(' ');
            }
            continue;
        }
        if line.is_empty() || text_width(&line, px) + text_width(&token, px) <= width {
            line.push_str(&token);
        } else {
            lines.push(line.trim_end().to_owned());
            line = token;
        }
        // A word longer than the whole line: break it by characters.
        while text_width(&line, px) > width && line.chars().count() > 1 {
            let mut head = String::new();
            for c in line.chars() {
                if !head.is_empty() && text_width(&head, px) + char_em(c) * px > width {
                    break;
                }
                head.push(c);
            }
            line = line[head.len()..].to_owned();
            lines.push(head);
        }
    }
    if !line.trim_end().is_empty() || lines.is_empty() {
        lines.push(line.trim_end().to_owned());
    }
    lines
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

/// The `<style>` that swaps every chart colour for its dark-scheme counterpart. Presentation
/// attributes (`fill="#…"`) yield to any style rule, so the SVG reads in both schemes without
/// a second copy, also inside `<img>`, where the page's own CSS cannot reach.
fn dark_style() -> String {
    use super::{BACKGROUND, MARK_INKS, RANGE_COLOR, TEXT_INKS};
    let hex = |c: RGBColor| format!("#{:02X}{:02X}{:02X}", c.0, c.1, c.2);
    let mut seen = Vec::new();
    let mut css = String::from("<style>@media (prefers-color-scheme: dark) {");
    for ink in [BACKGROUND, RANGE_COLOR]
        .iter()
        .chain(&TEXT_INKS)
        .chain(&MARK_INKS)
    {
        if seen.contains(&ink.light) {
            continue;
        }
        seen.push(ink.light);
        let (light, dark) = (hex(ink.light), hex(ink.dark));
        css.push_str(&format!(
            "\n[fill=\"{light}\"] {{ fill: {dark} }} [stroke=\"{light}\"] {{ stroke: {dark} }}"
        ));
    }
    css.push_str("\n}</style>");
    css
}

/// Finishes plotters' SVG: `<title>` (the accessible name) right after the opening `<svg …>`
/// tag, `role="img"`, the `<style>` that recolours the chart in the dark scheme, and font
/// sizes rounded to two decimals (`15.000000000000002` → `15`).
pub(crate) fn finish_svg(svg: &str, title: &str) -> String {
    let mut out = String::with_capacity(svg.len() + title.len() + 32);
    let mut rest = svg;
    if let Some(close) = svg
        .find("<svg")
        .and_then(|start| svg[start..].find('>').map(|end| start + end))
    {
        out.push_str(&svg[..close]);
        out.push_str(" role=\"img\">\n<title>");
        // The site's one escaper: its entities are valid XML too.
        crate::markdown::escape_html(&mut out, title);
        out.push_str("</title>\n");
        out.push_str(&dark_style());
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
    fn finish_adds_title_style_and_rounds_font_sizes() {
        let svg = "<svg width=\"1\" height=\"1\">\n<text font-size=\"15.000000000000002\">x</text>\n</svg>\n";
        let done = finish_svg(svg, "a<b");
        assert!(done.starts_with(
            "<svg width=\"1\" height=\"1\" role=\"img\">\n<title>a&lt;b</title>\n<style>"
        ));
        assert!(done.ends_with("</style>\n<text font-size=\"15\">x</text>\n</svg>\n"));
        assert!(
            done.contains("[fill=\"#FFFFFF\"] { fill: #14171B }"),
            "{done}"
        );
    }

    #[test]
    fn wrap_breaks_at_spaces_and_between_wide_characters() {
        assert_eq!(wrap("ab cd", 1000.0, 10.0), ["ab cd"]);
        assert_eq!(wrap("aaaa bbbb", 30.0, 10.0), ["aaaa", "bbbb"]);
        // The space counts: "aaa" and "bbb" fit 36 side by side, not with a space between.
        assert_eq!(wrap("aaa bbb", 36.0, 10.0), ["aaa", "bbb"]);
        assert_eq!(wrap("显存显存", 25.0, 10.0), ["显存", "显存"]);
        let long = "x".repeat(20);
        let lines = wrap(&long, 30.0, 10.0);
        assert!(lines.len() > 1 && lines.concat() == long, "{lines:?}");
        assert_eq!(wrap("", 30.0, 10.0), [""]);
    }

    /// WCAG 2 contrast ratio of two colours.
    fn contrast(a: RGBColor, b: RGBColor) -> f64 {
        let lum = |c: RGBColor| {
            let f = |v: u8| {
                let v = f64::from(v) / 255.0;
                if v <= 0.03928 {
                    v / 12.92
                } else {
                    ((v + 0.055) / 1.055).powf(2.4)
                }
            };
            0.2126 * f(c.0) + 0.7152 * f(c.1) + 0.0722 * f(c.2)
        };
        let (x, y) = (lum(a), lum(b));
        (x.max(y) + 0.05) / (x.min(y) + 0.05)
    }

    #[test]
    fn colours_keep_their_contrast_in_both_schemes() {
        use super::super::{BACKGROUND, MARK_INKS, TEXT_INKS};
        for (inks, least) in [(&TEXT_INKS[..], 4.5), (&MARK_INKS[..], 3.0)] {
            for ink in inks {
                let light = contrast(ink.light, BACKGROUND.light);
                let dark = contrast(ink.dark, BACKGROUND.dark);
                assert!(
                    light >= least && dark >= least,
                    "{ink:?}: {light:.2} and {dark:.2}"
                );
            }
        }
    }
}
