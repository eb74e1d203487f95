//! Reading YAML that users write (front matter, command-line scenarios, `--catalog` files) with
//! bounds and located errors: a cheap pre-check against flow nesting that would make the YAML
//! scanner quadratic, and a parse whose errors name their real line.

use yaml_serde::Value as Yaml;

/// The most `[` and `{` a whole YAML file a user gives (a command-line scenario, standard input,
/// a GPU catalog) may contain: enough for any scenario or catalog written in flow style, few
/// enough that parsing stays linear (4096 nested `[` parse in a quarter of a second).
pub(crate) const MAX_FILE_FLOW_BRACKETS: usize = 4096;

/// The largest YAML scenario read from the command line (a scenario is a few hundred bytes; front
/// matter, which holds one, has the same limit). The YAML parser keeps hundreds of bytes per
/// input byte for some shapes (4 MB of nested `- ` took 1.2 GB), so the size bounds the memory.
pub(crate) const MAX_SCENARIO_YAML_BYTES: usize = 64 * 1024;

/// The largest GPU catalog read (`--catalog`, a site's `data/gpus.yaml`): room for well over a
/// thousand cards written out in blocks; the built-in one is 11 KB.
pub(crate) const MAX_CATALOG_YAML_BYTES: usize = 256 * 1024;

/// The 1-based line of the first `[` or `{` beyond `max` in `text` (flow collections, or those
/// characters in strings: counting them all is linear and needs no YAML). The YAML scanner's time
/// grows with the nesting depth times the length (100,000 nested `[` took it 17 s), so a cap on
/// the count bounds both before the parser runs.
pub(crate) fn excess_flow_bracket(text: &str, max: usize) -> Option<usize> {
    let mut line = 1;
    let mut brackets = 0;
    for b in text.bytes() {
        match b {
            b'\n' => line += 1,
            b'[' | b'{' => {
                brackets += 1;
                if brackets > max {
                    return Some(line);
                }
            }
            _ => {}
        }
    }
    None
}

/// Why a YAML document does not parse, located within it.
pub(crate) struct YamlError {
    /// The parser's message.
    pub(crate) message: String,
    /// 1-based line and column within the block, where known.
    pub(crate) line_col: Option<(usize, usize)>,
    /// What to do.
    pub(crate) help: &'static str,
}

/// Parses a YAML document (front matter, a command-line scenario), applying YAML merge keys (`<<: *anchor`). Errors the parser
/// reports without a usable place (a duplicate key is reported at its mapping's start, an alias
/// bomb and a bad merge nowhere) are located at the first line at which the block, cut after that
/// line, fails the same way.
pub(crate) fn parse_located(yaml: &str) -> Result<Yaml, YamlError> {
    /// How a parse failed: the kind of error, to compare prefixes with.
    fn kind(e: &yaml_serde::Error) -> Option<&'static str> {
        let msg = e.to_string();
        [
            "duplicate entry",
            "repetition limit exceeded",
            "recursion limit exceeded",
        ]
        .into_iter()
        .find(|k| msg.contains(k))
    }
    let parse = |text: &str| -> Result<Yaml, (yaml_serde::Error, bool)> {
        let mut v: Yaml = yaml_serde::from_str(text).map_err(|e| (e, false))?;
        v.apply_merge().map_err(|e| (e, true))?;
        Ok(v)
    };
    let (err, merge) = match parse(yaml) {
        Ok(v) => return Ok(v),
        Err(e) => e,
    };
    let message = err.to_string();
    let relocate = merge || kind(&err).is_some();
    let line_col = if relocate {
        let want = kind(&err);
        let fails_alike = |n: usize| {
            let prefix: String = yaml.split_inclusive('\n').take(n).collect();
            match parse(&prefix) {
                Err((e, m)) => m == merge && kind(&e) == want,
                Ok(_) => false,
            }
        };
        let lines = yaml.split_inclusive('\n').count();
        // The smallest failing prefix, by bisection (the whole block fails).
        let (mut lo, mut hi) = (1, lines);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if fails_alike(mid) {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        let text = yaml.split('\n').nth(hi - 1).unwrap_or("");
        let col = text.len() - text.trim_start().len() + 1;
        Some((hi, col))
    } else {
        err.location().map(|l| (l.line(), l.column()))
    };
    let help = match (merge, kind(&err)) {
        (true, _) => {
            "a merge key `<<:` takes a mapping or a list of mappings, e.g. `<<: *defaults`"
        }
        (_, Some("duplicate entry")) => "remove one of the two entries with this key",
        (_, Some(_)) => "aliases (`*name`) here expand too much: write the values out",
        _ => "check the indentation and quote values that contain `:` or `#`",
    };
    // The parser's own "at line N" would now contradict the located line.
    let message = if relocate {
        message
            .split(" at line ")
            .next()
            .unwrap_or(&message)
            .to_string()
    } else {
        message
    };
    Err(YamlError {
        message,
        line_col,
        help,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn brackets_are_counted_to_their_line() {
        assert_eq!(excess_flow_bracket("a: [1]\nb: {c: [2]}\n", 2), Some(2));
        assert_eq!(excess_flow_bracket("a: [1]\nb: {c: [2]}\n", 3), None);
    }

    #[test]
    fn a_duplicate_key_is_located_at_its_line() {
        let e = parse_located("a: 1\nb: 2\nc: 3\nb: 4\n").unwrap_err();
        assert_eq!(e.line_col, Some((4, 1)), "{}", e.message);
    }
}
