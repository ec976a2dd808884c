//! Finding entries and sessions by id or unique prefix, and showing ids.

use super::Fold;
use super::model::{Entry, SessionInfo};

impl Fold {
    /// Resolves a full id or a unique prefix (also without Claude Code's `toolu_` prefix).
    /// Ids are unique within a session only: an id that several sessions hold is ambiguous
    /// (the candidates are named `SESSION/ID`), and `SESSION/ID` (a session id or its start,
    /// then an id or its start) picks one.
    pub fn find(&self, typed: &str) -> Result<&Entry, IdError> {
        let (session, prefix) = match typed.split_once('/') {
            Some((s, p)) if !s.is_empty() && !p.is_empty() => (Some(s.to_ascii_lowercase()), p),
            _ => (None, typed),
        };
        let of_session = |e: &Entry| {
            session
                .as_deref()
                .is_none_or(|s| e.session.to_ascii_lowercase().starts_with(s) || e.sid.eq_ignore_ascii_case(s))
        };
        let mut items: Vec<&Entry> = self.entries.iter().filter(|e| of_session(e)).collect();
        let mut found = matches_of(&items, prefix, |e| &e.id);
        if found.is_empty() && session.is_some() {
            // An id with a `/` of its own.
            items = self.entries.iter().collect();
            found = matches_of(&items, typed, |e| &e.id);
        }
        match found.len() {
            0 => Err(IdError::Unknown(typed.to_string())),
            1 => Ok(items[found[0]]),
            _ => {
                let ids: std::collections::HashSet<&str> = found.iter().map(|&i| items[i].id.as_str()).collect();
                // One id in several sessions: the candidates say which session each is.
                let candidates = found
                    .iter()
                    .map(|&i| {
                        let e = items[i];
                        if ids.len() < found.len() { format!("{}/{}", session_label(e), e.id) } else { e.id.clone() }
                    })
                    .collect();
                Err(IdError::Ambiguous { prefix: typed.to_string(), candidates })
            }
        }
    }

    /// Resolves a session id or unique prefix.
    pub(crate) fn find_session(&self, prefix: &str) -> Result<&SessionInfo, IdError> {
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

/// The first `n` characters of `s`, for showing ids and hashes read from the journal
/// (never cuts a character: those strings are user data, not always hex).
pub(crate) fn abbrev(s: &str, n: usize) -> &str {
    s.char_indices().nth(n).map_or(s, |(i, _)| &s[..i])
}

/// The part of an id people type: without Claude Code's `toolu_` and the `01` that follows it
/// in every id it makes today (`toolu_01AbC…` → `AbC…`).
pub(crate) fn typeable(id: &str) -> &str {
    id.strip_prefix("toolu_01").or_else(|| id.strip_prefix("toolu_")).unwrap_or(id)
}

/// Whether `typed` starts `id` as [`Fold::find`] reads it: in any case, with or without
/// `toolu_` or `toolu_01` (for lists of other ids that show them as walj shows entry ids).
pub(crate) fn id_starts_with(id: &str, typed: &str) -> bool {
    let typed = typed.to_ascii_lowercase();
    !typed.is_empty() && forms(id).iter().any(|f| f.to_ascii_lowercase().starts_with(&typed))
}

/// The forms of `id` a typed prefix may start: the full id, without `toolu_`, without `toolu_01`.
fn forms(id: &str) -> [&str; 3] {
    [id, id.strip_prefix("toolu_").unwrap_or(id), typeable(id)]
}

/// How an entry's session is named in a `SESSION/ID` candidate: its short sid, else the
/// start of its session id.
fn session_label(e: &Entry) -> &str {
    if e.sid.is_empty() { abbrev(&e.session, 8) } else { &e.sid }
}

/// Every item `prefix` names ([`find_by_prefix`]'s rule): the items whose id is `prefix`
/// when there are any, else those it names in any case and form.
fn matches_of<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Vec<usize> {
    if prefix.is_empty() {
        return Vec::new();
    }
    let exact: Vec<usize> = (0..items.len()).filter(|&i| id(&items[i]) == prefix).collect();
    if !exact.is_empty() {
        return exact;
    }
    by_forms(items, prefix, id)
}

/// The items `prefix` names case-insensitively, with or without `toolu_` / `toolu_01` (like
/// git and jj, ids are typed in any case): a form equal to what was typed wins over longer
/// ones it starts.
fn by_forms<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Vec<usize> {
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
    if exact.len() == 1 { exact } else { matching(false) }
}

pub(super) fn find_by_prefix<T>(items: &[T], prefix: &str, id: impl Fn(&T) -> &str) -> Result<usize, IdError> {
    if prefix.is_empty() {
        return Err(IdError::Unknown(prefix.to_string()));
    }
    if let Some(i) = items.iter().position(|t| id(t) == prefix) {
        return Ok(i);
    }
    let matches = by_forms(items, prefix, &id);
    match matches.len() {
        0 => Err(IdError::Unknown(prefix.to_string())),
        1 => Ok(matches[0]),
        _ => Err(IdError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: matches.iter().map(|&i| id(&items[i]).to_string()).collect(),
        }),
    }
}
