//! Entry states and session statuses as people read them: one icon, one colour and one
//! description each, shared by `recover`, `log`, the TUI, the SessionStart note and the
//! briefs.

use std::borrow::Cow;

use crate::fold::{Entry, EntryState, SessionStatus};

/// An entry's path as listings show it: a symbolic link with its target (`l2 -> b.txt`;
/// a removed one `l3 -> a.txt (link removed)`), else the path. Raw text: escape it
/// ([`super::safe`], [`super::shown`]) before it reaches a terminal.
pub(crate) fn entry_path(e: &Entry) -> Cow<'_, str> {
    if !e.is_link() {
        return Cow::Borrowed(&e.path);
    }
    match (&e.link_before, &e.link_after) {
        (_, Some(t)) => Cow::Owned(format!("{} -> {t}", e.path)),
        (Some(t), None) => Cow::Owned(format!("{} -> {t} (link removed)", e.path)),
        (None, None) => Cow::Borrowed(&e.path),
    }
}

/// A colour by meaning; each output maps it once (ANSI in `style.rs`, ratatui in
/// `tui/theme.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tone {
    Red,
    Yellow,
    Green,
    Blue,
    Cyan,
    Magenta,
    /// Quiet: settled, not applied, ended.
    Gray,
}

/// The colour of an entry state. Unfinished work is red (in flight, failed), unverified
/// work yellow, drift magenta, settled work green/blue/cyan by how it settled.
pub(crate) fn tone(s: EntryState) -> Tone {
    match s {
        EntryState::InFlight | EntryState::Failed => Tone::Red,
        EntryState::Applied => Tone::Yellow,
        EntryState::Drifted => Tone::Magenta,
        EntryState::Done | EntryState::Persisted => Tone::Green,
        EntryState::Reverted => Tone::Blue,
        EntryState::HandedBack => Tone::Cyan,
        EntryState::NotApplied => Tone::Gray,
    }
}

/// The colour of a session status.
pub(crate) fn session_tone(s: SessionStatus) -> Tone {
    match s {
        SessionStatus::Crashed => Tone::Red,
        SessionStatus::Live => Tone::Green,
        SessionStatus::Ended => Tone::Gray,
        SessionStatus::Unknown => Tone::Yellow,
    }
}

/// One character per state, so a glance down a list reads the situation.
pub(crate) fn icon(s: EntryState) -> &'static str {
    match s {
        EntryState::InFlight => "◐",
        EntryState::Applied => "●",
        EntryState::Failed => "✗",
        EntryState::Drifted => "≠",
        EntryState::Persisted => "✓",
        EntryState::NotApplied => "○",
        EntryState::Done => "✓",
        EntryState::Reverted => "↺",
        EntryState::HandedBack => "↪",
    }
}

/// The state's name in prose: `in flight`, `handed back`.
pub(crate) fn label(s: EntryState) -> String {
    s.as_str().replace('_', " ")
}

/// What the state means: the one description the note, the briefs and the TUI share.
pub(crate) fn meaning(s: EntryState) -> &'static str {
    match s {
        EntryState::InFlight => "the tool may not have run, or not finished",
        EntryState::Applied => "the tool ran, but the change was never verified on disk",
        EntryState::Failed => "the tool failed part-way",
        EntryState::Drifted => "the file changed since and matches neither image",
        EntryState::Persisted => "applied and verified on disk",
        EntryState::NotApplied => "the tool did not change the file",
        EntryState::Done => "marked done",
        EntryState::Reverted => "reverted to the pre-image",
        EntryState::HandedBack => "handed back to Claude",
    }
}

/// What the disk says of a file tool call that never reported its outcome.
pub(crate) fn in_flight_check(c: crate::fold::InFlightCheck) -> &'static str {
    use crate::fold::InFlightCheck::*;
    match c {
        Completed => "the disk holds the intended content: the tool completed",
        Unchanged => "not applied: the file is unchanged",
        Other => "partly applied or changed since: the disk holds neither the pre-image nor the intended content",
        WrittenByLater => {
            "the disk holds the intended content, but a later call wrote exactly that: whether this one ran is unknown"
        }
        NotThroughLink => {
            "not applied: the path is a symbolic link, which Claude Code does not write through (the file it points at changed by other means)"
        }
    }
}

/// The state of `e` in prose, as the facts allow: an entry derived from a command that never
/// finished has no "applied" moment (`changed on disk`), and a tool call of a session that
/// still runs is `running now`, not "in flight when the session stopped".
pub(crate) fn entry_label(e: &Entry, session: SessionStatus) -> String {
    match e.state() {
        EntryState::Applied | EntryState::Failed if e.unfinished => "changed on disk".to_string(),
        EntryState::InFlight if session == SessionStatus::Live => "running now".to_string(),
        s => label(s),
    }
}

/// The state of an unresolved entry in the words every reader shares (the note, the user's
/// message, `recover`, the brief): "cut off: not applied", "cut off: the disk holds the
/// intended content", "completed, not yet verified", "failed: …". Short: for a list that
/// names many entries on one line each.
pub(crate) fn short_state(e: &Entry) -> &'static str {
    use crate::fold::InFlightCheck as C;
    match e.state() {
        EntryState::InFlight => match e.disk_check {
            Some(C::Completed) => "cut off: the disk holds the intended content",
            Some(C::Unchanged | C::NotThroughLink) => "cut off: not applied",
            Some(C::Other) => "cut off: the disk holds neither image",
            Some(C::WrittenByLater) => "cut off: a later call wrote the intended content",
            None if e.unfinished => "cut off: changed on disk by a command that never finished",
            None => "cut off in flight",
        },
        EntryState::Applied | EntryState::Failed if e.unfinished => {
            "cut off: changed on disk by a command that never finished"
        }
        EntryState::Applied => "completed, not yet verified",
        EntryState::Failed => match e.disk_check {
            Some(C::Unchanged | C::NotThroughLink) => "failed: nothing was changed",
            Some(C::Completed | C::WrittenByLater) => "failed, but the disk holds the intended content",
            Some(C::Other) => "failed part-way: the disk holds neither image",
            None => "failed: check the file",
        },
        EntryState::Drifted => "changed since: matches neither image",
        EntryState::Persisted => "applied and verified on disk",
        EntryState::NotApplied => "failed: nothing was changed",
        EntryState::Done => "marked done",
        EntryState::Reverted => "reverted",
        EntryState::HandedBack => "handed back",
    }
}

/// Whether an unresolved entry was cut off in flight (its tool call never reported an
/// outcome, or a command that never finished made it) rather than completed and not yet
/// verified: the two counts the user's message gives.
pub(crate) fn cut_off(e: &Entry) -> bool {
    e.state() == EntryState::InFlight || e.unfinished
}

/// What the state of `e` means (the one sentence the note, the briefs, `recover` and the TUI
/// share): [`meaning`], except where it would contradict the entry's own facts — a
/// snapshot-derived entry's command did run (its diff shows it), so it never says "may not
/// have run"; it says which command changed the file.
///
/// It is the entry's one verdict, from the evidence: a file tool call cut off in flight, or one
/// that failed, says what the disk holds (the disk check), never "may not have run" beside "the
/// tool completed", nor "failed part-way" for a call that changed nothing.
pub(crate) fn entry_meaning(e: &Entry, session: SessionStatus) -> String {
    use crate::fold::InFlightCheck as C;
    let st = e.state();
    if cut_off_change(e) {
        return cut_off_meaning(e, e.command.as_deref().map(one_line));
    }
    match (st, e.disk_check) {
        (EntryState::InFlight, _) if session == SessionStatus::Live => "running now: its session is live".to_string(),
        (EntryState::InFlight, Some(C::Completed)) => {
            "cut off: the disk holds the intended content (the tool completed before the session stopped); not yet verified"
                .to_string()
        }
        (EntryState::InFlight, Some(C::Unchanged)) => "cut off: not applied (the file is unchanged)".to_string(),
        (EntryState::InFlight, Some(c @ (C::Other | C::WrittenByLater | C::NotThroughLink))) => {
            format!("cut off: {}", in_flight_check(c))
        }
        (EntryState::InFlight, None) => format!("cut off in flight: {}", meaning(st)),
        (EntryState::Failed, Some(c)) => format!("failed: {}", failed_disk(c)),
        (EntryState::Failed, None) => {
            "failed: whether it changed the file is not known (nothing to compare the disk with)".to_string()
        }
        _ => meaning(st).to_string(),
    }
}

/// The disk check said apart from the verdict, where [`entry_meaning`] does not already say it
/// (a reader that shows both lines would repeat or contradict itself).
pub(crate) fn extra_disk_verdict(e: &Entry, short: impl Fn(&str) -> String) -> Option<String> {
    let said = matches!(e.state(), EntryState::InFlight | EntryState::Failed) && !cut_off_change(e);
    if !said {
        return disk_verdict(e, short);
    }
    // Said already, but for the later call that left the same content: which one.
    match (e.disk_check, e.disk_check_by.as_deref()) {
        (Some(crate::fold::InFlightCheck::WrittenByLater), Some(by)) => {
            Some(format!("the later call that wrote the same content: {}", short(by)))
        }
        _ => None,
    }
}

/// The words for a cut-off change, naming its command as `cmd` shows it.
fn cut_off_meaning(e: &Entry, cmd: Option<String>) -> String {
    let cmd = cmd.unwrap_or_else(|| "(command not recorded)".to_string());
    let still = if e.still_running { " and still runs" } else { "" };
    format!("changed on disk by a command that never finished{still}: `{cmd}`")
}

/// A change found on disk for a command that never finished (derived from its snapshot).
fn cut_off_change(e: &Entry) -> bool {
    e.unfinished && matches!(e.state(), EntryState::Applied | EntryState::Failed | EntryState::InFlight)
}

/// [`entry_meaning`] for a list that names each command once on a line of its own (`walj
/// recover`): a cut-off change names its command shortened to `width` characters (with `…`), so
/// a long command is not repeated in full on each of its changes.
pub(crate) fn entry_meaning_short(e: &Entry, session: SessionStatus, width: usize) -> String {
    if cut_off_change(e) {
        return cut_off_meaning(e, e.command.as_deref().map(|c| super::text::one_line(c, width)));
    }
    entry_meaning(e, session)
}

/// [`entry_meaning`] for a note that lists the cut-off command itself on its own line (the
/// SessionStart note, the hand-back brief): the command line is said there once, not again on
/// each of its changes.
pub(crate) fn entry_meaning_listed(e: &Entry, session: SessionStatus) -> String {
    if cut_off_change(e) {
        let still = if e.still_running { " and still runs" } else { "" };
        return format!("changed on disk by a command that never finished{still} (named below)");
    }
    entry_meaning(e, session)
}

/// Who may have made the change of a derived entry, when walj is not sure it was its
/// command's ([`crate::bashsnap::attribution`]): `None` when it is certain. `others` names the
/// candidates as they should be shown (short ids).
pub(crate) fn attribution(e: &Entry, others: &[String]) -> Option<String> {
    if e.after_stop {
        let also = if others.is_empty() { String::new() } else { format!(" (or of {})", others.join(", ")) };
        return Some(match &e.end_seen {
            None => {
                // Why there was no watcher's word (when recorded): the bound is the last sign of
                // life only, never a moment walj saw.
                let why = e.watch_absent.as_deref().map_or_else(String::new, |w| {
                    format!(" (no watcher saw Claude Code end: {})", super::text::shown(w))
                });
                format!(
                    "made after Claude Code's last sign of life: this command's{also}, or someone's after Claude Code stopped — walj cannot tell without its watcher{why}; not counted as Claude's work"
                )
            }
            // The watcher saw the process end: the moment is known, whose change it was is not.
            Some(t) => format!(
                "made after Claude Code's last sign of life (its process ended at {}, seen by the checkout's watcher): this command's, whose processes ran on{also}, or someone's after Claude Code stopped — walj cannot tell which; not counted as Claude's work",
                super::text::hms(t)
            ),
        });
    }
    if !e.uncertain {
        return None;
    }
    if e.redated {
        return Some("its ctime is after Claude Code's last sign of life but its mtime is not: the content may be this command's, its time moved by a chmod or touch after the crash, or changed after Claude Code stopped — walj cannot tell which".to_string());
    }
    if e.undecided {
        // Listed apart from any command: both are named, this one by its line too.
        let this = e
            .command
            .as_deref()
            .map_or_else(|| "this command".to_string(), |c| format!("`{}`", super::text::one_line(c, 60)));
        let who = if others.is_empty() { "another command".to_string() } else { others.join(" or ") };
        return Some(format!(
            "uncertain: {this} or {who} — they ran at the same time and no command line names the file, its folder or a pattern matching it; counted in neither's changes"
        ));
    }
    Some(if others.is_empty() {
        "may not be this command's: another session or the user was active while it ran".to_string()
    } else {
        format!("may be this command's or {}'s: they ran at the same time", others.join("'s or "))
    })
}

/// How readers name the candidates of an uncertain entry: by their command lines, shortened to
/// `width` and quoted (`candidate_commands`), else by `short(id)` (entries written before walj recorded
/// the lines). The ids themselves stay in `--json`.
pub(crate) fn candidate_names(e: &Entry, width: usize, short: impl Fn(&str) -> String) -> Vec<String> {
    e.candidates
        .iter()
        .enumerate()
        .map(|(i, id)| match e.candidate_commands.get(i).filter(|t| !t.trim().is_empty()) {
            Some(t) => format!("`{}`", super::text::one_line(t, width)),
            None => short(id),
        })
        .collect()
}

/// Whose work an entry is, for grouping: the subagent that made it (`None`: the main thread).
pub(crate) fn by_subagent<'a>(e: &Entry, session: &'a crate::fold::SessionInfo) -> Option<&'a crate::fold::Subagent> {
    session.subagent(e.agent_id.as_deref()?)
}

/// A subagent as a heading line: its type and task, and whether it was still running when
/// its session died (or still runs now).
pub(crate) fn subagent_heading(a: &crate::fold::Subagent, session: SessionStatus) -> String {
    let state = match (&a.ended, session) {
        (Some((_, how)), _) => format!("ended ({how})"),
        (None, SessionStatus::Live) => "running now".to_string(),
        (None, SessionStatus::Crashed) => "still running when the session died".to_string(),
        (None, _) => "no end recorded".to_string(),
    };
    let bg = if a.background { ", in the background" } else { "" };
    format!("subagent {}{bg}: {state}", a.label())
}

/// The first line of `s`, with `…` when more lines follow.
fn one_line(s: &str) -> String {
    let mut lines = s.lines();
    let first = lines.next().unwrap_or("");
    if lines.next().is_some() { format!("{first} …") } else { first.to_string() }
}

/// [`in_flight_check`] of `e`, naming the later call that left the disk's content when the
/// fold knows it (`ids` shows ids as the output does): a verdict names its cause.
pub(crate) fn disk_verdict(e: &Entry, short: impl Fn(&str) -> String) -> Option<String> {
    let c = e.disk_check?;
    if e.state() == EntryState::Failed {
        // What the disk says of a call that failed.
        return Some(failed_disk(c).to_string());
    }
    Some(match (c, e.disk_check_by.as_deref()) {
        (crate::fold::InFlightCheck::WrittenByLater, Some(by)) => format!(
            "the disk holds the intended content, but the later call {} wrote exactly that: whether this one ran is unknown",
            short(by)
        ),
        _ => in_flight_check(c).to_string(),
    })
}

/// What the disk says of a file tool call that failed: the one wording the verdict and the
/// disk line share.
fn failed_disk(c: crate::fold::InFlightCheck) -> &'static str {
    use crate::fold::InFlightCheck as C;
    match c {
        C::Unchanged | C::NotThroughLink => "nothing was changed: the file is as before the call",
        C::Completed | C::WrittenByLater => "the disk holds the content the call meant to write",
        C::Other => "changed part-way: the disk holds neither the pre-image nor the intended content",
    }
}

/// What a session status means: the one description the TUI's session pane, `walj
/// sessions` and the resume brief can share. `agent`: the session's coding agent.
pub(crate) fn session_meaning(s: SessionStatus, agent: crate::agents::Agent) -> String {
    match s {
        SessionStatus::Crashed => {
            format!("no SessionEnd, and its {} process is gone: the session died mid-turn", agent.label())
        }
        SessionStatus::Live => format!("its {} process is still running", agent.label()),
        SessionStatus::Ended => "ended (SessionEnd seen)".to_string(),
        SessionStatus::Unknown => "walj cannot tell how it ended (no process information)".to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [EntryState; 9] = [
        EntryState::InFlight,
        EntryState::Applied,
        EntryState::Failed,
        EntryState::Drifted,
        EntryState::Persisted,
        EntryState::NotApplied,
        EntryState::Done,
        EntryState::Reverted,
        EntryState::HandedBack,
    ];

    #[test]
    fn unresolved_states_stand_out_and_failed_is_red() {
        for s in ALL {
            assert!(!meaning(s).is_empty());
            assert_eq!(
                s.is_unresolved(),
                tone(s) != Tone::Gray && !matches!(tone(s), Tone::Green | Tone::Blue | Tone::Cyan),
                "{s:?}"
            );
        }
        assert_eq!(tone(EntryState::Failed), Tone::Red);
        assert_eq!(label(EntryState::HandedBack), "handed back");
    }

    fn entry(base: EntryState) -> Entry {
        let view = crate::journal::view::RecordView::default();
        Entry::new(1, "c1".into(), "s".into(), view, base)
    }

    /// The three contradictions of a killed command's entry are gone: no "applied" moment,
    /// no "may not have run", and the command line instead of a tool-call id.
    #[test]
    fn a_killed_commands_change_says_what_ran_and_a_live_call_runs_now() {
        let mut e = entry(EntryState::Applied);
        e.unfinished = true;
        e.parent = Some("toolu_01".into());
        e.command = Some("sed -i s/a/b/ a.txt && sleep 60".into());
        let text = entry_meaning(&e, SessionStatus::Crashed);
        assert_eq!(text, "changed on disk by a command that never finished: `sed -i s/a/b/ a.txt && sleep 60`");
        assert!(!text.contains("may not have run") && !text.contains("toolu_"));
        assert_eq!(entry_label(&e, SessionStatus::Crashed), "changed on disk");
        let f = entry(EntryState::InFlight);
        assert_eq!(entry_label(&f, SessionStatus::Live), "running now");
        assert!(entry_meaning(&f, SessionStatus::Live).starts_with("running now"));
        assert_eq!(
            entry_meaning(&f, SessionStatus::Crashed),
            format!("cut off in flight: {}", meaning(EntryState::InFlight))
        );
        assert_eq!(attribution(&e, &[]), None);
        e.uncertain = true;
        assert!(attribution(&e, &["b2".into()]).unwrap().contains("b2"));
        e.after_stop = true;
        assert!(attribution(&e, &[]).unwrap().contains("walj cannot tell without its watcher"));
    }

    /// Every state, with every thing the disk can say and as a live or a dead session's, read as
    /// the TUI's detail and `recover` show it (label, verdict, the disk's line, the short state):
    /// no two of its lines contradict each other.
    #[test]
    fn every_states_lines_agree() {
        use crate::fold::InFlightCheck as C;
        let checks = [
            None,
            Some(C::Completed),
            Some(C::Unchanged),
            Some(C::Other),
            Some(C::WrittenByLater),
            Some(C::NotThroughLink),
        ];
        let clash = [
            ("may not have run", "completed"),
            ("may not have run", "holds the intended content"),
            ("part-way", "nothing was changed"),
            ("part-way", "unchanged"),
            ("not applied", "holds the intended content"),
            ("nothing was changed", "holds the content"),
            ("completed", "not applied"),
        ];
        for st in ALL {
            // The fold checks the disk for in-flight and failed calls only.
            let checked = matches!(st, EntryState::InFlight | EntryState::Failed);
            for check in checks.into_iter().filter(|c| checked || c.is_none()) {
                for session in [SessionStatus::Crashed, SessionStatus::Live, SessionStatus::Ended] {
                    let mut e = entry(st);
                    e.disk_check = check;
                    e.disk_check_by = Some("c9".into());
                    let lines = [
                        entry_label(&e, session),
                        entry_meaning(&e, session),
                        extra_disk_verdict(&e, str::to_string).unwrap_or_default(),
                        short_state(&e).to_string(),
                    ];
                    let all = lines.join(" | ");
                    for (a, b) in clash {
                        assert!(!(all.contains(a) && all.contains(b)), "{st:?} {check:?} {session:?}: {all}");
                    }
                }
            }
        }
        // The demo's failed Edit (its text was not found: the file unchanged).
        let mut e = entry(EntryState::Failed);
        e.disk_check = Some(C::Unchanged);
        assert!(entry_meaning(&e, SessionStatus::Crashed).starts_with("failed: nothing was changed"));
        assert_eq!(short_state(&e), "failed: nothing was changed");
        assert_eq!(extra_disk_verdict(&e, str::to_string), None);
        // The in-flight Write whose content is on disk: one line says it.
        let mut w = entry(EntryState::InFlight);
        w.disk_check = Some(C::Completed);
        let m = entry_meaning(&w, SessionStatus::Crashed);
        assert!(
            m.starts_with("cut off: the disk holds the intended content") && !m.contains("may not have run"),
            "{m}"
        );
        assert_eq!(extra_disk_verdict(&w, str::to_string), None);
    }
}
