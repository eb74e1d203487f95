//! The key table's own invariants.

use super::*;

#[test]
fn every_key_round_trips_through_its_displayed_value() {
    let defaults = Scenario::default();
    for k in KEYS {
        let mut s = Scenario::default();
        let shown = k.value(&defaults).to_string();
        let lit = match k.value(&defaults) {
            KeyValue::Whole(n) => Literal::Int(n as i64),
            KeyValue::Flag(b) => Literal::Bool(b),
            KeyValue::Float(x) => Literal::Float(x),
            KeyValue::Text(t) => Literal::Str(t.into_owned()),
            KeyValue::Unset => Literal::None,
        };
        s.set(k.name, lit)
            .unwrap_or_else(|e| panic!("{}: {e}", k.name));
        assert_eq!(k.value(&s).to_string(), shown, "{}", k.name);
    }
}

#[test]
fn names_are_unique() {
    for (i, k) in KEYS.iter().enumerate() {
        assert!(!KEYS[..i].iter().any(|o| o.name == k.name), "{}", k.name);
    }
}
