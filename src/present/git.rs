//! How a command that moved git's HEAD is told: one line for the reports and the briefs.
//! walj only tells it; it never moves refs.

use crate::fold::GitMove;
use crate::git::Head;

use super::text::{one_line, safe};

fn short(id: &str) -> &str {
    id.get(..7).unwrap_or(id)
}

/// "branch x at af2459b", "a detached HEAD at af2459b", "branch x (no commit yet)".
pub(crate) fn head(h: &Head) -> String {
    match (&h.branch, &h.id) {
        (Some(b), Some(id)) => format!("branch {} at {}", safe(b), short(id)),
        (Some(b), None) => format!("branch {} (no commit yet)", safe(b)),
        (None, Some(id)) => format!("a detached HEAD at {}", short(id)),
        (None, None) => "an unknown HEAD".to_string(),
    }
}

/// A move as `recover --json` and `sessions show --json` give it (`git_moves[]`).
pub(crate) fn git_move_json(m: &GitMove) -> serde_json::Value {
    serde_json::json!({
        "id": m.id, "command": m.command, "from": m.from, "to": m.to, "finished": m.finished,
        "commits": m.commits.iter().map(|(id, summary)| serde_json::json!({"id": id, "summary": summary})).collect::<Vec<_>>(),
    })
}

/// One line: "`git checkout -b x && git commit …` moved the branch from master to x, made
/// commit af2459b (master..x)" — or, for a command that never finished, what HEAD is now.
pub(crate) fn git_move(m: &GitMove) -> String {
    let cmd = one_line(&m.command, 60);
    let what = match (&m.from.branch, &m.to.branch) {
        (Some(a), Some(b)) if a != b => format!("from {} to {}", safe(a), safe(b)),
        _ => format!("from {} to {}", head(&m.from), head(&m.to)),
    };
    let made = match m.commits.len() {
        0 => String::new(),
        1 => format!(", made commit {} \"{}\"", short(&m.commits[0].0), one_line(&m.commits[0].1, 50)),
        n => format!(
            ", made {n} commits ({}..{})",
            m.from.id.as_deref().map(short).unwrap_or("?"),
            m.to.id.as_deref().map(short).unwrap_or("?")
        ),
    };
    if m.finished {
        format!("`{cmd}` moved HEAD {what}{made}")
    } else {
        format!("HEAD moved {what}{made} since `{cmd}` started (it never finished: it, or what ran after it)")
    }
}
