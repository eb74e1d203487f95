//! The one error type of the estimator: which scenario key is wrong, and why.

use std::fmt;

/// An invalid scenario, GPU catalog or estimate request.
///
/// `key` names the scenario key at fault (`n_head`, `gpu`, ...) when there is one;
/// `message` says what is wrong and what to do, in English (the CLI prints it as is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScenarioError {
    /// The scenario key at fault, if the error is about one key.
    pub key: Option<String>,
    /// What is wrong and how to fix it.
    pub message: String,
}

impl ScenarioError {
    /// An error about one scenario key.
    pub(crate) fn key(key: &str, message: impl Into<String>) -> Self {
        ScenarioError {
            key: Some(key.to_owned()),
            message: message.into(),
        }
    }

    /// An error about the scenario (or catalog) as a whole.
    pub(crate) fn general(message: impl Into<String>) -> Self {
        ScenarioError {
            key: None,
            message: message.into(),
        }
    }
}

impl fmt::Display for ScenarioError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.key {
            Some(key) => write!(f, "`{key}`: {}", self.message),
            None => f.write_str(&self.message),
        }
    }
}

impl std::error::Error for ScenarioError {}
