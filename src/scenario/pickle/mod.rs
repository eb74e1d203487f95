//! Python pickles as nanoGPT leaves them on disk: a dataset's `meta.pkl` and the `data.pkl`
//! inside a PyTorch checkpoint, read by a small pickle machine of vramdoc's own with hard bounds.
//!
//! A pickle is a program for a stack machine (CPython's `Lib/pickle.py`; opcodes and their
//! arguments as `Lib/pickletools.py` lists them, protocols 0 to 5). This one runs it without
//! running any Python:
//! - **No code.** `GLOBAL`/`STACK_GLOBAL`/`INST` may only name [`ALLOWED_GLOBALS`]: the
//!   constructors PyTorch's own `torch.load(weights_only=True)` accepts for a checkpoint
//!   (`collections.OrderedDict`, the tensor rebuild functions and storage classes) and builtins
//!   that only build data. Anything else (`os.system`, `builtins.eval`, a user's class) is refused
//!   with "refused: it would run code (os.system)": unpickling it in Python would import and call
//!   it. Calling an allowed name builds an inert stand-in ([`PickleValue::Object`]); `OrderedDict()`
//!   builds a dict, so a state dict's items decode as written.
//! - **Persistent references** (`PERSID`/`BINPERSID`, how PyTorch points at each tensor's storage
//!   file) become [`PickleValue::Persistent`]: the tensors are never read.
//! - **Bounded time, memory and depth.** Every value lives in one flat arena and containers hold
//!   arena indices, so nothing recurses: neither decoding nor dropping 20,000 nested lists uses
//!   stack. Each opcode does constant work plus moving the items it pops, so time is linear in
//!   the size. The memory the machine allocates is counted as it goes (a value, a stack slot, a
//!   memo entry, a container item, a string's bytes) and refused past [`MEMORY_PER_BYTE`] times
//!   the pickle's size plus [`MEMORY_SLACK`]: 1 MB of `MARK` opcodes, which costs serde-pickle
//!   4 GB, costs 4 MB here. The resident memory is at most about 1.5 times what is counted (the
//!   vectors' spare capacity): 4 MiB of `]` (a new list per byte, the costliest opcode) peaks at
//!   250 MB.

use std::collections::HashMap;

use machine::Machine;

mod machine;
mod opcodes;

/// The largest pickle read: a checkpoint's `data.pkl` is a few KiB even for GPT-2 XL (the tensors
/// live in other members of the archive), and a `meta.pkl` with a 50,000-token vocabulary about
/// 1 MiB.
pub(crate) const MAX_PICKLE_BYTES: usize = 16 << 20;

/// The memory a pickle may cost, in bytes per byte of pickle (see [`MEMORY_SLACK`]). The
/// costliest opcodes are one byte that create a value (`}`, `]`): 32 bytes for the value and 4
/// for its stack slot; real pickles cost about 12 (nanoGPT's `meta.pkl`).
pub(crate) const MEMORY_PER_BYTE: usize = 40;

/// Memory any pickle may cost besides [`MEMORY_PER_BYTE`], so small files are never refused.
pub(crate) const MEMORY_SLACK: usize = 1 << 20;

/// The globals a pickle may name: data constructors only (after PyTorch's weights-only
/// unpickler, `torch/_weights_only_unpickler.py`). Storage classes (`torch.FloatStorage`, ...)
/// are accepted by [`is_allowed`] as a family.
pub(crate) const ALLOWED_GLOBALS: [&str; 14] = [
    "collections.OrderedDict",
    "torch._utils._rebuild_tensor",
    "torch._utils._rebuild_tensor_v2",
    "torch._utils._rebuild_parameter",
    "torch._utils._rebuild_parameter_with_state",
    "torch.serialization._get_layout",
    "torch.Size",
    "torch.device",
    "_codecs.encode",
    "builtins.set",
    "builtins.frozenset",
    "builtins.bytearray",
    "__builtin__.set",
    "__builtin__.bytearray",
];

fn is_allowed(name: &str) -> bool {
    let storage = name.strip_prefix("torch.").is_some_and(|class| {
        class == "storage.UntypedStorage"
            || (class.ends_with("Storage") && class.bytes().all(|b| b.is_ascii_alphanumeric()))
    });
    storage || ALLOWED_GLOBALS.contains(&name)
}

/// An index into a [`Pickle`]'s values.
pub(crate) type Id = u32;

/// One decoded value. Containers hold [`Id`]s, never values, so no value nests another.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum PickleValue {
    None,
    Bool(bool),
    Int(i64),
    /// An integer outside `i64` (its digits are not kept).
    BigInt,
    Float(f64),
    Str(Box<str>),
    Bytes,
    Tuple(Vec<Id>),
    List(Vec<Id>),
    /// Items in the order set; a later equal key wins, as in Python.
    Dict(Vec<(Id, Id)>),
    /// A set or frozenset (its items are not kept).
    Set,
    /// An allowed global, not yet called.
    Global(Box<str>),
    /// What calling an allowed global built (a tensor, a `torch.Size`, ...), named by the global.
    Object(Box<str>),
    /// A persistent reference (a tensor's storage).
    Persistent,
}

/// A decoded pickle: its values and the one `STOP` returned.
#[derive(Debug)]
pub(crate) struct Pickle {
    values: Vec<PickleValue>,
    root: Id,
}

impl Pickle {
    /// The value `STOP` returned.
    pub(crate) fn root(&self) -> Id {
        self.root
    }

    pub(crate) fn value(&self, id: Id) -> &PickleValue {
        &self.values[id as usize]
    }

    /// `dict[key]` for a string key (the last item with that key, as Python keeps it).
    pub(crate) fn get(&self, dict: Id, key: &str) -> Option<Id> {
        let PickleValue::Dict(items) = self.value(dict) else {
            return None;
        };
        items
            .iter()
            .rev()
            .find(|(k, _)| matches!(self.value(*k), PickleValue::Str(s) if &**s == key))
            .map(|(_, v)| *v)
    }

    /// The value as a message shows it: a scalar as Python prints it, anything else by its kind.
    pub(crate) fn describe(&self, id: Id) -> String {
        match self.value(id) {
            PickleValue::None => "None".into(),
            PickleValue::Bool(b) => if *b { "True" } else { "False" }.into(),
            PickleValue::Int(n) => n.to_string(),
            PickleValue::BigInt => "an integer beyond 64 bits".into(),
            PickleValue::Float(f) => format!("{f:?}"),
            PickleValue::Str(s) => format!("the string {:?}", crate::terminal::visible_line(s)),
            PickleValue::Bytes => "bytes".into(),
            PickleValue::Tuple(_) => "a tuple".into(),
            PickleValue::List(_) => "a list".into(),
            PickleValue::Dict(_) => "a dict".into(),
            PickleValue::Set => "a set".into(),
            PickleValue::Global(name) => format!("the class {name}"),
            PickleValue::Object(name) => format!("a {name} object"),
            PickleValue::Persistent => "a tensor".into(),
        }
    }
}

/// Decodes a pickle; errors say what was refused or broken and at which byte.
pub(crate) fn decode(bytes: &[u8]) -> Result<Pickle, String> {
    if bytes.len() > MAX_PICKLE_BYTES {
        return Err(format!(
            "the pickle is {} bytes, over the {} MiB vramdoc reads",
            bytes.len(),
            MAX_PICKLE_BYTES >> 20
        ));
    }
    let budget = bytes
        .len()
        .saturating_mul(MEMORY_PER_BYTE)
        .saturating_add(MEMORY_SLACK);
    let mut m = Machine {
        bytes,
        at: 0,
        values: Vec::new(),
        stack: Vec::new(),
        marks: Vec::new(),
        memo: HashMap::new(),
        cost: 0,
        budget,
    };
    loop {
        let start = m.at;
        let op = *bytes.get(start).ok_or("the pickle ends without STOP")?;
        m.at += 1;
        let done = m
            .step(op)
            .map_err(|e| format!("{e} (opcode 0x{op:02x} at byte {start})"))?;
        if done {
            let root = m.pop()?;
            return Ok(Pickle {
                values: m.values,
                root,
            });
        }
    }
}

#[cfg(test)]
mod tests;
