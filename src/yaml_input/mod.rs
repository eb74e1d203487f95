//! Reading YAML that users write (front matter, command-line scenarios, `--catalog` files) with
//! bounds and located errors: a cheap pre-check against flow nesting that would make the YAML
//! scanner quadratic, and a parse whose errors name their real line.

mod positions;

use yaml_serde::Value as Yaml;

pub(crate) use positions::{Seg, YamlPositions};

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
        let mut v: Yaml = budgeted::from_str(text).map_err(|e| (e, false))?;
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

/// A document's value and where each of its keys and values was written.
pub(crate) struct Located {
    /// The value, as [`parse_located`] reads it.
    pub(crate) value: Yaml,
    /// Where its keys and values are.
    pub(crate) at: YamlPositions,
}

/// [`parse_located`], with the positions of the document's keys and values.
pub(crate) fn parse_positioned(yaml: &str) -> Result<Located, YamlError> {
    let value = parse_located(yaml)?;
    Ok(Located {
        value,
        at: YamlPositions::of(yaml),
    })
}

/// Deserializing YAML into a value whose size is bounded by the text's (64 bytes per byte, plus
/// 1 MiB): aliases (`*name`) replay their anchor's nodes, so a few kilobytes of doubling aliases
/// would otherwise build hundreds of megabytes (about 5 KB per byte before this bound). Builds the same
/// [`Yaml`] as `yaml_serde::from_str`, with its duplicate-key errors.
mod budgeted {
    use std::cell::Cell;
    use std::fmt;

    use serde::de::{self, Deserialize, Deserializer, EnumAccess, MapAccess, SeqAccess};
    use serde::de::{VariantAccess, Visitor};
    use yaml_serde::value::{Tag, TaggedValue};
    use yaml_serde::{Mapping, Number, Value as Yaml};

    /// Bytes a document's values may take once built: 64 per byte of text plus 1 MiB, far above
    /// what anchors and merge keys give in scenarios, catalogs and front matter.
    fn budget_for(text: &str) -> usize {
        text.len().saturating_mul(64).saturating_add(1 << 20)
    }

    /// What one node costs against the budget, besides its text: a [`Yaml`] and its share of a
    /// collection's storage.
    const NODE: usize = 64;

    thread_local! {
        static LEFT: Cell<usize> = const { Cell::new(0) };
    }

    /// `yaml_serde::from_str` into a [`Yaml`], refusing once what it built exceeds the budget
    /// (the error says "repetition limit exceeded", as yaml_serde's own alias guard does).
    pub(super) fn from_str(text: &str) -> Result<Yaml, yaml_serde::Error> {
        LEFT.with(|l| l.set(budget_for(text)));
        yaml_serde::from_str::<Node>(text).map(|n| n.0)
    }

    /// Counts a node holding `text` bytes of text.
    fn charge<E: de::Error>(text: usize) -> Result<(), E> {
        LEFT.with(|l| match l.get().checked_sub(NODE + text) {
            Some(left) => {
                l.set(left);
                Ok(())
            }
            None => Err(E::custom(
                "repetition limit exceeded: aliases expand to far more than the text holds",
            )),
        })
    }

    /// One node of the document.
    struct Node(Yaml);

    impl<'de> Deserialize<'de> for Node {
        fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Node, D::Error> {
            d.deserialize_any(NodeVisitor).map(Node)
        }
    }

    struct NodeVisitor;

    impl<'de> Visitor<'de> for NodeVisitor {
        type Value = Yaml;

        fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str("any YAML value")
        }
        fn visit_bool<E: de::Error>(self, b: bool) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Bool(b))
        }
        fn visit_i64<E: de::Error>(self, i: i64) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Number(Number::from(i)))
        }
        fn visit_u64<E: de::Error>(self, u: u64) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Number(Number::from(u)))
        }
        fn visit_f64<E: de::Error>(self, f: f64) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Number(Number::from(f)))
        }
        fn visit_str<E: de::Error>(self, s: &str) -> Result<Yaml, E> {
            charge(s.len()).map(|()| Yaml::String(s.to_owned()))
        }
        fn visit_string<E: de::Error>(self, s: String) -> Result<Yaml, E> {
            charge(s.len()).map(|()| Yaml::String(s))
        }
        fn visit_unit<E: de::Error>(self) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Null)
        }
        fn visit_none<E: de::Error>(self) -> Result<Yaml, E> {
            charge(0).map(|()| Yaml::Null)
        }
        fn visit_some<D: Deserializer<'de>>(self, d: D) -> Result<Yaml, D::Error> {
            Node::deserialize(d).map(|n| n.0)
        }
        fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Yaml, A::Error> {
            charge::<A::Error>(0)?;
            let mut items = Vec::new();
            while let Some(Node(v)) = seq.next_element()? {
                items.push(v);
            }
            Ok(Yaml::Sequence(items))
        }
        fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Yaml, A::Error> {
            charge::<A::Error>(0)?;
            let mut mapping = Mapping::new();
            while let Some(Node(key)) = map.next_key()? {
                if mapping.contains_key(&key) {
                    return Err(de::Error::custom(format_args!(
                        "duplicate entry {}",
                        duplicate(&key)
                    )));
                }
                let Node(value) = map.next_value()?;
                mapping.insert(key, value);
            }
            Ok(Yaml::Mapping(mapping))
        }
        fn visit_enum<A: EnumAccess<'de>>(self, data: A) -> Result<Yaml, A::Error> {
            charge::<A::Error>(0)?;
            let (tag, contents) = data.variant::<String>()?;
            if tag.is_empty() {
                return Err(de::Error::custom("empty YAML tag is not allowed"));
            }
            let Node(value) = contents.newtype_variant()?;
            Ok(Yaml::Tagged(Box::new(TaggedValue {
                tag: Tag::new(tag),
                value,
            })))
        }
    }

    /// How yaml_serde names a duplicate key in its error.
    fn duplicate(key: &Yaml) -> String {
        match key {
            Yaml::Null => "with null key".to_owned(),
            Yaml::Bool(b) => format!("with key `{b}`"),
            Yaml::Number(n) => format!("with key {n}"),
            Yaml::String(s) => format!("with key {s:?}"),
            _ => "in YAML map".to_owned(),
        }
    }
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
