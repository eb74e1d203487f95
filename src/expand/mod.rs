//! Guide expressions: every `{{ ... }}` outside code in a guide body becomes computed, localized
//! Markdown, so the HTML page and the Markdown edition carry the same numbers and tables.
//!
//! Values: `{{ bytes.logits | bytes }}`, `{{ params.non_embedding | count }}`,
//! `{{ variants.micro8.fits | verdict }}`, `{{ percent(bytes.logits, bytes.peak) }}`.
//! Blocks (alone on a line): `breakdown_table()`, `params_table()`, `options_table()` (also
//! `options_table(variant="id")`: a variant's own options),
//! `chart("breakdown")`, `chart("sweep", over="batch_size" | "block_size")`, `diagnosis()`; in a
//! generate guide (`phase: generate`), `solve_table()` and `chart("context")` (also
//! `chart("context", variant="id")`).
//! See the README for the full list. Unknown names and bad arguments are errors with file and line.

mod answer;
mod charts;
mod context_chart;
pub(crate) mod data;
mod fields;
mod generate_data;
mod generate_tables;
pub mod lint;
mod parse;
mod tables;

use std::path::Path;
use std::sync::Arc;

use crate::diagnostics::Diagnostic;
use crate::i18n::Localizer;
use crate::present;
pub(crate) use crate::present::html::{escape_text, figure};
pub use answer::ShortAnswer;
pub(crate) use answer::{add_targets as add_answer_targets, short_answer};
pub use charts::{chart_picture, narrow_name as narrow_chart_name, ChartCache};
pub use data::{guide_data, GuideData};
use fields::{Field, Figure};
use parse::{ArgValue, Expr, ExprKind};

/// What a page's expressions can read, in the page's language.
pub struct ExpandContext<'a> {
    /// The page's locale.
    pub loc: &'a Localizer,
    /// The guide's computed data (`None` when the guide has no scenario).
    pub data: Option<&'a GuideData>,
    /// Variant labels in this language, by id.
    pub variant_labels: &'a [(String, String)],
    /// The GPU catalog (for sweeps).
    pub catalog: &'a crate::estimate::GpuCatalog,
    /// Charts drawn so far in this build.
    pub charts: &'a ChartCache,
    /// The front matter's `error:`, the out-of-memory message `diagnosis()` explains.
    pub error: Option<&'a str>,
}

/// An expanded body and the chart files it references.
#[derive(Debug, Default)]
pub struct Expanded {
    /// Markdown with every expression replaced.
    pub(crate) markdown: String,
    /// `(file name, SVG)` for each chart, written beside the page: the wide drawing and the
    /// narrow one ([`narrow_chart_name`]).
    pub(crate) charts: Vec<(String, String)>,
    /// The file names of the wide drawings, which the HTML page shows in a `<picture>`
    /// ([`chart_picture`]); the Markdown edition links them as plain images.
    pub(crate) pictures: Vec<String>,
    /// The byte ranges of the body expanded that are code or an expression (what the
    /// typed-figure lint skips), from the one parse expansion made of it; `None` when the body
    /// has no `{{` (expansion did not parse it).
    pub(crate) skipped: Option<Vec<std::ops::Range<usize>>>,
}

/// Expands every expression of `body` (which starts at 1-based `body_line` of `file`); `code`:
/// the byte ranges of `body`'s code, when a parse of it already found them (else `body` is
/// parsed for them if it has a `{{`).
pub fn expand(
    body: &str,
    code: Option<Vec<std::ops::Range<usize>>>,
    body_line: usize,
    ctx: &ExpandContext<'_>,
    file: &Path,
    source: &Arc<str>,
) -> Result<Expanded, Vec<Diagnostic>> {
    let mut out = Expanded {
        markdown: String::with_capacity(body.len() + 1024),
        charts: Vec::new(),
        pictures: Vec::new(),
        skipped: None,
    };
    let mut errors = Vec::new();
    let mut last = 0;
    let mut lines = LineCounter::new(body, body_line);
    let mut found = Vec::new();
    if body.contains("{{") {
        let mut skipped = code.unwrap_or_else(|| parse::code_ranges(body));
        found = parse::find_outside(body, &skipped);
        skipped.extend(found.iter().map(|f| f.span.clone()));
        out.skipped = Some(skipped);
    }
    for found in found {
        out.markdown.push_str(&body[last..found.span.start]);
        last = found.span.end;
        let text = &body[found.span.clone()];
        let (line, col) = lines.locate(found.span.start);
        let result = found
            .expr
            .and_then(|e| eval(&e, found.block, ctx, &mut out.charts));
        match result {
            Ok(s) => out.markdown.push_str(&s),
            Err(msg) => {
                errors.push(
                    Diagnostic::error(format!("in `{text}`: {msg}"))
                        .in_file(file)
                        .at(line, col)
                        .with_source(source.clone())
                        .with_help(
                            "see the README's \"Expressions\" section for the names and filters",
                        ),
                );
                out.markdown.push_str(text);
            }
        }
    }
    out.markdown.push_str(&body[last..]);
    out.pictures = out
        .charts
        .iter()
        .map(|(file, _)| file)
        .filter(|file| {
            out.charts
                .iter()
                .any(|(f, _)| *f == charts::narrow_name(file))
        })
        .cloned()
        .collect();
    if errors.is_empty() {
        Ok(out)
    } else {
        Err(errors)
    }
}

/// 1-based line and column of byte offsets visited in increasing order, in time linear in the
/// text (a page of 80,000 expressions must not rescan its text for each one).
pub(crate) struct LineCounter<'a> {
    text: &'a str,
    /// Offset up to which lines have been counted.
    pos: usize,
    /// The line at `pos`.
    line: usize,
    /// Byte offset where that line starts.
    line_start: usize,
    /// Offset up to which the current line's characters have been counted, and their count.
    col_pos: usize,
    col_chars: usize,
}

impl<'a> LineCounter<'a> {
    /// Counts lines of `text` from `first_line` (the line its first byte is on).
    pub(crate) fn new(text: &'a str, first_line: usize) -> Self {
        LineCounter {
            text,
            pos: 0,
            line: first_line,
            line_start: 0,
            col_pos: 0,
            col_chars: 0,
        }
    }

    /// `(line, column)` of byte `offset`; offsets must not decrease between calls.
    pub(crate) fn locate(&mut self, offset: usize) -> (usize, usize) {
        let offset = offset.clamp(self.pos, self.text.len());
        let gap = &self.text.as_bytes()[self.pos..offset];
        if let Some(last_nl) = gap.iter().rposition(|b| *b == b'\n') {
            self.line += gap.iter().filter(|b| **b == b'\n').count();
            self.line_start = self.pos + last_nl + 1;
            self.col_pos = self.line_start;
            self.col_chars = 0;
        }
        self.pos = offset;
        self.col_chars += self.text[self.col_pos..offset].chars().count();
        self.col_pos = offset;
        (self.line, self.col_chars + 1)
    }
}

/// Evaluates one expression to Markdown; `block` when it stands alone on its line.
fn eval(
    e: &Expr,
    block: bool,
    ctx: &ExpandContext<'_>,
    charts: &mut Vec<(String, String)>,
) -> Result<String, String> {
    match &e.kind {
        ExprKind::Value(field) => eval_value(field, e.filter.as_deref(), ctx),
        ExprKind::Call { name, args } => {
            check_signature(name, args, e.filter.as_deref())?;
            eval_call(name, args, block, ctx, charts)
        }
    }
}

/// The guide's computed data, or the error of a guide without a scenario.
fn need_data<'a>(ctx: &ExpandContext<'a>) -> Result<&'a GuideData, String> {
    ctx.data
        .ok_or_else(|| "this guide has no `scenario:` in its front matter".to_string())
}

/// A value: `field` read from the guide's data and formatted by `filter`.
fn eval_value(
    field: &Field,
    filter: Option<&str>,
    ctx: &ExpandContext<'_>,
) -> Result<String, String> {
    let data = need_data(ctx)?;
    let v = field.read(data, ctx.catalog)?;
    // `fits | verdict` shows the four-state `verdict` beside it: `false` may be "tight".
    if let (Some("verdict") | None, Some(verdict), Figure::Flag(_)) =
        (filter, field.verdict_beside(), &v)
    {
        if let Ok(Figure::Verdict(state)) = verdict.read(data, ctx.catalog) {
            return Ok(present::verdict_name(state, ctx.loc));
        }
    }
    format_value(&v, filter, ctx.loc, field.name())
}

/// A function call (its arguments already checked against its signature); tables, charts and
/// the diagnosis only as a `block`, alone on their line. A chart's drawings go to `charts`.
fn eval_call(
    name: &str,
    args: &[parse::Arg],
    block: bool,
    ctx: &ExpandContext<'_>,
    charts: &mut Vec<(String, String)>,
) -> Result<String, String> {
    match name {
        "percent" => percent(args, ctx),
        "breakdown_table" | "params_table" | "options_table" | "chart" | "diagnosis"
        | "solve_table"
            if !block =>
        {
            Err(format!("`{name}()` makes a table or chart: put it alone on its own line"))
        }
        "breakdown_table" => {
            let data = need_data(ctx)?;
            tables::breakdown(data, ctx, variant_arg(named_arg(args, "variant"))?)
        }
        "params_table" => tables::params(need_data(ctx)?, ctx),
        "options_table" => {
            let data = need_data(ctx)?;
            tables::options(data, ctx, variant_arg(named_arg(args, "variant"))?)
        }
        "diagnosis" => diagnosis(need_data(ctx)?, ctx),
        "chart" => chart(args, ctx, charts),
        "solve_table" => generate_tables::solve_table(need_data(ctx)?, ctx),
        other => Err(format!(
            "unknown function `{other}` (known: percent, breakdown_table, params_table, options_table, solve_table, chart, diagnosis)"
        )),
    }
}

/// The `i`-th argument without a name.
fn positional_arg(args: &[parse::Arg], i: usize) -> Option<&ArgValue> {
    args.iter()
        .filter(|a| a.name.is_none())
        .nth(i)
        .map(|a| &a.value)
}

/// The argument named `name`.
fn named_arg<'a>(args: &'a [parse::Arg], name: &str) -> Option<&'a ArgValue> {
    args.iter()
        .find(|a| a.name.as_deref() == Some(name))
        .map(|a| &a.value)
}

/// `{{ percent(a, b) }}`: a / b as a localized percentage; each of a and b a number or a path
/// to one, b not zero and the ratio finite.
fn percent(args: &[parse::Arg], ctx: &ExpandContext<'_>) -> Result<String, String> {
    let data = need_data(ctx)?;
    let num = |i| match positional_arg(args, i) {
        Some(ArgValue::Field(f)) => (f.read(data, ctx.catalog)?.as_f64())
            .ok_or_else(|| format!("`{}` is not a number", f.name())),
        Some(ArgValue::Num(n)) => Ok(*n),
        _ => Err("percent(a, b) takes two numbers or paths".to_string()),
    };
    let (a, b) = (num(0)?, num(1)?);
    if let Some(x) = [a, b].into_iter().find(|x| !x.is_finite()) {
        return Err(format!("percent(a, b): {x} is not a finite number"));
    }
    if b == 0.0 {
        return Err("percent(a, b): b is zero".into());
    }
    let ratio = a / b;
    if !ratio.is_finite() || !(ratio * 100.0).is_finite() {
        return Err(format!("percent(a, b): {a} / {b} is not a finite number"));
    }
    Ok(ctx.loc.percent(ratio))
}

/// `{{ chart(kind, over=…) }}`: the chart's Markdown image; its wide and narrow drawings are
/// added to `charts` the first time the page shows it.
fn chart(
    args: &[parse::Arg],
    ctx: &ExpandContext<'_>,
    charts: &mut Vec<(String, String)>,
) -> Result<String, String> {
    let kind = match positional_arg(args, 0) {
        Some(ArgValue::Str(s)) => s.as_str(),
        _ => return Err("chart(kind) takes \"breakdown\" or \"sweep\"".into()),
    };
    let over = match named_arg(args, "over") {
        None => "batch_size",
        Some(ArgValue::Str(s)) => s.as_str(),
        Some(_) => return Err("`over` must be \"batch_size\" or \"block_size\"".into()),
    };
    let variant = variant_arg(named_arg(args, "variant"))?;
    let drawn = charts::chart(need_data(ctx)?, ctx, kind, over, variant)?;
    let mut md = format!("![{}]({})", drawn.alt.replace(['[', ']'], ""), drawn.file);
    if !drawn.caption.is_empty() {
        // The caption is its own paragraph under the image, in emphasis so it reads as one.
        md.push_str(&format!("\n\n*{}*", drawn.caption));
    }
    if !charts.iter().any(|(f, _)| *f == drawn.file) {
        charts.push((charts::narrow_name(&drawn.file), drawn.narrow));
        charts.push((drawn.file, drawn.wide));
    }
    Ok(md)
}

/// `{{ diagnosis() }}`: the front matter's `error:` explained against the guide's scenario.
fn diagnosis(data: &GuideData, ctx: &ExpandContext<'_>) -> Result<String, String> {
    let text = ctx.error.ok_or(
        "`diagnosis()` explains the front matter's `error:`: add the out-of-memory message there (`error: |` and the message, indented)",
    )?;
    let m = crate::oom::message::parse(text).map_err(|e| format!("front matter `error:`: {e}"))?;
    let scenario = data.train("diagnosis()")?.scenario.clone();
    let d = crate::oom::with_scenario(m, scenario, ctx.catalog).map_err(|e| e.to_string())?;
    Ok(crate::present::diagnosis_report::guide_block(&d, ctx.loc))
}

/// The positional count and named arguments each function takes.
fn signature(name: &str) -> Option<(usize, &'static [&'static str], &'static str)> {
    Some(match name {
        "percent" => (2, &[], "percent(a, b)"),
        "breakdown_table" => (
            0,
            &["variant"],
            "breakdown_table() or breakdown_table(variant=\"id\")",
        ),
        "params_table" => (0, &[], "params_table()"),
        "diagnosis" => (0, &[], "diagnosis()"),
        "options_table" => (
            0,
            &["variant"],
            "options_table() or options_table(variant=\"id\")",
        ),
        "chart" => (
            1,
            &["over", "variant"],
            "chart(\"breakdown\"), chart(\"sweep\", over=\"batch_size\") or chart(\"context\", variant=\"id\")",
        ),
        "solve_table" => (0, &[], "solve_table()"),
        _ => return None,
    })
}

/// Refuses arguments a function would ignore: extra positional ones, unknown or repeated named
/// ones, and a filter after a call (a function formats its own result).
fn check_signature(name: &str, args: &[parse::Arg], filter: Option<&str>) -> Result<(), String> {
    let Some((positional, named, usage)) = signature(name) else {
        return Ok(());
    };
    let given = args.iter().filter(|a| a.name.is_none()).count();
    if given > positional {
        return Err(format!(
            "`{name}()` takes {positional} argument(s) without a name, {given} given: write {usage}"
        ));
    }
    for (i, a) in args.iter().enumerate() {
        let Some(n) = &a.name else { continue };
        if !named.contains(&n.as_str()) {
            return Err(format!("`{name}()` has no argument `{n}`: write {usage}"));
        }
        if args[..i].iter().any(|b| b.name.as_ref() == Some(n)) {
            return Err(format!("`{n}` is given twice to `{name}()`"));
        }
    }
    if let Some(f) = filter {
        return Err(format!(
            "`| {f}` cannot follow `{name}()`, which formats its own result"
        ));
    }
    Ok(())
}

fn variant_arg(v: Option<&ArgValue>) -> Result<Option<&str>, String> {
    match v {
        None => Ok(None),
        Some(ArgValue::Str(s)) => Ok(Some(s)),
        Some(ArgValue::Path(p)) if p.len() == 1 => Ok(Some(&p[0])),
        Some(_) => Err("`variant` must be a variant id".into()),
    }
}

/// Every message key expansion builds at run time (the rows' labels, sweep chart titles and axes):
/// each must exist in every locale.
pub fn runtime_message_keys() -> Vec<String> {
    let mut keys = crate::present::runtime_message_keys();
    // The parameter table's rows shown only for fine-tuning patches.
    keys.extend(["param-trainable", "param-lora"].map(str::to_owned));
    for over in charts::SWEEP_OVER {
        keys.push(charts::sweep_title_key(over));
        keys.push(charts::sweep_axis_key(over));
    }
    keys
}

/// Formats a looked-up value with an optional filter.
fn format_value(
    v: &Figure<'_>,
    filter: Option<&str>,
    loc: &Localizer,
    name: &str,
) -> Result<String, String> {
    let unsigned = || {
        v.as_u64()
            .ok_or_else(|| format!("`{name}` is not a whole number of bytes"))
    };
    match (filter, v) {
        (_, Figure::Missing) => Err(format!(
            "`{name}` has no value for this scenario (is `gpu` set?)"
        )),
        (Some("bytes"), _) => Ok(figure(loc, unsigned()?, loc.bytes(unsigned()?))),
        (Some("gib"), _) => Ok(figure(loc, unsigned()?, loc.numbers().gib(unsigned()?))),
        (Some("mib"), _) => Ok(figure(loc, unsigned()?, loc.numbers().mib(unsigned()?))),
        (Some("int"), _) => match v.as_i64() {
            Some(i) if i < 0 => Ok(loc.numbers().signed(i)),
            _ => Ok(loc.int(unsigned()?)),
        },
        (Some("count"), _) => Ok(loc.count(unsigned()?)),
        (Some("verdict") | None, Figure::Flag(b)) => {
            Ok(present::verdict_name(present::verdict_of_fits(*b), loc))
        }
        (Some("verdict") | None, Figure::Verdict(state)) => Ok(present::verdict_name(*state, loc)),
        (Some("verdict"), _) => Err(format!(
            "`verdict` needs a true/false value such as `fits`, not `{name}`"
        )),
        (None, Figure::Whole(n)) => Ok(loc.int(*n)),
        (None, Figure::Signed(i)) => match u64::try_from(*i) {
            Ok(n) => Ok(loc.int(n)),
            Err(_) => Ok(loc.numbers().signed(*i)),
        },
        (None, Figure::Float(x)) => Ok(loc.decimal(*x, 2)),
        (None, Figure::Text(s)) => Ok(escape_text(s)),
        (None, Figure::Group) => Err(format!(
            "`{name}` is a group of values; name one of its fields"
        )),
        (Some(f), _) => Err(format!(
            "unknown filter `{f}` (known: bytes, gib, mib, int, count, verdict)"
        )),
    }
}
