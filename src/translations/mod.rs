//! Translations that never drift: a guide's sections are aligned across languages by id
//! ([`sections`]), each translated section records the hash and text of the source section it
//! was made from (`content/<guide>/translations.yaml`, [`records`]), and a section is stale
//! when its source's normalized hash ([`hash`]) is no longer the recorded one ([`status`]).
//! `vramdoc translations mark|status` ([`command`]) and `vramdoc check` read them; the build
//! shows readers the same states.

pub mod command;
pub(crate) mod diff;
pub(crate) mod guides;
pub(crate) mod hash;
pub(crate) mod notices;
pub(crate) mod records;
pub(crate) mod sections;
pub(crate) mod status;

#[cfg(test)]
mod mutation_tests;
