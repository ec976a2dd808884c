//! Tool calls without ids (Gemini CLI, Copilot CLI), and one event delivered twice.
//!
//! Claude Code and Codex name each call (`tool_use_id`): Pre and Post share it. Gemini and
//! Copilot do not, and Copilot runs parallel calls by firing both Pre hooks before either Post.
//! So the hook keeps, per session, a small queue in `.walj/pairs/<session>.json`, read and
//! written under an exclusive lock on that file (hook processes run concurrently):
//! - at Pre, a generated id is queued under the call's **fingerprint** (its kind and its
//!   canonical input: the tool's arguments, which Post repeats);
//! - at Post, the oldest queued id with the same fingerprint is taken, so two parallel calls
//!   on different inputs each get their own id, and two identical ones pair in order.
//!
//! A Post whose Pre was never seen gets a fresh id; the journal then pairs it by today's rule
//! (session, tool, path, order: `pair` in the record).
//!
//! The same file remembers the last events seen by their **delivery key** (phase, the agent's
//! timestamp in ms, fingerprint): Copilot runs both its own hooks and `.claude/settings.json`,
//! and gives both deliveries of one event the same timestamp, so the second is skipped and
//! a call is never journaled twice. SessionEnd drops the open calls (the delivery keys stay,
//! for SessionEnd's own second delivery); files untouched for a week are removed at the next
//! SessionStart ([`prune`]).

use std::fs::OpenOptions;
use std::io::{self, Read, Seek, Write};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::project::Project;

/// How many delivery keys and open calls a session remembers.
const MAX_SEEN: usize = 64;
const MAX_OPEN: usize = 256;

#[derive(Debug, Default, Serialize, Deserialize)]
struct State {
    #[serde(default)]
    open: Vec<Open>,
    #[serde(default)]
    seen: Vec<String>,
}

#[derive(Debug, Serialize, Deserialize)]
struct Open {
    fp: String,
    id: String,
}

/// What the queue says about a delivery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Pairing {
    /// Already delivered (the same event through another hook configuration): skip it.
    Duplicate,
    /// Journal it; a tool call's id when the queue has one.
    Fresh(Option<String>),
}

/// The fingerprint of a call: its kind tag and its input, with object keys sorted (one call
/// can reach walj under two tool names and two key orders).
pub(crate) fn fingerprint(kind: &str, input: &Value) -> String {
    let mut s = String::with_capacity(64);
    s.push_str(kind);
    s.push('\0');
    canonical(input, &mut s);
    crate::sha::Sha1::of(s.as_bytes()).hex()[..20].to_string()
}

fn canonical(v: &Value, out: &mut String) {
    match v {
        Value::Object(o) => {
            let mut keys: Vec<&String> = o.keys().collect();
            keys.sort();
            out.push('{');
            for k in keys {
                out.push_str(&Value::String(k.clone()).to_string());
                out.push(':');
                canonical(&o[k], out);
                out.push(',');
            }
            out.push('}');
        }
        Value::Array(a) => {
            out.push('[');
            for x in a {
                canonical(x, out);
                out.push(',');
            }
            out.push(']');
        }
        other => out.push_str(&other.to_string()),
    }
}

/// The delivery key of an event: `None` when the agent gave no timestamp (then nothing is
/// deduplicated).
pub(crate) fn delivery_key(phase: &str, at_ms: Option<i64>, fp: Option<&str>) -> Option<String> {
    at_ms.map(|ms| format!("{phase}:{ms}:{}", fp.unwrap_or("")))
}

fn path(project: &Project, session: &str) -> PathBuf {
    let safe = !session.is_empty()
        && session.len() <= 100
        && session.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
    let name = if safe { session.to_string() } else { crate::store::blob_id(session.as_bytes()) };
    project.dir.join("pairs").join(format!("{name}.json"))
}

/// Runs `f` on the session's state under its lock and writes the state back.
fn with_state<T>(project: &Project, session: &str, f: impl FnOnce(&mut State) -> T) -> io::Result<T> {
    let p = path(project, session);
    if let Some(dir) = p.parent() {
        crate::fsutil::create_private_dir(dir)?;
    }
    let mut file =
        crate::fsutil::open_private(&p, OpenOptions::new().read(true).write(true).create(true).truncate(false))?;
    file.lock()?;
    let mut raw = Vec::new();
    file.read_to_end(&mut raw)?;
    // A damaged file (a crash mid-write) starts over: pairing falls back to the journal's rule.
    let mut state: State = serde_json::from_slice(&raw).unwrap_or_default();
    let out = f(&mut state);
    let bytes = serde_json::to_vec(&state).map_err(io::Error::other)?;
    file.set_len(0)?;
    file.rewind()?;
    file.write_all(&bytes)?;
    let _ = file.unlock();
    Ok(out)
}

fn already_seen(state: &mut State, key: Option<&str>) -> bool {
    let Some(key) = key else { return false };
    if state.seen.iter().any(|k| k == key) {
        return true;
    }
    state.seen.push(key.to_string());
    if state.seen.len() > MAX_SEEN {
        let drop = state.seen.len() - MAX_SEEN;
        state.seen.drain(..drop);
    }
    false
}

/// PreToolUse of a call without an id: a new id, queued under `fp`.
pub(crate) fn pre(project: &Project, session: &str, fp: &str, key: Option<&str>) -> io::Result<Pairing> {
    with_state(project, session, |s| {
        if already_seen(s, key) {
            return Pairing::Duplicate;
        }
        let id = crate::journal::record::new_id("w");
        s.open.push(Open { fp: fp.to_string(), id: id.clone() });
        if s.open.len() > MAX_OPEN {
            let drop = s.open.len() - MAX_OPEN;
            s.open.drain(..drop);
        }
        Pairing::Fresh(Some(id))
    })
}

/// PostToolUse (or its failure) of a call without an id: the oldest id queued under `fp`.
pub(crate) fn post(project: &Project, session: &str, fp: &str, key: Option<&str>) -> io::Result<Pairing> {
    with_state(project, session, |s| {
        if already_seen(s, key) {
            return Pairing::Duplicate;
        }
        let id = s.open.iter().position(|o| o.fp == fp).map(|i| s.open.remove(i).id);
        Pairing::Fresh(id)
    })
}

/// Any other event: whether it was delivered already (and remember it).
pub(crate) fn seen(project: &Project, session: &str, key: &str) -> io::Result<bool> {
    with_state(project, session, |s| already_seen(s, Some(key)))
}

/// SessionEnd: no call of the session is open any more.
pub(crate) fn end(project: &Project, session: &str) {
    let _ = with_state(project, session, |s| s.open.clear());
}

/// Removes the session's file.
#[cfg_attr(not(test), allow(dead_code))] // only the unit tests call it
pub(crate) fn forget(project: &Project, session: &str) {
    let _ = std::fs::remove_file(path(project, session));
}

/// Removes the files of sessions untouched for a week (at SessionStart; cheap: the folder holds
/// one small file per recent session of an agent without call ids).
pub(crate) fn prune(project: &Project) {
    let Ok(rd) = std::fs::read_dir(project.dir.join("pairs")) else { return };
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    for e in rd.flatten() {
        let old = e
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > week);
        if old {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn project() -> (tempfile::TempDir, Project) {
        let dir = tempfile::tempdir().unwrap();
        let p = Project::at(dir.path().to_path_buf(), None);
        p.ensure_dir().unwrap();
        (dir, p)
    }

    #[test]
    fn parallel_calls_pair_by_fingerprint_in_order() {
        let (_d, p) = project();
        let edit = fingerprint("files", &json!({"path": "/p/a", "old_str": "x", "new_str": "y"}));
        let bash = fingerprint("shell", &json!({"description": "d", "command": "ls"}));
        // Key order does not matter.
        assert_eq!(bash, fingerprint("shell", &json!({"command": "ls", "description": "d"})));
        let Pairing::Fresh(Some(e)) = pre(&p, "s", &edit, None).unwrap() else { panic!() };
        let Pairing::Fresh(Some(b)) = pre(&p, "s", &bash, None).unwrap() else { panic!() };
        let Pairing::Fresh(Some(b2)) = pre(&p, "s", &bash, None).unwrap() else { panic!() };
        // Posts in another order than the Pres.
        assert_eq!(post(&p, "s", &bash, None).unwrap(), Pairing::Fresh(Some(b)));
        assert_eq!(post(&p, "s", &edit, None).unwrap(), Pairing::Fresh(Some(e)));
        assert_eq!(post(&p, "s", &bash, None).unwrap(), Pairing::Fresh(Some(b2)));
        assert_eq!(post(&p, "s", &bash, None).unwrap(), Pairing::Fresh(None));
        // Another session has its own queue.
        let Pairing::Fresh(Some(_)) = pre(&p, "other/../x", &edit, None).unwrap() else { panic!() };
        assert_eq!(post(&p, "s", &edit, None).unwrap(), Pairing::Fresh(None));
    }

    #[test]
    fn a_second_delivery_is_a_duplicate() {
        let (_d, p) = project();
        let fp = fingerprint("shell", &json!({"command": "ls"}));
        let key = delivery_key("tool_pre", Some(1796087324405), Some(&fp));
        assert!(matches!(pre(&p, "s", &fp, key.as_deref()).unwrap(), Pairing::Fresh(Some(_))));
        assert_eq!(pre(&p, "s", &fp, key.as_deref()).unwrap(), Pairing::Duplicate);
        let k2 = delivery_key("session_start", Some(1), None).unwrap();
        assert!(!seen(&p, "s", &k2).unwrap());
        assert!(seen(&p, "s", &k2).unwrap());
        end(&p, "s");
        assert!(seen(&p, "s", &k2).unwrap(), "SessionEnd keeps the delivery keys");
        assert_eq!(post(&p, "s", &fp, None).unwrap(), Pairing::Fresh(None), "and drops the open calls");
        forget(&p, "s");
        assert!(!seen(&p, "s", &k2).unwrap());
    }

    #[test]
    fn concurrent_hooks_never_lose_an_id() {
        let (_d, p) = project();
        let fp = fingerprint("shell", &json!({"command": "ls"}));
        let ids: Vec<String> = std::thread::scope(|sc| {
            let hs: Vec<_> = (0..8)
                .map(|_| {
                    sc.spawn(|| match pre(&p, "s", &fp, None).unwrap() {
                        Pairing::Fresh(Some(id)) => id,
                        other => panic!("{other:?}"),
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        let mut got: Vec<String> = (0..8)
            .map(|_| match post(&p, "s", &fp, None).unwrap() {
                Pairing::Fresh(Some(id)) => id,
                other => panic!("{other:?}"),
            })
            .collect();
        let mut want = ids;
        want.sort();
        got.sort();
        assert_eq!(got, want);
    }
}
