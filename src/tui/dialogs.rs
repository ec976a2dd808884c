//! The confirmation dialogs, built from what the app already knows (the targets, the
//! revert plans, a live-session note): pure functions, no I/O, no state.
//!
//! Safety rules (issue 12): Enter takes the dialog's `default`, which is only ever a choice
//! that loses nothing (a plain revert captures the bytes on disk first and can be undone;
//! mark done and hand back write no file). A choice that can lose work (force over a
//! conflict) has its own key and is never the default; when only such choices remain,
//! Enter cancels like Esc. The summary line and the choices stay visible however long
//! the list of entries is (the body scrolls).

use crate::fold::{Entry, EntryState};
use crate::present::{icon, label, plural};
use crate::triage::RevertPlan;

/// What a confirmed dialog does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Choice {
    Revert {
        ids: Vec<String>,
        force: bool,
    },
    HandBack {
        ids: Vec<String>,
        force: bool,
    },
    Done {
        ids: Vec<String>,
        force: bool,
    },
    Undo {
        id: Option<String>,
        force: bool,
    },
    /// Put `text` on the clipboard; `what` names it in the status line.
    Copy {
        what: String,
        text: String,
    },
    /// Open `$EDITOR` on a file (project-relative), then plan the revert of `ids` again.
    Edit {
        path: String,
        ids: Vec<String>,
    },
    Cancel,
}

/// A confirmation: what will happen, and the keys that decide.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dialog {
    pub title: String,
    /// What the dialog will do, in numbers ("12 write back, 3 delete, 1 conflict"): always shown.
    pub summary: String,
    /// The entries, one or more lines each: scrolls when it does not fit.
    pub body: Vec<String>,
    /// Lines under the body, always shown (a warning, how to undo).
    pub note: Vec<String>,
    /// (key, label, choice); Esc always cancels.
    pub choices: Vec<(char, String, Choice)>,
    /// The key of the choice Enter takes; `None`: Enter cancels.
    pub default: Option<char>,
    /// Something in it deserves a second look (conflict, live session, in-flight entries).
    pub warning: bool,
    /// First body line shown.
    pub scroll: usize,
}

impl Dialog {
    /// The choice a key picks: Esc cancels, Enter takes the default (or cancels), a letter its own.
    pub(crate) fn choice_for(&self, key: DialogKey) -> Option<Choice> {
        match key {
            DialogKey::Cancel => Some(Choice::Cancel),
            DialogKey::Confirm => Some(match self.default {
                Some(d) => self.choices.iter().find(|(k, ..)| *k == d).map_or(Choice::Cancel, |c| c.2.clone()),
                None => Choice::Cancel,
            }),
            DialogKey::Char(c) => self.choices.iter().find(|(k, ..)| *k == c.to_ascii_lowercase()).map(|c| c.2.clone()),
        }
    }

    /// What Enter does, for the dialog and the footer.
    pub(crate) fn enter_label(&self) -> String {
        match self.default.and_then(|d| self.choices.iter().find(|(k, ..)| *k == d)) {
            Some((k, label, _)) => format!("Enter: {label} ({k})"),
            None => "Enter: cancel".to_string(),
        }
    }

    /// Scrolls the body by `delta` lines, inside `0..=body.len() - visible`.
    pub(crate) fn scroll_by(&mut self, delta: isize, visible: usize) {
        let max = self.body.len().saturating_sub(visible.max(1));
        self.scroll = (self.scroll as isize + delta).clamp(0, max as isize) as usize;
    }
}

/// A key as a dialog reads it (from [`super::keymap::Keymap::dialog_key`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum DialogKey {
    Cancel,
    Confirm,
    Char(char),
}

/// An entry as a dialog line: `● src/app.rs (applied by Edit)`.
pub(crate) fn describe(e: &Entry) -> String {
    format!(
        "{} {} ({} by {})",
        icon(e.state()),
        e.path,
        label(e.state()),
        if e.tool.is_empty() { "?" } else { &e.tool }
    )
}

fn ids(open: &[&Entry]) -> Vec<String> {
    open.iter().map(|e| e.id.clone()).collect()
}

/// Counts as "3 in flight, 1 failed" (non-zero ones, in the order given).
fn counts(parts: &[(usize, &str)]) -> String {
    parts.iter().filter(|(n, _)| *n > 0).map(|(n, what)| format!("{n} {what}")).collect::<Vec<_>>().join(", ")
}

/// Marking done needs a question when it is a batch, touches an entry whose tool did not
/// finish (in flight, failed), or a session that still runs.
pub(crate) fn done_needs_asking(open: &[&Entry], live: bool) -> bool {
    live || open.len() > 1 || open.iter().any(|e| matches!(e.state(), EntryState::InFlight | EntryState::Failed))
}

/// Mark entries done: what each is, and a warning for those whose tool did not finish or
/// whose session still runs (`live`).
pub(crate) fn done(open: &[&Entry], live: Option<String>) -> Dialog {
    let ids = ids(open);
    let n_state = |s: EntryState| open.iter().filter(|e| e.state() == s).count();
    let (in_flight, failed) = (n_state(EntryState::InFlight), n_state(EntryState::Failed));
    let mut summary = format!("mark {} done", plural(ids.len(), "entry", "entries"));
    let detail = counts(&[
        (in_flight, "in flight"),
        (failed, "failed"),
        (n_state(EntryState::Applied), "applied"),
        (n_state(EntryState::Drifted), "drifted"),
    ]);
    if !detail.is_empty() {
        summary.push_str(&format!(": {detail}"));
    }
    let body = open.iter().map(|e| describe(e)).collect();
    let mut note = Vec::new();
    if let Some(n) = &live {
        note.push(n.clone());
    }
    if in_flight + failed > 0 {
        note.push(
            "In flight / failed: the tool did not finish, the file may be half-written; done keeps it as it is.".into(),
        );
    }
    note.push("No file is changed; u undoes it.".into());
    Dialog {
        title: format!("Mark {} done?", plural(ids.len(), "entry", "entries")),
        summary,
        body,
        note,
        choices: vec![
            (
                'y',
                if live.is_some() { "mark done anyway".into() } else { "mark done".into() },
                Choice::Done { ids, force: live.is_some() },
            ),
            ('n', "cancel".into(), Choice::Cancel),
        ],
        default: Some('y'),
        warning: live.is_some() || in_flight + failed > 0,
        scroll: 0,
    }
}

/// What a revert would do to each entry (`plans` in the order of `open`).
pub(crate) fn revert(
    open: &[&Entry],
    plans: &[Result<RevertPlan, crate::triage::TriageError>],
    live: Option<String>,
) -> Dialog {
    let mut body = Vec::new();
    let (mut write, mut delete, mut merge, mut nothing, mut cannot) = (0, 0, 0, 0, 0);
    // Entries that can be reverted without losing anything, and the conflicting ones.
    let mut safe = Vec::new();
    let mut conflicts: Vec<&Entry> = Vec::new();
    for (e, plan) in open.iter().zip(plans) {
        let head = format!("{} {}  →", icon(e.state()), e.path);
        if e.still_running {
            cannot += 1;
            body.push(format!("{head} cannot: its command still runs (stop it first: walj procs)"));
            continue;
        }
        match plan {
            Ok(RevertPlan::WritePre) => {
                write += 1;
                safe.push(e.id.clone());
                body.push(format!("{head} write the pre-image back"));
            }
            Ok(RevertPlan::DeleteFile) => {
                delete += 1;
                safe.push(e.id.clone());
                body.push(format!("{head} delete the file (the tool created it)"));
            }
            Ok(RevertPlan::Merge { .. }) => {
                merge += 1;
                safe.push(e.id.clone());
                body.push(format!("{head} take the change out, keep later edits (clean merge)"));
            }
            Ok(RevertPlan::Conflict { lines }) => {
                conflicts.push(e);
                body.push(format!("{head} CONFLICT with later edits:"));
                // Both sides of every region (the disk now, the pre-image a revert writes).
                body.extend(lines.iter().map(|l| format!("    {l}")));
            }
            Ok(RevertPlan::Nothing { why }) => {
                nothing += 1;
                safe.push(e.id.clone());
                body.push(format!("{head} nothing to do: {why}"));
            }
            Ok(RevertPlan::Refused { why }) => {
                cannot += 1;
                body.push(format!("{head} cannot: {why}"));
            }
            Err(err) => {
                cannot += 1;
                body.push(format!("{head} cannot: {err:#}"));
            }
        }
    }
    let ids = ids(open);
    let summary = counts(&[
        (write, "write back"),
        (delete, "delete"),
        (merge, "merge"),
        (conflicts.len(), if conflicts.len() == 1 { "conflict" } else { "conflicts" }),
        (nothing, "nothing to do"),
        (cannot, "cannot"),
    ]);
    let mut note = Vec::new();
    if let Some(n) = &live {
        note.push(n.clone());
    }
    let writes = write + delete + merge;
    let after_stop = open.iter().filter(|e| e.after_stop).count();
    if after_stop > 0 {
        note.push(format!(
            "{} made after Claude Code's last sign of life (the killed command's, or someone's after Claude Code stopped: walj cannot tell which): check the diff first.",
            if after_stop == 1 { "1 change was".to_string() } else { format!("{after_stop} changes were") }
        ));
    }
    let uncertain = open.iter().filter(|e| e.uncertain).count();
    let overlapped = open.iter().filter(|e| e.uncertain && !e.after_stop).count();
    if overlapped > 0 {
        note.push(format!(
            "{} may not be from its command (another session or the user was active while it ran): check the diff first.",
            plural(overlapped, "change", "changes")
        ));
    }
    if !conflicts.is_empty() {
        note.push(
            "A conflict: the file changed after the tool. e edits it; f writes the pre-image over the later edits."
                .into(),
        );
    }
    note.push("The bytes on disk are saved first; u undoes the revert.".into());
    let title = format!("Revert {}?", plural(ids.len(), "entry", "entries"));
    // On a live session the revert must be forced past the liveness check, and Claude may
    // be writing these files: `y` still reverts, but Enter cancels.
    let force = live.is_some() || uncertain > 0;
    let safe_default = if force { None } else { Some('y') };
    let mut choices = Vec::new();
    let mut default = None;
    if writes > 0 && conflicts.is_empty() && cannot == 0 {
        choices.push(('y', if force { "revert anyway" } else { "revert" }.to_string(), Choice::Revert { ids, force }));
        default = safe_default;
    } else {
        if writes > 0 {
            // The others can go back safely: the conflicting (or refused) ones stay as they are.
            let skipped = conflicts.len() + cannot;
            choices.push((
                'y',
                format!("revert {} (skip {skipped})", plural(safe.len(), "other", "others")),
                Choice::Revert { ids: safe.clone(), force },
            ));
            default = safe_default;
        }
        if let Some(first) = conflicts.first() {
            // Force reverts the safe ones too, and writes the pre-image over the conflicts.
            let mut forced = safe.clone();
            forced.extend(conflicts.iter().map(|e| e.id.clone()));
            choices.push((
                'e',
                format!("edit {} in $EDITOR", first.path),
                Choice::Edit { path: first.path.clone(), ids: open.iter().map(|e| e.id.clone()).collect() },
            ));
            choices.push((
                'f',
                format!("force: overwrite the later edits ({})", plural(conflicts.len(), "conflict", "conflicts")),
                Choice::Revert { ids: forced, force: true },
            ));
        }
    }
    choices.push(('n', if choices.is_empty() { "close" } else { "cancel" }.into(), Choice::Cancel));
    Dialog {
        title,
        summary: if summary.is_empty() { "nothing to revert".into() } else { summary },
        body,
        note,
        choices,
        default,
        warning: !conflicts.is_empty() || live.is_some() || uncertain > 0,
        scroll: 0,
    }
}

/// A revert dialog that also says what the revert does to folders: those its deletions leave
/// empty (removed, as git removes them) and those its writes need (made again), as
/// [`crate::triage::FolderPlan`] worked them out. Said above the undo note; nothing when the
/// revert touches no folder.
pub(crate) fn with_folders(mut d: Dialog, removed: &[String], made: &[String]) -> Dialog {
    let list =
        |v: &[String]| v.iter().map(|f| format!("{}/", crate::present::text::safe(f))).collect::<Vec<_>>().join(", ");
    let mut parts = Vec::new();
    if !removed.is_empty() {
        parts.push(format!("removes {} (left empty)", list(removed)));
    }
    if !made.is_empty() {
        parts.push(format!("makes {} again", list(made)));
    }
    if !parts.is_empty() {
        let at = d.note.len().saturating_sub(1);
        d.note.insert(at, format!("Folders: the revert {}.", parts.join("; ")));
    }
    d
}

/// Hand entries back to Claude (a brief at its next session start).
pub(crate) fn hand_back(open: &[&Entry], live: Option<String>) -> Dialog {
    let ids = ids(open);
    let body = open.iter().map(|e| describe(e)).collect();
    let mut note = vec![
        "Claude gets a brief of these changes (paths, states, diffs, the last prompt and open todos)".to_string(),
        "at the start of its next session in this project. No file is changed; u undoes it.".to_string(),
    ];
    if let Some(n) = &live {
        note.push(n.clone());
    }
    Dialog {
        title: format!("Hand {} back to Claude?", plural(ids.len(), "entry", "entries")),
        summary: format!("hand back {}", plural(ids.len(), "entry", "entries")),
        body,
        note,
        choices: vec![
            ('y', "hand back".into(), Choice::HandBack { ids, force: live.is_some() }),
            ('n', "cancel".into(), Choice::Cancel),
        ],
        default: Some('y'),
        warning: live.is_some(),
        scroll: 0,
    }
}

/// `y`: what can be copied from the selected row. Enter takes the first: the path of an
/// entry, else the session's resume line (`claude --resume ID`, `codex resume ID`, …: its
/// agent's, run where it was started: [`crate::present::text::resume_line`]).
pub(crate) fn copy(path: Option<String>, id: Option<String>, session: &str, resume: String) -> Dialog {
    let mut choices = Vec::new();
    let copy = |what: &str, text: String| Choice::Copy { what: what.to_string(), text };
    if let Some(p) = path {
        choices.push(('p', format!("path  {p}"), copy("the path", p)));
    }
    if let Some(i) = id {
        choices.push(('i', format!("id  {i}"), copy("the id", i)));
    }
    choices.push(('r', format!("resume  {resume}"), copy("the resume line", resume)));
    choices.push(('s', format!("session  {session}"), copy("the session id", session.to_string())));
    choices.push(('n', "cancel".into(), Choice::Cancel));
    let default = choices.first().map(|c| c.0);
    Dialog {
        title: "copy".into(),
        summary: "Copy to the clipboard (OSC 52: the terminal puts it there)".into(),
        body: Vec::new(),
        note: Vec::new(),
        choices,
        default,
        warning: false,
        scroll: 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dialog(choices: Vec<(char, String, Choice)>, default: Option<char>) -> Dialog {
        Dialog {
            title: "Revert 1 entry?".into(),
            summary: String::new(),
            body: Vec::new(),
            note: Vec::new(),
            choices,
            default,
            warning: true,
            scroll: 0,
        }
    }

    #[test]
    fn keys_pick_choices_and_enter_never_forces() {
        let force = Choice::Revert { ids: vec!["toolu_1".into()], force: true };
        let d = dialog(vec![('f', "force".into(), force.clone()), ('n', "cancel".into(), Choice::Cancel)], None);
        assert_eq!(d.choice_for(DialogKey::Char('y')), None);
        assert_eq!(d.choice_for(DialogKey::Char('F')), Some(force.clone()));
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Cancel), "Enter cancels when only force is left");
        assert_eq!(d.choice_for(DialogKey::Cancel), Some(Choice::Cancel));
        assert_eq!(d.enter_label(), "Enter: cancel");
        let revert = Choice::Revert { ids: vec!["toolu_1".into()], force: false };
        let d = dialog(vec![('n', "cancel".into(), Choice::Cancel), ('y', "revert".into(), revert.clone())], Some('y'));
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(revert));
        assert_eq!(d.enter_label(), "Enter: revert (y)");
    }

    fn entry(id: &str, path: &str) -> Entry {
        Entry {
            id: id.into(),
            session: "s".into(),
            sid: "s".into(),
            tool: "Edit".into(),
            event: "file_modified".into(),
            path: path.into(),
            outside: false,
            parent: None,
            base: EntryState::Applied,
            actions: Vec::new(),
            ts: String::new(),
            applied_ts: None,
            before: None,
            after: None,
            nocap: None,
            error: None,
            line: 0,
            imported: false,
            background: false,
            v1: false,
            unfinished: false,
            intended: None,
            disk_check: None,
            disk_check_by: None,
            uncertain: false,
            after_stop: false,
            undecided: false,
            redated: false,
            agent_id: None,
            command: None,
            changed: None,
            end_seen: None,
            watch_absent: None,
            candidates: Vec::new(),
            candidate_commands: Vec::new(),
            still_running: false,
            verified: None,
            kind: None,
            link_before: None,
            link_after: None,
            mode_before: None,
            mode_after: None,
        }
    }

    fn ids(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn revert_defaults_never_lose_work() {
        let (a, b, c) = (entry("a", "a.txt"), entry("b", "b.txt"), entry("c", "c.txt"));
        let conflict = || Ok(RevertPlan::Conflict { lines: vec!["c.txt line 1: the file now has:".into()] });
        // Plain: Enter reverts.
        let d = revert(&[&a, &b], &[Ok(RevertPlan::WritePre), Ok(RevertPlan::DeleteFile)], None);
        assert_eq!(d.summary, "1 write back, 1 delete");
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Revert { ids: ids(&["a", "b"]), force: false }));
        // Some conflict: Enter reverts the others only; f forces all; e edits the conflict.
        let d = revert(&[&a, &c], &[Ok(RevertPlan::WritePre), conflict()], None);
        assert_eq!(d.summary, "1 write back, 1 conflict");
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Revert { ids: ids(&["a"]), force: false }));
        assert_eq!(d.choice_for(DialogKey::Char('f')), Some(Choice::Revert { ids: ids(&["a", "c"]), force: true }));
        assert_eq!(
            d.choice_for(DialogKey::Char('e')),
            Some(Choice::Edit { path: "c.txt".into(), ids: ids(&["a", "c"]) })
        );
        assert!(d.body.iter().any(|l| l.contains("the file now has:")), "{:?}", d.body);
        // Only conflicts: Enter cancels.
        let d = revert(&[&c], &[conflict()], None);
        assert_eq!(d.default, None);
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Cancel));
        // A live session: y reverts anyway, Enter cancels.
        let d = revert(&[&a], &[Ok(RevertPlan::WritePre)], Some("live".into()));
        assert_eq!(d.choice_for(DialogKey::Char('y')), Some(Choice::Revert { ids: ids(&["a"]), force: true }));
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Cancel));
        // Refused entries are skipped by y, nothing to revert closes.
        let d = revert(&[&a, &b], &[Ok(RevertPlan::WritePre), Ok(RevertPlan::Refused { why: "x".into() })], None);
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Revert { ids: ids(&["a"]), force: false }));
        let d = revert(&[&a], &[Ok(RevertPlan::Nothing { why: "same".into() })], None);
        assert_eq!(d.choices.len(), 1);
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Cancel));
    }

    #[test]
    fn revert_says_after_stop_changes_apart_from_uncertain_ones() {
        let (mut late, mut overlap) = (entry("a", "a.txt"), entry("b", "b.txt"));
        (late.uncertain, late.after_stop) = (true, true);
        overlap.uncertain = true;
        let d = revert(&[&late, &overlap], &[Ok(RevertPlan::WritePre), Ok(RevertPlan::WritePre)], None);
        let text = d.note.join("\n");
        assert!(text.contains("1 change was made after Claude Code's last sign of life"), "{text}");
        assert!(text.contains("1 change may not be from its command"), "{text}");
        // Either kind makes Enter cancel: `y` reverts anyway.
        let d = revert(&[&late], &[Ok(RevertPlan::WritePre)], None);
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Cancel));
    }

    #[test]
    fn done_asks_for_batches_and_unfinished_entries() {
        let a = entry("a", "a.txt");
        let mut f = entry("f", "f.txt");
        f.base = EntryState::Failed;
        assert!(!done_needs_asking(&[&a], false));
        assert!(done_needs_asking(&[&a], true));
        assert!(done_needs_asking(&[&f], false));
        assert!(done_needs_asking(&[&a, &a], false));
        let d = done(&[&a, &f], None);
        assert_eq!(d.summary, "mark 2 entries done: 1 failed, 1 applied");
        assert_eq!(d.choice_for(DialogKey::Confirm), Some(Choice::Done { ids: ids(&["a", "f"]), force: false }));
    }

    #[test]
    fn scrolling_stays_inside_the_body() {
        let mut d = dialog(Vec::new(), None);
        d.body = (0..10).map(|i| i.to_string()).collect();
        d.scroll_by(100, 4);
        assert_eq!(d.scroll, 6);
        d.scroll_by(-2, 4);
        assert_eq!(d.scroll, 4);
        d.scroll_by(-100, 4);
        assert_eq!(d.scroll, 0);
        d.scroll_by(3, 20);
        assert_eq!(d.scroll, 0, "all of it fits");
    }
}
