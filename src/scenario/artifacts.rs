//! nanoGPT's files that decide the model's shape: `data/<dataset>/meta.pkl`, whose `vocab_size`
//! train.py uses for a character-level or custom-tokenized dataset, and `<out_dir>/ckpt.pt`,
//! whose `model_args` a run with `init_from = 'resume'` is built from (train.py copies
//! `n_layer n_head n_embd block_size bias vocab_size` from it and ignores the config's values).

use std::io::Read;
use std::path::Path;

use super::literal::Literal;
use super::pickle::{self, PickleValue, MAX_PICKLE_BYTES};

/// The model keys train.py takes from a checkpoint when resuming, in its order.
pub(crate) const CHECKPOINT_KEYS: [&str; 6] = [
    "n_layer",
    "n_head",
    "n_embd",
    "block_size",
    "bias",
    "vocab_size",
];

/// What a checkpoint says about the run that wrote it.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Checkpoint {
    /// `model_args`: each of [`CHECKPOINT_KEYS`] with its value (an integer, or a boolean for
    /// `bias`), typed as the scenario's setters take it.
    pub(crate) model_args: Vec<(&'static str, Literal)>,
    /// `iter_num`, when present.
    pub(crate) iter_num: Option<i64>,
}

/// Reads a file of at most `limit` bytes, refusing what is not a regular file.
fn read_limited(path: &Path, limit: u64) -> Result<Vec<u8>, String> {
    let meta =
        std::fs::metadata(path).map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if !meta.is_file() {
        return Err(format!("{} is not a regular file", path.display()));
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(limit + 1).read_to_end(&mut bytes))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if bytes.len() as u64 > limit {
        return Err(format!(
            "{} is larger than the {} MiB vramdoc reads",
            path.display(),
            limit >> 20
        ));
    }
    Ok(bytes)
}

/// `vocab_size` from a dataset's `meta.pkl` (written by nanoGPT's `prepare.py` scripts: a dict
/// with `vocab_size`, `itos`, `stoi`).
pub(crate) fn dataset_vocab(meta: &Path) -> Result<u64, String> {
    let bytes = read_limited(meta, MAX_PICKLE_BYTES as u64)?;
    let p = pickle::decode(&bytes).map_err(|e| format!("{}: {e}", meta.display()))?;
    if !matches!(p.value(p.root()), PickleValue::Dict(_)) {
        return Err(format!(
            "{}: holds {}, not the dict with vocab_size that prepare.py writes",
            meta.display(),
            p.describe(p.root())
        ));
    }
    match p.get(p.root(), "vocab_size").map(|id| (id, p.value(id))) {
        Some((_, PickleValue::Int(n))) if *n > 0 => Ok(*n as u64),
        Some((id, _)) => Err(format!(
            "{}: vocab_size is {}, not a positive integer",
            meta.display(),
            p.describe(id)
        )),
        None => Err(format!("{}: no vocab_size in it", meta.display())),
    }
}

/// `model_args` and `iter_num` from a checkpoint written by nanoGPT's `torch.save(checkpoint,
/// ...)`: a zip archive whose `<name>/data.pkl` holds the dict; the tensors are in other members
/// and are not read. Only the central directory and that one member are touched, so a 20 GB
/// GPT-2 XL checkpoint reads as fast as a small one.
pub(crate) fn checkpoint(path: &Path) -> Result<Checkpoint, String> {
    let shown = path.display();
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {shown}: {e}"))?;
    if !file.metadata().map(|m| m.is_file()).unwrap_or(false) {
        return Err(format!("{shown} is not a regular file"));
    }
    let mut archive = zip::ZipArchive::new(file)
        .map_err(|e| format!("{shown} is not a PyTorch checkpoint (a zip archive): {e}"))?;
    let name = archive
        .file_names()
        .filter(|n| n.ends_with("/data.pkl") || *n == "data.pkl")
        .min_by_key(|n| n.len())
        .map(str::to_string)
        .ok_or_else(|| format!("{shown} has no data.pkl: not a checkpoint saved by torch.save"))?;
    let mut member = archive
        .by_name(&name)
        .map_err(|e| format!("{shown}: {e}"))?;
    let mut bytes = Vec::new();
    (&mut member)
        .take(MAX_PICKLE_BYTES as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("{shown}: cannot read {name}: {e}"))?;
    let p = pickle::decode(&bytes).map_err(|e| format!("{shown}: {name}: {e}"))?;
    let args = p.get(p.root(), "model_args").ok_or_else(|| {
        format!("{shown} has no model_args: it was not written by nanoGPT's train.py")
    })?;
    let mut model_args = Vec::new();
    for key in CHECKPOINT_KEYS {
        let found = p.get(args, key);
        let literal = match found.map(|id| p.value(id)) {
            Some(PickleValue::Int(n)) => Literal::Int(*n),
            Some(PickleValue::Bool(b)) => Literal::Bool(*b),
            Some(PickleValue::None) | None if key == "bias" => continue,
            Some(_) => {
                let shown_value = found.map(|id| p.describe(id)).unwrap_or_default();
                return Err(format!(
                    "{shown}: model_args[{key:?}] is {shown_value}, not a number"
                ));
            }
            None => return Err(format!("{shown}: model_args has no {key:?}")),
        };
        model_args.push((key, literal));
    }
    let iter_num = match p.get(p.root(), "iter_num").map(|id| p.value(id)) {
        Some(PickleValue::Int(n)) => Some(*n),
        _ => None,
    };
    Ok(Checkpoint {
        model_args,
        iter_num,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fixture(name: &str) -> std::path::PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/nanogpt")
            .join(name)
    }

    #[test]
    fn a_torch_checkpoint_gives_its_model_args() {
        let c = checkpoint(&fixture("out-gpt2-xl/ckpt.pt")).unwrap();
        assert_eq!(
            c.model_args,
            [
                ("n_layer", Literal::Int(48)),
                ("n_head", Literal::Int(25)),
                ("n_embd", Literal::Int(1600)),
                ("block_size", Literal::Int(1024)),
                ("bias", Literal::Bool(true)),
                ("vocab_size", Literal::Int(50257))
            ]
        );
        assert_eq!(c.iter_num, Some(20));
    }

    #[test]
    fn a_dataset_meta_gives_its_vocabulary() {
        assert_eq!(
            dataset_vocab(&fixture("data/shakespeare_char/meta.pkl")),
            Ok(65)
        );
    }

    #[test]
    fn wrong_files_are_errors_naming_the_file() {
        let meta = fixture("data/shakespeare_char/meta.pkl");
        let e = checkpoint(&meta).unwrap_err();
        assert!(e.contains("meta.pkl") && e.contains("zip"), "{e}");
        let e = dataset_vocab(&fixture("out-gpt2-xl/ckpt.pt")).unwrap_err();
        assert!(e.contains("ckpt.pt"), "{e}");
        let e = dataset_vocab(&fixture("nothing/meta.pkl")).unwrap_err();
        assert!(e.contains("cannot read"), "{e}");
    }
}
