//! Template constructs that escape the render budget of [`super::limits`]: text captured by a
//! `{% filter %}` block or a block `{% set %}` is built in memory, not written, so the output
//! bound never sees it, and a variable set from itself inside a loop (`{% set s = s ~ s %}`)
//! doubles per pass: forty passes want a terabyte before the time bound is checked again. Each is
//! refused at its line when the templates are loaded. vramdoc's own templates use none of them.

use crate::diagnostics::Diagnostic;

/// The refusals for one template's `source`, shown as `shown` (e.g. `templates/guide.html`).
pub(crate) fn check(shown: &str, source: &str) -> Vec<Diagnostic> {
    let mut problems = Vec::new();
    let mut loops = 0usize;
    for (line, tag) in tags(source) {
        let mut words = tag.split_whitespace();
        let refuse = |msg: String| {
            Diagnostic::error(msg)
                .in_file(shown)
                .at(line, 1)
                .with_help("write the text out directly, or compute the value in a loop whose output is written (the render's 16 MiB bound then applies)")
        };
        match words.next() {
            Some("for") => loops += 1,
            Some("endfor") => loops = loops.saturating_sub(1),
            Some("filter") => problems.push(refuse(
                "a `{% filter %}` block builds its text in memory, beyond the render's output bound"
                    .to_owned(),
            )),
            Some(kind @ ("set" | "set_global")) => {
                let rest = tag[tag.find(kind).map_or(0, |i| i + kind.len())..].trim();
                match rest.split_once('=') {
                    None => problems.push(refuse(format!(
                        "a block `{{% {kind} %}}` captures its text in memory, beyond the render's output bound"
                    ))),
                    Some((name, value)) if loops > 0 && mentions(value, name.trim()) => {
                        problems.push(refuse(format!(
                            "`{}` is set from itself inside a loop, so it can grow without bound (each pass may double it)",
                            name.trim()
                        )))
                    }
                    Some(_) => {}
                }
            }
            _ => {}
        }
    }
    problems
}

/// Each `{% … %}` tag's inner text (whitespace-control dashes removed) with its 1-based line,
/// skipping `{# … #}` comments; linear in the source.
fn tags(source: &str) -> Vec<(usize, &str)> {
    let mut out = Vec::new();
    let mut rest = source;
    let mut line = 1;
    loop {
        let open_tag = rest.find("{%");
        let open_comment = rest.find("{#");
        let (at, close) = match (open_tag, open_comment) {
            (Some(t), Some(c)) if c < t => (c, "#}"),
            (Some(t), _) => (t, "%}"),
            (None, Some(c)) => (c, "#}"),
            (None, None) => break,
        };
        line += rest[..at].matches('\n').count();
        let body = &rest[at + 2..];
        let Some(end) = body.find(close) else { break };
        let inner = &body[..end];
        if close == "%}" {
            out.push((
                line,
                inner.trim_matches(|c: char| c == '-' || c.is_whitespace()),
            ));
        }
        line += inner.matches('\n').count();
        rest = &body[end + 2..];
    }
    out
}

/// Whether `expr` names the variable `name` as a whole word.
fn mentions(expr: &str, name: &str) -> bool {
    let word = |c: char| c.is_alphanumeric() || c == '_';
    !name.is_empty()
        && expr.match_indices(name).any(|(i, _)| {
            let before = expr[..i].chars().next_back();
            let after = expr[i + name.len()..].chars().next();
            !before.is_some_and(|c| word(c) || c == '.') && !after.is_some_and(word)
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn growth_and_captures_are_refused_at_their_line() {
        let t = "{% for i in range(end=40) %}\n{% set s = s ~ s %}\n{% set n = i %}\n{% endfor %}\n\
                 {% set t = t ~ 'x' %}\n{% filter upper %}x{% endfilter %}\n{%- set c -%}x{% endset %}\n\
                 {# {% filter upper %} #}{% set_global g = g | replace(from='a', to='aa') %}";
        let problems = check("templates/x.html", t);
        assert_eq!(problems.len(), 3, "{problems:?}");
        let all: String = problems.iter().map(|d| d.render()).collect();
        assert!(
            all.contains("`s` is set from itself inside a loop"),
            "{all}"
        );
        assert!(all.contains("`{% filter %}` block"), "{all}");
        assert!(all.contains("block `{% set %}`"), "{all}");
        assert!(all.contains("templates/x.html:2:1"), "{all}");
    }

    #[test]
    fn the_default_templates_use_none_of_them() {
        for (name, text) in crate::assets::TEMPLATES {
            assert!(check(name, text).is_empty(), "{name}");
        }
    }
}
