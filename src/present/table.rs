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
    let widths: Vec<usize> = (0..align.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| match r {
                    TextRow::Cells(cells) => cells.get(i).map(|c| width(c)),
                    TextRow::Rule => None,
                })
                .max()
                .unwrap_or(0)
        })
        .collect();
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
