//! A scenario key's value as the key table reads it from a [`Scenario`] field: [`KeyValue`],
//! and the conversion of each field type ([`AsValue`]).

use std::borrow::Cow;
use std::fmt;

use serde::ser::{Serialize, Serializer};

use crate::estimate::{
    AttnImplementation, BatchLayout, Dtype, HfTrainer, InitFrom, LoraTargets, Optimizer, Phase,
    QuantType, Sharding, WeightsDtype,
};

/// A key's value, typed, as [`Key::value`] reads it from a scenario.
#[derive(Debug, Clone, PartialEq)]
pub enum KeyValue<'a> {
    /// A whole number.
    Whole(u64),
    /// A boolean.
    Flag(bool),
    /// A float.
    Float(f64),
    /// A name (dtype, optimizer, GPU id, layer list).
    Text(Cow<'a, str>),
    /// `None`.
    Unset,
}

impl fmt::Display for KeyValue<'_> {
    /// As nanoGPT's config files write it, strings unquoted: `6`, `0.1`, `True`, `bfloat16`,
    /// `None`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyValue::Whole(n) => write!(f, "{n}"),
            KeyValue::Flag(true) => f.write_str("True"),
            KeyValue::Flag(false) => f.write_str("False"),
            KeyValue::Float(x) => write!(f, "{x:?}"),
            KeyValue::Text(t) => f.write_str(t),
            KeyValue::Unset => f.write_str("None"),
        }
    }
}

impl Serialize for KeyValue<'_> {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            KeyValue::Whole(n) => serializer.serialize_u64(*n),
            KeyValue::Flag(b) => serializer.serialize_bool(*b),
            KeyValue::Float(x) => serializer.serialize_f64(*x),
            KeyValue::Text(t) => serializer.serialize_str(t),
            KeyValue::Unset => serializer.serialize_none(),
        }
    }
}

/// A scenario field's value as a [`KeyValue`].
pub(super) trait AsValue {
    fn as_value(&self) -> KeyValue<'_>;
}

impl AsValue for u64 {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Whole(*self)
    }
}
impl AsValue for bool {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Flag(*self)
    }
}
impl AsValue for f64 {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Float(*self)
    }
}
impl AsValue for Option<u64> {
    fn as_value(&self) -> KeyValue<'_> {
        self.map_or(KeyValue::Unset, KeyValue::Whole)
    }
}
impl AsValue for Option<String> {
    fn as_value(&self) -> KeyValue<'_> {
        self.as_deref()
            .map_or(KeyValue::Unset, |s| KeyValue::Text(Cow::Borrowed(s)))
    }
}
impl AsValue for Dtype {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for WeightsDtype {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for Optimizer {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for QuantType {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for Sharding {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for HfTrainer {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for Phase {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for InitFrom {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
impl AsValue for LoraTargets {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Owned(self.display()))
    }
}
impl AsValue for Option<AttnImplementation> {
    fn as_value(&self) -> KeyValue<'_> {
        self.map_or(KeyValue::Unset, |a| {
            KeyValue::Text(Cow::Borrowed(a.as_str()))
        })
    }
}
impl AsValue for BatchLayout {
    fn as_value(&self) -> KeyValue<'_> {
        KeyValue::Text(Cow::Borrowed(self.as_str()))
    }
}
