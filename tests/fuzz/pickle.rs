//! Pickles: a dataset's `meta.pkl` (read when a config names the dataset) and the `data.pkl`
//! inside a checkpoint's zip archive (read for `init_from = 'resume'`), both through `vramdoc
//! estimate` as train.py's folder holds them.

use std::io::Write;

use crate::harness::{mutate, Rng, MAIN_STACK};
use crate::{Family, Target};

const META: &[u8] = include_bytes!("../data/nanogpt/data/shakespeare_char/meta.pkl");
const CKPT: &[u8] = include_bytes!("../data/nanogpt/out-gpt2-xl/ckpt.pt");

/// Opcodes (with plausible arguments) the mutator inserts.
const DICT: &[&str] = &[
    "(",
    ")",
    "]",
    "}",
    "l",
    "t",
    "d",
    "a",
    "e",
    "u",
    "s",
    "0",
    "1",
    "2",
    "N",
    "R",
    "b",
    "o",
    "Q",
    "\u{85}",
    ".",
    "\u{94}",
    "q\u{0}",
    "h\u{0}",
    "K\u{1}",
    "M\u{1}\u{0}",
    "X\u{1}\u{0}\u{0}\u{0}a",
    "\u{8c}\u{1}a",
    "ccollections\nOrderedDict\n",
    "cos\nsystem\n",
    "Pstorage\n",
    "I1\n",
    "L99999999999999999999L\n",
    "G\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}\u{0}",
    "\u{80}\u{2}",
    "\u{95}\u{ff}\u{ff}\u{ff}\u{ff}\u{0}\u{0}\u{0}\u{0}",
    "X\u{ff}\u{ff}\u{ff}\u{7f}",
];

/// Appends the opcodes that push one value of depth at most `depth` onto the pickle stack.
fn value(rng: &mut Rng, depth: usize, out: &mut Vec<u8>) {
    if depth == 0 || rng.one_in(3) {
        match rng.below(10) {
            0 => out.extend_from_slice(&[b'K', rng.below(256) as u8]),
            1 => {
                out.push(b'J');
                out.extend_from_slice(&(rng.next_u64() as i32).to_le_bytes());
            }
            2 => {
                let digits = rng.size(40).max(1);
                out.push(b'L');
                out.extend((0..digits).map(|_| b'0' + rng.below(10) as u8));
                out.extend_from_slice(b"L\n");
            }
            3 => {
                out.push(b'G');
                out.extend_from_slice(&f64::from_bits(rng.next_u64()).to_be_bytes());
            }
            4 => {
                let s = rng.pick(&[
                    "vocab_size",
                    "itos",
                    "stoi",
                    "model_args",
                    "n_layer",
                    "é",
                    "",
                ]);
                out.extend_from_slice(&[0x8c, s.len() as u8]);
                out.extend_from_slice(s.as_bytes());
            }
            5 => {
                let len = rng.size(64);
                out.push(b'B');
                out.extend_from_slice(&(len as u32).to_le_bytes());
                out.extend((0..len).map(|_| rng.next_u64() as u8));
            }
            6 => out.push(*rng.pick(&[&b'N', &0x88, &0x89])),
            7 => out.extend_from_slice(b"ccollections\nOrderedDict\n)R"),
            8 => out.extend_from_slice(b"X\x07\x00\x00\x00storageQ"),
            _ => out.extend_from_slice(b"I42\n"),
        }
        return;
    }
    match rng.below(5) {
        0 => {
            out.push(b']');
            if rng.one_in(2) {
                out.push(b'(');
                for _ in 0..rng.below(4) {
                    value(rng, depth - 1, out);
                }
                out.push(b'e');
            } else {
                for _ in 0..rng.below(3) {
                    value(rng, depth - 1, out);
                    out.push(b'a');
                }
            }
        }
        1 => {
            out.push(b'(');
            for _ in 0..rng.below(4) {
                value(rng, depth - 1, out);
            }
            out.push(b't');
        }
        2 => dict(rng, depth - 1, &[], out),
        3 => {
            value(rng, depth - 1, out);
            out.extend_from_slice(&[b'q', rng.below(4) as u8]);
        }
        _ => out.extend_from_slice(&[b'h', rng.below(4) as u8]),
    }
}

/// Appends a dict with `keys` (then random ones) mapped to random values.
fn dict(rng: &mut Rng, depth: usize, keys: &[&str], out: &mut Vec<u8>) {
    out.extend_from_slice(b"}(");
    let extra = rng.below(3);
    for k in keys.iter().copied().chain((0..extra).map(|_| "k")) {
        out.extend_from_slice(&[0x8c, k.len() as u8]);
        out.extend_from_slice(k.as_bytes());
        if k == "vocab_size" && rng.one_in(2) {
            out.extend_from_slice(&[b'K', 65]);
        } else {
            value(rng, depth, out);
        }
    }
    out.push(b'u');
}

/// Appends `itos` as nanoGPT's prepare.py pickles it: a dict of `i: 'c'` items, each value
/// memoized, to about `size` bytes (a tokenizer's vocabulary makes large `meta.pkl` files).
fn vocabulary(rng: &mut Rng, size: usize, out: &mut Vec<u8>) {
    out.extend_from_slice(b"\x8c\x04itos}(");
    let start = out.len();
    let mut i = 0u32;
    while out.len() - start < size {
        out.push(b'J');
        out.extend_from_slice(&i.to_le_bytes());
        let c = char::from_u32(32 + rng.below(0x3000) as u32).unwrap_or('x');
        let mut buf = [0; 4];
        let c = c.encode_utf8(&mut buf).as_bytes();
        out.extend_from_slice(&[0x8c, c.len() as u8]);
        out.extend_from_slice(c);
        out.push(b'r');
        out.extend_from_slice(&i.to_le_bytes());
        i += 1;
    }
    out.push(b'u');
}

/// A pickle of a dict with `keys` and a vocabulary filling most of `max`, at a random
/// protocol; `.` ends it.
fn pickle(rng: &mut Rng, keys: &[&str], max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    if !rng.one_in(4) {
        out.extend_from_slice(&[0x80, 2 + rng.below(4) as u8]);
    }
    let depth = 1 + rng.below(6);
    dict(rng, depth, keys, &mut out);
    // The dict's SETITEMS (`u`) comes after the vocabulary.
    out.pop();
    let size = rng.size(max * 3 / 4);
    vocabulary(rng, size, &mut out);
    out.extend_from_slice(b"u.");
    if rng.one_in(2) {
        mutate(rng, &mut out, DICT, max);
    }
    out
}

fn random_meta(rng: &mut Rng, max: usize) -> Vec<u8> {
    if rng.one_in(4) {
        let mut bytes = META.to_vec();
        mutate(rng, &mut bytes, DICT, max);
        return bytes;
    }
    pickle(rng, &["vocab_size", "itos", "stoi"], max)
}

fn run_meta(input: &[u8]) {
    let _ = vramdoc::fuzzing::estimate(
        ("config.py", b"dataset = 'fuzz'\n"),
        &[("data/fuzz/meta.pkl", input)],
        &[],
    );
}

/// `\x80\x02`, `body`, then STOP.
fn framed(body: Vec<u8>) -> Vec<u8> {
    [b"\x80\x02".as_slice(), &body, b"."].concat()
}

/// `unit` repeated to about `n` bytes.
fn times(unit: &[u8], n: usize) -> Vec<u8> {
    unit.repeat((n / unit.len()).max(1))
}

/// `{'vocab_size': <inner>}`: the nested value sits where vramdoc reads.
fn under_vocab(inner: Vec<u8>) -> Vec<u8> {
    framed([b"}\x8c\x0avocab_size".as_slice(), &inner, b"s"].concat())
}

const PICKLE_FAMILIES: &[Family] = families![
    "nested lists ]a" => |n| under_vocab([times(b"]", n / 2), times(b"a", n / 2 - 1)].concat()),
    "nested lists (l" => |n| under_vocab([times(b"(", n / 2), times(b"l", n / 2)].concat()),
    "nested tuples (t" => |n| under_vocab([times(b"(", n / 2), times(b"t", n / 2)].concat()),
    "nested tuples 0x85" => |n| under_vocab([b"N".as_slice(), &times(b"\x85", n)].concat()),
    "nested dicts" => |n| under_vocab([times(b"}\x8c\x01a", n / 6), times(b"}", 1), times(b"s", n / 6)].concat()),
    "MARK repeated" => |n| framed(times(b"(", n)),
    "MARK then list" => |n| framed([times(b"(", n), b"l".to_vec()].concat()),
    "memo puts" => |n| {
        let mut body = Vec::new();
        for i in 0..n / 7 {
            body.push(b'N');
            body.push(b'r');
            body.extend_from_slice(&(i as u32).to_le_bytes());
            body.push(b'0');
        }
        under_vocab([body, b"K\x01".to_vec()].concat())
    },
    "memo gets of a big list" => |n| {
        let k = n / 4;
        under_vocab([b"(".as_slice(), &times(b"K\x01", k), b"lq\x00(", &times(b"h\x00", k), b"l"].concat())
    },
    "memo doubling" => |n| {
        // L0 = [1, 1]; Li = [Li-1, Li-1]: each level adds 8 bytes and doubles the value.
        let mut body = b"(K\x01K\x01lq\x00".to_vec();
        for i in 0..(n / 8).min(255) as u8 {
            body.extend_from_slice(&[b'(', b'h', i, b'h', i, b'l', b'q', i + 1]);
        }
        under_vocab(body)
    },
    "many dict items" => |n| under_vocab([b"}(".as_slice(), &times(b"K\x01K\x01", n), b"u"].concat()),
    "stack of Nones" => |n| under_vocab([times(b"N", n), b"K\x01".to_vec()].concat()),
    "long string" => |n| under_vocab([b"X".as_slice(), &(n as u32).to_le_bytes(), &vec![b'a'; n]].concat()),
    "huge LONG text" => |n| under_vocab([b"L".as_slice(), &vec![b'9'; n], b"L\n"].concat()),
    "huge LONG4" => |n| under_vocab([b"\x8b".as_slice(), &(n as u32).to_le_bytes(), &vec![0x7f; n]].concat()),
    "FRAME opcodes" => |n| under_vocab([times(b"\x95\x00\x00\x00\x00\x00\x00\x00\x00", n), b"K\x01".to_vec()].concat()),
    "OrderedDict calls" => |n| under_vocab([b"(".as_slice(), &times(b"ccollections\nOrderedDict\n)R", n), b"l"].concat()),
    "OrderedDict memo gets" => |n| {
        // Memoize the class under many indices, then fetch it often: each fetch looks the index
        // up among those memoized.
        let mut body = Vec::new();
        let puts = (n / 2 / 31) as u32;
        for i in 0..puts {
            body.extend_from_slice(b"ccollections\nOrderedDict\nr");
            body.extend_from_slice(&i.to_le_bytes());
            body.push(b'0');
        }
        while body.len() < n {
            body.push(b'j');
            body.extend_from_slice(&(puts / 2).to_le_bytes());
            body.push(b'0');
        }
        under_vocab([body, b"K\x01".to_vec()].concat())
    },
    "persistent ids" => |n| under_vocab([b"(".as_slice(), &times(b"X\x01\x00\x00\x00sQ", n), b"l"].concat()),
    "GLOBAL os.system" => |n| under_vocab([b"(".as_slice(), &times(b"cos\nsystem\nX\x01\x00\x00\x00x\x85R", n), b"l"].concat()),
];

/// `vramdoc estimate config.py` with `dataset = 'fuzz'` and `data/fuzz/meta.pkl`.
pub(crate) fn meta() -> Target {
    Target {
        name: "pickle-meta",
        stack: MAIN_STACK,
        run: run_meta,
        random: random_meta,
        max_random: 256 << 10,
        families: PICKLE_FAMILIES,
        family_size: 16 << 10,
    }
}

/// A zip archive of `members` (stored, as torch.save writes them).
fn zip(members: &[(&str, &[u8])]) -> Vec<u8> {
    let mut w = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let options =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    for (name, bytes) in members {
        if w.start_file(*name, options).is_err() || w.write_all(bytes).is_err() {
            return Vec::new();
        }
    }
    w.finish().map(|c| c.into_inner()).unwrap_or_default()
}

/// A checkpoint's `data.pkl`: `model_args` with the six keys, `iter_num`, tensors as
/// persistent ids.
fn random_data_pkl(rng: &mut Rng, max: usize) -> Vec<u8> {
    let mut out = vec![0x80, 2];
    out.extend_from_slice(b"}(\x8c\x0amodel_args");
    dict(
        rng,
        2,
        &[
            "n_layer",
            "n_head",
            "n_embd",
            "block_size",
            "bias",
            "vocab_size",
        ],
        &mut out,
    );
    out.extend_from_slice(b"\x8c\x08iter_numK\x14\x8c\x05model");
    value(rng, 3, &mut out);
    out.extend_from_slice(b"u.");
    if rng.one_in(2) {
        mutate(rng, &mut out, DICT, max);
    }
    out
}

fn random_checkpoint(rng: &mut Rng, max: usize) -> Vec<u8> {
    let mut bytes = match rng.below(4) {
        0 => CKPT.to_vec(),
        1 => {
            let pkl = random_data_pkl(rng, max);
            let others: Vec<(String, Vec<u8>)> = (0..rng.size(64))
                .map(|i| (format!("ckpt/data/{i}"), vec![0; rng.size(64)]))
                .collect();
            let mut members: Vec<(&str, &[u8])> = vec![("ckpt/data.pkl", &pkl)];
            members.extend(others.iter().map(|(n, b)| (n.as_str(), b.as_slice())));
            zip(&members)
        }
        2 => zip(&[("data.pkl", &random_meta(rng, max))]),
        _ => zip(&[(
            rng.pick(&["a/data.pkl", "data.pkl", "x/y/data.pkl", "data.pk"]),
            &random_data_pkl(rng, max),
        )]),
    };
    if rng.one_in(2) {
        mutate(
            rng,
            &mut bytes,
            &[
                "PK\u{3}\u{4}",
                "PK\u{1}\u{2}",
                "PK\u{5}\u{6}",
                "\u{ff}\u{ff}\u{ff}\u{ff}",
                "data.pkl",
            ],
            max,
        );
    }
    bytes
}

const RESUME: &[u8] = b"init_from = 'resume'\nout_dir = 'out'\n";

fn run_checkpoint(input: &[u8]) {
    let _ = vramdoc::fuzzing::estimate(("config.py", RESUME), &[("out/ckpt.pt", input)], &[]);
}

/// A checkpoint whose `data.pkl` is `pkl`.
fn ckpt_of(pkl: Vec<u8>) -> Vec<u8> {
    zip(&[("ckpt/data.pkl", &pkl)])
}

const CHECKPOINT_FAMILIES: &[Family] = families![
    "nested lists in data.pkl" => |n| ckpt_of(framed([b"}\x8c\x0amodel_args".as_slice(), &times(b"]", n / 2), &times(b"a", n / 2 - 1), b"s"].concat())),
    "MARKs in data.pkl" => |n| ckpt_of(framed(times(b"(", n))),
    "many members" => |n| {
        let names: Vec<String> = (0..n / 100).map(|i| format!("ckpt/data/{i}")).collect();
        let mut members: Vec<(&str, &[u8])> = names.iter().map(|s| (s.as_str(), &b""[..])).collect();
        members.push(("ckpt/data.pkl", CKPT_PKL));
        zip(&members)
    },
    "long member name" => |n| zip(&[(&format!("{}/data.pkl", "d".repeat(n.min(65_000))), CKPT_PKL)]),
    "no data.pkl" => |n| zip(&[("ckpt/other", &vec![0; n])]),
    "junk after a zip" => |n| [zip(&[("ckpt/data.pkl", CKPT_PKL)]), vec![b'P'; n]].concat(),
    "many central headers" => |n| [vec![0; 4], times(b"PK\x01\x02", n), b"PK\x05\x06".to_vec(), vec![0xff; 18]].concat(),
];

/// The `data.pkl` of the fixture checkpoint (a valid one, for the shapes around it).
const CKPT_PKL: &[u8] = b"\x80\x02}(\x8c\x0amodel_args}(\x8c\x07n_layerK\x02\x8c\x06n_headK\x02\x8c\x06n_embdK@\x8c\x0ablock_sizeK@\x8c\x04bias\x88\x8c\x0avocab_sizeK\x41u\x8c\x08iter_numK\x14u.";

/// `vramdoc estimate config.py` with `init_from = 'resume'` and `out/ckpt.pt`.
pub(crate) fn checkpoint() -> Target {
    Target {
        name: "pickle-checkpoint",
        stack: MAIN_STACK,
        run: run_checkpoint,
        random: random_checkpoint,
        max_random: 256 << 10,
        families: CHECKPOINT_FAMILIES,
        family_size: 16 << 10,
    }
}
