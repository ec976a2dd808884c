//! `walj sync`: publish this checkout's journal to the project's git remote, fetch the others
//! (docs/sync.md).

use std::io::{IsTerminal, Write};

use crate::project::Project;
use crate::sync::accept::Verdict;
use crate::sync::run::PublishState;
use crate::sync::{SyncOptions, SyncReport};

/// The arguments of `walj sync`.
#[derive(Debug, clap::Args)]
pub struct SyncArgs {
    /// The git remote (default: [sync] remote, else the current branch's upstream remote, else origin).
    #[arg(long, value_name = "NAME")]
    pub remote: Option<String>,
    /// Say what would be published and fetched; publish nothing, change no copy.
    #[arg(long)]
    pub dry_run: bool,
    /// What is ahead or behind, per journal (fetches; publishes nothing).
    #[arg(long, conflicts_with = "dry_run")]
    pub status: bool,
    /// Print what happened as JSON (schema in docs/sync.md).
    #[arg(long)]
    pub json: bool,
    /// Sync without asking: a sync has no undo (what it publishes stays on the remote for
    /// every machine that fetches it), so it asks first on a terminal and refuses off one
    /// without --yes. Also agrees to publish in plain text (asked once per remote otherwise).
    #[arg(long, short = 'y')]
    pub yes: bool,
    /// The background run `[sync] auto` starts after SessionEnd and Stop: asks nothing,
    /// prints nothing, does nothing when another automatic sync runs.
    #[arg(long, hide = true, conflicts_with_all = ["dry_run", "status", "yes"])]
    pub auto: bool,
    /// Most bytes one other machine's journal, images and transcripts may inflate to
    /// (default 1 GiB; `[limits] max_decoded`).
    #[arg(long, value_name = "BYTES")]
    pub max_decoded: Option<u64>,
    /// Most bytes of one object (segment, image) of another machine's journal (default 256 MiB;
    /// `[limits] max_object`).
    #[arg(long, value_name = "BYTES")]
    pub max_object: Option<u64>,
}

impl SyncArgs {
    /// The project's `[limits]`, with the flags over them (`None`: no flag given).
    fn limits(&self, project: &Project) -> Option<crate::config::Limits> {
        if self.max_decoded.is_none() && self.max_object.is_none() {
            return None;
        }
        let args =
            super::sessions::LimitArgs { max_decoded: self.max_decoded, max_object: self.max_object, max_ratio: None };
        Some(args.limits(project))
    }
}

/// Shows the plain-text notice and asks on a terminal; `None` (nothing shown) elsewhere.
fn ask(notice: &str) -> Option<bool> {
    if !std::io::stdin().is_terminal() || !std::io::stderr().is_terminal() {
        return None;
    }
    eprintln!("{}", crate::present::safe_block(notice));
    Some(super::prompt::confirm("Publish?").unwrap_or(false))
}

/// The sync passphrase: `WALJ_PASSPHRASE`, else asked on a terminal.
fn passphrase() -> Option<crate::crypt::Secret> {
    match super::prompt::passphrase(false) {
        Ok(p) => p,
        Err(e) => {
            eprintln!("walj: {e}");
            None
        }
    }
}

/// `walj sync --auto`: one quiet sync, unless another automatic one holds the claim; what it
/// did goes to `.walj/sync/auto.last`.
fn auto(project: &Project, args: &SyncArgs) -> anyhow::Result<i32> {
    let Some(_claim) = crate::sync::auto::claim(project)? else { return Ok(0) };
    let opts = SyncOptions { remote: args.remote.clone(), dry_run: false, yes: false, limits: None };
    let mut never = |_: &str| None;
    let mut from_env = || {
        std::env::var_os("WALJ_PASSPHRASE")
            .filter(|p| !p.is_empty())
            .map(|p| crate::crypt::Secret::from(p.to_string_lossy().into_owned()))
    };
    let started = crate::journal::record::now_ts();
    let result =
        crate::sync::sync(project, &opts, crate::sync::run::Prompts { confirm: &mut never, passphrase: &mut from_env });
    let last = match &result {
        Ok(r) => {
            serde_json::json!({"started": started, "ended": crate::journal::record::now_ts(), "ok": true, "report": r})
        }
        Err(e) => {
            serde_json::json!({"started": started, "ended": crate::journal::record::now_ts(), "ok": false, "error": e.to_string()})
        }
    };
    crate::fsutil::atomic_write(
        &crate::sync::auto::last_path(project),
        &serde_json::to_vec_pretty(&last)?,
        Some(0o600),
    )?;
    Ok(0)
}

pub(crate) fn sync_cmd(project: &Project, args: &SyncArgs) -> anyhow::Result<i32> {
    if args.auto {
        return auto(project, args);
    }
    // The user's command (the background one, `--auto`, returned above: it never asks nor
    // refuses). Nothing takes a sync back: say so before acting, ask on a terminal, and off one
    // act only with --yes.
    if !args.dry_run && !args.status && !args.yes {
        let what = "`walj sync` has no undo: what it publishes stays on the git remote for every machine that fetches it, and the copies it fetches replace the ones here";
        if super::confirm::on_terminal() {
            eprintln!("{what}.");
        }
        if !super::Confirm::of(false).ask(
            "Sync now? (--dry-run shows what it would publish and fetch)",
            &format!("nothing synced: {what}; there is no terminal to ask on: pass --yes to sync (--dry-run shows what it would do)"),
        )? {
            if super::confirm::on_terminal() {
                eprintln!("Nothing synced.");
            }
            return Ok(super::EXIT_ERROR);
        }
    }
    let opts = SyncOptions {
        remote: args.remote.clone(),
        dry_run: args.dry_run || args.status,
        yes: args.yes,
        limits: args.limits(project),
    };
    let prompts = crate::sync::run::Prompts { confirm: &mut ask, passphrase: &mut passphrase };
    let report = crate::sync::sync(project, &opts, prompts)?;
    let mut out = std::io::stdout().lock();
    if args.json {
        writeln!(out, "{}", serde_json::to_string_pretty(&report)?)?;
    } else if args.status {
        write!(out, "{}{}", status_text(&report), last_auto(project))?;
    } else {
        write!(out, "{}", sync_text(&report))?;
    }
    let bad: Vec<_> = report
        .journals
        .iter()
        .filter(|j| matches!(j.verdict, Verdict::Refused | Verdict::FetchFailed | Verdict::Locked))
        .collect();
    if !bad.is_empty() {
        drop(out);
        eprintln!(
            "walj: {} journal{} on {} could not be taken (see above); the rest synced",
            bad.len(),
            if bad.len() == 1 { "" } else { "s" },
            crate::present::shown(&report.remote)
        );
        return Ok(super::EXIT_ERROR);
    }
    Ok(0)
}

fn kib(n: u64) -> String {
    crate::session::human_bytes(n)
}

fn journal_line(j: &crate::sync::accept::Seen, status: bool) -> String {
    // Another machine's name, id and detail: shown escaped (its manifest is not walj's own).
    let name = j.name.as_deref().unwrap_or(&j.journal);
    let what = match (j.verdict, status) {
        (Verdict::UpToDate, _) => "up to date".to_string(),
        (Verdict::New | Verdict::Updated, true) => "behind: new lines to fetch".to_string(),
        (Verdict::NewEpoch, true) => "behind: rewritten on its machine (new epoch)".to_string(),
        (Verdict::New | Verdict::Updated | Verdict::NewEpoch, false) if j.head.is_some() && j.synced_at.is_some() => {
            format!("{} ({})", j.verdict.as_str(), j.journal_bytes.map(kib).unwrap_or_default())
        }
        (v, _) => v.as_str().to_string(),
    };
    let mut line = format!("  {}  {what}", crate::present::pad(name, 40));
    if j.sessions > 0 {
        line.push_str(&format!(
            " · {} session{}, {} unresolved",
            j.sessions,
            if j.sessions == 1 { "" } else { "s" },
            j.unresolved
        ));
    }
    if let Some(t) = &j.synced_at {
        line.push_str(&format!(" · synced {}", crate::present::human_ts(t)));
    }
    if let Some(d) = &j.detail {
        line.push_str(&format!("\n      {}", crate::present::shown(d)));
    }
    line.push('\n');
    line
}

fn sync_text(r: &SyncReport) -> String {
    let p = &r.published;
    let mut s = String::new();
    if let Some(n) = &r.notice {
        s.push_str(&crate::present::safe_block(n));
        s.push_str("\n(a real sync asks first; --yes confirms)\n\n");
    }
    let verb = if r.dry_run { "would publish" } else { "published" };
    let mine = match p.state {
        PublishState::Nothing => "no journal yet: nothing to publish".to_string(),
        PublishState::UpToDate => "up to date".to_string(),
        PublishState::Pushed | PublishState::WouldPush => format!(
            "{verb} {} segment{} ({} of journal), {} new image{}{}{}",
            p.segments_written,
            if p.segments_written == 1 { "" } else { "s" },
            kib(p.bytes_written),
            p.images_added,
            if p.images_added == 1 { "" } else { "s" },
            match p.transcripts {
                Some(n) => format!(", {n} transcript{}", if n == 1 { "" } else { "s" }),
                None => String::new(),
            },
            if p.new_epoch { format!(" · journal rewritten: new epoch {}", p.epoch) } else { String::new() }
        ),
    };
    let mine = match p.images_withheld {
        0 => mine,
        n => format!("{mine} ({n} image{} holding secret-looking text kept here)", if n == 1 { "" } else { "s" }),
    };
    let mine = match &p.encrypted {
        Some(_) if p.state != PublishState::Nothing => format!("{mine}, encrypted"),
        _ => mine,
    };
    s.push_str(&format!(
        "walj sync{} via {} ({})\n",
        if r.dry_run { " --dry-run" } else { "" },
        crate::present::shown(&r.remote),
        crate::present::shown(&r.url)
    ));
    s.push_str(&format!("  {}  {mine} (this checkout)\n", crate::present::pad(&r.name, 40)));
    for j in &r.journals {
        s.push_str(&journal_line(j, false));
    }
    if r.journals.iter().any(|j| j.verdict.changes() && !r.dry_run) {
        s.push_str("Other machines' sessions: walj sessions · walj recover · walj log\n");
    }
    s
}

/// "last automatic sync: …" (`[sync] auto`), when one ran.
fn last_auto(project: &Project) -> String {
    let Ok(bytes) = std::fs::read(crate::sync::auto::last_path(project)) else { return String::new() };
    let Ok(v) = serde_json::from_slice::<serde_json::Value>(&bytes) else { return String::new() };
    let when = crate::present::human_ts(v["ended"].as_str().unwrap_or(""));
    match v["error"].as_str() {
        Some(e) => format!("last automatic sync: {when}, failed: {}\n", crate::present::shown(e)),
        None => format!("last automatic sync: {when}, done\n"),
    }
}

fn status_text(r: &SyncReport) -> String {
    let p = &r.published;
    let mut s =
        format!("walj sync --status via {} ({})\n", crate::present::shown(&r.remote), crate::present::shown(&r.url));
    let mine = match (p.state, p.remote_bytes) {
        (PublishState::Nothing, _) => "no journal yet".to_string(),
        (PublishState::UpToDate, _) => "up to date".to_string(),
        (_, None) => format!("ahead: never published ({} of journal)", kib(p.journal_bytes)),
        (_, Some(_)) if p.new_epoch => {
            "ahead: journal rewritten since the last sync (the next sync publishes a new epoch)".to_string()
        }
        (_, Some(b)) if p.journal_bytes > b => format!("ahead: {} not yet published", kib(p.journal_bytes - b)),
        (_, Some(_)) => "ahead: session states changed since the last sync".to_string(),
    };
    s.push_str(&format!("  {}  {mine} (this checkout)\n", crate::present::pad(&r.name, 40)));
    for j in &r.journals {
        s.push_str(&journal_line(j, true));
    }
    s
}
