//! A foreground Bash command without an outcome, in words: in flight while its session
//! runs, cut off once the session's agent is gone (`recover`, the SessionStart note, the TUI).

use super::{one_line, plural};
use crate::agents::Agent;
use crate::fold::{Command, CommandStatus, Entry, SessionStatus, Unseen};

/// Changes derived from command `id` (a killed command's children) among `entries`.
pub(crate) fn derived_changes<'a>(entries: impl IntoIterator<Item = &'a Entry>, id: &str) -> usize {
    // An undecided change (several commands ran, none named it) is counted in none of them.
    entries.into_iter().filter(|e| e.unfinished && !e.undecided && e.parent.as_deref() == Some(id)).count()
}

/// `None` unless `c` is a foreground command without an outcome. `changes`: how many
/// changes were derived from it ([`derived_changes`]); `width`: the command text's width;
/// `agent`: the session's coding agent (named when it stopped).
pub(crate) fn in_flight(
    c: &Command,
    status: SessionStatus,
    agent: Agent,
    changes: usize,
    width: usize,
) -> Option<String> {
    let p = in_flight_parts(c, status, agent, changes, width)?;
    Some(match p.detail {
        None => format!("{}: {}", p.what, p.command),
        Some(d) => format!("{}: {} — {d}", p.what, p.command),
    })
}

/// [`in_flight`]'s sentence in its parts, for a reader that puts the command on a line of its
/// own when the whole does not fit (`recover`).
pub(crate) struct InFlight {
    /// "command in flight", or "command never finished (Claude Code stopped while it ran)".
    pub what: String,
    /// The command line, shortened to the width asked for.
    pub command: String,
    /// What became of it: "3 changes since it started; not seen: …" (`None` while it runs).
    pub detail: Option<String>,
}

/// [`in_flight`], in parts.
pub(crate) fn in_flight_parts(
    c: &Command,
    status: SessionStatus,
    agent: Agent,
    changes: usize,
    width: usize,
) -> Option<InFlight> {
    if c.status != CommandStatus::InFlight || c.background {
        return None;
    }
    let command = one_line(&c.command, width);
    if matches!(status, SessionStatus::Live | SessionStatus::Unknown) && c.running.is_none() {
        return Some(InFlight { what: "command in flight".into(), command, detail: None });
    }
    let found = plural(changes, "change", "changes");
    let detail = match c.running {
        Some(n) => format!("still running ({}), {found} so far", plural(n, "process", "processes")),
        None if changes == 0 => "no changes found".to_string(),
        None => format!("{found} since it started"),
    };
    let unseen = c.unseen.as_ref().and_then(unseen).map(|u| format!("; {u}")).unwrap_or_default();
    Some(InFlight {
        what: format!("command never finished ({} stopped while it ran)", agent.label()),
        command,
        detail: Some(format!("{detail}{unseen}")),
    })
}

/// A finished command whose snapshots left changes out of its entries (a cut list, paths past
/// the per-command bound): "command left changes out of the journal: CMD — not seen: …".
/// `None` for a command in flight (its own line says it) or one that saw everything that
/// matters here (only special or over-cap files, said on their entries).
pub(crate) fn left_out(c: &Command, width: usize) -> Option<String> {
    let u = c.unseen.as_ref()?;
    if c.status == CommandStatus::InFlight || !(u.cut_short || u.unlisted > 0 || u.reported_more > 0) {
        return None;
    }
    Some(format!("command left changes out of its entries: {} — {}", one_line(&c.command, width), unseen(u)?))
}

/// What a count of changes leaves out, in words (`None`: nothing): "not seen: 1 special
/// file (FIFO, socket or device), 2 files over the capture cap (compared by samples only)".
pub(crate) fn unseen(u: &Unseen) -> Option<String> {
    let mut parts = Vec::new();
    if u.special > 0 {
        let n = plural(u.special, "special file", "special files");
        parts.push(format!("{n} (FIFO, socket or device: never opened)"));
    }
    if u.unreadable > 0 {
        parts.push(format!("{} walj could not read", plural(u.unreadable, "file", "files")));
    }
    if u.too_large > 0 {
        let n = plural(u.too_large, "file", "files");
        parts.push(format!("{n} over the capture cap (compared by samples only)"));
    }
    if u.unlisted > 0 {
        let n = plural(u.unlisted, "path", "paths");
        let sample: Vec<_> = u.unlisted_sample.iter().map(|p| crate::present::text::safe(p)).collect();
        let sample = sample.join(", ");
        let more = if u.unlisted > u.unlisted_sample.len() { ", …" } else { "" };
        let list = u.unlisted_file.as_deref().map(|f| format!("; all listed in {f}")).unwrap_or_default();
        parts.push(format!(
            "{n} past the limit of entries per command ([bash] max_changes), not compared (may have changed): {sample}{more}{list}"
        ));
    } else if u.cut_short {
        parts.push("files past the snapshot's limit ([bash] max_files / max_ms), without a recorded image".to_string());
    }
    if u.reported_more > 0 {
        let n = u.reported_more;
        parts.push(format!(
            "{n} more {} Claude Code's own list of changed files left unnamed (it stops at 200) while walj's snapshot was off ([bash] snapshot = false): in no entry",
            if n == 1 { "file" } else { "files" }
        ));
    }
    (!parts.is_empty()).then(|| format!("not seen: {}", parts.join(", ")))
}

/// Files a command moved from one folder to another, read off its entries: a deletion and a
/// creation with the same bytes whose paths end alike (`d/e/l.txt` → `n/e/l.txt`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Moved {
    /// The command's id (the entries' `parent`).
    pub command: String,
    /// The folder the files left and the one they went to, below the project's top.
    pub from: String,
    pub to: String,
    /// How many files moved (each is a deletion and a creation among the entries).
    pub files: usize,
}

/// The folder moves among `entries` (any order, any commands'), per command: a moved folder
/// is journaled as a deletion and a creation per file, and a reader says they are one move.
/// Only what the entries prove counts: each pair has the same non-absent bytes, the same name
/// and the same path below the two folders; a group of one file, or of empty files only (any
/// empty file matches any other), is not called a move. Sorted by command, then folder.
pub(crate) fn folder_moves<'a>(entries: impl IntoIterator<Item = &'a Entry>) -> Vec<Moved> {
    use std::collections::{BTreeMap, HashMap};
    /// Git's id of the empty blob: any empty file matches any other, which proves nothing.
    const EMPTY: &str = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
    let blob = |b: &Option<crate::journal::Blob>| b.as_ref().and_then(|b| b.id()).map(str::to_string);
    /// A command's deletions (path, bytes) and its creations by bytes.
    type Changes<'e> = (Vec<(&'e str, String)>, HashMap<String, Vec<&'e str>>);
    let mut by_cmd: BTreeMap<&str, Changes<'_>> = BTreeMap::new();
    for e in entries {
        let Some(parent) = e.parent.as_deref() else { continue };
        if e.is_link() || e.outside {
            continue;
        }
        let (before, after) = (blob(&e.before), blob(&e.after));
        let slot = by_cmd.entry(parent).or_default();
        match (before, after) {
            (Some(b), None) if e.after.as_ref().is_some_and(|a| a.is_absent()) => slot.0.push((e.path.as_str(), b)),
            (None, Some(a)) if e.before.as_ref().is_some_and(|b| b.is_absent()) => {
                slot.1.entry(a).or_default().push(e.path.as_str());
            }
            _ => {}
        }
    }
    let mut out = Vec::new();
    for (cmd, (mut dels, mut made)) in by_cmd {
        dels.sort();
        // (from, to) → (files, of which not empty)
        let mut groups: BTreeMap<(String, String), (usize, usize)> = BTreeMap::new();
        for (path, b) in &dels {
            let Some(cands) = made.get_mut(b) else { continue };
            // The pair whose folders already hold other pairs, else the first: one move's
            // files stay together when several files have the same bytes.
            let split = |c: &str| folders_of(path, c);
            let pick = cands
                .iter()
                .position(|c| split(c).is_some_and(|k| groups.contains_key(&k)))
                .or_else(|| cands.iter().position(|c| split(c).is_some()));
            let Some(i) = pick else { continue };
            let c = cands.remove(i);
            if let Some(k) = split(c) {
                let g = groups.entry(k).or_default();
                g.0 += 1;
                g.1 += usize::from(b != EMPTY);
            }
        }
        for ((from, to), (files, full)) in groups {
            if files >= 2 && full >= 1 {
                out.push(Moved { command: cmd.to_string(), from, to, files });
            }
        }
    }
    out
}

/// The two folders of a moved file (`d/e/l.txt`, `n/e/l.txt` → `d`, `n`): the paths without
/// the longest ending they share (at least the file's name), both folders below the top.
fn folders_of(from: &str, to: &str) -> Option<(String, String)> {
    let (a, b): (Vec<&str>, Vec<&str>) = (from.split('/').collect(), to.split('/').collect());
    let same = a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count();
    if same == 0 || same >= a.len() || same >= b.len() {
        return None;
    }
    Some((a[..a.len() - same].join("/"), b[..b.len() - same].join("/")))
}

/// "moved d/ → n/ (4 files, each a deletion and a creation below): CMD".
pub(crate) fn moved_line(m: &Moved, command: Option<&str>, width: usize) -> String {
    let cmd = command.map(|c| format!(": {}", one_line(c, width))).unwrap_or_default();
    format!(
        "folder moved: {}/ → {}/ ({}, each a deletion and a creation; reverted together they put the folder back){cmd}",
        super::text::safe(&m.from),
        super::text::safe(&m.to),
        plural(m.files, "file", "files")
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fold::EntryState;
    use crate::journal::Blob;

    fn change(parent: &str, path: &str, before: Option<&str>, after: Option<&str>) -> Entry {
        let view = crate::journal::view::RecordView::default();
        let mut e = Entry::new(1, format!("{parent}-{path}"), "s".into(), view, EntryState::Applied);
        e.parent = Some(parent.into());
        e.path = path.into();
        let blob = |b: Option<&str>| Some(b.map_or(Blob::Absent, |b| Blob::Id(crate::store::blob_id(b.as_bytes()))));
        e.before = blob(before);
        e.after = blob(after);
        e
    }

    #[test]
    fn a_moved_folder_is_one_move_of_its_files() {
        let v = [
            change("c1", "d/k.txt", Some("k"), None),
            change("c1", "d/e/l.txt", Some("l"), None),
            change("c1", "n/e/l.txt", None, Some("l")),
            change("c1", "n/k.txt", None, Some("k")),
            // Another command's deletion with the same bytes: not part of c1's move.
            change("c2", "x/k.txt", Some("k"), None),
        ];
        let m = folder_moves(&v);
        assert_eq!(m, [Moved { command: "c1".into(), from: "d".into(), to: "n".into(), files: 2 }]);
        assert_eq!(
            moved_line(&m[0], Some("mv d n"), 60),
            "folder moved: d/ → n/ (2 files, each a deletion and a creation; reverted together they put the folder back): mv d n"
        );
    }

    #[test]
    fn what_the_entries_do_not_prove_is_no_move() {
        // One file; a rename in one folder; other bytes; empty files only; a file moved to the top.
        let v = [
            change("c1", "a/x.txt", Some("x"), None),
            change("c1", "b/x.txt", None, Some("x")),
            change("c2", "a/x.txt", Some("x"), None),
            change("c2", "a/y.txt", None, Some("x")),
            change("c2", "a/z.txt", Some("z"), None),
            change("c2", "a/w.txt", None, Some("w")),
            change("c3", "a/e1", Some(""), None),
            change("c3", "a/e2", Some(""), None),
            change("c3", "b/e1", None, Some("")),
            change("c3", "b/e2", None, Some("")),
            change("c4", "a/p.txt", Some("p"), None),
            change("c4", "a/q.txt", Some("q"), None),
            change("c4", "p.txt", None, Some("p")),
            change("c4", "q.txt", None, Some("q")),
        ];
        assert_eq!(folder_moves(&v), []);
        assert_eq!(folders_of("a/b/c.txt", "x/b/c.txt"), Some(("a".into(), "x".into())));
        assert_eq!(folders_of("a/c.txt", "c.txt"), None);
        assert_eq!(folders_of("a/c.txt", "a/d.txt"), None);
    }
}
