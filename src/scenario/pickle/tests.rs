//! Unit tests of the pickle machine (its regression tests through the binary are in
//! `tests/it/hostile_pickles.rs`).

use super::*;

fn root_get<'p>(p: &'p Pickle, key: &str) -> Option<&'p PickleValue> {
    p.get(p.root(), key).map(|id| p.value(id))
}

/// `{'a': <persistent ('storage', 'x')>, 'n': 65}` at protocol 2, by hand: PROTO 2,
/// EMPTY_DICT, MARK, 'a', ('storage', 'x') BINPERSID, 'n', 65, SETITEMS, STOP.
const WITH_PERSID: &[u8] = b"\x80\x02}(X\x01\x00\x00\x00aX\x07\x00\x00\x00storageX\x01\x00\x00\x00x\x86QX\x01\x00\x00\x00nKAu.";

#[test]
fn persistent_references_stand_for_tensors() {
    let p = decode(WITH_PERSID).unwrap();
    assert_eq!(root_get(&p, "n"), Some(&PickleValue::Int(65)));
    assert_eq!(root_get(&p, "a"), Some(&PickleValue::Persistent));
}

/// `{'m': OrderedDict(), 'k': OrderedDict()}` as Python's pickler writes it at protocol 2:
/// the class memoized once, then fetched again.
#[test]
fn ordered_dicts_become_dicts() {
    let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00mq\x01ccollections\nOrderedDict\nq\x02)Rq\x03X\x01\x00\x00\x00kq\x04h\x02)Rq\x05u.";
    let p = decode(bytes).unwrap();
    assert_eq!(root_get(&p, "m"), Some(&PickleValue::Dict(Vec::new())));
    assert_eq!(root_get(&p, "k"), Some(&PickleValue::Dict(Vec::new())));
}

/// Protocol 0, as `pickle.dumps({'vocab_size': 65, 'ok': True, 'x': 'a'}, 0)` writes it.
#[test]
fn protocol_zero_reads() {
    let bytes = b"(dp0\nVvocab_size\np1\nI65\nsVok\np2\nI01\nsVx\np3\ng3\ns.";
    let p = decode(bytes).unwrap();
    assert_eq!(root_get(&p, "vocab_size"), Some(&PickleValue::Int(65)));
    assert_eq!(root_get(&p, "ok"), Some(&PickleValue::Bool(true)));
    assert_eq!(root_get(&p, "x"), Some(&PickleValue::Str("x".into())));
}

#[test]
fn integers_of_every_width() {
    // LONG1 -1, LONG1 2^63-1, LONG1 2^64 (too wide), BININT -2 in a list.
    let bytes = b"\x80\x02](\x8a\x01\xff\x8a\x08\xff\xff\xff\xff\xff\xff\xff\x7f\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01J\xfe\xff\xff\xffe.";
    let p = decode(bytes).unwrap();
    let PickleValue::List(items) = p.value(p.root()) else {
        panic!("{p:?}")
    };
    let got: Vec<_> = items.iter().map(|&i| p.value(i).clone()).collect();
    assert_eq!(
        got,
        [
            PickleValue::Int(-1),
            PickleValue::Int(i64::MAX),
            PickleValue::BigInt,
            PickleValue::Int(-2)
        ]
    );
}

#[test]
fn code_is_refused_by_name() {
    // cos\nsystem\n(S'echo hi'\ntR.  — what `pickle.dumps` of a __reduce__ to os.system writes.
    let e = decode(b"cos\nsystem\n(S'echo hi'\ntR.").unwrap_err();
    assert!(e.contains("refused: it would run code (os.system)"), "{e}");
    // STACK_GLOBAL of builtins.eval at protocol 4.
    let e = decode(b"\x80\x04\x8c\x08builtins\x8c\x04eval\x93\x8c\x011\x85R.").unwrap_err();
    assert!(e.contains("(builtins.eval)"), "{e}");
    assert!(decode(b"ctorch\nFloatStorage\n.").is_ok());
    assert!(decode(b"ctorch\nos.system\n.").is_err());
}

#[test]
fn deep_nesting_neither_recurses_nor_overflows() {
    // 200,000 nested lists: ] x n, then APPEND x (n - 1) folds each into the one below.
    let n = 200_000;
    let mut bytes = vec![0x80, 2];
    bytes.extend(std::iter::repeat_n(b']', n));
    bytes.extend(std::iter::repeat_n(b'a', n - 1));
    bytes.push(b'.');
    let p = decode(&bytes).unwrap();
    assert!(matches!(p.value(p.root()), PickleValue::List(v) if v.len() == 1));
    drop(p);
}

#[test]
fn memory_is_bounded_by_the_size() {
    // 1 MB of MARK: 4 bytes each, well inside the budget, and then an error (no STOP).
    let marks = vec![b'('; 1 << 20];
    assert_eq!(decode(&marks).unwrap_err(), "the pickle ends without STOP");
    // Memo GETs that each push a stack slot cost what they say; a pickle that fetched one
    // value more often than its budget allows is refused.
    let mut p = Machine {
        bytes: b"",
        at: 0,
        values: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        cost: 0,
        budget: 100,
    };
    assert!(p.push(PickleValue::None).is_ok());
    let e = (0..100).try_for_each(|_| p.push_id(0)).unwrap_err();
    assert!(e.contains("refused") && e.contains("memory"), "{e}");
}

proptest::proptest! {
    /// Whatever bytes a `meta.pkl` or a checkpoint's `data.pkl` holds, reading them gives a
    /// value or an error, never a panic.
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
        let _ = decode(&bytes);
    }

    /// The same for bytes made of real opcodes, which reach deeper into the machine.
    #[test]
    fn random_opcode_streams_never_panic(ops in proptest::collection::vec(
        proptest::sample::select(b"()}]NKJMXQqhcRtuaes2b01\x80\x85\x86\x88\x8c\x8f\x90\x93\x94\x95".to_vec()), 0..64)) {
        let mut bytes = vec![0x80, 2];
        for op in ops {
            bytes.push(op);
            bytes.extend_from_slice(&[1, 0, 0, 0, b'a']);
        }
        let _ = decode(&bytes);
    }
}

#[test]
fn broken_pickles_are_errors_not_panics() {
    for bad in [
        &b"\x80"[..],
        b"X\xff\xff\xff\xff",
        b"\xff",
        b"I12",
        b"}(X\x05\x00\x00\x00ab",
        b"a.",
        b"(u.",
        b"h\x05.",
    ] {
        assert!(decode(bad).is_err(), "{bad:?}");
    }
}
