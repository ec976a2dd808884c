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

/// The part of an id people type: without Claude Code's `toolu_` and the `01` that follows it
/// in every id it makes today (`toolu_01AbC…` → `AbC…`).
pub fn typeable(id: &str) -> &str {
    id.strip_prefix("toolu_01").or_else(|| id.strip_prefix("toolu_")).unwrap_or(id)
}

/// The forms of `id` a typed prefix may start: the full id, without `toolu_`, without `toolu_01`.
fn forms(id: &str) -> [&str; 3] {
    [id, id.strip_prefix("toolu_").unwrap_or(id), typeable(id)]
}

/// Shortest unique prefixes of the [`typeable`] ids, matched case-insensitively as
/// [`Fold::find`] matches them; at least [`ShortIds::MIN`] characters.
#[derive(Debug, Clone, Default)]
pub struct ShortIds {
    lens: std::collections::HashMap<String, usize>,
}

impl ShortIds {
    /// Shown ids are never shorter than this (a 1-character id turns ambiguous with the next).
    pub const MIN: usize = 4;

    pub fn new<'a>(ids: impl IntoIterator<Item = &'a str>) -> ShortIds {
        let mut keys: Vec<(String, &str)> = ids.into_iter().map(|id| (typeable(id).to_ascii_lowercase(), id)).collect();
        keys.sort();
        keys.dedup_by(|a, b| a.1 == b.1);
        let lcp = |a: &str, b: &str| a.chars().zip(b.chars()).take_while(|(x, y)| x == y).count();
        let mut lens = std::collections::HashMap::with_capacity(keys.len());
        for i in 0..keys.len() {
            let before = if i > 0 { lcp(&keys[i - 1].0, &keys[i].0) } else { 0 };
            let after = keys.get(i + 1).map_or(0, |n| lcp(&keys[i].0, &n.0));
            lens.insert(keys[i].1.to_string(), before.max(after) + 1);
        }
        ShortIds { lens }
    }

    /// The id as shown: its shortest unique typeable prefix (the whole typeable id when it is
    /// shorter, or when `id` is not one of the ids given).
    pub fn short<'a>(&self, id: &'a str) -> &'a str {
        let t = typeable(id);
        match self.lens.get(id) {
            Some(&n) => abbrev(t, n.max(Self::MIN)),
            None => t,
        }
    }
}

impl Fold {
    /// [`ShortIds`] of this fold's entries: what `find` can tell apart.
    pub fn short_ids(&self) -> ShortIds {
        ShortIds::new(self.entries.iter().map(|e| e.id.as_str()))
    }
}

fn find_by_prefix<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Result<usize, IdError> {
    if prefix.is_empty() {
        return Err(IdError::Unknown(prefix.to_string()));
    }
    if let Some(i) = items.iter().position(|t| id(t) == prefix) {
        return Ok(i);
    }
    // Case-insensitive, with or without `toolu_` / `toolu_01` (like git and jj, ids are typed
    // in any case); a form equal to what was typed wins over longer ones it starts.
    let typed = prefix.to_ascii_lowercase();
    let matching = |exact: bool| -> Vec<usize> {
        items
            .iter()
            .enumerate()
            .filter(|(_, t)| {
                forms(id(t)).iter().any(|f| {
                    let f = f.to_ascii_lowercase();
                    if exact { f == typed } else { f.starts_with(&typed) }
                })
            })
            .map(|(i, _)| i)
            .collect()
    };
    let exact = matching(true);
    let matches = if exact.len() == 1 { exact } else { matching(false) };
    match matches.len() {
        0 => Err(IdError::Unknown(prefix.to_string())),
        1 => Ok(matches[0]),
        _ => Err(IdError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches.iter().map(|&i| id(&items[i]).to_string()).collect(),
        }),
    }
}
