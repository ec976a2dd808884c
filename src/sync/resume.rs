//! Continuing another machine's session here (`walj sessions resume SID` on a session of a
//! synced journal; docs/sync.md, "Continuing another machine's session").
//!
//! The session's transcript comes from the synced safe copy (published when the sync is
//! encrypted or `[sync] transcripts = true`), with the other checkout's project root rewritten
//! to this one's in every string, and is written where this machine's Claude Code looks for
//! it: `<config dir>/projects/<this cwd, encoded>/<session>.jsonl`. `claude --resume <session>`
//! then continues the conversation here. A file already there that the copy does not start is
//! never overwritten (without `force`, and then it is kept beside as `.bak`).

use std::path::{Path, PathBuf};

use serde_json::Value;

use super::manifest::Manifest;
use super::remotes::{apply_states, cache_dir, fold_copy, list};
use crate::fold::{Fold, FoldOptions};
use crate::project::Project;
use crate::session::{SessionError, SessionState, resolve, scan_usage, transcript};

/// Another machine's session, as of its journal's last sync.
#[derive(Debug)]
pub(crate) struct RemoteSession {
    /// The journal id and its manifest.
    pub journal: String,
    pub manifest: Manifest,
    /// The copy as a project: its journal and images, this checkout's root.
    pub project: Project,
    pub state: SessionState,
}

impl RemoteSession {
    /// The journal's name for people (`host:path`, or its `[sync] name`).
    pub(crate) fn name(&self) -> &str {
        &self.manifest.name
    }
}

/// The session `prefix` names in the other journals (`Ok(None)`: none has it).
pub(crate) fn find(project: &Project, prefix: &str) -> Result<Option<RemoteSession>, SessionError> {
    let mut hits: Vec<(String, PathBuf, Manifest, String)> = Vec::new();
    let paths = super::Paths::new(project);
    let light_of = |id: &str, journal: &Path| {
        fold_copy(journal, &cache_dir(&paths, id), &FoldOptions::default(), crate::fold::snapshot::WRITE_AFTER)
    };
    for (id, dir, manifest) in list(project) {
        let journal = dir.join("journal.jsonl");
        let Ok(light) = light_of(&id, &journal) else { continue };
        match resolve(&light, prefix) {
            Ok(full) => hits.push((id, dir, manifest, full)),
            Err(SessionError::Unknown(_)) => {}
            Err(e) => return Err(e),
        }
    }
    if hits.len() > 1 {
        return Err(SessionError::Ambiguous {
            prefix: prefix.to_string(),
            candidates: hits.iter().map(|h| format!("{} ({})", h.3, h.2.name)).collect(),
        });
    }
    let Some((journal, dir, manifest, full)) = hits.pop() else { return Ok(None) };
    let remote = Project { root: project.root.clone(), dir: dir.clone(), journal: dir.join("journal.jsonl") };
    let read_err = || SessionError::io("reading", &remote.journal);
    let mut light = light_of(&journal, &remote.journal).map_err(read_err())?;
    apply_states(&mut light, &manifest);
    let opts = FoldOptions { keep_settled: true, session: Some(full.clone()), all_commands: true };
    let mut heavy = Fold::load(&remote.journal, &opts).map_err(read_err())?;
    apply_states(&mut heavy, &manifest);
    // Never checked against this disk: the entries are the other machine's.
    let mut info = heavy.session(&full).cloned().ok_or_else(|| SessionError::Unknown(prefix.to_string()))?;
    if let Some(l) = light.session(&full) {
        info.announced = l.announced;
    }
    let status = info.status();
    let entries = heavy.entries_of(&full).cloned().collect();
    let handoffs = light.handoffs.iter().filter(|h| h.session == full).cloned().collect();
    let usage = scan_usage(&remote, Some(&full)).map_err(read_err())?.remove(&full).unwrap_or_default();
    let t = transcript::status(&remote, &full, None);
    let ids = crate::fold::ShortIds::load(&remote.journal).unwrap_or_default();
    let state = SessionState { info, status, entries, handoffs, usage, transcript: t, ids };
    Ok(Some(RemoteSession { journal, manifest, project: remote, state }))
}

/// Whether `b` may follow a path that ends at `a`'s end (`/`, a quote, space, …: not a name
/// character), so `/home/me/shop` is not rewritten inside `/home/me/shop2`.
fn path_ends(b: Option<&u8>) -> bool {
    b.is_none_or(|c| !(c.is_ascii_alphanumeric() || matches!(c, b'-' | b'_' | b'.')))
}

fn replace_root(s: &str, from: &str, to: &str) -> Option<String> {
    if from.is_empty() || !s.contains(from) {
        return None;
    }
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    let mut changed = false;
    while let Some(i) = rest.find(from) {
        let after = rest.as_bytes().get(i + from.len());
        out.push_str(&rest[..i]);
        if path_ends(after) {
            out.push_str(to);
            changed = true;
        } else {
            out.push_str(from);
        }
        rest = &rest[i + from.len()..];
    }
    out.push_str(rest);
    changed.then_some(out)
}

fn rewrite_value(v: &mut Value, from: &str, to: &str) -> bool {
    match v {
        Value::String(s) => match replace_root(s, from, to) {
            Some(r) => {
                *s = r;
                true
            }
            None => false,
        },
        Value::Array(a) => a.iter_mut().fold(false, |c, x| rewrite_value(x, from, to) | c),
        Value::Object(o) => o.iter_mut().fold(false, |c, (_, x)| rewrite_value(x, from, to) | c),
        _ => false,
    }
}

/// The transcript with the other checkout's root `from` replaced by `to` in every string
/// (lines that do not mention it are kept byte for byte).
pub(crate) fn rewrite_paths(bytes: &[u8], from: &str, to: &str) -> Vec<u8> {
    if from == to || from.is_empty() {
        return bytes.to_vec();
    }
    let mut out = Vec::with_capacity(bytes.len());
    for piece in bytes.split_inclusive(|&b| b == b'\n') {
        let (line, nl) = match piece.strip_suffix(b"\n") {
            Some(l) => (l, true),
            None => (piece, false),
        };
        if memchr::memmem::find(line, from.as_bytes()).is_none() {
            out.extend_from_slice(piece);
            continue;
        }
        match serde_json::from_slice::<Value>(line) {
            Ok(mut v) => {
                if rewrite_value(&mut v, from, to) {
                    out.extend_from_slice(&serde_json::to_vec(&v).unwrap_or_else(|_| line.to_vec()));
                } else {
                    out.extend_from_slice(line);
                }
            }
            Err(_) => {
                let text = String::from_utf8_lossy(line);
                out.extend_from_slice(replace_root(&text, from, to).unwrap_or_else(|| text.into_owned()).as_bytes());
            }
        }
        if nl {
            out.push(b'\n');
        }
    }
    out
}

/// What [`install_transcript`] did.
#[derive(Debug, Clone, serde::Serialize)]
pub(crate) struct Installed {
    /// Where Claude Code finds it.
    pub path: PathBuf,
    pub bytes: u64,
    /// `written`, `present` (already there, or there and longer: continued here before), or
    /// `replaced` (`force`; the previous file kept as `backup`).
    pub outcome: &'static str,
    pub backup: Option<PathBuf>,
    /// The folder `claude --resume` runs in.
    pub cwd: PathBuf,
}

/// Why the transcript could not be installed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum TranscriptError {
    #[error(
        "no transcript of session {sid} came from {machine}: it publishes transcripts when its sync is encrypted ([sync] recipients or passphrase) or has [sync] transcripts = true; `walj sync` there, then here"
    )]
    NoCopy { sid: String, machine: String },
    #[error(
        "{} exists and holds another conversation than the copy from {machine}; `--force` replaces it (keeping it as a .bak file)",
        path.display()
    )]
    Exists { path: PathBuf, machine: String },
    #[error("no Claude Code config folder (no HOME, no CLAUDE_CONFIG_DIR)")]
    NoConfigDir,
    #[error("{what} {}: {source}", path.display())]
    Io { what: &'static str, path: PathBuf, source: std::io::Error },
}

/// The folder the session ran in, mapped to this checkout (its root when the folder does not
/// exist here).
pub(crate) fn local_cwd(local: &Project, rs: &RemoteSession) -> PathBuf {
    let from = rs.manifest.root.as_deref().unwrap_or("");
    let recorded = rs.state.info.cwd.as_deref().unwrap_or(from);
    let mapped = replace_root(recorded, from, &local.root.to_string_lossy()).map(PathBuf::from);
    match mapped {
        Some(p) if p.starts_with(&local.root) && p.is_dir() => p,
        _ => local.root.clone(),
    }
}

/// Writes the session's transcript (the synced copy, paths rewritten) where this machine's
/// Claude Code looks for it.
pub(crate) fn install_transcript(
    local: &Project,
    rs: &RemoteSession,
    force: bool,
) -> Result<Installed, TranscriptError> {
    let session = rs.state.session();
    let copy = transcript::read_copy(&rs.project, session)
        .map_err(|e| TranscriptError::Io { what: "reading", path: rs.project.dir.join("transcripts"), source: e })?
        .ok_or_else(|| TranscriptError::NoCopy { sid: rs.state.info.sid.clone(), machine: rs.name().to_string() })?;
    let from = rs.manifest.root.clone().unwrap_or_default();
    let bytes = rewrite_paths(&copy, &from, &local.root.to_string_lossy());
    let cwd = local_cwd(local, rs);
    let dir = crate::claude::paths::config_dir()
        .ok_or(TranscriptError::NoConfigDir)?
        .join("projects")
        .join(crate::claude::paths::encode_dir(&cwd));
    let path = dir.join(format!("{}.jsonl", crate::session::file_stem(session)));
    let io = |what, p: &Path| {
        let p = p.to_path_buf();
        move |source| TranscriptError::Io { what, path: p, source }
    };
    let mut backup = None;
    let mut outcome = "written";
    match std::fs::read(&path) {
        Ok(existing) if existing.starts_with(&bytes) => {
            return Ok(Installed { path, bytes: existing.len() as u64, outcome: "present", backup, cwd });
        }
        Ok(_) if !force => return Err(TranscriptError::Exists { path, machine: rs.name().to_string() }),
        Ok(existing) => {
            let stamp = chrono::Utc::now().format("%Y%m%dT%H%M%SZ");
            let bak = PathBuf::from(format!("{}.{stamp}.bak", path.display()));
            crate::fsutil::atomic_write(&bak, &existing, Some(0o600)).map_err(io("keeping", &bak))?;
            backup = Some(bak);
            outcome = "replaced";
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(TranscriptError::Io { what: "reading", path, source: e }),
    }
    std::fs::create_dir_all(&dir).map_err(io("creating", &dir))?;
    crate::fsutil::atomic_write(&path, &bytes, Some(0o600)).map_err(io("writing", &path))?;
    Ok(Installed { path, bytes: bytes.len() as u64, outcome, backup, cwd })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn roots_are_rewritten_in_strings_only_where_the_path_ends() {
        let line = r#"{"cwd":"/home/a/shop","x":"/home/a/shop/src/main.rs and /home/a/shop2/y","n":1}"#;
        let out = String::from_utf8(rewrite_paths(format!("{line}\nplain\n").as_bytes(), "/home/a/shop", "/srv/b"))
            .unwrap_or_default();
        assert_eq!(out, "{\"cwd\":\"/srv/b\",\"x\":\"/srv/b/src/main.rs and /home/a/shop2/y\",\"n\":1}\nplain\n");
        assert_eq!(rewrite_paths(b"same\n", "/a", "/a"), b"same\n");
    }
}
