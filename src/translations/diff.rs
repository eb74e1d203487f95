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
        // Runs of one kind of change, each shown once.
        let mut runs: Vec<(ChangeTag, String)> = Vec::new();
        for op in group {
            for change in diff.iter_changes(&op) {
                match runs.last_mut() {
                    Some((tag, text)) if *tag == change.tag() => text.push_str(change.value()),
                    _ => runs.push((change.tag(), change.value().to_string())),
                }
            }
        }
        let words = |t: &str| t.split_whitespace().collect::<Vec<_>>().join(" ");
        let shown: Vec<String> = runs
            .iter()
            .filter(|(_, text)| !text.trim().is_empty())
            .map(|(tag, text)| match tag {
                ChangeTag::Equal => words(text),
                ChangeTag::Delete => format!("[-{}-]", words(text)),
                ChangeTag::Insert => format!("{{+{}+}}", words(text)),
            })
            .collect();
        lines.push(shown.join(" "));
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
            ["two three four five [-six-] {+SIX+} seven eight nine ten"]
        );
        assert!(word_diff(old, old).is_empty());
        let added = word_diff("a b c", "a b new words c");
        assert_eq!(added, ["a b {+new words+} c"]);
    }
}
