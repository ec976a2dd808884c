//! Claude Code's own list of the files a Bash command changed: a second witness beside walj's
//! snapshots.
//!
//! Claude Code 2.1.332's Bash tool computes the files a command changed and passes them to
//! PostToolUse hooks as `tool_response.bashEditDiff.changedFiles` (absolute paths, at most
//! 200; `moreFiles` counts the rest; on by default in auto and bypass-permissions modes, or
//! with `bashEditDiffEnabled: true`). walj's snapshot is the first witness; this list is read
//! after it, and every path it names that the snapshot did not record becomes an entry of the
//! command, marked `reported` (what walj can still capture: the file as it is now, never a
//! pre-image it did not take). What cannot become an entry is written on the command's own
//! record ([`key::REPORTED`]): paths outside the project, paths under `.git/` or `.walj/`
//! (walj's own rule: never entries), and how many Claude Code left off its list.
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

/// What Claude Code reported for one command.
#[derive(Debug, Default, PartialEq)]
pub struct Reported {
    /// Absolute paths, as sent.
    pub paths: Vec<String>,
    /// How many more files the command changed than the list names (`moreFiles`).
    pub more: u64,
}

/// The list in a PostToolUse Bash `tool_response`, when Claude Code sent one.
pub fn reported(response: &Value) -> Option<Reported> {
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
pub struct Witnessed {
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

/// Entries for the paths of `rep` that `recorded` (the command's children from its snapshot)
/// does not hold, as children of command `parent`; and the note for the command's record.
/// `capture(rel, record)` reads the file as it is now into the record's `after` and `nocap`
/// (the hook's own capture, with its caps).
pub fn missed(
    project: &Project,
    rep: &Reported,
    recorded: &[Record],
    base: &Record,
    command: &str,
    matcher: Option<&Matcher>,
    mut capture: impl FnMut(&str, &mut Record),
) -> Witnessed {
    let parent = base.id.as_str();
    let mut out = Witnessed::default();
    let (mut outside, mut outside_n, mut own, mut missed) = (Vec::new(), 0usize, 0usize, 0usize);
    let mut seen = std::collections::HashSet::new();
    let recorded: std::collections::HashSet<&str> = recorded.iter().map(|r| r.path.as_str()).collect();
    for abs in &rep.paths {
        match place(project, abs) {
            Place::Outside(p) => {
                outside_n += 1;
                if outside.len() < MAX_NAMED {
                    outside.push(p);
                }
            }
            Place::Own => own += 1,
            Place::Inside(rel) => {
                if recorded.contains(rel.as_str()) || !seen.insert(rel.clone()) {
                    continue;
                }
                missed += 1;
                let mut r = Record::new(op::APPLIED, &base.session);
                r.id = crate::store::blob_id(format!("{parent}\0reported\0{rel}").as_bytes())[..20].to_string();
                r.tool = Some(tool::BASH.to_string());
                capture(&rel, &mut r);
                let deleted = r.after == Some(Blob::Absent);
                r.event = crate::config::detect_event(matcher, &rel, tool::BASH, false, deleted);
                r.path = rel;
                // No pre-image: walj's snapshot did not see the change, so it took none.
                let why = r.nocap.take().map_or_else(String::new, |w| format!("; now: {w}"));
                r.nocap = Some(format!("{}{why}", nocap::REPORTED_ONLY));
                r.parent = Some(parent.to_string());
                r.pid = base.pid;
                r.pstart = base.pstart;
                r = r.with(key::COMMAND, command.to_string()).with(key::REPORTED, "claude_code");
                for k in [key::AGENT_ID, key::AGENT_TYPE] {
                    if let Some(v) = base.extra.get(k) {
                        r.extra.insert(k.into(), v.clone());
                    }
                }
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
