//! Claude Code's own list of the files a Bash command changed: a second witness beside walj's
//! snapshots.
//!
//! Claude Code 2.1.332's Bash tool computes the files a command changed and passes them to
//! PostToolUse hooks as `tool_response.bashEditDiff.changedFiles` (absolute paths, at most
//! 200; `moreFiles` counts the rest; on by default in auto and bypass-permissions modes, or
//! with `bashEditDiffEnabled: true`). walj's snapshot is the first witness; this list is read
//! after it, and every path it names that the snapshot did not record becomes an entry of the
//! command, marked `reported` (what walj can still capture: the file as it is now, never a
//! pre-image it did not take). A path outside the project is recorded as outside, as a file
//! tool's is (`outside: true`, the absolute path, nothing captured, settled by the next Stop);
//! paths under `.git/` or `.walj/` follow the Bash snapshot's rule (git's and walj's own
//! folders are never entries of a command) and are counted. The command's own record says what
//! the list held ([`key::REPORTED`]): how many it named, missed, outside, under those folders,
//! and how many Claude Code left off its list (`moreFiles`: the list stops at 200). With
//! `[bash] snapshot = false` the list is the only witness, so what it left off is in no entry:
//! every reader tells it with the command (`crate::fold::Unseen::reported_more`). With the
//! snapshot on, the snapshot looked at every file the list could name (Claude Code lists only
//! files under its working folder that git does not ignore, seen with 2.1.332).
//!
//! Data from Claude Code, not trusted further than that: paths are only compared and
//! captured (read, never followed out of the project), and each list is bounded.

use serde_json::{Value, json};

use crate::config::Matcher;
use crate::journal::{Blob, Record, key, nocap, op, tool};
use crate::project::{Located, Project};

/// The most paths of one list walj reads (Claude Code sends at most 200).
const MAX_PATHS: usize = 1000;
/// The most outside paths named on the command's record (the rest are counted).
const MAX_NAMED: usize = 20;
/// The most outside paths one command gets entries for (Claude Code sends at most 200 paths;
/// past this they are counted on the command's record).
const MAX_OUTSIDE_ENTRIES: usize = 200;

/// What Claude Code reported for one command.
#[derive(Debug, Default, PartialEq)]
pub(crate) struct Reported {
    /// Absolute paths, as sent.
    pub paths: Vec<String>,
    /// How many more files the command changed than the list names (`moreFiles`).
    pub more: u64,
}

/// The list in a PostToolUse Bash `tool_response`, when Claude Code sent one.
pub(crate) fn reported(response: &Value) -> Option<Reported> {
    let diff = response.get("bashEditDiff")?;
    let paths: Vec<String> = diff
        .get("changedFiles")?
        .as_array()?
        .iter()
        .filter_map(Value::as_str)
        .take(MAX_PATHS)
        .map(str::to_string)
        .collect();
    let more = diff.get("moreFiles").and_then(Value::as_u64).unwrap_or(0);
    Some(Reported { paths, more })
}

/// The `reported` note for the command's own record, and the entries for what the snapshot
/// missed.
#[derive(Debug, Default)]
pub(crate) struct Witnessed {
    pub entries: Vec<Record>,
    pub note: Option<Value>,
}

/// One reported path, placed.
enum Place {
    /// Inside the project, relative, `/`-separated.
    Inside(String),
    /// Under `.git/` or `.walj/` (walj never makes entries there).
    Own,
    Outside(String),
}

fn place(project: &Project, abs: &str) -> Place {
    // Claude Code sends absolute paths; the project's own rule places them (canonical
    // comparison; the file itself is never followed).
    match project.locate(abs, None) {
        Located::Inside { rel, .. } if rel.split('/').any(|c| c == ".git" || c == ".walj") => Place::Own,
        Located::Inside { rel, .. } if !rel.is_empty() => Place::Inside(rel),
        Located::Inside { .. } => Place::Own,
        Located::Outside(p) => Place::Outside(p.to_string_lossy().into_owned()),
    }
}

/// A reported entry of command `base` at `path` (its id derived from the command's and the
/// path, so a second PostToolUse of the same call makes the same entry), before its path,
/// event and images are set.
fn child(base: &Record, command: &str, path: &str) -> Record {
    let parent = base.id.as_str();
    let mut r = Record::new(op::APPLIED, &base.session);
    r.id = crate::store::blob_id(format!("{parent}\0reported\0{path}").as_bytes())[..20].to_string();
    r.tool = Some(tool::BASH.to_string());
    r.parent = Some(parent.to_string());
    r.pid = base.pid;
    r.pstart = base.pstart;
    r = r.with(key::COMMAND, command.to_string()).with(key::REPORTED, "claude_code");
    for k in [key::AGENT_ID, key::AGENT_TYPE] {
        if let Some(v) = base.extra.get(k) {
            r.extra.insert(k.into(), v.clone());
        }
    }
    r
}

/// Entries for the paths of `rep` that `recorded` (the command's children from its snapshot)
/// does not hold, as children of command `parent`; and the note for the command's record.
/// `capture(rel, record)` reads the file as it is now into the record's `after` and `nocap`
/// (the hook's own capture, with its caps).
pub(crate) fn missed(
    project: &Project,
    rep: &Reported,
    recorded: &[Record],
    base: &Record,
    command: &str,
    matcher: Option<&Matcher>,
    mut capture: impl FnMut(&str, &mut Record),
) -> Witnessed {
    let mut out = Witnessed::default();
    let (mut outside, mut outside_n, mut own, mut missed) = (Vec::new(), 0usize, 0usize, 0usize);
    let mut seen = std::collections::HashSet::new();
    let recorded: std::collections::HashSet<&str> = recorded.iter().map(|r| r.path.as_str()).collect();
    let mut outside_seen = std::collections::HashSet::new();
    for abs in &rep.paths {
        match place(project, abs) {
            Place::Outside(p) => {
                if !outside_seen.insert(p.clone()) {
                    continue;
                }
                outside_n += 1;
                if outside.len() < MAX_NAMED {
                    outside.push(p.clone());
                }
                if outside_n <= MAX_OUTSIDE_ENTRIES {
                    // As a file tool's path outside the project: recorded as such, nothing
                    // captured, never written by walj.
                    let mut r = child(base, command, &p);
                    r.event = crate::config::detect_event(None, &p, tool::BASH, false, false);
                    r.path = p;
                    r.outside = true;
                    out.entries.push(r);
                }
            }
            Place::Own => own += 1,
            Place::Inside(rel) => {
                if recorded.contains(rel.as_str()) || !seen.insert(rel.clone()) {
                    continue;
                }
                missed += 1;
                let mut r = child(base, command, &rel);
                capture(&rel, &mut r);
                let deleted = r.after == Some(Blob::Absent);
                r.event = crate::config::detect_event(matcher, &rel, tool::BASH, false, deleted);
                r.path = rel;
                // No pre-image: walj's snapshot did not see the change, so it took none.
                let why = r.nocap.take().map_or_else(String::new, |w| format!("; now: {w}"));
                r.nocap = Some(format!("{}{why}", nocap::REPORTED_ONLY));
                out.entries.push(r);
            }
        }
    }
    let mut note = json!({"listed": rep.paths.len()});
    if missed > 0 {
        note["missed"] = json!(missed);
    }
    if outside_n > 0 {
        note["outside"] = json!(outside);
        note["outside_count"] = json!(outside_n);
    }
    if own > 0 {
        note["own_folders"] = json!(own);
    }
    if rep.more > 0 {
        note["more"] = json!(rep.more);
    }
    out.note = Some(note);
    out
}

/// `.walj/reported.jsonl`: one line per command whose Claude Code list named what walj's
/// snapshot had not recorded (or left files off), for `walj doctor`.
pub(crate) fn log_path(project: &Project) -> std::path::PathBuf {
    project.dir.join("reported.jsonl")
}

/// The most paths one line of the log names.
const LOG_PATHS: usize = 5;

/// Notes command `w`'s list in the log when it named something the snapshot missed, a path
/// outside, or left files off. `snapshot`: whether walj's own snapshot ran (`[bash] snapshot`).
/// Best effort: the journal holds the truth; this is doctor's count.
pub(crate) fn log(project: &Project, w: &Witnessed, command_id: &str, ts: &str, snapshot: bool) {
    let Some(note) = &w.note else { return };
    let n = |k: &str| note.get(k).and_then(Value::as_u64).unwrap_or(0);
    if n("missed") == 0 && n("outside_count") == 0 && n("more") == 0 {
        return;
    }
    let paths: Vec<&str> = w.entries.iter().take(LOG_PATHS).map(|r| r.path.as_str()).collect();
    let line = json!({
        "ts": ts, "id": command_id, "snapshot": snapshot, "missed": n("missed"),
        "outside": n("outside_count"), "more": n("more"), "paths": paths,
    });
    let Ok(mut text) = serde_json::to_vec(&line) else { return };
    text.push(b'\n');
    let opts = &mut std::fs::OpenOptions::new();
    if let Ok(mut f) = crate::fsutil::open_private(&log_path(project), opts.append(true).create(true)) {
        let _ = std::io::Write::write_all(&mut f, &text);
    }
}

/// What the log holds, summed (`walj doctor`).
#[derive(Debug, Default, PartialEq)]
pub(crate) struct LogSummary {
    /// Commands whose list named a change the snapshot (on) had missed, and how many paths.
    pub missed_commands: usize,
    pub missed: u64,
    /// The same with `[bash] snapshot = false`: Claude Code's list was the only witness.
    pub only_witness_commands: usize,
    pub only_witness: u64,
    /// Paths outside the project the lists named.
    pub outside: u64,
    /// Files the lists left off (`moreFiles`) while the snapshot was off, and in how many
    /// commands.
    pub more: u64,
    pub more_commands: usize,
    /// The paths of the latest line that named a miss.
    pub last_paths: Vec<String>,
}

/// Reads the log ([`log_path`]); an absent or unreadable log is an empty summary.
pub(crate) fn log_summary(project: &Project) -> LogSummary {
    let mut s = LogSummary::default();
    let Ok((f, _)) = crate::fsutil::open_regular(&log_path(project)) else { return s };
    for line in std::io::BufRead::lines(std::io::BufReader::new(f)).map_while(Result::ok) {
        let Ok(v) = serde_json::from_str::<Value>(&line) else { continue };
        let n = |k: &str| v.get(k).and_then(Value::as_u64).unwrap_or(0);
        let missed = n("missed");
        if missed > 0 {
            if v.get("snapshot").and_then(Value::as_bool) == Some(false) {
                s.only_witness_commands += 1;
                s.only_witness += missed;
            } else {
                s.missed_commands += 1;
                s.missed += missed;
            }
            s.last_paths = v
                .get("paths")
                .and_then(Value::as_array)
                .into_iter()
                .flatten()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect();
        }
        s.outside += n("outside");
        // With the snapshot on, it looked at every file the list could name.
        if n("more") > 0 && v.get("snapshot").and_then(Value::as_bool) == Some(false) {
            s.more += n("more");
            s.more_commands += 1;
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_list_is_read_from_the_real_payload_shape() {
        let v: Value = serde_json::from_str(
            r#"{"stdout":"","bashEditDiff":{"files":[],"moreFiles":3,"changedFiles":["/p/a.txt","/p/new.txt"]}}"#,
        )
        .unwrap();
        assert_eq!(reported(&v), Some(Reported { paths: vec!["/p/a.txt".into(), "/p/new.txt".into()], more: 3 }));
        assert_eq!(reported(&serde_json::json!({"stdout": ""})), None);
    }
}
