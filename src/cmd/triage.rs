//! diff, mark, revert, undo, handoff: thin wrappers printing what `crate::triage` returns.

use std::io::Write;

use crate::fold::{Fold, FoldOptions, ShortIds};
use crate::project::Project;
use crate::style::Style;
use crate::triage::origin::Provenance;
use crate::triage::{self, DiffMode, HandoffOptions, Outcome, RevertOptions};

/// The arguments of `walj mark`.
#[derive(Debug, clap::Args)]
pub struct MarkArgs {
    /// Entry ids or unique prefixes (or --session, or --all).
    #[arg(conflicts_with_all = ["session", "all"])]
    pub ids: Vec<String>,
    /// Mark them done (the default, and today the only mark: `walj mark ID` is `walj mark --done ID`).
    #[arg(long)]
    pub done: bool,
    /// Every unresolved entry of this session.
    #[arg(long, value_name = "SID", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every unresolved entry of this checkout's sessions (imported and synced ones are named by id).
    #[arg(long)]
    pub all: bool,
    /// Also entries of a session that is still live.
    #[arg(long)]
    pub force: bool,
    /// Say what would be marked, record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done (or would be) as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj revert`.
#[derive(Debug, clap::Args)]
pub struct RevertArgs {
    /// Entry ids or unique prefixes (or --session, or --all).
    #[arg(conflicts_with_all = ["session", "all"])]
    pub ids: Vec<String>,
    /// Every change of this session (like Claude Code's /rewind), newest first.
    #[arg(long, value_name = "SID", conflicts_with = "all")]
    pub session: Option<String>,
    /// Only the changes of this prompt's turn (1 = the session's first prompt).
    #[arg(long, value_name = "N", requires = "session")]
    pub prompt: Option<usize>,
    /// Every unresolved change of this checkout's sessions, newest first (imported and synced ones are named by id).
    #[arg(long)]
    pub all: bool,
    /// Write the pre-image over conflicting later changes; act on live sessions.
    #[arg(long)]
    pub force: bool,
    /// Say what would happen, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done (or would be) as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj handoff`.
#[derive(Debug, clap::Args)]
pub struct HandoffArgs {
    /// Entry ids or unique prefixes (or --session, or --all).
    #[arg(conflicts_with_all = ["session", "all"])]
    pub ids: Vec<String>,
    /// The unresolved entries of this session.
    #[arg(long, value_name = "SID", conflicts_with = "all")]
    pub session: Option<String>,
    /// Every unresolved entry of this checkout's sessions (imported and synced ones are named by id).
    #[arg(long)]
    pub all: bool,
    /// Only print the brief; record nothing.
    #[arg(long)]
    pub print: bool,
    /// Say what would be handed back (and print the brief), record nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print the brief and what was handed back as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    /// Also entries of a session that is still live.
    #[arg(long)]
    pub force: bool,
    /// Show the briefs imported bundles brought, waiting for `--deliver` (nothing recorded).
    #[arg(long, conflicts_with_all = ["session", "print", "deliver", "all"])]
    pub held: bool,
    /// Deliver briefs an imported bundle brought (IDS: their action ids, default all) at the
    /// next SessionStart. Imported briefs are never delivered without it.
    #[arg(long, conflicts_with_all = ["session", "print", "all"])]
    pub deliver: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj undo`.
#[derive(Debug, clap::Args)]
pub struct UndoArgs {
    /// An operation id (`walj ops`) or an entry id (the last action on it); default: the last operation.
    #[arg(value_name = "ID")]
    pub id: Option<String>,
    /// Overwrite a file changed since the revert (its bytes are kept in the store); act on live sessions.
    #[arg(long)]
    pub force: bool,
    /// Say what would be undone, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was undone (or would be) as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj redo`.
#[derive(Debug, clap::Args)]
pub struct RedoArgs {
    /// An undone operation's id (`walj ops`); default: the newest undone one whose entries are open.
    #[arg(value_name = "OP")]
    pub id: Option<String>,
    /// As for the action itself (revert: write over conflicts; act on live sessions).
    #[arg(long)]
    pub force: bool,
    /// Say what would be done again, change nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// Print what was done (or would be) as JSON (schema in the README).
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
}

/// The arguments of `walj ops`.
#[derive(Debug, clap::Args)]
pub struct OpsArgs {
    /// Print the operations as JSON.
    #[arg(long)]
    pub json: bool,
}

/// Every entry, settled ones included: triage acts on any entry by id.
fn load(project: &Project) -> anyhow::Result<Fold> {
    super::load::load(project, &FoldOptions { keep_settled: true, ..Default::default() })
}

/// [`load`] of the one session that holds `id`, when the line index names exactly one
/// (`crate::fold::located`): that session's lines and the journal's unindexed tail, not the
/// whole journal. `None` (the caller reads everything): no index, several or no sessions
/// hold it, or the session's fold does not find it after all.
fn load_holding(project: &Project, id: &str) -> Option<Fold> {
    load_holding_all(project, &[id.to_string()])
}

/// [`load_holding`] of every id of `ids` (one session must hold them all, and its fold find
/// each one).
fn load_holding_all(project: &Project, ids: &[String]) -> Option<Fold> {
    if ids.is_empty() {
        return None;
    }
    let typed: Vec<&str> = ids.iter().map(String::as_str).collect();
    let session = crate::fold::located::session_of(&project.journal, &typed)?;
    let opts = FoldOptions { keep_settled: true, session: Some(session), ..Default::default() };
    let fold = super::load::load(project, &opts).ok()?;
    ids.iter().all(|i| fold.find(i).is_ok()).then_some(fold)
}

/// The fold `mark`, `handoff` and `undo` act on for `ids`: the one session holding them where
/// the index names it ([`load_holding_all`]), else every entry ([`load`]). Their checks read
/// only the entry and its own session: its actions (recorded under its session), its state,
/// whether its session is live; provenance reads the journal's import marks either way.
fn load_ids(project: &Project, ids: &[String]) -> anyhow::Result<Fold> {
    match load_holding_all(project, ids) {
        Some(f) => Ok(f),
        None => load(project),
    }
}

/// The fold `walj revert IDS` works out on. A revert reads more than the entry's session where
/// the plan depends on other entries of the path: an entry without a post-image is checked
/// against what the next entry on its path (of any session) saw before it ran, several entries
/// on one path join into chains broken by any other entry between them, and a link reverts
/// through its own checks. In those cases (and without an index) every entry is read, as
/// before; otherwise the one session's fold gives the same plan. Either way, each write
/// checks right before it that the disk is still what the plan saw.
fn load_revert(project: &Project, ids: &[String]) -> anyhow::Result<Fold> {
    if let Some(fold) = load_holding_all(project, ids) {
        let mut paths = std::collections::HashSet::new();
        let alone = ids
            .iter()
            .filter_map(|i| fold.find(i).ok())
            .all(|e| e.after.is_some() && !e.is_link() && e.kind_known() && paths.insert(e.path.clone()));
        if alone {
            return Ok(fold);
        }
    }
    load(project)
}

/// The fold `walj undo ID` acts on: the entry's session when its last action is a mark or a
/// revert (undone alone, checked against the entry and the disk). A hand-back's brief names
/// entries of other sessions and is undone whole, an operation id is no entry's id, and `undo`
/// without an id looks for the journal's last command: every entry is read for those.
fn load_undo(project: &Project, id: Option<&str>) -> anyhow::Result<Fold> {
    if let Some(i) = id
        && let Some(fold) = load_holding(project, i)
        && let Ok(e) = fold.find(i)
        && e.last_action().is_some_and(|a| a.how == crate::journal::how::DONE || a.how == crate::journal::how::REVERTED)
    {
        return Ok(fold);
    }
    load(project)
}

/// The fold `walj diff` reads for `target`: an id's session alone where the index knows it.
fn load_for(project: &Project, target: &DiffTarget<'_>) -> anyhow::Result<Fold> {
    match target {
        DiffTarget::Entry(id) => match load_holding(project, id) {
            Some(f) => Ok(f),
            None => load(project),
        },
        DiffTarget::Turn { .. } => load(project),
    }
}

/// `--json` of mark, revert, undo and redo: `{"action", "dry_run", "changed", "concurrent",
/// "refused", "undo", "outcomes": [{"id", "short", "path", "message", "changed", "concurrent",
/// "kept", "conflict"}]}`. `undo` is the command that takes it back (`null` when nothing
/// changed); `conflict` is `null` or the conflicting regions (a refused revert, `refused` true).
fn print_outcomes_json(action: &str, dry_run: bool, outcomes: &[Outcome], ids: &ShortIds) -> anyhow::Result<()> {
    let changed = outcomes.iter().any(|o| o.changed);
    let refused = outcomes.iter().any(|o| o.conflict.is_some());
    let undo = match action {
        _ if !changed => None,
        "undo" => Some("walj redo"),
        _ => Some("walj undo"),
    };
    let v = serde_json::json!({
        "action": action,
        "dry_run": dry_run,
        "changed": changed,
        "concurrent": outcomes.iter().any(|o| o.concurrent),
        "refused": refused,
        "undo": undo,
        "outcomes": outcomes.iter().map(|o| serde_json::json!({
            "id": o.id,
            "short": ids.short(&o.id),
            "path": o.path,
            "message": o.message,
            "changed": o.changed,
            "concurrent": o.concurrent,
            "kept": o.kept,
            "conflict": o.conflict,
        })).collect::<Vec<_>>(),
    });
    writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
    Ok(())
}

/// Prints a triage result: the outcomes as text or `--json`, and the command that takes it
/// back. A refusal with a conflict is an outcome under `--json` (exit 1), an error otherwise.
fn report(
    action: &str,
    dry_run: bool,
    json: bool,
    result: triage::Result<Vec<Outcome>>,
    ids: &ShortIds,
) -> anyhow::Result<i32> {
    let outcomes = match result {
        Ok(o) => o,
        Err(triage::TriageError::Conflict { outcomes, .. }) if json => {
            print_outcomes_json(action, dry_run, &outcomes, ids)?;
            return Ok(super::EXIT_ERROR);
        }
        Err(e) => return Err(e.into()),
    };
    if json {
        print_outcomes_json(action, dry_run, &outcomes, ids)?;
        return Ok(exit_code(&outcomes));
    }
    if dry_run {
        println!("Dry run, nothing changed.{}", if action == "revert" { " Newest first:" } else { "" });
    }
    print_outcomes(&outcomes)?;
    if !dry_run && outcomes.iter().any(|o| o.changed) {
        println!("{}", undo_hint(action));
    }
    Ok(exit_code(&outcomes))
}

/// The line after an action that changed something: how to take it back.
fn undo_hint(action: &str) -> &'static str {
    match action {
        "undo" => "`walj redo` does it again (`walj ops` lists the operations).",
        "handoff" => {
            "`walj undo` takes it back: it reopens the entries, and withdraws the brief while no session has received it."
        }
        _ => "`walj undo` undoes this (`walj ops` lists the operations).",
    }
}

/// What mark, revert and handoff act on when no id and no `--session` is given: `--all` says
/// "every unresolved entry"; without it walj asks on a terminal and refuses off one (exit 1,
/// naming the flags), so a bare command never acts on everything by itself.
/// `Ok(true)`: act on every unresolved entry; `Ok(false)`: refused, nothing changed.
fn pick_all(fold: &Fold, command: &str, verb: &str, all: bool) -> anyhow::Result<bool> {
    if all {
        return Ok(true);
    }
    let n = fold.unresolved().count();
    let flags = "entry ids, --session SID, or --all (every unresolved entry)";
    if super::confirm::on_terminal() {
        eprintln!("`{command}` was given no entry ids.");
        if super::prompt::confirm(&format!(
            "{} every unresolved entry of this project ({n})? (--all says so without asking)",
            capitalized(verb)
        ))? {
            return Ok(true);
        }
        eprintln!("Nothing was changed. Name {flags}.");
        return Ok(false);
    }
    eprintln!("walj: `{command}` needs {flags}; none was given, so nothing was changed (no terminal to ask on).");
    Ok(false)
}

fn capitalized(s: &str) -> String {
    let mut c = s.chars();
    c.next().map(|f| f.to_uppercase().chain(c).collect()).unwrap_or_default()
}

fn print_outcomes(outcomes: &[Outcome]) -> anyhow::Result<()> {
    let mut out = std::io::stdout().lock();
    for o in outcomes {
        writeln!(out, "{}", crate::present::safe_block(&o.message))?;
    }
    Ok(())
}

/// Paths where ids go: each of `typed` that is no entry id but names a path of this project
/// (relative to the current folder, to the project's root, or absolute) becomes that path's
/// unresolved entries, newest first. A path with one entry is that entry; a path with several is
/// listed and asked about on a terminal (`--yes` answers), and refused off one, listing them.
/// `Ok(None)`: refused or declined (the caller exits 1, nothing changed).
fn expand_paths(
    project: &Project,
    fold: &Fold,
    typed: &[String],
    verb: &str,
    yes: bool,
) -> anyhow::Result<Option<Vec<String>>> {
    let mut out = Vec::new();
    for t in typed {
        let Some(entries) = path_entries(project, fold, t) else {
            out.push(t.clone());
            continue;
        };
        if entries.len() > 1 && !yes {
            let list: Vec<String> = entries
                .iter()
                .map(|e| {
                    format!(
                        "  {}  {}  {}  {}",
                        fold.ids.short(&e.id),
                        e.state(),
                        crate::present::shown(&e.tool),
                        crate::present::human_ts(e.when())
                    )
                })
                .collect();
            eprintln!(
                "{} has {} unresolved entries, newest first:\n{}",
                crate::present::shown(&entries[0].path),
                entries.len(),
                list.join("\n")
            );
            if !super::confirm::on_terminal() {
                eprintln!(
                    "walj: refused: {} names {} entries; name the ids (above), or pass --yes to {verb} all of them. Nothing was changed.",
                    crate::present::shown(t),
                    entries.len()
                );
                return Ok(None);
            }
            if !super::prompt::confirm(&format!("{} all {} of them?", capitalized(verb), entries.len()))? {
                eprintln!("Nothing was changed.");
                return Ok(None);
            }
        }
        out.extend(entries.iter().map(|e| e.id.clone()));
    }
    Ok(Some(out))
}

/// The unresolved entries (newest first) of the path `typed` names, when `typed` is no entry
/// id; `None` when it is an id or names no path with unresolved entries.
fn path_entries<'f>(project: &Project, fold: &'f Fold, typed: &str) -> Option<Vec<&'f crate::fold::Entry>> {
    if fold.find(typed).is_ok() {
        return None;
    }
    let root = project.root.canonicalize().unwrap_or_else(|_| project.root.clone());
    let mut candidates: Vec<String> = Vec::new();
    let typed_path = std::path::Path::new(typed);
    let absolute = if typed_path.is_absolute() {
        Some(typed_path.to_path_buf())
    } else {
        std::env::current_dir().ok().map(|c| c.join(typed_path))
    };
    if let Some(abs) = absolute {
        // The folder may be gone (a deleted file's entry): canonicalize what exists above it.
        let abs = match (abs.parent().and_then(|p| p.canonicalize().ok()), abs.file_name()) {
            (Some(dir), Some(name)) => dir.join(name),
            _ => abs,
        };
        if let Ok(rel) = abs.strip_prefix(&root) {
            candidates.push(crate::project::to_slash(rel));
        }
    }
    candidates.push(typed.trim_start_matches("./").to_string());
    for rel in candidates {
        let mut found: Vec<&crate::fold::Entry> =
            fold.entries.iter().filter(|e| e.path == rel && e.is_unresolved()).collect();
        if !found.is_empty() {
            found.sort_by(|a, b| b.when().cmp(a.when()));
            return Some(found);
        }
    }
    None
}

/// What `walj diff` shows: one entry, or every change of a session or of one of its turns.
pub(crate) enum DiffTarget<'a> {
    Entry(&'a str),
    Turn { session: &'a str, prompt: Option<usize> },
}

/// What `walj diff` shows: the entries `target` names, each with the project whose disk it is
/// compared with and where it comes from (empty for this checkout's journal, ` · from M, as of
/// T` for another machine's).
type DiffItem<'f> = (&'f crate::fold::Entry, Project, String);

fn diff_items<'f>(
    project: &Project,
    fold: &'f Fold,
    target: DiffTarget<'_>,
    remotes: &'f mut Vec<crate::sync::remotes::RemoteJournal>,
) -> anyhow::Result<Vec<DiffItem<'f>>> {
    Ok(match target {
        DiffTarget::Entry(id) => match triage::find_entry(fold, id) {
            Ok(e) => vec![(e, project.clone(), String::new())],
            // A path: each of its unresolved entries, newest first (reading asks nothing).
            Err(_) if let Some(es) = path_entries(project, fold, id) => {
                es.into_iter().map(|e| (e, project.clone(), String::new())).collect()
            }
            // An id of another machine's journal (`walj sync`): its images, this checkout's disk.
            Err(err) => {
                *remotes = super::load::remotes(
                    project,
                    &crate::fold::FoldOptions { keep_settled: true, ..Default::default() },
                );
                match crate::sync::remotes::find_entry(remotes, id).map_err(|m| anyhow::anyhow!(m))? {
                    Some((r, e)) => vec![(
                        e,
                        r.project(project),
                        format!(" · from {}, {}", crate::present::shown(r.name()), crate::present::shown(&r.as_of())),
                    )],
                    None => return Err(err.into()),
                }
            }
        },
        DiffTarget::Turn { session, prompt } => triage::turn_entries(fold, session, prompt)?
            .into_iter()
            .map(|e| (e, project.clone(), String::new()))
            .collect(),
    })
}

pub(crate) fn diff(project: &Project, target: DiffTarget<'_>, mode: DiffMode, context: usize) -> anyhow::Result<i32> {
    let fold = load_for(project, &target)?;
    let mut remotes = Vec::new();
    let items = diff_items(project, &fold, target, &mut remotes)?;
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    for (i, (e, project, from)) in items.iter().enumerate() {
        let sides = triage::diff_sides(project, e, mode);
        if i > 0 {
            writeln!(out)?;
        }
        writeln!(
            out,
            "{}{}{}",
            st.dim("entry "),
            st.id(fold.ids.split(&e.id), 0),
            st.dim(&format!(
                " · {} · {} {} · {}{from}",
                crate::present::shown(&e.path),
                crate::present::shown(&e.tool),
                crate::present::shown(&e.event),
                e.state()
            ))
        )?;
        if let Some((old, new)) = triage::mode_change(project, e, mode) {
            // As git shows a mode change; the bytes' diff follows (identical for a `chmod` alone).
            writeln!(out, "{}", st.bold(&format!("old mode {old}\nnew mode {new}")))?;
        }
        write!(out, "{}", crate::report::diff::unified(&sides, &e.path, context, st.color))?;
    }
    Ok(0)
}

/// `walj diff --json`: each entry `target` names (one for an id, every unresolved one of a
/// path, a turn's), as `walj log --json` shows it, with `foreign` (`from bundle X`, `from
/// machine M, as of T`; absent for this checkout's own), `mode` and the two sides (`label`,
/// `content`: `text`, `absent`, `binary`, `unknown`; `bytes`, `lines`, `note`) and `diff`, the
/// unified diff `walj diff` prints, uncoloured.
pub(crate) fn diff_json(
    project: &Project,
    target: DiffTarget<'_>,
    mode: DiffMode,
    context: usize,
) -> anyhow::Result<serde_json::Value> {
    use serde_json::json;
    let fold = load_for(project, &target)?;
    let mut remotes = Vec::new();
    let items = diff_items(project, &fold, target, &mut remotes)?;
    let prov = Provenance::load(&project.journal);
    let side_json = |s: &crate::triage::Side| {
        let content = match crate::present::diff::Content::of(s) {
            crate::present::diff::Content::Text => "text",
            crate::present::diff::Content::Absent => "absent",
            crate::present::diff::Content::Binary(_) => "binary",
            crate::present::diff::Content::Unknown(_) => "unknown",
        };
        json!({
            "label": s.label,
            "content": content,
            "bytes": s.bytes.as_ref().map(Vec::len),
            "note": s.note,
        })
    };
    let v: Vec<serde_json::Value> = items
        .iter()
        .map(|(e, p, from)| {
            let sides = triage::diff_sides(p, e, mode);
            let mut j = crate::report::entry_json(e, &fold.ids);
            let foreign = if from.is_empty() {
                prov.of_entry(e).from_what()
            } else {
                from.trim_start_matches(" · ").replacen("from ", "from machine ", 1)
            };
            if let Some(o) = j.as_object_mut() {
                o.insert("session".into(), json!(e.session));
                o.insert("sid".into(), json!(e.sid));
                if !foreign.is_empty() {
                    o.insert("foreign".into(), json!(foreign));
                }
                o.insert(
                    "mode".into(),
                    json!(match mode {
                        DiffMode::Disk => "disk",
                        DiffMode::Applied => "applied",
                        DiffMode::Head => "head",
                    }),
                );
                o.insert("old".into(), side_json(&sides.old));
                o.insert("new".into(), side_json(&sides.new));
                // The executable bit, when the two sides differ in it (`chmod +x`).
                if let Some((old, new)) = triage::mode_change(p, e, mode) {
                    o.insert("file_mode".into(), json!({"old": old, "new": new}));
                }
                o.insert("diff".into(), json!(crate::report::diff::unified(&sides, &e.path, context, false)));
            }
            j
        })
        .collect();
    Ok(serde_json::Value::Array(v))
}

/// The entries among `ids` that came from an imported bundle (by where their records lie in
/// the journal, `triage::origin`): (short id, path, "from bundle X").
fn foreign(fold: &Fold, prov: &Provenance, ids: &[String]) -> Vec<(String, String, String)> {
    ids.iter()
        .filter_map(|i| fold.find(i).ok())
        .filter_map(|e| {
            let o = prov.of_entry(e);
            (!o.is_own()).then(|| (fold.ids.short(&e.id).to_string(), e.path.clone(), o.from_what()))
        })
        .collect()
}

/// Asks before acting (`verb`: "revert", "mark done", …) on entries from elsewhere, naming
/// where each comes from. On a terminal the user answers; off one `--yes` stands for the
/// answer, and the origin is printed (stderr) all the same. `Ok(false)`: not confirmed.
pub(crate) fn confirm_foreign(items: &[(String, String, String)], yes: bool, verb: &str) -> anyhow::Result<bool> {
    use std::io::IsTerminal;
    if items.is_empty() {
        return Ok(true);
    }
    let list: Vec<String> = items
        .iter()
        .map(|(id, path, from)| {
            format!("  {id} ({}) {}", crate::present::text::safe(path), crate::present::text::safe(from))
        })
        .collect();
    let head = format!(
        "{} entr{} named here came from elsewhere, not from this checkout's sessions:\n{}",
        items.len(),
        if items.len() == 1 { "y" } else { "ies" },
        list.join("\n")
    );
    if yes {
        eprintln!("{head}\n(--yes: going ahead with {verb})");
        return Ok(true);
    }
    if std::io::stdin().is_terminal() && std::io::stderr().is_terminal() {
        eprintln!("{head}");
        return Ok(super::prompt::confirm(&format!("Go ahead ({verb})?"))?);
    }
    eprintln!("{head}\nNot confirmed (no terminal to ask on); nothing was changed. Pass --yes to {verb} anyway.");
    Ok(false)
}

/// The entries `what` (`--all`, `--session`) acts on: without `force`, a live session's are
/// left out (its agent may still be working on them), each said on stderr with how to act on
/// it anyway (by its id, with `--force`). By id, the action itself refuses them.
fn not_live<'f>(
    fold: &Fold,
    entries: Vec<&'f crate::fold::Entry>,
    what: &str,
    verb: &str,
    force: bool,
) -> Vec<&'f crate::fold::Entry> {
    use crate::fold::SessionStatus;
    use crate::present::text::safe;
    if force {
        return entries;
    }
    let live_session = |e: &crate::fold::Entry| fold.session(&e.session).filter(|s| s.status() == SessionStatus::Live);
    let (live, rest): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| live_session(e).is_some());
    if !live.is_empty() {
        let n = live.len();
        let mut sessions: Vec<String> = vec![];
        for e in &live {
            if let Some(s) = live_session(e) {
                let label = format!("{} ({})", fold.ids.session(&s.session), s.agent().label());
                if !sessions.contains(&label) {
                    sessions.push(label);
                }
            }
        }
        eprintln!(
            "{n} entr{} left out of {what}: {} of session{} {}, which {} still live (it may still be working on {}):",
            if n == 1 { "y" } else { "ies" },
            if n == 1 { "it is" } else { "they are" },
            if sessions.len() == 1 { "" } else { "s" },
            safe(&sessions.join(", ")),
            if sessions.len() == 1 { "is" } else { "are" },
            if n == 1 { "it" } else { "them" },
        );
        for e in &live {
            let short = safe(fold.ids.short(&e.id)).into_owned();
            eprintln!("  {short} ({}): `walj {verb} {short} --force` acts on it anyway", safe(&e.path));
        }
    }
    rest
}

/// Splits `entries` into this checkout's own and the ones from bundles, printing how many of
/// those `what` (`--session`, "handoff without ids") leaves out.
/// The entries `revert --session` / `--all` acts on: those walj is sure are the session's.
/// A change made after Claude Code's last sign of life (`after_stop`) or one another writer
/// may have made (`uncertain`) is left out, each said on stderr with why and how to revert it
/// by its id (where the warning is given and `--force` accepts it).
fn sure_entries<'f>(entries: Vec<&'f crate::fold::Entry>, ids: &ShortIds, what: &str) -> Vec<&'f crate::fold::Entry> {
    use crate::present::text::safe;
    let (unsure, sure): (Vec<_>, Vec<_>) = entries.into_iter().partition(|e| e.uncertain || e.after_stop);
    if !unsure.is_empty() {
        let n = unsure.len();
        eprintln!(
            "{n} entr{} left out of {what}: walj is not sure {} Claude's work:",
            if n == 1 { "y" } else { "ies" },
            if n == 1 { "it is" } else { "they are" }
        );
        for e in &unsure {
            let short = safe(ids.short(&e.id)).into_owned();
            let why = match (e.after_stop, &e.end_seen) {
                (true, None) => "changed after Claude Code's last sign of life: the killed command's, or the user's (or another program's) after Claude Code stopped; walj cannot tell which without its watcher".to_string(),
                (true, Some(t)) => format!(
                    "changed after Claude Code's last sign of life (its process ended at {}, seen by the checkout's watcher): the killed command's, or the user's (or another program's) after Claude Code stopped; walj cannot tell which",
                    crate::present::hms(t)
                ),
                (false, _) if e.redated => "its ctime is after Claude Code's last sign of life, its mtime is not: a chmod or touch after the crash may have moved it, or it changed after Claude Code stopped; walj cannot tell which".to_string(),
        (false, _) if e.undecided => "made while several commands ran, none of whose command lines names it: which one made it is not known".to_string(),
        (false, _) => "another command, session or the user may have made it: they were active while its command ran".to_string(),
            };
            eprintln!(
                "  {short} ({}): {why}. If it is the session's: `walj diff {short}`, then `walj revert {short} --force`",
                safe(&e.path)
            );
        }
    }
    sure
}

/// Why walj is not sure an entry is Claude's work (`after_stop`, `uncertain`), in the words
/// `recover` and the note use.
fn not_sure_why(e: &crate::fold::Entry) -> String {
    match (e.after_stop, &e.end_seen) {
        (true, None) => "changed after Claude Code's last sign of life: the killed command's, or the user's (or another program's) after Claude Code stopped; walj cannot tell which without its watcher".to_string(),
        (true, Some(t)) => format!(
            "changed after Claude Code's last sign of life (its process ended at {}, seen by the checkout's watcher): the killed command's, or the user's (or another program's) after Claude Code stopped; walj cannot tell which",
            crate::present::hms(t)
        ),
        (false, _) => "another command, session or the user may have made it: they were active while its command ran".to_string(),
    }
}

/// The entries `handoff --session` / `--all` leave out, on stderr: possibly the user's, each
/// with how to hand it back by its id.
fn say_not_claudes(unsure: &[&crate::fold::Entry], ids: &ShortIds, what: &str) {
    use crate::present::text::safe;
    if unsure.is_empty() {
        return;
    }
    let n = unsure.len();
    eprintln!(
        "{n} entr{} left out of {what}: possibly the user's, walj is not sure {} Claude's work:",
        if n == 1 { "y" } else { "ies" },
        if n == 1 { "it is" } else { "they are" }
    );
    for e in unsure {
        let short = safe(ids.short(&e.id)).into_owned();
        eprintln!(
            "  {short} ({}): {}. If it is Claude's: `walj diff {short}`, then `walj handoff {short}`",
            safe(&e.path),
            not_sure_why(e)
        );
    }
}

/// One entry of `handoff --json`'s `possibly_users`.
fn not_claudes_json(e: &crate::fold::Entry, ids: &ShortIds) -> serde_json::Value {
    serde_json::json!({
        "id": e.id,
        "short": ids.short(&e.id),
        "path": e.path,
        "attribution": match (e.after_stop, e.undecided, e.redated) {
            (true, _, _) => crate::journal::attribution::AFTER_STOP,
            (false, true, _) => crate::journal::attribution::UNDECIDED,
            (false, false, true) => crate::journal::attribution::REDATED,
            (false, false, false) => crate::journal::attribution::UNCERTAIN,
        },
        "why": not_sure_why(e),
    })
}

fn own_entries<'f>(prov: &Provenance, entries: Vec<&'f crate::fold::Entry>, what: &str) -> Vec<&'f crate::fold::Entry> {
    let (own, skipped) = triage::origin::own_only(prov, entries);
    if !skipped.is_empty() {
        let named: Vec<String> = skipped
            .iter()
            .map(|(e, o)| {
                format!(
                    "  {} ({}) {}",
                    crate::present::text::safe(&e.id),
                    crate::present::text::safe(&e.path),
                    crate::present::text::safe(&o.from_what())
                )
            })
            .collect();
        eprintln!("{}:\n{}", triage::origin::skipped_line(skipped.len(), what), named.join("\n"));
    }
    own
}

/// For a command that acts only on this checkout's own entries (revert writes this disk, undo
/// takes back an action recorded here): ids that are another machine's (`walj sync`) fail
/// with a message that says whose they are and what can be done here.
fn elsewhere_only(project: &Project, ids: &[String], verb: &str) -> anyhow::Result<()> {
    let theirs = crate::sync::triage::describe(project, ids);
    if theirs.is_empty() {
        return Ok(());
    }
    let list: Vec<String> = theirs
        .iter()
        .map(|(id, path, from)| {
            let machine = from.strip_prefix("from machine ").unwrap_or(from);
            format!(
                "{} ({}) is {}'s entry: {verb} it there (or `walj mark {} --done` / `walj handoff {}` here)",
                crate::present::text::safe(id),
                crate::present::text::safe(path),
                crate::present::text::safe(machine),
                crate::present::text::safe(id),
                crate::present::text::safe(id)
            )
        })
        .collect();
    anyhow::bail!("{}; nothing was changed", list.join("\n"))
}

/// Whether the ids (or the session) name nothing in this checkout's journal: they may be
/// another machine's (`walj sync`).
fn not_here(fold: &Fold, ids: &[String], session: Option<&str>) -> bool {
    match session {
        Some(s) => fold.find_session(s).is_err(),
        None => !ids.is_empty() && ids.iter().all(|i| fold.find(i).is_err()),
    }
}

pub(crate) fn mark(project: &Project, args: &MarkArgs) -> anyhow::Result<i32> {
    let (ids, session, force, dry_run) = (&args.ids, args.session.as_deref(), args.force, args.dry_run);
    let fold = load_ids(project, ids)?;
    let all = ids.is_empty() && session.is_none();
    if all && !pick_all(&fold, "walj mark --done", "mark done", args.all)? {
        return Ok(super::EXIT_ERROR);
    }
    if not_here(&fold, ids, session) {
        // Another machine's entries: named by id and confirmed (the confirmation names it).
        let described = crate::sync::triage::describe(project, ids);
        // A dry run validates as the run does: ids no journal holds fall through to the local
        // check below, which rejects them.
        if dry_run && !described.is_empty() {
            return dry_run_elsewhere(&described, "mark done", args.json);
        }
        if session.is_none() && !confirm_foreign(&described, args.confirm.yes, "mark done")? {
            return Ok(super::EXIT_ERROR);
        }
        if let Some(o) = crate::sync::triage::mark_done(project, ids, session, force)? {
            return report("mark", false, args.json, Ok(o), &fold.ids);
        }
    }
    let prov = Provenance::load(&project.journal);
    let chosen: Vec<String> = match session {
        Some(s) => {
            let sess = fold.find_session(s).map_err(|e| triage::session_error(s, e))?;
            let entries: Vec<&crate::fold::Entry> =
                fold.entries_of(&sess.session).filter(|e| e.is_unresolved()).collect();
            let own = own_entries(&prov, entries, "--session");
            not_live(&fold, own, "--session", "mark --done", force).iter().map(|e| e.id.clone()).collect()
        }
        None if all => {
            let own = own_entries(&prov, fold.unresolved().collect(), "--all");
            not_live(&fold, own, "--all", "mark --done", force).iter().map(|e| e.id.clone()).collect()
        }
        None => {
            let Some(ids) = expand_paths(project, &fold, ids, "mark done", args.confirm.yes || dry_run)? else {
                return Ok(super::EXIT_ERROR);
            };
            if !dry_run && !confirm_foreign(&foreign(&fold, &prov, &ids), args.confirm.yes, "mark done")? {
                return Ok(super::EXIT_ERROR);
            }
            ids
        }
    };
    if chosen.is_empty() {
        if args.json {
            print_outcomes_json("mark", dry_run, &[], &fold.ids)?;
        } else {
            println!("Nothing unresolved of this checkout's own there; nothing marked.");
        }
        return Ok(0);
    }
    let result = if dry_run {
        triage::plan_mark(&fold, &chosen, force)
    } else {
        triage::mark_done(project, &fold, &chosen, force)
    };
    report("mark", dry_run, args.json, result, &fold.ids)
}

/// `--dry-run` on another machine's entries: what they are, nothing recorded.
fn dry_run_elsewhere(described: &[(String, String, String)], verb: &str, json: bool) -> anyhow::Result<i32> {
    let outcomes: Vec<Outcome> = described
        .iter()
        .map(|(id, path, from)| Outcome {
            id: id.clone(),
            path: path.clone(),
            message: format!("would {verb} {id} ({path}), {from} (asked first)"),
            ..Outcome::default()
        })
        .collect();
    // One vocabulary for `action`: "mark" whatever the verb in the sentence.
    let action = if verb == "mark done" { "mark" } else { verb };
    report(action, true, json, Ok(outcomes), &ShortIds::default())
}

pub(crate) fn revert(project: &Project, args: &RevertArgs) -> anyhow::Result<i32> {
    let (force, dry_run) = (args.force, args.dry_run);
    let fold = load_revert(project, &args.ids)?;
    let all = args.ids.is_empty() && args.session.is_none();
    // A rebase or merge stopped half-way: a session's pre-images written into that tree mix
    // with what git is in the middle of (named entries are the user's own choice).
    if (all || args.session.is_some())
        && !force
        && let Some(op) = crate::git::operation_in_progress(&project.root)
    {
        anyhow::bail!(
            "{op}: finish or abort it first (`git status` says how); reverting a whole session now would write its pre-images into a tree git is in the middle of changing. Nothing was changed; `--force` reverts anyway"
        );
    }
    if all && !pick_all(&fold, "walj revert", "revert", args.all)? {
        return Ok(super::EXIT_ERROR);
    }
    let prov = Provenance::load(&project.journal);
    let ids: Vec<String> = match &args.session {
        Some(s) => {
            let own = own_entries(&prov, triage::turn_entries(&fold, s, args.prompt)?, "--session");
            let own = not_live(&fold, own, "--session", "revert", force);
            let own = sure_entries(own, &fold.ids, "--session");
            if own.is_empty() {
                anyhow::bail!("nothing of this checkout's own to revert in that session; nothing was changed");
            }
            own.into_iter().map(|e| e.id.clone()).collect()
        }
        None if all => {
            let open =
                fold.unresolved().filter(|e| !e.outside && e.state() != crate::fold::EntryState::NotApplied).collect();
            let own = not_live(&fold, own_entries(&prov, open, "--all"), "--all", "revert", force);
            let own = sure_entries(own, &fold.ids, "--all");
            if own.is_empty() {
                println!("Nothing unresolved of this checkout's own to revert; nothing was changed.");
                return Ok(0);
            }
            own.into_iter().map(|e| e.id.clone()).collect()
        }
        None => match expand_paths(project, &fold, &args.ids, "revert", args.confirm.yes || dry_run)? {
            Some(ids) => ids,
            None => return Ok(super::EXIT_ERROR),
        },
    };
    if args.session.is_none() && not_here(&fold, &ids, None) {
        elsewhere_only(project, &ids, "revert")?;
    }
    let confirmed_foreign = dry_run || confirm_foreign(&foreign(&fold, &prov, &ids), args.confirm.yes, "revert")?;
    if !confirmed_foreign {
        return Ok(super::EXIT_ERROR);
    }
    let result = triage::revert(
        project,
        &fold,
        &ids,
        RevertOptions { force, dry_run, confirmed_foreign, ..RevertOptions::default() },
    );
    let code = report("revert", dry_run, args.json, result, &fold.ids)?;
    // Never all clear while a change the revert could not see remains: a command of the
    // session whose changes are not all in its entries is named, with what it left out.
    if let Some(s) = &args.session
        && let Ok(sess) = fold.find_session(s)
    {
        let left: Vec<String> = sess.commands.iter().filter_map(|c| crate::present::command::left_out(c, 80)).collect();
        if !left.is_empty() {
            eprintln!(
                "walj: not everything this session changed could be reverted; {} its entries:",
                if left.len() == 1 { "a command left changes out of" } else { "commands left changes out of" }
            );
            for l in &left {
                eprintln!("  {l}");
            }
            return Ok(super::EXIT_ERROR);
        }
    }
    Ok(code)
}

/// 1 when another program wrote a file while the revert or undo ran (that file, and the
/// ones after it, were left as they were): the command did not do all it was asked.
fn exit_code(outcomes: &[Outcome]) -> i32 {
    if outcomes.iter().any(|o| o.concurrent) { super::EXIT_ERROR } else { 0 }
}

pub(crate) fn undo(project: &Project, args: &UndoArgs) -> anyhow::Result<i32> {
    let (id, force, yes) = (args.id.as_deref(), args.force, args.confirm.yes);
    let fold = load_undo(project, id)?;
    if let Some(i) = id
        && not_here(&fold, &[i.to_string()], None)
        && !triage::ops::operations(&fold).iter().any(|o| o.id.starts_with(i))
    {
        elsewhere_only(project, &[i.to_string()], "undo its last action")?;
    }
    let prov = Provenance::load(&project.journal);
    // By id: the entry's last action may have been recorded elsewhere (an imported bundle).
    let mut confirmed = false;
    if let Some(i) = id
        && let Ok(e) = fold.find(i)
        && let Some(a) = e.last_action()
    {
        let o = prov.of_action(a);
        if !o.is_own() {
            let item = (
                fold.ids.short(&e.id).to_string(),
                e.path.clone(),
                format!("(its last action comes {})", o.from_what()),
            );
            if !args.dry_run && !confirm_foreign(&[item], yes, "undo")? {
                return Ok(super::EXIT_ERROR);
            }
            confirmed = true;
        }
    }
    let result = if args.dry_run {
        triage::plan_undo(project, &fold, id, force, confirmed)
    } else {
        triage::undo(project, &fold, id, force, confirmed)
    };
    report("undo", args.dry_run, args.json, result, &fold.ids)
}

/// `walj redo [OP]`: does an undone operation again, through the same action (mark, revert,
/// hand back) with the same checks; `walj undo` takes it back again.
pub(crate) fn redo(project: &Project, args: &RedoArgs) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let ops = triage::ops::operations(&fold);
    let op = triage::ops::redo_target(&fold, &ops, args.id.as_deref())?;
    if !args.json {
        println!(
            "Redo operation {} ({} {}, {}):",
            crate::present::shown(crate::fold::abbrev(&op.id, 12)),
            op.verb(),
            crate::present::shown(&op.what()),
            crate::present::shown(&op.ts)
        );
    }
    let ids = op.entries.clone();
    match op.how.as_str() {
        crate::journal::how::REVERTED => revert(
            project,
            &RevertArgs {
                ids,
                session: None,
                prompt: None,
                all: false,
                force: args.force,
                dry_run: args.dry_run,
                json: args.json,
                confirm: args.confirm,
            },
        ),
        crate::journal::how::HANDED_BACK => handoff(
            project,
            &HandoffArgs {
                ids,
                session: None,
                all: false,
                print: false,
                dry_run: args.dry_run,
                json: args.json,
                force: args.force,
                held: false,
                deliver: false,
                confirm: args.confirm,
            },
        ),
        _ => mark(
            project,
            &MarkArgs {
                ids,
                done: true,
                session: None,
                all: false,
                force: args.force,
                dry_run: args.dry_run,
                json: args.json,
                confirm: args.confirm,
            },
        ),
    }
}

/// `walj ops --json`: the operation log, newest first; `walj mcp`'s `ops` serves it too.
pub(crate) fn ops_json_value(project: &Project) -> anyhow::Result<serde_json::Value> {
    let fold = load(project)?;
    Ok(ops_json(&triage::ops::operations(&fold)))
}

fn ops_json(ops: &[triage::ops::Operation]) -> serde_json::Value {
    ops.iter()
        .map(|o| {
            serde_json::json!({
                "id": o.id,
                "ts": o.ts,
                "how": o.how,
                "verb": o.verb(),
                "entries": o.entries,
                "paths": o.paths,
                "undone": o.undone,
                "actor": o.actor,
            })
        })
        .collect()
}

/// `walj ops`: the operation log, newest first (as the TUI's `o`).
pub(crate) fn ops(project: &Project, args: &OpsArgs) -> anyhow::Result<i32> {
    let fold = load(project)?;
    let ops = triage::ops::operations(&fold);
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&ops_json(&ops))?)?;
        return Ok(0);
    }
    if ops.is_empty() {
        writeln!(out, "No operation yet: mark, revert and handoff record what they do here.")?;
        return Ok(0);
    }
    let st = Style::stdout();
    for o in &ops {
        let mut tail = String::new();
        if o.undone {
            tail.push_str("  (undone)");
        }
        if let Some(a) = &o.actor {
            tail.push_str(&format!("  by {}", crate::present::shown(a)));
        }
        let line = format!(
            "{}  {}  {:<12} {}",
            st.id((crate::fold::abbrev(&o.id, 12), ""), 0),
            st.dim(&crate::present::human_ts(&o.ts)),
            o.verb(),
            crate::present::shown(&o.what())
        );
        writeln!(out, "{line}{}", st.dim(&tail))?;
    }
    writeln!(
        out,
        "{}",
        st.dim("`walj undo` undoes the newest (`walj undo OP` one of them); `walj redo` does an undone one again.")
    )?;
    Ok(0)
}

pub fn handoff(project: &Project, args: &HandoffArgs) -> anyhow::Result<i32> {
    let (ids, session, force) = (&args.ids, args.session.as_deref(), args.force);
    let print_only = args.print || args.dry_run;
    // `--held` / `--deliver` act on the briefs, not on entries: every session is read.
    let fold = if args.held || args.deliver { load(project)? } else { load_ids(project, ids)? };
    if args.held || args.deliver {
        return held_briefs(project, &fold, args);
    }
    if ids.is_empty() && session.is_none() && !print_only && !pick_all(&fold, "walj handoff", "hand back", args.all)? {
        return Ok(super::EXIT_ERROR);
    }
    let opts = HandoffOptions { print_only, force };
    let elsewhere = if not_here(&fold, ids, session) {
        if session.is_none()
            && !print_only
            && !confirm_foreign(&crate::sync::triage::describe(project, ids), args.confirm.yes, "hand back")?
        {
            return Ok(super::EXIT_ERROR);
        }
        crate::sync::triage::handoff(project, ids, session, opts)?
    } else {
        None
    };
    // Entries left out of `--session` / `--all`: maybe the user's (`possibly_users` in --json).
    let mut not_claudes: Vec<serde_json::Value> = Vec::new();
    let brief = match elsewhere {
        Some(b) => b,
        None => {
            let prov = Provenance::load(&project.journal);
            if ids.is_empty() {
                // Every unresolved entry (of the session): this checkout's own only, not a live
                // session's, and only what walj is sure is Claude's work.
                let entries: Vec<&crate::fold::Entry> = match session {
                    Some(s) => {
                        let sess = fold.find_session(s).map_err(|e| triage::session_error(s, e))?;
                        fold.entries_of(&sess.session).filter(|e| e.is_unresolved()).collect()
                    }
                    None => fold.unresolved().collect(),
                };
                let what = if session.is_some() { "--session" } else { "--all" };
                let found = entries.len();
                let own = own_entries(&prov, entries, what);
                let mine = own.len();
                let own = not_live(&fold, own, what, "handoff", force);
                if own.is_empty() {
                    if mine > 0 {
                        anyhow::bail!("nothing to hand back but a live session's entries; nothing was recorded");
                    }
                    if found == 0 {
                        // The action's own words: nothing unresolved (in that session).
                        let why = triage::handoff(project, &fold, &[], session, opts).err();
                        return Err(why.map_or_else(|| anyhow::anyhow!("nothing unresolved to hand back"), Into::into));
                    }
                    anyhow::bail!(
                        "nothing of this checkout's own is unresolved to hand back; name entries by id to hand back others"
                    );
                }
                let (unsure, sure): (Vec<_>, Vec<_>) = own.into_iter().partition(|e| e.uncertain || e.after_stop);
                say_not_claudes(&unsure, &fold.ids, what);
                not_claudes = unsure.iter().map(|e| not_claudes_json(e, &fold.ids)).collect();
                if sure.is_empty() {
                    anyhow::bail!(
                        "nothing walj is sure is Claude's work to hand back; nothing was recorded. Hand one back by its id (`walj handoff ID`) if it is"
                    );
                }
                let sure: Vec<String> = sure.iter().map(|e| e.id.clone()).collect();
                triage::handoff(project, &fold, &sure, None, opts)?
            } else {
                if !print_only && !confirm_foreign(&foreign(&fold, &prov, ids), args.confirm.yes, "hand back")? {
                    return Ok(super::EXIT_ERROR);
                }
                triage::handoff(project, &fold, ids, session, opts)?
            }
        }
    };
    if args.json {
        let v = serde_json::json!({
            "recorded": !print_only,
            "dry_run": args.dry_run,
            "undo": (!print_only).then_some("walj undo"),
            "action": brief.action,
            "entries": brief.entries,
            "left_out": brief.left_out,
            "possibly_users": not_claudes,
            "resume_line": brief.resume_line,
            "brief": brief.text,
        });
        writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    writeln!(out, "{}", crate::present::safe_block(&brief.text))?;
    writeln!(out)?;
    if args.dry_run {
        writeln!(
            out,
            "{}",
            st.dim(&format!(
                "Dry run, nothing recorded: this would hand back {} entr{} ({}).",
                brief.entries.len(),
                if brief.entries.len() == 1 { "y" } else { "ies" },
                crate::present::shown(&brief.entries.iter().map(|i| fold.ids.short(i)).collect::<Vec<_>>().join(" "))
            ))
        )?;
    } else if print_only {
        writeln!(out, "{}", st.dim("(printed only; nothing recorded)"))?;
    } else {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Handed back {} entr{}: {} receives this brief at the next session start in this project (startup, resume or clear).",
                brief.entries.len(),
                if brief.entries.len() == 1 { "y" } else { "ies" },
                receiver(brief.agent)
            ))
        )?;
    }
    if !brief.left_out.is_empty() {
        writeln!(
            out,
            "{} entr{} did not fit in the brief and {} not handed back: {}",
            brief.left_out.len(),
            if brief.left_out.len() == 1 { "y" } else { "ies" },
            if brief.left_out.len() == 1 { "was" } else { "were" },
            crate::present::shown(&brief.left_out.iter().map(|i| fold.ids.short(i)).collect::<Vec<_>>().join(" "))
        )?;
    }
    if let Some(line) = &brief.resume_line {
        writeln!(out, "To continue that session: {}", crate::present::shown(line))?;
    }
    if !print_only {
        writeln!(out, "{}", undo_hint("handoff"))?;
    }
    Ok(0)
}

/// Who reads a hand-back brief: the agent whose session started next in the project. Named as
/// the agent of the entries' sessions ("Claude" for Claude Code's, as before).
fn receiver(agent: Option<crate::agents::Agent>) -> &'static str {
    match agent {
        None | Some(crate::agents::Agent::ClaudeCode) => "Claude",
        Some(a) => a.label(),
    }
}

/// `walj handoff --held` / `--deliver`: the briefs imported bundles brought (issue 13 item 12).
fn held_briefs(project: &Project, fold: &Fold, args: &HandoffArgs) -> anyhow::Result<i32> {
    let list = if args.deliver { triage::deliver_held(project, fold, &args.ids)? } else { triage::held_briefs(fold) };
    if args.json {
        let v: Vec<_> = list
            .iter()
            .map(|h| {
                serde_json::json!({"action": h.action, "session": h.session, "entries": h.entries, "brief": h.brief})
            })
            .collect();
        let v = serde_json::json!({"delivered": args.deliver, "briefs": v});
        writeln!(std::io::stdout().lock(), "{}", serde_json::to_string_pretty(&v)?)?;
        return Ok(0);
    }
    let st = Style::stdout();
    let mut out = std::io::stdout().lock();
    if list.is_empty() {
        writeln!(out, "No imported brief is waiting.")?;
        return Ok(0);
    }
    for h in &list {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Brief {} (session {}, imported):",
                crate::present::shown(crate::fold::abbrev(&h.action, 12)),
                crate::present::shown(fold.ids.session(&h.session))
            ))
        )?;
        writeln!(out, "{}", crate::present::safe_block(&h.brief))?;
        writeln!(out)?;
    }
    if args.deliver {
        writeln!(
            out,
            "{}",
            st.bold(&format!(
                "Released {}: Claude receives {} at the next session start in this project.",
                if list.len() == 1 { "1 brief".to_string() } else { format!("{} briefs", list.len()) },
                if list.len() == 1 { "it" } else { "them" }
            ))
        )?;
    } else {
        writeln!(out, "{}", st.dim("Held: `walj handoff --deliver ACTION` delivers one at the next session start."))?;
    }
    Ok(0)
}
