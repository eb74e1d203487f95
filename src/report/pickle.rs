//! Python pickles as nanoGPT leaves them on disk: a dataset's `meta.pkl` and the `data.pkl`
//! inside a PyTorch checkpoint. `serde-pickle` decodes the values; this module only removes what
//! it cannot read and vramdoc does not need: PyTorch stores every tensor as a *persistent
//! reference* (`BINPERSID`, a tuple naming the storage file), which `serde-pickle` refuses. The
//! reference tuple is left on the stack in its place, so the surrounding structure (dicts of
//! `model_args`, `config`, `iter_num`) decodes as written. `collections.OrderedDict()`, which
//! `serde-pickle` cannot build either and PyTorch uses for every state dict, becomes a plain dict.
//!
//! The opcode table follows CPython's `Lib/pickletools.py` (protocols 0 to 5).

use serde_pickle::{DeOptions, Value};

/// The largest pickle read (a checkpoint's `data.pkl` is a few hundred KiB even for GPT-2 XL:
/// the tensors themselves live in other files of the archive).
pub(crate) const MAX_PICKLE_BYTES: usize = 64 << 20;

/// How an opcode's argument is laid out after the opcode byte.
enum Arg {
    None,
    Fixed(usize),
    /// A little-endian length of this many bytes, then that many bytes.
    Counted(usize),
    /// Newline-terminated lines.
    Lines(usize),
}

fn arg_of(op: u8) -> Option<Arg> {
    Some(match op {
        b'(' | b'.' | b'0' | b'1' | b'2' | b'N' | b'R' | b'b' | b'o' | b'a' | b'e' | b'd'
        | b'}' | b'l' | b']' | b's' | b'u' | b't' | b')' | b'Q' | 0x85 | 0x86 | 0x87 | 0x88
        | 0x89 | 0x81 | 0x8f | 0x90 | 0x91 | 0x92 | 0x93 | 0x94 | 0x97 | 0x98 => Arg::None,
        b'K' | b'h' | b'q' | 0x80 | 0x82 => Arg::Fixed(1),
        b'M' | 0x83 => Arg::Fixed(2),
        b'J' | b'j' | b'r' | 0x84 => Arg::Fixed(4),
        b'G' | 0x95 => Arg::Fixed(8),
        b'U' | b'C' | 0x8c | 0x8a => Arg::Counted(1),
        b'T' | b'B' | b'X' | 0x8b => Arg::Counted(4),
        0x8d | 0x8e | 0x96 => Arg::Counted(8),
        b'I' | b'L' | b'F' | b'S' | b'V' | b'P' | b'g' | b'p' => Arg::Lines(1),
        b'c' | b'i' => Arg::Lines(2),
        _ => return None,
    })
}

/// Where the peephole that turns `OrderedDict()` into `{}` stands: the class was just pushed
/// (by `GLOBAL` or a memo `GET`), then its empty argument tuple.
#[derive(Clone, Copy, PartialEq)]
enum OrderedDictCall {
    None,
    Class,
    Args,
}

/// `bytes` without persistent-reference opcodes (`BINPERSID`; `PERSID`'s id becomes a plain
/// string) and without `FRAME` hints (their lengths would no longer match), and with
/// `OrderedDict()` calls turned into empty dicts. Errors name the offset of an opcode it does not
/// know or an argument that runs past the end.
pub(crate) fn strip_persistent_ids(bytes: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut ordered_dict_memo: Vec<u32> = Vec::new();
    let mut call = OrderedDictCall::None;
    let mut at = 0;
    while at < bytes.len() {
        let op = bytes[at];
        let arg =
            arg_of(op).ok_or_else(|| format!("unknown pickle opcode 0x{op:02x} at byte {at}"))?;
        let start = at;
        at += 1;
        let truncated = || format!("pickle ends inside the opcode at byte {start}");
        match arg {
            Arg::None => {}
            Arg::Fixed(n) => {
                at = at
                    .checked_add(n)
                    .filter(|&e| e <= bytes.len())
                    .ok_or_else(truncated)?
            }
            Arg::Counted(width) => {
                let len_bytes = bytes.get(at..at + width).ok_or_else(truncated)?;
                let mut len = 0usize;
                for (i, b) in len_bytes.iter().enumerate() {
                    let shifted = usize::from(*b)
                        .checked_shl(8 * i as u32)
                        .ok_or_else(truncated)?;
                    len = len.checked_add(shifted).ok_or_else(truncated)?;
                }
                at = (at + width)
                    .checked_add(len)
                    .filter(|&e| e <= bytes.len())
                    .ok_or_else(truncated)?;
            }
            Arg::Lines(n) => {
                for _ in 0..n {
                    let line = bytes[at..]
                        .iter()
                        .position(|&b| b == b'\n')
                        .ok_or_else(truncated)?;
                    at += line + 1;
                }
            }
        }
        let arg_bytes = &bytes[start + 1..at];
        let memo_index = || -> u32 {
            arg_bytes
                .iter()
                .rev()
                .fold(0u32, |n, &b| n.wrapping_shl(8) | u32::from(b))
        };
        let next_call = match (op, call) {
            (b'c', _) if arg_bytes == b"collections\nOrderedDict\n" => OrderedDictCall::Class,
            (b'h' | b'j', _) if ordered_dict_memo.contains(&memo_index()) => OrderedDictCall::Class,
            (b'q' | b'r', OrderedDictCall::Class) => {
                ordered_dict_memo.push(memo_index());
                OrderedDictCall::Class
            }
            (b')', OrderedDictCall::Class) => OrderedDictCall::Args,
            _ => OrderedDictCall::None,
        };
        match op {
            b'Q' | 0x95 => {}
            // PERSID's id is a text line; as a protocol-0 string it stays on the stack.
            b'P' => {
                out.push(b'V');
                out.extend_from_slice(arg_bytes);
            }
            // OrderedDict(): drop the arguments and the class, push an empty dict.
            b'R' if call == OrderedDictCall::Args => out.extend_from_slice(b"00}"),
            _ => out.extend_from_slice(&bytes[start..at]),
        }
        call = next_call;
        if op == b'.' {
            break;
        }
    }
    Ok(out)
}

/// Decodes a pickle (with persistent references removed) into a value. Classes it cannot build
/// (`collections.OrderedDict`, `torch._utils._rebuild_tensor_v2`, ...) decode as `None` or as
/// their arguments, which is all vramdoc reads of them.
pub(crate) fn decode(bytes: &[u8]) -> Result<Value, String> {
    if bytes.len() > MAX_PICKLE_BYTES {
        return Err(format!(
            "the pickle is {} bytes, over the {} MiB vramdoc reads",
            bytes.len(),
            MAX_PICKLE_BYTES >> 20
        ));
    }
    let plain = strip_persistent_ids(bytes)?;
    let options = DeOptions::new()
        .replace_unresolved_globals()
        .replace_recursive_structures()
        .decode_strings();
    serde_pickle::value_from_slice(&plain, options).map_err(|e| e.to_string())
}

/// `dict[key]` for a string key.
pub(crate) fn get<'v>(dict: &'v Value, key: &str) -> Option<&'v Value> {
    match dict {
        Value::Dict(map) => map.get(&serde_pickle::HashableValue::String(key.to_string())),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `{'a': <persistent ('storage', 'x')>, 'n': 65}` at protocol 2, by hand: PROTO 2,
    /// EMPTY_DICT, MARK, 'a', ('storage', 'x') BINPERSID, 'n', 65, SETITEMS, STOP.
    const WITH_PERSID: &[u8] = b"\x80\x02}(X\x01\x00\x00\x00aX\x07\x00\x00\x00storageX\x01\x00\x00\x00x\x86QX\x01\x00\x00\x00nKAu.";

    #[test]
    fn persistent_references_are_left_as_their_ids() {
        let v = decode(WITH_PERSID).unwrap();
        assert_eq!(get(&v, "n"), Some(&Value::I64(65)));
        assert_eq!(
            get(&v, "a"),
            Some(&Value::Tuple(vec![
                Value::String("storage".into()),
                Value::String("x".into())
            ]))
        );
        assert!(serde_pickle::value_from_slice(WITH_PERSID, DeOptions::new()).is_err());
    }

    /// `{'m': OrderedDict(), 'k': OrderedDict()}` as Python's pickler writes it at protocol 2:
    /// the class memoized once, then fetched again.
    #[test]
    fn ordered_dicts_become_dicts() {
        let bytes = b"\x80\x02}q\x00(X\x01\x00\x00\x00mq\x01ccollections\nOrderedDict\nq\x02)Rq\x03X\x01\x00\x00\x00kq\x04h\x02)Rq\x05u.";
        let v = decode(bytes).unwrap();
        assert!(
            matches!(get(&v, "m"), Some(Value::Dict(d)) if d.is_empty()),
            "{v:?}"
        );
        assert!(
            matches!(get(&v, "k"), Some(Value::Dict(d)) if d.is_empty()),
            "{v:?}"
        );
    }

    proptest::proptest! {
        /// Whatever bytes a `meta.pkl` or a checkpoint's `data.pkl` holds, reading them gives a
        /// value or an error, never a panic (the opcode walker and serde-pickle alike).
        #[test]
        fn random_bytes_never_panic(bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..256)) {
            let _ = decode(&bytes);
        }

        /// The same for bytes made of real opcodes, which reach deeper into the decoder.
        #[test]
        fn random_opcode_streams_never_panic(ops in proptest::collection::vec(
            proptest::sample::select(b"()}]NKJMXQqhcRtu.\x80\x85\x86\x88\x8c\x95".to_vec()), 0..64)) {
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
        ] {
            assert!(decode(bad).is_err(), "{bad:?}");
        }
    }
}
