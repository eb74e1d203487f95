use super::section_hash;

fn same(a: &str, b: &str) {
    assert_eq!(section_hash(a), section_hash(b), "{a:?} vs {b:?}");
}

fn differ(a: &str, b: &str) {
    assert_ne!(section_hash(a), section_hash(b), "{a:?} vs {b:?}");
}

const BASE: &str = "## Where the memory goes\n\nThe *logits* buffer holds `B × T × V` values.\nIt is {{ estimate.logits }} at batch 12.\n\n1. Lower `batch_size`.\n2. Raise [accumulation](https://example.com/a).\n\n```python\nbatch_size = 12\n```\n";

#[test]
fn formatting_does_not_count() {
    // Rewrapped, emphasis marker, trailing spaces, renumbered list, extra blank lines.
    same(
        BASE,
        "## Where the memory goes\n\n\nThe _logits_ buffer   holds `B × T × V`\nvalues. It is {{ estimate.logits }} at\nbatch 12.  \n\n1. Lower `batch_size`.\n1. Raise [accumulation](https://example.com/a).\n\n```python\nbatch_size = 12   \n\n```\n",
    );
    // Tight versus loose list, other bullets.
    same("- a\n- b\n", "* a\n\n* b\n");
    same("3. a\n4. b\n", "1. a\n2. b\n");
    same("a\\\nb", "a b");
}

#[test]
fn content_counts() {
    let edits = [
        ("buffer holds", "buffer keeps"),
        ("batch 12", "batch 16"),
        ("batch_size = 12", "batch_size = 8"),
        ("https://example.com/a", "https://example.com/b"),
        ("{{ estimate.logits }}", "{{ estimate.total }}"),
        ("`batch_size`.\n2.", "`batch_size`.\n2. Use bf16.\n3."),
        ("## Where", "### Where"),
        ("```python", "```py"),
        ("*logits*", "**logits**"),
    ];
    for (from, to) in edits {
        assert!(BASE.contains(from), "{from}");
        differ(BASE, &BASE.replacen(from, to, 1));
    }
    // A list item versus a paragraph, ordered versus bullets.
    differ("- a\n- b\n", "- a b\n");
    differ("1. a\n", "- a\n");
}
