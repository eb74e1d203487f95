//! Tables, one writer per format: [`text_table`] for the terminal (columns padded to one width)
//! and [`markdown_table`] for Markdown, which the page renderer turns into the HTML tables of the
//! site (`vramdoc estimate --format markdown`, `vramdoc diagnose --format markdown` and the
//! guides' blocks all go through it).

use super::text::width;

/// How a column's cells line up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Align {
    /// Markdown's default (`---`); left in the terminal.
    Default,
    /// Left (`:---`).
    Left,
    /// Right (`---:`): numbers and sizes.
    Right,
    /// Centred (`:-:`); left in the terminal.
    Center,
}

impl Align {
    /// The column's cell in a Markdown table's delimiter row.
    fn delimiter(self) -> &'static str {
        match self {
            Align::Default => "---",
            Align::Left => ":---",
            Align::Right => "---:",
            Align::Center => ":-:",
        }
    }
}

/// One row of a terminal table: its cells, or a rule across the table's width.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum TextRow {
    /// One cell per column.
    Cells(Vec<String>),
    /// A line of `─` as wide as the table.
    Rule,
}

/// A terminal table: every line indented by two spaces, the columns padded to their widest cell
/// (East Asian wide characters count two, [`width`]) and two spaces apart, `Right` columns
/// right-aligned, the others left-aligned with no trailing spaces.
pub(crate) fn text_table(rows: &[TextRow], align: &[Align]) -> String {
    let widths = natural_widths(rows, align.len());
    let mut out = String::new();
    for row in rows {
        let TextRow::Cells(cells) = row else {
            let gaps = 2 * widths.len().saturating_sub(1);
            out += &format!("  {}\n", "─".repeat(widths.iter().sum::<usize>() + gaps));
            continue;
        };
        let padded: Vec<String> = cells
            .iter()
            .zip(widths.iter().zip(align))
            .map(|(cell, (w, a))| {
                let pad = " ".repeat(w.saturating_sub(width(cell)));
                if *a == Align::Right {
                    format!("{pad}{cell}")
                } else {
                    format!("{cell}{pad}")
                }
            })
            .collect();
        out += &format!("  {}\n", padded.join("  ").trim_end());
    }
    out
}

/// The terminal's width when standard output is one (set once by the CLI,
/// [`wrap_tables_to`]); unset, tables keep one line per row (piped output, files, tests).
static TERMINAL_COLUMNS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();

/// Makes [`text_table_wrapped`] fit tables to `columns` (at least 80), for a terminal.
pub fn wrap_tables_to(columns: usize) {
    let _ = TERMINAL_COLUMNS.set(columns.max(80));
}

/// [`text_table`], or, on a terminal ([`wrap_tables_to`]), [`text_table_within`] its width.
pub(crate) fn text_table_wrapped(
    rows: &[TextRow],
    align: &[Align],
    narrow_first: &[usize],
) -> String {
    match TERMINAL_COLUMNS.get() {
        Some(&columns) => text_table_within(rows, align, narrow_first, columns),
        None => text_table(rows, align),
    }
}

/// [`text_table`] no wider than `max` columns (indent included) where wrapping can do it: the
/// columns of `narrow_first` narrow in that order (a list of flags before a label), each down to
/// its longest word, and their cells wrap at spaces onto lines of their own under the row's
/// first; a word is never broken, and the other columns (the figures) keep their width.
pub(crate) fn text_table_within(
    rows: &[TextRow],
    align: &[Align],
    narrow_first: &[usize],
    max: usize,
) -> String {
    let mut widths = natural_widths(rows, align.len());
    let budget = max.saturating_sub(2 + 2 * align.len().saturating_sub(1));
    let columns = widths.len();
    for &i in narrow_first.iter().filter(|&&i| i < columns) {
        let over = widths.iter().sum::<usize>().saturating_sub(budget);
        let floor = longest_word(rows, i).max(widths[i].min(20));
        widths[i] -= over.min(widths[i].saturating_sub(floor));
    }
    let mut out = String::new();
    for row in rows {
        let TextRow::Cells(cells) = row else {
            let gaps = 2 * widths.len().saturating_sub(1);
            out += &format!("  {}\n", "─".repeat(widths.iter().sum::<usize>() + gaps));
            continue;
        };
        let wrapped: Vec<Vec<String>> = cells
            .iter()
            .zip(&widths)
            .map(|(cell, w)| wrap_cell(cell, *w))
            .collect();
        let height = wrapped.iter().map(Vec::len).max().unwrap_or(1);
        for line in 0..height {
            let padded: Vec<String> = wrapped
                .iter()
                .zip(widths.iter().zip(align))
                .map(|(cell, (w, a))| {
                    let text = cell.get(line).map_or("", String::as_str);
                    let pad = " ".repeat(w.saturating_sub(width(text)));
                    match a {
                        Align::Right => format!("{pad}{text}"),
                        _ => format!("{text}{pad}"),
                    }
                })
                .collect();
            out += &format!("  {}\n", padded.join("  ").trim_end());
        }
    }
    out
}

/// Each column's widest cell.
fn natural_widths(rows: &[TextRow], columns: usize) -> Vec<usize> {
    (0..columns)
        .map(|i| {
            rows.iter()
                .filter_map(|r| match r {
                    TextRow::Cells(cells) => cells.get(i).map(|c| width(c)),
                    TextRow::Rule => None,
                })
                .max()
                .unwrap_or(0)
        })
        .collect()
}

/// The widest space-separated word of column `i`.
fn longest_word(rows: &[TextRow], i: usize) -> usize {
    rows.iter()
        .filter_map(|r| match r {
            TextRow::Cells(cells) => cells.get(i),
            TextRow::Rule => None,
        })
        .flat_map(|c| c.split(' ').map(width))
        .max()
        .unwrap_or(0)
}

/// `cell` as lines of at most `w` columns, broken at spaces only.
fn wrap_cell(cell: &str, w: usize) -> Vec<String> {
    let words: Vec<String> = cell.split(' ').map(str::to_owned).collect();
    super::text::wrap(&words, w)
}

/// Label/value rows as a terminal table ([`text_table`]): an empty label is a rule; values
/// right-aligned when `right`.
pub(crate) fn aligned(rows: &[(String, String)], right: bool) -> String {
    let rows: Vec<TextRow> = rows
        .iter()
        .map(|(label, value)| match label.is_empty() {
            true => TextRow::Rule,
            false => TextRow::Cells(vec![label.clone(), value.clone()]),
        })
        .collect();
    let value = if right { Align::Right } else { Align::Left };
    text_table(&rows, &[Align::Left, value])
}

/// A Markdown table: the `header` row, the delimiter row of `align`, then `rows`. Every cell is
/// escaped ([`markdown_cell`]); an empty cell is written `| |`.
pub(crate) fn markdown_table(header: &[String], align: &[Align], rows: &[Vec<String>]) -> String {
    let mut out = markdown_row(header);
    out += &format!(
        "|{}|\n",
        align
            .iter()
            .map(|a| a.delimiter())
            .collect::<Vec<_>>()
            .join("|")
    );
    for row in rows {
        out += &markdown_row(row);
    }
    out
}

/// One row of a Markdown table.
fn markdown_row(cells: &[String]) -> String {
    let cells: Vec<String> = cells
        .iter()
        .map(|c| match c.is_empty() {
            true => " ".to_owned(),
            false => format!(" {} ", markdown_cell(c)),
        })
        .collect();
    format!("|{}|\n", cells.join("|"))
}

/// Text made safe for a Markdown table cell: `|` escaped, a line break made a space.
pub(crate) fn markdown_cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

/// `text` in bold, as Markdown writes it.
pub(crate) fn bold(text: &str) -> String {
    format!("**{text}**")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cells(c: &[&str]) -> TextRow {
        TextRow::Cells(c.iter().map(|s| s.to_string()).collect())
    }

    #[test]
    fn text_columns_pad_to_the_widest_cell_counting_cjk_double() {
        let rows = [
            cells(&["显存", "1 GiB"]),
            TextRow::Rule,
            cells(&["ab", "10 GiB"]),
        ];
        assert_eq!(
            text_table(&rows, &[Align::Left, Align::Right]),
            "  显存   1 GiB\n  ────────────\n  ab    10 GiB\n"
        );
        assert_eq!(
            aligned(
                &[("a".into(), "x".into()), ("bbb".into(), "yy".into())],
                false
            ),
            "  a    x\n  bbb  yy\n"
        );
    }

    /// A table wider than the terminal narrows its flags column first, then its label, each
    /// down to its longest word; figures keep their width and no word is broken.
    #[test]
    fn a_wide_table_wraps_its_flags_then_its_label_within_the_width() {
        let rows = [
            cells(&["Option", "Change", "Total"]),
            cells(&[
                "Linears in 4-bit NF4 (bitsandbytes, double quantization)",
                "--load_in_4bit=true --bnb_4bit_quant_type=nf4 --bnb_4bit_use_double_quant=true",
                "8.88 GiB",
            ]),
            cells(&["Static cache", "--kv_cache=static", "20.29 GiB"]),
        ];
        let align = [Align::Left, Align::Left, Align::Right];
        let out = text_table_within(&rows, &align, &[1, 0], 80);
        for line in out.lines() {
            assert!(width(line) <= 80, "{line:?} in\n{out}");
        }
        // Every word of every cell is still whole, in order.
        let words: Vec<&str> = out.split_whitespace().collect();
        for cell in ["--bnb_4bit_use_double_quant=true", "quantization)", "20.29"] {
            assert!(words.contains(&cell), "{cell} in\n{out}");
        }
        // The figure stays on the row's first line, right-aligned at the table's edge.
        let first = out.lines().nth(1).unwrap_or_default();
        assert!(
            first.starts_with("  Linears in 4-bit") && first.ends_with("8.88 GiB"),
            "{out}"
        );
        let static_row = out
            .lines()
            .find(|l| l.contains("Static cache"))
            .unwrap_or_default();
        assert!(static_row.ends_with("20.29 GiB") && static_row.contains("--kv_cache=static"));
        // Wide enough, it is text_table itself.
        assert_eq!(
            text_table_within(&rows, &align, &[1, 0], 400),
            text_table(&rows, &align)
        );
    }

    #[test]
    fn markdown_cells_are_escaped_and_empty_cells_kept() {
        let table = markdown_table(
            &["A".into(), "B".into(), "C".into()],
            &[Align::Left, Align::Right, Align::Default],
            &[vec!["x|y".into(), "1\n2".into(), String::new()]],
        );
        assert_eq!(table, "| A | B | C |\n|:---|---:|---|\n| x\\|y | 1 2 | |\n");
    }
}
