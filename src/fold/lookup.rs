//! Finding entries and sessions by id or unique prefix, and showing ids.

use super::Fold;
use super::model::{Entry, SessionInfo};

impl Fold {
    /// Resolves a full id or a unique prefix (also without Claude Code's `toolu_` prefix).
    pub fn find(&self, prefix: &str) -> Result<&Entry, IdError> {
        find_by_prefix(&self.entries, prefix, |e| &e.id).map(|i| &self.entries[i])
    }

    /// Resolves a session id or unique prefix.
    pub fn find_session(&self, prefix: &str) -> Result<&SessionInfo, IdError> {
        find_by_prefix(&self.sessions, prefix, |s| &s.session).map(|i| &self.sessions[i])
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IdError {
    #[error("no entry matches {0:?}")]
    Unknown(String),
    #[error("{prefix:?} is ambiguous; it matches: {}", candidates.join(", "))]
    Ambiguous { prefix: String, candidates: Vec<String> },
}

/// Display form of an id: Claude Code's `toolu_` prefix dropped, at most 12 chars.
pub fn short_id(id: &str) -> String {
    abbrev(id.strip_prefix("toolu_").unwrap_or(id), 12).to_string()
}

/// The first `n` characters of `s`, for showing ids and hashes read from the journal
/// (never cuts a character: those strings are user data, not always hex).
pub fn abbrev(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

fn find_by_prefix<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Result<usize, IdError> {
    if prefix.is_empty() {
        return Err(IdError::Unknown(prefix.to_string()));
    }
    if let Some(i) = items.iter().position(|t| id(t) == prefix) {
        return Ok(i);
    }
    let matches: Vec<usize> = items
        .iter()
        .enumerate()
        .filter(|(_, t)| {
            let full = id(t);
            full.starts_with(prefix) || full.strip_prefix("toolu_").is_some_and(|s| s.starts_with(prefix))
        })
        .map(|(i, _)| i)
        .collect();
    match matches.len() {
        0 => Err(IdError::Unknown(prefix.to_string())),
        1 => Ok(matches[0]),
        _ => Err(IdError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches.iter().map(|&i| id(&items[i]).to_string()).collect(),
        }),
    }
}
