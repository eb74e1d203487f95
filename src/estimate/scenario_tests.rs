//! The scenario's checks against the key table.

use super::*;

/// Sets one count of a scenario to 0.
type Zero = fn(&mut Scenario);

/// Each count of a scenario built in code (the setters refuse 0 before) set to 0 is refused
/// by the key's name, and these are exactly the key table's count rows.
#[test]
fn every_count_key_of_the_table_is_checked() {
    let zeroed: [(&str, Zero); 9] = [
        ("n_layer", |s| s.n_layer = 0),
        ("n_head", |s| s.n_head = 0),
        ("n_embd", |s| s.n_embd = 0),
        ("vocab_size", |s| s.vocab_size = 0),
        ("block_size", |s| s.block_size = 0),
        ("batch_size", |s| s.batch_size = 0),
        ("gradient_accumulation_steps", |s| {
            s.gradient_accumulation_steps = 0
        }),
        ("eval_batch_size", |s| s.eval_batch_size = Some(0)),
        ("ddp_world_size", |s| s.ddp_world_size = 0),
    ];
    let table: Vec<&str> = KEYS
        .iter()
        .filter(|k| matches!(k.kind, Kind::Count | Kind::CountOrNone))
        .map(|k| k.name)
        .collect();
    let names: Vec<&str> = zeroed.iter().map(|(n, _)| *n).collect();
    assert_eq!(names, table, "a count key without a zero case here");
    assert!(Scenario::default().check_counts().is_ok());
    for (name, zero) in zeroed {
        let mut s = Scenario::default();
        zero(&mut s);
        let e = s.check_counts().unwrap_err();
        assert_eq!(e.key.as_deref(), Some(name), "{e}");
        assert!(e.message.contains("must be at least 1"), "{e}");
    }
}
