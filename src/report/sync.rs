//! Other machines' journals in `recover`, `log` and `sessions` (text and JSON): each under its
//! name, states as of its last sync. Nothing here is ever given to Claude. Another machine's
//! text (its name, ids, paths, prompts) is shown [`crate::present::safe`].

use std::fmt::Write as _;

use serde_json::{Value, json};

use crate::fold::Entry;
use crate::present::{human_ts, one_line, plural, safe, shown};
use crate::report;
use crate::style::Style;
use crate::sync::remotes::RemoteJournal;

fn heading(r: &RemoteJournal, what: &str, style: &Style) -> String {
    format!(
        "{} {}  {}\n",
        style.bold("machine"),
        style.cyan(&safe(r.name())),
        style.dim(&format!("{what}, {} · `walj sync` updates it", shown(&r.as_of())))
    )
}

/// The unresolved entries of other machines, after this checkout's report. Empty when
/// none has any.
pub(crate) fn recover_text(remotes: &[RemoteJournal], style: &Style) -> String {
    let mut out = String::new();
    for r in remotes {
        let fold = &r.fold;
        let total = fold.unresolved().count();
        if total == 0 {
            continue;
        }
        let nsess = fold.sessions.iter().filter(|s| fold.entries_of(&s.session).any(|e| e.is_unresolved())).count();
        out.push('\n');
        out.push_str(&heading(
            r,
            &format!(
                "{} in {}",
                plural(total, "unresolved entry", "unresolved entries"),
                plural(nsess, "session", "sessions")
            ),
            style,
        ));
        for s in &fold.sessions {
            let entries: Vec<&Entry> = fold.entries_of(&s.session).filter(|e| e.is_unresolved()).collect();
            if entries.is_empty() {
                continue;
            }
            report::session_header(&mut out, s, s.status(), &entries, &fold.ids, style);
            let _ = writeln!(out, "  {}", style.dim(&format!("state {}, {}", s.status(), shown(&r.as_of()))));
            report::entries_by_event(&mut out, &entries, &fold.ids, style);
        }
    }
    if !out.is_empty() {
        let _ = writeln!(
            out,
            "\n{}",
            style.dim("Another machine's entries: walj diff ID (its images, this disk) · triage them on that machine")
        );
    }
    out
}

/// `recover --json`'s `machines`: per other journal, the `recover --json` object of its
/// journal with `journal`, `name` and `synced_at`.
pub(crate) fn recover_json(remotes: &[RemoteJournal]) -> Value {
    Value::Array(
        remotes
            .iter()
            .map(|r| {
                let mut v = report::recover_json(&r.fold);
                if let Some(o) = v.as_object_mut() {
                    o.insert("journal".into(), json!(r.id));
                    o.insert("name".into(), json!(r.name()));
                    o.insert("synced_at".into(), json!(r.manifest.synced_at));
                }
                v
            })
            .collect(),
    )
}

/// `walj log`: each other machine's last `limit` entries (every one with `all`).
pub(crate) fn log_text(remotes: &[RemoteJournal], all: bool, limit: usize, style: &Style) -> String {
    let mut out = String::new();
    for r in remotes.iter().filter(|r| !r.fold.entries.is_empty()) {
        let n = r.fold.entries.len();
        let shown: Vec<&Entry> = r.fold.entries.iter().skip(if all { 0 } else { n.saturating_sub(limit) }).collect();
        out.push('\n');
        out.push_str(&heading(r, &plural(n, "entry", "entries"), style));
        out.push_str(&report::log_text(&shown, &r.fold.ids, style));
    }
    out
}

/// `walj log --json`: every other machine's entries, each with `session`, `sid`, `machine`
/// and `journal`.
pub(crate) fn log_json(remotes: &[RemoteJournal], all: bool, limit: usize) -> Vec<Value> {
    let mut out = Vec::new();
    for r in remotes {
        let n = r.fold.entries.len();
        for e in r.fold.entries.iter().skip(if all { 0 } else { n.saturating_sub(limit) }) {
            let mut j = report::entry_json(e, &r.fold.ids);
            if let Some(o) = j.as_object_mut() {
                o.insert("session".into(), json!(e.session));
                o.insert("sid".into(), json!(e.sid));
                o.insert("machine".into(), json!(r.name()));
                o.insert("journal".into(), json!(r.id));
            }
            out.push(j);
        }
    }
    out
}

/// `walj sessions`: other machines' sessions, most recently active first.
pub(crate) fn sessions_json(remotes: &[RemoteJournal]) -> Vec<Value> {
    let mut rows: Vec<Value> = Vec::new();
    for r in remotes {
        for s in r.fold.sessions.iter().filter(|s| !s.session.is_empty()) {
            let (done, total) = s.todos_done();
            rows.push(json!({
                "session": s.session,
                "sid": s.sid,
                "state": s.status().as_str(),
                "state_as_of": r.manifest.synced_at,
                "machine": r.name(),
                "journal": r.id,
                "started": s.started.clone().unwrap_or_else(|| s.first_ts.clone()),
                "last_ts": s.last_ts,
                "ended": s.end.as_ref().map(|e| e.0.clone()),
                "end_reason": s.end.as_ref().map(|e| e.1.clone()),
                "branch": s.branch,
                "prompts": s.prompts.len(),
                "last_prompt": s.last_prompt(),
                "todos_done": done,
                "todos_total": total,
                "unresolved": r.fold.entries_of(&s.session).filter(|e| e.is_unresolved()).count(),
            }));
        }
    }
    rows.sort_by(|a, b| b["last_ts"].as_str().cmp(&a["last_ts"].as_str()));
    rows
}

pub(crate) fn sessions_text(remotes: &[RemoteJournal], style: &Style) -> String {
    let rows = sessions_json(remotes);
    if rows.is_empty() {
        return String::new();
    }
    let mut out = format!(
        "\n{}\n{}\n",
        style.bold("Other machines' sessions (states as of each machine's last sync; `walj sync` updates them):"),
        style.bold(&format!(
            "{:<20}  {:<8}  {:<8}  {:<16}  {:<16}  {:>10}  {}",
            "MACHINE", "SESSION", "STATE", "LAST", "SYNCED", "UNRESOLVED", "PROMPT"
        ))
    );
    for v in rows {
        let s = |k: &str| v[k].as_str().unwrap_or("").to_string();
        let state = format!("{:<8}", s("state"));
        let state = match s("state").as_str() {
            "crashed" => style.red(&state),
            "live" => style.green(&state),
            "ended" => style.dim(&state),
            _ => style.yellow(&state),
        };
        let machine = crate::present::fit(&s("machine"), 20);
        let _ = writeln!(
            out,
            "{machine}  {}  {state}  {:<16}  {:<16}  {:>10}  {}",
            style.cyan(&crate::present::pad(&s("sid"), 8)),
            human_ts(&s("last_ts")),
            human_ts(&s("state_as_of")),
            v["unresolved"].as_u64().unwrap_or(0),
            one_line(&s("last_prompt"), 50)
        );
    }
    out
}
