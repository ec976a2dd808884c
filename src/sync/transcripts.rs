//! Transcripts in a sync (docs/sync.md, "Transcripts"): the safe copies of Claude Code's
//! transcripts (`.walj/transcripts/`), published only when the sync is encrypted or
//! `[sync] transcripts = true`, so that `walj sessions resume` can continue another
//! machine's session.
//!
//! What leaves the machine is the copy *with secrets removed*: secret-looking tokens are
//! redacted (the hook's rules, [`crate::secrets::redact`]) in every JSON string, and what a tool
//! read from or wrote to a never-captured file (`.env`, keys, `[capture] never`) is replaced by
//! a note. Lines are rewritten only where something was found, so the result stays
//! append-only as the copy grows, and is published in segments like the journal's
//! (`transcripts/<session>/0000/000000 …`): a sync after one more turn writes the open segment.

use std::collections::BTreeMap;
use std::path::Path;

use git2::{Oid, Repository, Tree};

use super::SyncError;
use super::manifest::TranscriptState;
use super::publish::{cut, digest, segment_blobs, segment_size, subtree, two_level};
use super::seal::Seal;
use crate::config::Matcher;
use crate::project::Project;
use crate::session::{file_stem, transcript};

/// The transcripts a sync publishes.
pub struct Sources<'a> {
    pub project: &'a Project,
    /// Sessions whose safe copy is published.
    pub sessions: Vec<String>,
    /// `[capture] never` (with the built-in secret paths).
    pub never: &'a Matcher,
}

/// What [`publish`] made.
pub(crate) struct Published {
    /// The `transcripts/` tree (`None`: no transcript).
    pub tree: Option<Oid>,
    pub states: Vec<TranscriptState>,
    pub bytes_written: u64,
}

/// Builds the `transcripts/` tree. `prev`: the previous commit's tree and transcript states,
/// when it was sealed the same way (its segments may be kept).
pub(crate) fn publish(
    repo: &Repository,
    src: Sources<'_>,
    prev: Option<(&Tree<'_>, &[TranscriptState])>,
    seal: Option<&Seal>,
) -> Result<Published, SyncError> {
    let prev_top = prev.and_then(|(t, _)| subtree(repo, Some(t), super::publish::TRANSCRIPTS));
    let root = src.project.root.to_string_lossy().into_owned();
    let mut out = Published { tree: None, states: Vec::new(), bytes_written: 0 };
    let mut entries: BTreeMap<String, Oid> = BTreeMap::new();
    for session in &src.sessions {
        let paths = transcript::paths(src.project, session);
        let Ok(meta) = std::fs::metadata(&paths.copy) else { continue };
        let status = transcript::status(src.project, session, None);
        let (source_bytes, source_zst) = (status.copied, meta.len());
        let stem = file_stem(session);
        let before = prev.and_then(|(_, states)| states.iter().find(|s| s.session == *session));
        let before_tree = subtree(repo, prev_top.as_ref(), &stem);
        if let (Some(b), Some(t)) = (before, &before_tree)
            && b.source_bytes == source_bytes
            && b.source_zst == source_zst
        {
            entries.insert(stem, t.id());
            out.states.push(b.clone());
            continue;
        }
        let Some(copy) = transcript::read_copy(src.project, session)
            .map_err(SyncError::io(format!("reading {}", paths.copy.display())))?
        else {
            continue;
        };
        let clean = sanitise(&copy, &root, src.never);
        let all = digest(seal, "transcript", &clean);
        let (base, first, start) = match (before, &before_tree) {
            (Some(b), Some(t))
                if clean.len() as u64 >= b.bytes
                    && b.sealed_bytes <= b.bytes
                    && digest(seal, "transcript", &clean[..b.bytes as usize]) == b.digest =>
            {
                (Some(t), b.sealed, b.sealed_bytes)
            }
            _ => (None, 0, 0),
        };
        let rest = &clean[start as usize..];
        let segs = cut(rest, segment_size(seal));
        let dirs = segment_blobs(repo, rest, &segs, first, seal)?;
        let Some(tree) = two_level(repo, base, &dirs)? else { continue };
        out.bytes_written += rest.len() as u64;
        entries.insert(stem, tree);
        out.states.push(TranscriptState {
            session: session.clone(),
            source_bytes,
            source_zst,
            bytes: clean.len() as u64,
            sealed_bytes: start + segs.iter().filter(|s| s.2).map(|s| s.1 as u64).max().unwrap_or(0),
            segments: first + segs.len() as u64,
            sealed: first + segs.iter().filter(|s| s.2).count() as u64,
            digest: all,
        });
    }
    if !entries.is_empty() {
        let mut tb = repo.treebuilder(None)?;
        for (name, oid) in &entries {
            tb.insert(name, *oid, 0o040000)?;
        }
        out.tree = Some(tb.write()?);
    }
    Ok(out)
}

pub(crate) use crate::session::redact::sanitise;

/// Writes the transcripts of journal copy `dir` (`.walj/remotes/<id>/`) from commit tree `tree`:
/// those whose state differs from `before` (the copy's previous manifest) or that are missing,
/// as safe copies (`<dir>/transcripts/`) that `walj sessions resume` reads.
pub(crate) fn materialise(
    repo: &Repository,
    tree: &Tree<'_>,
    states: &[TranscriptState],
    before: &[TranscriptState],
    dir: &Path,
    key: Option<&crate::crypt::DataKey>,
    budget: &mut super::accept::Budget,
) -> Result<(), String> {
    if states.is_empty() {
        return Ok(());
    }
    let top = super::accept::subtree(repo, tree, super::publish::TRANSCRIPTS)?
        .ok_or("its manifest lists transcripts and its tree has none")?;
    let project = Project { root: dir.to_path_buf(), dir: dir.to_path_buf(), journal: dir.join("journal.jsonl") };
    for st in states {
        let have = transcript::paths(&project, &st.session).copy.is_file();
        if have && before.iter().any(|b| b == st) {
            continue;
        }
        let stem = file_stem(&st.session);
        let t = super::accept::subtree(repo, &top, &stem)?.ok_or_else(|| format!("transcript {stem} is missing"))?;
        if !crate::session::bundle::is_session_id(&st.session) {
            return Err(format!(
                "transcript of session {:?}: not a session id walj accepts",
                st.session.chars().take(64).collect::<String>()
            ));
        }
        let bytes = super::accept::read_segments(repo, Some(t), st.segments, st.bytes, key, budget)
            .map_err(|e| format!("transcript {stem}: {e}"))?;
        transcript::install(&project, &st.session, None, &bytes)
            .map_err(|e| format!("writing the transcript of {stem}: {e}"))?;
    }
    Ok(())
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;
    use crate::session::redact::WITHHELD;

    fn matcher() -> Matcher {
        crate::config::Config::default().matcher().unwrap()
    }

    #[test]
    fn secrets_and_never_captured_files_do_not_leave() {
        let root = "/home/me/shop";
        let lines = [
            r#"{"type":"user","message":{"content":"deploy with password=hunter2secret"}}"#.to_string(),
            r#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"t1","name":"Read","input":{"file_path":"/home/me/shop/.env"}}]}}"#.to_string(),
            r#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t1","content":"DB=postgres"}]},"toolUseResult":{"type":"text","file":{"filePath":"/home/me/shop/.env","content":"DB=postgres"}}}"#.to_string(),
            r#"{"type":"assistant","message":{"content":[{"type":"text","text":"plain line"}]}}"#.to_string(),
        ];
        let input = format!("{}\n", lines.join("\n"));
        let out = String::from_utf8(sanitise(input.as_bytes(), root, &matcher())).unwrap();
        assert!(!out.contains("hunter2secret"), "{out}");
        assert!(!out.contains("DB=postgres"), "{out}");
        assert!(out.contains(WITHHELD));
        // Untouched lines stay byte for byte; every line is still JSON.
        assert!(out.contains(&lines[3]));
        for l in out.lines() {
            serde_json::from_str::<serde_json::Value>(l).unwrap();
        }
        // Append-only: sanitising a longer copy starts with the shorter one's result.
        let more = format!("{input}{}\n", lines[0]);
        assert!(String::from_utf8(sanitise(more.as_bytes(), root, &matcher())).unwrap().starts_with(&out));
    }
}
