//! A word-level diff of a source section between the text recorded when it was translated and
//! today's: unchanged runs shortened to a few words of context, removed words as `[-…-]`, added
//! words as `{+…+}` (the notation of `git diff --word-diff`).

use similar::{ChangeTag, TextDiff};

/// Words of context kept on each side of a change.
const CONTEXT: usize = 4;

/// The changes from `old` to `new`, one line per group of nearby changes; empty when the words
/// are the same.
pub(crate) fn word_diff(old: &str, new: &str) -> Vec<String> {
    let diff = TextDiff::from_words(old, new);
    let mut lines = Vec::new();
    // Context is counted in tokens; a word and the space after it are two.
    for group in diff.grouped_ops(CONTEXT * 2) {
        let mut line = String::new();
        for op in group {
            for change in diff.iter_changes(&op) {
                let text = change.value().replace('\n', " ");
                match change.tag() {
                    ChangeTag::Equal => line.push_str(&text),
                    ChangeTag::Delete => line.push_str(&format!("[-{text}-]")),
                    ChangeTag::Insert => line.push_str(&format!("{{+{text}+}}")),
                }
            }
        }
        let line = line.split_whitespace().collect::<Vec<_>>().join(" ");
        lines.push(line);
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shows_the_changed_words_with_context() {
        let old = "one two three four five six seven eight nine ten eleven twelve";
        let new = "one two three four five SIX seven eight nine ten eleven twelve";
        assert_eq!(
            word_diff(old, new),
            ["two three four five [-six-]{+SIX+} seven eight nine ten"]
        );
        assert!(word_diff(old, old).is_empty());
    }
}
