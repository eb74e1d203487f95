//! The state of the pickle machine and the operations its opcodes share: pushing and popping,
//! reading arguments, the memo, building containers, and counting the memory all of it costs.

use std::collections::HashMap;

use super::{is_allowed, Id, PickleValue, MEMORY_PER_BYTE};

/// The machine's state while a pickle runs.
pub(super) struct Machine<'a> {
    pub(super) bytes: &'a [u8],
    pub(super) at: usize,
    pub(super) values: Vec<PickleValue>,
    pub(super) stack: Vec<Id>,
    /// Stack heights at each `MARK`.
    pub(super) marks: Vec<u32>,
    pub(super) memo: HashMap<u32, Id>,
    /// Bytes allocated so far, as counted by [`Machine::charge`].
    pub(super) cost: usize,
    pub(super) budget: usize,
}

pub(super) const VALUE_COST: usize = std::mem::size_of::<PickleValue>();
pub(super) const ID_COST: usize = std::mem::size_of::<Id>();

impl<'a> Machine<'a> {
    pub(super) fn charge(&mut self, bytes: usize) -> Result<(), String> {
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
    pub(super) fn push(&mut self, v: PickleValue) -> Result<(), String> {
        self.charge(VALUE_COST + ID_COST)?;
        let id = Id::try_from(self.values.len()).map_err(|_| "too many values".to_string())?;
        self.values.push(v);
        self.stack.push(id);
        Ok(())
    }

    pub(super) fn push_id(&mut self, id: Id) -> Result<(), String> {
        self.charge(ID_COST)?;
        self.stack.push(id);
        Ok(())
    }

    pub(super) fn pop(&mut self) -> Result<Id, String> {
        let floor = self.marks.last().map_or(0, |&m| m as usize);
        if self.stack.len() <= floor {
            return Err("the stack is empty".into());
        }
        self.stack.pop().ok_or_else(|| "the stack is empty".into())
    }

    /// The items above the last `MARK`, which is removed.
    pub(super) fn pop_mark(&mut self) -> Result<Vec<Id>, String> {
        let mark = self.marks.pop().ok_or("no MARK before it")? as usize;
        Ok(self.stack.split_off(mark))
    }

    pub(super) fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
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
    pub(super) fn uint(&mut self, n: usize) -> Result<u64, String> {
        let b = self.take(n)?;
        Ok(b.iter()
            .rev()
            .fold(0u64, |acc, &x| (acc << 8) | u64::from(x)))
    }

    /// A length-prefixed argument (`n`-byte little-endian length).
    pub(super) fn counted(&mut self, n: usize) -> Result<&'a [u8], String> {
        let len = self.uint(n)?;
        let len = usize::try_from(len).map_err(|_| "the pickle ends inside it".to_string())?;
        self.take(len)
    }

    /// A newline-terminated argument, without the newline.
    pub(super) fn line(&mut self) -> Result<&'a [u8], String> {
        let bytes: &'a [u8] = self.bytes;
        let rest = &bytes[self.at..];
        let n = rest
            .iter()
            .position(|&b| b == b'\n')
            .ok_or("the pickle ends inside it")?;
        self.at += n + 1;
        Ok(&rest[..n])
    }

    pub(super) fn text(&mut self, raw: &[u8]) -> Result<(), String> {
        self.charge(raw.len())?;
        let s = String::from_utf8_lossy(raw).into_owned().into_boxed_str();
        self.push(PickleValue::Str(s))
    }

    /// A protocol-0 decimal line (`INT`, `LONG`, memo indices).
    pub(super) fn decimal(raw: &[u8]) -> Result<Option<i64>, String> {
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

    pub(super) fn int(&mut self, n: Option<i64>) -> Result<(), String> {
        self.push(n.map_or(PickleValue::BigInt, PickleValue::Int))
    }

    /// A two's-complement little-endian integer (`LONG1`, `LONG4`).
    pub(super) fn long(&mut self, raw: &[u8]) -> Result<(), String> {
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

    pub(super) fn memo_put(&mut self, index: u32) -> Result<(), String> {
        let top = *self.stack.last().ok_or("the stack is empty")?;
        self.charge(2 * ID_COST + 8)?;
        self.memo.insert(index, top);
        Ok(())
    }

    pub(super) fn memo_get(&mut self, index: u32) -> Result<(), String> {
        let id = *self
            .memo
            .get(&index)
            .ok_or_else(|| format!("memo entry {index} was never stored"))?;
        self.push_id(id)
    }

    /// Pushes the global `module.name`, refusing one that would run code.
    pub(super) fn global(&mut self, module: &str, name: &str) -> Result<(), String> {
        let full = format!("{module}.{name}");
        if !is_allowed(&full) {
            return Err(format!(
                "refused: it would run code ({}): unpickling it imports and calls that; vramdoc reads only plain values and PyTorch's tensor records",
                crate::terminal::visible_line(&full)
            ));
        }
        self.charge(full.len())?;
        self.push(PickleValue::Global(full.into_boxed_str()))
    }

    /// Calls `callable` (an allowed global) with its arguments: `OrderedDict` and `set` build
    /// empty containers that later opcodes fill, the rest inert objects.
    pub(super) fn call(&mut self, callable: Id) -> Result<(), String> {
        let PickleValue::Global(name) = &self.values[callable as usize] else {
            return Err("it calls something that is not a class".into());
        };
        let built = match &**name {
            "collections.OrderedDict" => PickleValue::Dict(Vec::new()),
            "builtins.set" | "builtins.frozenset" | "__builtin__.set" => PickleValue::Set,
            "_codecs.encode" | "builtins.bytearray" | "__builtin__.bytearray" => PickleValue::Bytes,
            other => {
                let short = other.rsplit('.').next().unwrap_or(other);
                let kind = if short.starts_with("_rebuild") {
                    "tensor"
                } else {
                    short
                };
                PickleValue::Object(kind.into())
            }
        };
        self.push(built)
    }

    pub(super) fn container_mut(&mut self, id: Id) -> &mut PickleValue {
        &mut self.values[id as usize]
    }

    pub(super) fn append(&mut self, list: Id, items: Vec<Id>) -> Result<(), String> {
        self.charge(items.len() * ID_COST)?;
        match self.container_mut(list) {
            PickleValue::List(v) => v.extend(items),
            PickleValue::Set => {}
            _ => return Err("it appends to something that is not a list".into()),
        }
        Ok(())
    }

    pub(super) fn set_items(&mut self, dict: Id, items: Vec<Id>) -> Result<(), String> {
        if items.len() % 2 != 0 {
            return Err("a key without a value".into());
        }
        self.charge(items.len() * ID_COST)?;
        let PickleValue::Dict(map) = self.container_mut(dict) else {
            return Err("it sets items of something that is not a dict".into());
        };
        map.extend(items.chunks_exact(2).map(|kv| (kv[0], kv[1])));
        Ok(())
    }

    pub(super) fn top(&self) -> Result<Id, String> {
        self.stack
            .last()
            .copied()
            .ok_or_else(|| "the stack is empty".into())
    }

    pub(super) fn value(&self, id: Id) -> &PickleValue {
        &self.values[id as usize]
    }
}
