//! What each opcode does (CPython's `Lib/pickle.py`, `_Unpickler`; argument layouts as
//! `Lib/pickletools.py` lists them).

use super::machine::Machine;
use super::machine::ID_COST;
use super::PickleValue;

impl Machine<'_> {
    /// Runs one opcode; `Ok(true)` at `STOP`.
    pub(super) fn step(&mut self, op: u8) -> Result<bool, String> {
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
            b'N' => self.push(PickleValue::None)?,
            0x88 => self.push(PickleValue::Bool(true))?,
            0x89 => self.push(PickleValue::Bool(false))?,
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
                    b"01" => self.push(PickleValue::Bool(true))?,
                    b"00" => self.push(PickleValue::Bool(false))?,
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
                self.push(PickleValue::Float(f))?
            }
            b'G' => {
                let raw = self.take(8)?;
                let mut buf = [0u8; 8];
                buf.copy_from_slice(raw);
                self.push(PickleValue::Float(f64::from_be_bytes(buf)))?
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
                self.push(PickleValue::Bytes)?
            }
            b')' => self.push(PickleValue::Tuple(Vec::new()))?,
            b'}' => self.push(PickleValue::Dict(Vec::new()))?,
            b']' => self.push(PickleValue::List(Vec::new()))?,
            0x8f => self.push(PickleValue::Set)?,
            0x85..=0x87 => {
                let n = usize::from(op - 0x84);
                let floor = self.marks.last().map_or(0, |&m| m as usize);
                if self.stack.len() < floor + n {
                    return Err("the stack is empty".into());
                }
                let items = self.stack.split_off(self.stack.len() - n);
                self.charge(n * ID_COST)?;
                self.push(PickleValue::Tuple(items))?
            }
            b't' | b'l' | b'd' | 0x91 => {
                let items = self.pop_mark()?;
                self.charge(items.len() * ID_COST)?;
                let v = match op {
                    b't' => PickleValue::Tuple(items),
                    b'l' => PickleValue::List(items),
                    0x91 => PickleValue::Set,
                    _ => {
                        self.push(PickleValue::Dict(Vec::new()))?;
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
                let (PickleValue::Str(m), PickleValue::Str(n)) = (self.value(module), self.value(name)) else {
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
                self.push(PickleValue::Persistent)?
            }
            b'P' => {
                self.line()?;
                self.push(PickleValue::Persistent)?
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
}
