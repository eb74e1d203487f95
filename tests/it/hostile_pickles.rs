//! Pickles built to hurt (issue 18, items 2, 3 and 16): a `meta.pkl` or a checkpoint's
//! `data.pkl` may nest deeply, repeat opcodes that are cheap to write and costly to run, or name
//! code to call. Each is refused through the real binary with an error naming the file, fast and
//! without a crash.

use std::io::Write;

use crate::support::{Run, SiteTest};

/// A config that reads `data/hostile/meta.pkl` for its vocabulary.
const META_CONFIG: &str = "dataset = 'hostile'\nn_layer = 2\nn_head = 2\nn_embd = 64\n";

fn with_meta(bytes: &[u8]) -> Run {
    let t = SiteTest::new();
    t.bytes("data/hostile/meta.pkl", bytes);
    t.file("c.py", META_CONFIG);
    t.run(&["estimate", "c.py"])
}

/// A checkpoint (zip archive with `ckpt/data.pkl`) holding `data_pkl`, resumed from.
fn with_checkpoint(data_pkl: &[u8]) -> Run {
    let t = SiteTest::new();
    let mut zip = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    let stored =
        zip::write::SimpleFileOptions::default().compression_method(zip::CompressionMethod::Stored);
    zip.start_file("ckpt/data.pkl", stored).unwrap();
    zip.write_all(data_pkl).unwrap();
    let bytes = zip.finish().unwrap().into_inner();
    t.bytes("out/ckpt.pt", &bytes);
    t.file("c.py", "init_from = 'resume'\n");
    t.run(&["estimate", "c.py"])
}

/// `n` lists each inside the one before: `]` n times, then `a` (APPEND) n - 1 times.
fn nested_lists(n: usize) -> Vec<u8> {
    let mut b = vec![0x80, 2];
    b.extend(std::iter::repeat_n(b']', n));
    b.extend(std::iter::repeat_n(b'a', n - 1));
    b.push(b'.');
    b
}

fn assert_refused(r: &Run, file: &str, what: &str) {
    assert_eq!(r.code, 1, "{}\n{}", r.stdout, r.stderr);
    assert!(r.stderr.contains(file), "{}", r.stderr);
    assert!(r.stderr.contains(what), "{}", r.stderr);
    assert!(!r.stderr.contains("panicked"), "{}", r.stderr);
}

#[test]
fn deeply_nested_pickles_are_read_without_a_stack_overflow() {
    // 100,000 nested lists (200 KB): the value is decoded and dropped without recursion, and
    // what is missing is said.
    let r = with_meta(&nested_lists(100_000));
    assert_refused(&r, "meta.pkl", "holds a list, not the dict");
    let r = with_checkpoint(&nested_lists(100_000));
    assert_refused(&r, "ckpt.pt", "has no model_args");
}

#[test]
fn mark_floods_cost_memory_in_proportion_to_the_file() {
    // 4 MB of MARK opcodes, then one value and STOP: serde-pickle wanted about 4 KB per MARK.
    let mut b = vec![b'('; 4 << 20];
    b.extend_from_slice(b"N.");
    let r = with_meta(&b);
    assert_refused(&r, "meta.pkl", "holds None, not the dict");
    let r = with_checkpoint(&b);
    assert_refused(&r, "ckpt.pt", "no model_args");
}

#[test]
fn pickles_that_would_run_code_are_refused_as_such() {
    // What `pickle.dumps` writes for an object whose __reduce__ returns (os.system, ('id',)),
    // at protocol 0 and, with STACK_GLOBAL, at protocol 4; as the dict's vocab_size.
    let p0 = b"(dp0\nVvocab_size\np1\ncos\nsystem\np2\n(Vid\np3\ntp4\nRp5\ns.".to_vec();
    let p4 = b"\x80\x04}\x94\x8c\nvocab_size\x94\x8c\x05posix\x94\x8c\x06system\x94\x93\x94\x8c\x02id\x94\x85\x94R\x94s.".to_vec();
    for (bytes, name) in [(p0, "os.system"), (p4, "posix.system")] {
        let r = with_meta(&bytes);
        assert_refused(
            &r,
            "meta.pkl",
            &format!("refused: it would run code ({name})"),
        );
        assert!(!r.stderr.contains("vocab_size is None"), "{}", r.stderr);
        let r = with_checkpoint(&bytes);
        assert_refused(
            &r,
            "ckpt.pt",
            &format!("refused: it would run code ({name})"),
        );
    }
}
