//! Every bundled locale has every message the default (English) locale has.

use std::collections::BTreeSet;
use std::path::Path;

fn keys(lang: &str) -> BTreeSet<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("locales")
        .join(lang);
    let mut keys = BTreeSet::new();
    for entry in std::fs::read_dir(&dir).unwrap().flatten() {
        let text = std::fs::read_to_string(entry.path()).unwrap();
        let res = fluent_syntax::parser::parse(text.as_str())
            .unwrap_or_else(|(_, e)| panic!("{}: {e:?}", entry.path().display()));
        for e in res.body {
            if let fluent_syntax::ast::Entry::Message(m) = e {
                keys.insert(m.id.name.to_string());
            }
        }
    }
    keys
}

#[test]
fn every_locale_has_every_default_key() {
    let en = keys("en");
    assert!(en.len() > 5);
    for lang in ["es", "zh"] {
        let other = keys(lang);
        let missing: Vec<_> = en.difference(&other).collect();
        assert!(missing.is_empty(), "locale {lang} lacks {missing:?}");
        let extra: Vec<_> = other.difference(&en).collect();
        assert!(
            extra.is_empty(),
            "locale {lang} has keys English lacks: {extra:?}"
        );
    }
}
