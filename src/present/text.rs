//! Terminal text measure: columns counted with East Asian wide characters as two, and
//! space-separated items wrapped to a line length.

/// Splits space-separated items into lines of at most `max` columns.
pub(crate) fn wrap(items: &[String], max: usize) -> Vec<String> {
    let mut lines = vec![String::new()];
    for item in items {
        let cur = lines.last_mut().expect("lines is never empty");
        if !cur.is_empty() && width(cur) + 1 + width(item) > max {
            lines.push(item.clone());
        } else {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(item);
        }
    }
    lines
}

/// Terminal columns of `s`: East Asian wide and fullwidth characters take two.
pub(crate) fn width(s: &str) -> usize {
    s.chars()
        .map(|c| match c as u32 {
            0x1100..=0x115F
            | 0x2E80..=0x303E
            | 0x3041..=0x33FF
            | 0x3400..=0x4DBF
            | 0x4E00..=0x9FFF
            | 0xA000..=0xA4CF
            | 0xAC00..=0xD7A3
            | 0xF900..=0xFAFF
            | 0xFE30..=0xFE4F
            | 0xFF00..=0xFF60
            | 0xFFE0..=0xFFE6 => 2,
            _ => 1,
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn width_counts_cjk_double() {
        assert_eq!(width("显存 ab"), 7);
        assert_eq!(
            wrap(&["aaa".into(), "bbb".into(), "cc".into()], 7),
            ["aaa bbb", "cc"]
        );
    }
}
