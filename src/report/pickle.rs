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
//!   it. Calling an allowed name builds an inert stand-in ([`Value::Object`]); `OrderedDict()`
//!   builds a dict, so a state dict's items decode as written.
//! - **Persistent references** (`PERSID`/`BINPERSID`, how PyTorch points at each tensor's storage
//!   file) become [`Value::Persistent`]: the tensors are never read.
//! - **Bounded time, memory and depth.** Every value lives in one flat arena and containers hold
//!   arena indices, so nothing recurses: neither decoding nor dropping 20,000 nested lists uses
//!   stack. Each opcode does constant work plus moving the items it pops, so time is linear in
//!   the size. The memory the machine allocates is counted as it goes (a value, a stack slot, a
//!   memo entry, a container item, a string's bytes) and refused past [`MEMORY_PER_BYTE`] times
//!   the pickle's size plus [`MEMORY_SLACK`]: 1 MB of `MARK` opcodes, which costs serde-pickle
//!   4 GB, costs 4 MB here.

use std::collections::HashMap;

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
pub(crate) enum Value {
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
    values: Vec<Value>,
    root: Id,
}

impl Pickle {
    /// The value `STOP` returned.
    pub(crate) fn root(&self) -> Id {
        self.root
    }

    pub(crate) fn value(&self, id: Id) -> &Value {
        &self.values[id as usize]
    }

    /// `dict[key]` for a string key (the last item with that key, as Python keeps it).
    pub(crate) fn get(&self, dict: Id, key: &str) -> Option<Id> {
        let Value::Dict(items) = self.value(dict) else {
            return None;
        };
        items
            .iter()
            .rev()
            .find(|(k, _)| matches!(self.value(*k), Value::Str(s) if &**s == key))
            .map(|(_, v)| *v)
    }

    /// The value as a message shows it: a scalar as Python prints it, anything else by its kind.
    pub(crate) fn describe(&self, id: Id) -> String {
        match self.value(id) {
            Value::None => "None".into(),
            Value::Bool(b) => if *b { "True" } else { "False" }.into(),
            Value::Int(n) => n.to_string(),
            Value::BigInt => "an integer beyond 64 bits".into(),
            Value::Float(f) => format!("{f:?}"),
            Value::Str(s) => format!("the string {:?}", crate::terminal::visible_line(s)),
            Value::Bytes => "bytes".into(),
            Value::Tuple(_) => "a tuple".into(),
            Value::List(_) => "a list".into(),
            Value::Dict(_) => "a dict".into(),
            Value::Set => "a set".into(),
            Value::Global(name) => format!("the class {name}"),
            Value::Object(name) => format!("a {name} object"),
            Value::Persistent => "a tensor".into(),
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

/// The machine's state while a pickle runs.
struct Machine<'a> {
    bytes: &'a [u8],
    at: usize,
    values: Vec<Value>,
    stack: Vec<Id>,
    /// Stack heights at each `MARK`.
    marks: Vec<u32>,
    memo: HashMap<u32, Id>,
    /// Bytes allocated so far, as counted by [`Machine::charge`].
    cost: usize,
    budget: usize,
}

const VALUE_COST: usize = std::mem::size_of::<Value>();
const ID_COST: usize = std::mem::size_of::<Id>();

impl<'a> Machine<'a> {
    fn charge(&mut self, bytes: usize) -> Result<(), String> {
        self.cost = self.cost.saturating_add(bytes);
        if self.cost > self.budget {
            return Err(format!(
                "refused: decoding it would take more than {} bytes of memory ({MEMORY_PER_BYTE} per byte of pickle); a meta.pkl or checkpoint does not",
                self.budget
            ));
        }
        Ok(())
    }

    /// Adds a value and pushes it.
    fn push(&mut self, v: Value) -> Result<(), String> {
        self.charge(VALUE_COST + ID_COST)?;
        let id = Id::try_from(self.values.len()).map_err(|_| "too many values".to_string())?;
        self.values.push(v);
        self.stack.push(id);
        Ok(())
    }

    fn push_id(&mut self, id: Id) -> Result<(), String> {
        self.charge(ID_COST)?;
        self.stack.push(id);
        Ok(())
    }

    fn pop(&mut self) -> Result<Id, String> {
        let floor = self.marks.last().map_or(0, |&m| m as usize);
        if self.stack.len() <= floor {
            return Err("the stack is empty".into());
        }
        self.stack.pop().ok_or_else(|| "the stack is empty".into())
    }

    /// The items above the last `MARK`, which is removed.
    fn pop_mark(&mut self) -> Result<Vec<Id>, String> {
        let mark = self.marks.pop().ok_or("no MARK before it")? as usize;
        Ok(self.stack.split_off(mark))
    }

    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        let end = self
            .at
            .checked_add(n)
            .filter(|&e| e <= self.bytes.len())
            .ok_or("the pickle ends inside it")?;
        let bytes: &'a [u8] = self.bytes;
        let out = &bytes[self.at..end];
        self.at = end;
        Ok(out)
    }

    /// A little-endian unsigned number of `n` bytes.
    fn uint(&mut self, n: usize) -> Result<u64, String> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// A length-prefixed argument (`n`-byte little-endian length).
    fn counted(&mut self, n: usize) -> Result<&'a [u8], String> {
        let len = self.uint(n)?;
        let len = usize::try_from(len).map_err(|_| "the pickle ends inside it".to_string())?;
        self.take(len)
    }

    /// A newline-terminated argument, without the newline.
    fn line(&mut self) -> Result<&'a [u8], String> {
        let bytes: &'a [u8] = self.bytes;
        let rest = &bytes[self.at..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("the pickle ends inside it")?;
        self.at += n + 1;
        Ok(&rest[..n])
    }

    fn text(&mut self, raw: &[u8]) -> Result<(), String> {
        self.charge(raw.len())?;
        let s = String::from_utf8_lossy(raw).into_owned().into_boxed_str();
        self.push(Value::Str(s))
    }

    /// A protocol-0 decimal line (`INT`, `LONG`, memo indices).
    fn decimal(raw: &[u8]) -> Result<Option<i64>, String> {
        let s = std::str::from_utf8(raw).map_err(|_| "a number that is not text")?;
        let digits = s.trim().trim_end_matches('L');
        if !digits.is_empty()
            && digits
                .trim_start_matches('-')
                .bytes()
                .all(|b| b.is_ascii_digit())
        {
            Ok(digits.parse().ok())
        } else {
            Err(format!("{digits:?} is not a number"))
        }
    }

    fn int(&mut self, n: Option<i64>) -> Result<(), String> {
        self.push(n.map_or(Value::BigInt, Value::Int))
    }

    /// A two's-complement little-endian integer (`LONG1`, `LONG4`).
    fn long(&mut self, raw: &[u8]) -> Result<(), String> {
        let n = if raw.is_empty() {
            Some(0)
        } else if raw.len() <= 8 {
            let mut buf = if raw[raw.len() - 1] & 0x80 != 0 {
                [0xff; 8]
            } else {
                [0; 8]
            };
            buf[..raw.len()].copy_from_slice(raw);
            Some(i64::from_le_bytes(buf))
        } else {
            None
        };
        self.int(n)
    }

    fn memo_put(&mut self, index: u32) -> Result<(), String> {
        let top = *self.stack.last().ok_or("the stack is empty")?;
        self.charge(2 * ID_COST + 8)?;
        self.memo.insert(index, top);
        Ok(())
    }

    fn memo_get(&mut self, index: u32) -> Result<(), String> {
        let id = *self
            .memo
            .get(&index)
            .ok_or_else(|| format!("memo entry {index} was never stored"))?;
        self.push_id(id)
    }

    /// Pushes the global `module.name`, refusing one that would run code.
    fn global(&mut self, module: &str, name: &str) -> Result<(), String> {
        let full = format!("{module}.{name}");
        if !is_allowed(&full) {
            return Err(format!(
                "refused: it would run code ({}): unpickling it imports and calls that; vramdoc reads only plain values and PyTorch's tensor records",
                crate::terminal::visible_line(&full)
            ));
        }
        self.charge(full.len())?;
        self.push(Value::Global(full.into_boxed_str()))
    }

    /// Calls `callable` (an allowed global) with its arguments: `OrderedDict` and `set` build
    /// empty containers that later opcodes fill, the rest inert objects.
    fn call(&mut self, callable: Id) -> Result<(), String> {
        let Value::Global(name) = &self.values[callable as usize] else {
            return Err("it calls something that is not a class".into());
        };
        let built = match &**name {
            "collections.OrderedDict" => Value::Dict(Vec::new()),
            "builtins.set" | "builtins.frozenset" | "__builtin__.set" => Value::Set,
            "_codecs.encode" | "builtins.bytearray" | "__builtin__.bytearray" => Value::Bytes,
            other => {
                let short = other.rsplit('.').next().unwrap_or(other);
                let kind = if short.starts_with("_rebuild") {
                    "tensor"
                } else {
                    short
                };
                Value::Object(kind.into())
            }
        };
        self.push(built)
    }

    fn container_mut(&mut self, id: Id) -> &mut Value {
        &mut self.values[id as usize]
    }

    fn append(&mut self, list: Id, items: Vec<Id>) -> Result<(), String> {
        self.charge(items.len() * ID_COST)?;
        match self.container_mut(list) {
            Value::List(v) => v.extend(items),
            Value::Set => {}
            _ => return Err("it appends to something that is not a list".into()),
        }
        Ok(())
    }

    fn set_items(&mut self, dict: Id, items: Vec<Id>) -> Result<(), String> {
        if items.len() % 2 != 0 {
            return Err("a key without a value".into());
        }
        self.charge(items.len() * ID_COST)?;
        let Value::Dict(map) = self.container_mut(dict) else {
            return Err("it sets items of something that is not a dict".into());
        };
        map.extend(items.chunks_exact(2).map(|kv| (kv[0], kv[1])));
        Ok(())
    }

    fn top(&self) -> Result<Id, String> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| "the stack is empty".into())
    }

    /// Runs one opcode; `Ok(true)` at `STOP`.
    fn step(&mut self, op: u8) -> Result<bool, String> {
        match op {
            b'.' => return Ok(true),
            0x80 => {
                self.take(1)?;
            }
            0x95 => {
                self.take(8)?;
            }
            b'(' => {
                self.charge(ID_COST)?;
                self.marks.push(self.stack.len() as u32);
            }
            b'0' => {
                self.pop()?;
            }
            b'1' => {
                self.pop_mark()?;
            }
            b'2' => {
                let top = self.top()?;
                self.push_id(top)?;
            }
            b'N' => self.push(Value::None)?,
            0x88 => self.push(Value::Bool(true))?,
            0x89 => self.push(Value::Bool(false))?,
            b'K' => {
                let n = self.uint(1)? as i64;
                self.int(Some(n))?
            }
            b'M' => {
                let n = self.uint(2)? as i64;
                self.int(Some(n))?
            }
            b'J' => {
                let n = self.uint(4)? as u32 as i32;
                self.int(Some(i64::from(n)))?
            }
            0x8a => {
                let raw = self.counted(1)?.to_vec();
                self.long(&raw)?
            }
            0x8b => {
                let raw = self.counted(4)?.to_vec();
                self.charge(raw.len())?;
                self.long(&raw)?
            }
            b'I' => {
                let raw = self.line()?;
                match raw {
                    b"01" => self.push(Value::Bool(true))?,
                    b"00" => self.push(Value::Bool(false))?,
                    _ => {
                        let n = Self::decimal(raw)?;
                        self.int(n)?
                    }
                }
            }
            b'L' => {
                let n = Self::decimal(self.line()?)?;
                self.int(n)?
            }
            b'F' => {
                let raw = self.line()?;
                let f = std::str::from_utf8(raw)
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .ok_or("a float that is not a number")?;
                self.push(Value::Float(f))?
            }
            b'G' => {
                let raw = self.take(8)?;
                let mut buf = [0u8; 8];
                buf.copy_from_slice(raw);
                self.push(Value::Float(f64::from_be_bytes(buf)))?
            }
            b'X' | b'T' => {
                let raw = self.counted(4)?;
                self.text(raw)?
            }
            0x8c | b'U' => {
                let raw = self.counted(1)?;
                self.text(raw)?
            }
            0x8d => {
                let raw = self.counted(8)?;
                self.text(raw)?
            }
            b'V' => {
                let raw = self.line()?;
                self.text(raw)?
            }
            b'S' => {
                let raw = self.line()?;
                let quoted = raw
                    .strip_prefix(b"'")
                    .and_then(|r| r.strip_suffix(b"'"))
                    .or_else(|| raw.strip_prefix(b"\"").and_then(|r| r.strip_suffix(b"\"")))
                    .ok_or("a STRING without quotes")?;
                self.text(quoted)?
            }
            b'B' | b'C' | 0x8e | 0x96 => {
                let width = match op {
                    b'B' => 4,
                    b'C' => 1,
                    _ => 8,
                };
                self.counted(width)?;
                self.push(Value::Bytes)?
            }
            b')' => self.push(Value::Tuple(Vec::new()))?,
            b'}' => self.push(Value::Dict(Vec::new()))?,
            b']' => self.push(Value::List(Vec::new()))?,
            0x8f => self.push(Value::Set)?,
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let floor = self.marks.last().map_or(0, |&m| m as usize);
                if self.stack.len() < floor + n {
                    return Err("the stack is empty".into());
                }
                let items = self.stack.split_off(self.stack.len() - n);
                self.charge(n * ID_COST)?;
                self.push(Value::Tuple(items))?
            }
            b't' | b'l' | b'd' | 0x91 => {
                let items = self.pop_mark()?;
                self.charge(items.len() * ID_COST)?;
                let v = match op {
                    b't' => Value::Tuple(items),
                    b'l' => Value::List(items),
                    0x91 => Value::Set,
                    _ => {
                        self.push(Value::Dict(Vec::new()))?;
                        let dict = self.top()?;
                        return self.set_items(dict, items).map(|()| false);
                    }
                };
                self.push(v)?
            }
            b'a' => {
                let item = self.pop()?;
                let list = self.top()?;
                self.append(list, vec![item])?
            }
            b'e' | 0x90 => {
                let items = self.pop_mark()?;
                let list = self.top()?;
                self.append(list, items)?
            }
            b's' => {
                let v = self.pop()?;
                let k = self.pop()?;
                let dict = self.top()?;
                self.set_items(dict, vec![k, v])?
            }
            b'u' => {
                let items = self.pop_mark()?;
                let dict = self.top()?;
                self.set_items(dict, items)?
            }
            b'p' => {
                let n = Self::decimal(self.line()?)?.ok_or("a memo index out of range")?;
                self.memo_put(u32::try_from(n).map_err(|_| "a memo index out of range")?)?
            }
            b'q' => {
                let n = self.uint(1)? as u32;
                self.memo_put(n)?
            }
            b'r' => {
                let n = self.uint(4)? as u32;
                self.memo_put(n)?
            }
            0x94 => {
                let n = u32::try_from(self.memo.len()).map_err(|_| "too many memo entries")?;
                self.memo_put(n)?
            }
            b'g' => {
                let n = Self::decimal(self.line()?)?.ok_or("a memo index out of range")?;
                self.memo_get(u32::try_from(n).map_err(|_| "a memo index out of range")?)?
            }
            b'h' => {
                let n = self.uint(1)? as u32;
                self.memo_get(n)?
            }
            b'j' => {
                let n = self.uint(4)? as u32;
                self.memo_get(n)?
            }
            b'c' | b'i' => {
                let module = String::from_utf8_lossy(self.line()?).into_owned();
                let name = String::from_utf8_lossy(self.line()?).into_owned();
                self.global(&module, &name)?;
                if op == b'i' {
                    let class = self.pop()?;
                    self.pop_mark()?;
                    self.call(class)?
                }
            }
            0x93 => {
                let name = self.pop()?;
                let module = self.pop()?;
                let (Value::Str(m), Value::Str(n)) = (self.value(module), self.value(name)) else {
                    return Err("STACK_GLOBAL names a class with something other than strings".into());
                };
                let (m, n) = (m.to_string(), n.to_string());
                self.global(&m, &n)?
            }
            b'R' | 0x81 => {
                self.pop()?;
                let callable = self.pop()?;
                self.call(callable)?
            }
            0x92 => {
                self.pop()?;
                self.pop()?;
                let callable = self.pop()?;
                self.call(callable)?
            }
            b'o' => {
                let items = self.pop_mark()?;
                let callable = *items.first().ok_or("OBJ without a class")?;
                self.call(callable)?
            }
            b'b' => {
                // BUILD sets an object's state; vramdoc reads no state, so the object stays.
                self.pop()?;
                self.top()?;
            }
            b'Q' => {
                self.pop()?;
                self.push(Value::Persistent)?
            }
            b'P' => {
                self.line()?;
                self.push(Value::Persistent)?
            }
            0x82..=0x84 | 0x97 | 0x98 => {
                return Err(
                    "refused: it uses the extension registry or out-of-band buffers, which a meta.pkl or checkpoint does not"
                        .into(),
                )
            }
            _ => return Err("an opcode pickle does not have".into()),
        }
        Ok(false)
    }

    fn value(&self, id: Id) -> &Value {
        &self.values[id as usize]
    }
}

#[cfg(test)]
#[path = "pickle_tests.rs"]
mod tests;
