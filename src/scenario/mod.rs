//! The input language of a scenario: one definition per key ([`keys`]: the table every reader,
//! help text, JSON object and README table derives from) and the literals a key reads
//! ([`literal`]).

mod artifacts;
pub(crate) mod catalog;
pub mod families;
pub(crate) mod input;
mod key_synonyms;
pub mod keys;
pub mod literal;
pub(crate) mod model;
mod nanochat_script;
mod nanogpt;
mod pickle;
mod pyconfig;

pub use keys::{Key, KEYS};
pub use literal::{parse_byte_size, yaml_literal, Literal};
pub(crate) use nanogpt::{model_only_key_message, model_only_keys};
