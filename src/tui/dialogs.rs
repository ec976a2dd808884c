//! The confirmation dialogs, built from what the app already knows (the targets, the
//! revert plans, a live-session note): pure functions, no I/O, no state.

use crate::fold::Entry;
use crate::present::{icon, plural};
use crate::triage::RevertPlan;

/// What a confirmed dialog does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Revert { ids: Vec<String>, force: bool },
    HandBack { ids: Vec<String>, force: bool },
    Done { ids: Vec<String>, force: bool },
    Undo { id: Option<String>, force: bool },
    Cancel,
}

/// A confirmation: what will happen, and the keys that decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    pub title: String,
    pub body: Vec<String>,
    /// (key, label, choice); Esc always cancels.
    pub choices: Vec<(char, String, Choice)>,
    /// Something in it deserves a second look (conflict, live session).
    pub warning: bool,
}

impl Dialog {
    /// The choice a key picks: Esc cancels, Enter takes the first choice, a letter its own.
    pub fn choice_for(&self, key: DialogKey) -> Option<Choice> {
        match key {
            DialogKey::Cancel => Some(Choice::Cancel),
            DialogKey::Confirm => self.choices.first().map(|c| c.2.clone()),
            DialogKey::Char(c) => self.choices.iter().find(|(k, ..)| *k == c.to_ascii_lowercase()).map(|c| c.2.clone()),
        }
    }
}

/// A key as a dialog reads it (from [`super::keymap::Keymap::dialog_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DialogKey {
    Cancel,
    Confirm,
    Char(char),
}

/// An entry as a dialog line: `● src/app.rs (applied by Edit)`.
pub fn describe(e: &Entry) -> String {
    format!("{} {} ({} by {})", icon(e.state()), e.path, e.state(), if e.tool.is_empty() { "?" } else { &e.tool })
}

fn ids(open: &[&Entry]) -> Vec<String> {
    open.iter().map(|e| e.id.clone()).collect()
}

/// Mark done while Claude may still work on the files (`live` says so).
pub fn done(open: &[&Entry], live: String) -> Dialog {
    let ids = ids(open);
    let mut body = vec![live, String::new()];
    body.extend(open.iter().map(|e| describe(e)));
    Dialog {
        title: format!("Mark {} done?", plural(ids.len(), "entry", "entries")),
        body,
        choices: vec![
            ('y', "mark done anyway".into(), Choice::Done { ids, force: true }),
            ('n', "cancel".into(), Choice::Cancel),
        ],
        warning: true,
    }
}

/// What a revert would do to each entry (`plans` in the order of `open`).
pub fn revert(open: &[&Entry], plans: &[Result<RevertPlan, crate::triage::TriageError>], live: Option<String>) -> Dialog {
    let mut body = Vec::new();
    let mut conflict = false;
    let mut runnable = 0;
    for (e, plan) in open.iter().zip(plans) {
        let what = match plan {
            Ok(RevertPlan::WritePre) => {
                runnable += 1;
                "write the pre-image back".to_string()
            }
            Ok(RevertPlan::DeleteFile) => {
                runnable += 1;
                "delete the file (the tool created it)".to_string()
            }
            Ok(RevertPlan::Merge { .. }) => {
                runnable += 1;
                "take the change out, keep later edits (clean merge)".to_string()
            }
            Ok(RevertPlan::Conflict { lines }) => {
                conflict = true;
                runnable += 1;
                let mut s = "CONFLICT with later edits".to_string();
                if let Some(l) = lines.first() {
                    s.push_str(&format!(": {l}"));
                }
                if lines.len() > 1 {
                    s.push_str(&format!(" (+{} more)", lines.len() - 1));
                }
                s
            }
            Ok(RevertPlan::Nothing { why }) => format!("nothing to do: {why}"),
            Ok(RevertPlan::Refused { why }) => format!("cannot: {why}"),
            Err(err) => format!("cannot: {err:#}"),
        };
        body.push(format!("{} {}", icon(e.state()), e.path));
        body.push(format!("    → {what}"));
    }
    let ids = ids(open);
    if let Some(n) = &live {
        body.insert(0, String::new());
        body.insert(0, n.clone());
    }
    body.push(String::new());
    body.push("The bytes on disk are saved first; u undoes the revert.".into());
    let title = format!("Revert {}?", plural(ids.len(), "entry", "entries"));
    let choices = if runnable == 0 {
        vec![('n', "close".into(), Choice::Cancel)]
    } else if conflict || live.is_some() {
        let mut c = Vec::new();
        if !conflict {
            c.push(('y', "revert".into(), Choice::Revert { ids: ids.clone(), force: false }));
        }
        c.push((
            'f',
            if conflict { "force: write the pre-image over later edits".into() } else { "force".into() },
            Choice::Revert { ids, force: true },
        ));
        c.push(('n', "cancel".into(), Choice::Cancel));
        c
    } else {
        vec![('y', "revert".into(), Choice::Revert { ids, force: false }), ('n', "cancel".into(), Choice::Cancel)]
    };
    Dialog { title, body, choices, warning: conflict || live.is_some() }
}

/// Hand entries back to Claude (a brief at its next session start).
pub fn hand_back(open: &[&Entry], live: Option<String>) -> Dialog {
    let ids = ids(open);
    let mut body = vec![
        "Claude gets a brief of these changes (paths, states, diffs, the last prompt and open todos)".to_string(),
        "at the start of its next session in this project:".to_string(),
        String::new(),
    ];
    body.extend(open.iter().map(|e| describe(e)));
    if let Some(n) = &live {
        body.push(String::new());
        body.push(n.clone());
    }
    Dialog {
        title: format!("Hand {} back to Claude?", plural(ids.len(), "entry", "entries")),
        body,
        choices: vec![
            ('y', "hand back".into(), Choice::HandBack { ids, force: live.is_some() }),
            ('n', "cancel".into(), Choice::Cancel),
        ],
        warning: live.is_some(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_pick_choices() {
        let force = Choice::Revert { ids: vec!["toolu_1".into()], force: true };
        let d = Dialog {
            title: "Revert 1 entry?".into(),
            body: Vec::new(),
            choices: vec![('f', "force".into(), force.clone()), ('n', "cancel".into(), Choice::Cancel)],
            warning: true,
        };
        assert_eq!(d.choice_for(DialogKey::Char('y')), None);
        assert_eq!(d.choice_for(DialogKey::Char('F')), Some(force.clone()));
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(force));
        assert_eq!(d.choice_for(DialogKey::Cancel), Some(Choice::Cancel));
    }
}
