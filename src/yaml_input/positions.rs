//! Where each node of a YAML document was written: the line and column of every mapping key and
//! every value, by path, from a YAML parser's own events (`saphyr-parser`), so an error about a
//! key or a list item names the place the parser saw it at, never a line found by searching the
//! text for `key:`.
//!
//! The values themselves come from `yaml_serde` ([`super::parse_located`], with its bounds);
//! this is a second, linear pass over the same text that expands no alias (an alias is located
//! where it is written). A text `yaml_serde` accepts but this parser does not (the two differ
//! only at the edges of YAML) has no positions: lookups return `None` and callers fall back to
//! the block's first line, as for a key written nowhere.

use std::collections::HashMap;

use saphyr_parser::{Event, Parser};

/// One step of a path into a document: a mapping key or a sequence index.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) enum Seg {
    /// A mapping entry, by its (scalar) key.
    Key(String),
    /// A sequence item, by its 0-based index.
    Index(usize),
}

impl Seg {
    /// A mapping entry.
    pub(crate) fn key(k: &str) -> Seg {
        Seg::Key(k.to_owned())
    }
}

/// A 1-based line and column.
pub(crate) type Pos = (usize, usize);

/// The positions of a document's keys and values, by path.
#[derive(Debug, Default, Clone)]
pub(crate) struct YamlPositions {
    keys: HashMap<Vec<Seg>, Pos>,
    values: HashMap<Vec<Seg>, Pos>,
}

/// What a collection being read has seen so far.
enum Frame {
    /// A mapping; `value_next` once its current key is read.
    Map { value_next: bool },
    /// A sequence, with the index of its next item.
    Seq { next: usize },
}

impl YamlPositions {
    /// Reads the positions of `yaml`'s first document (empty when it does not parse, or uses a
    /// mapping or sequence as a key).
    pub(crate) fn of(yaml: &str) -> YamlPositions {
        let mut out = YamlPositions::default();
        let mut path: Vec<Seg> = Vec::new();
        let mut stack: Vec<Frame> = Vec::new();
        for item in Parser::new_from_str(yaml) {
            let Ok((event, span)) = item else {
                return YamlPositions::default();
            };
            let pos = (span.start.line(), span.start.col() + 1);
            let (scalar, opens) = match event {
                Event::Scalar(text, ..) => (Some(text), None),
                Event::Alias(_) => (None, None),
                Event::MappingStart(..) => (None, Some(Frame::Map { value_next: false })),
                Event::SequenceStart(..) => (None, Some(Frame::Seq { next: 0 })),
                Event::MappingEnd | Event::SequenceEnd => {
                    stack.pop();
                    out.value_done(&mut path, &mut stack);
                    continue;
                }
                Event::DocumentEnd => break,
                _ => continue,
            };
            // A key of the current mapping.
            if let Some(Frame::Map { value_next }) = stack.last_mut() {
                if !*value_next {
                    let (Some(key), None) = (scalar, &opens) else {
                        return out; // a complex key: no paths below it
                    };
                    path.push(Seg::Key(key.into_owned()));
                    out.keys.entry(path.clone()).or_insert(pos);
                    *value_next = true;
                    continue;
                }
            }
            // A value: the root, a mapping's value or a sequence's item.
            if let Some(Frame::Seq { next }) = stack.last() {
                path.push(Seg::Index(*next));
            }
            out.values.entry(path.clone()).or_insert(pos);
            if let Some(frame) = opens {
                stack.push(frame);
            } else {
                out.value_done(&mut path, &mut stack);
            }
        }
        out
    }

    /// A value ended: leave its step of the path and move the parent on.
    fn value_done(&self, path: &mut Vec<Seg>, stack: &mut [Frame]) {
        match stack.last_mut() {
            Some(Frame::Map { value_next }) => {
                path.pop();
                *value_next = false;
            }
            Some(Frame::Seq { next }) => {
                path.pop();
                *next += 1;
            }
            None => {}
        }
    }

    /// Where the key at the end of `path` was written.
    pub(crate) fn key(&self, path: &[Seg]) -> Option<Pos> {
        self.keys.get(path).copied()
    }

    /// Where the value at `path` (a mapping entry's value or a sequence item) starts.
    pub(crate) fn value(&self, path: &[Seg]) -> Option<Pos> {
        self.values.get(path).copied()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_values_and_items_are_located() {
        let yaml = "title: x\nscenario:\n  n_layer: 6\n  \"n_head\": 4\nvariants:\n  - id: a\n    set: {batch_size: 8}\n  - {id: b}\nlist: [1, 2]\n";
        let p = YamlPositions::of(yaml);
        let k = Seg::key;
        assert_eq!(p.key(&[k("title")]), Some((1, 1)));
        assert_eq!(p.key(&[k("scenario"), k("n_layer")]), Some((3, 3)));
        assert_eq!(p.value(&[k("scenario"), k("n_layer")]), Some((3, 12)));
        assert_eq!(p.key(&[k("scenario"), k("n_head")]), Some((4, 3)));
        assert_eq!(p.value(&[k("variants"), Seg::Index(0)]), Some((6, 5)));
        assert_eq!(p.value(&[k("variants"), Seg::Index(1)]), Some((8, 5)));
        assert_eq!(
            p.key(&[k("variants"), Seg::Index(0), k("set"), k("batch_size")]),
            Some((7, 11))
        );
        assert_eq!(p.value(&[k("list"), Seg::Index(1)]), Some((9, 11)));
        assert_eq!(p.key(&[k("nothing")]), None);
    }

    #[test]
    fn aliases_are_located_where_written_and_not_expanded() {
        let yaml = "a: &x {b: 1}\nc: *x\nd:\n  <<: *x\n  e: 2\n";
        let p = YamlPositions::of(yaml);
        assert_eq!(p.value(&[Seg::key("c")]), Some((2, 4)));
        assert_eq!(p.key(&[Seg::key("d"), Seg::key("e")]), Some((5, 3)));
        assert_eq!(p.key(&[Seg::key("c"), Seg::key("b")]), None);
    }

    #[test]
    fn what_does_not_parse_has_no_positions() {
        assert_eq!(YamlPositions::of("a: [1\n").key(&[Seg::key("a")]), None);
    }
}
