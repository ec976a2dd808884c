//! `walj compact` (the journal without the settled records past the retention, and the
//! objects nothing names).

use std::fmt::Write as _;

use crate::compact::{self as rewrite, CompactOptions, RewriteReport};
use crate::present::shown_path;
use crate::project::Project;
use crate::session::human_bytes;

/// The arguments of `walj compact`.
#[derive(Debug, clap::Args)]
pub struct CompactArgs {
    /// Only say what would be dropped.
    #[arg(long)]
    pub dry_run: bool,
    /// Retention in days (default: [retention] days in .walj/config.toml, else 30).
    #[arg(long, value_name = "N")]
    pub days: Option<u64>,
    /// Print what was dropped as JSON.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub confirm: super::Confirm,
    /// The automatic run the SessionEnd hook starts (`[retention] auto`): quiet, and nothing
    /// when another automatic compaction runs.
    #[arg(long, hide = true)]
    pub auto: bool,
}

pub(crate) fn compact(project: &Project, args: &CompactArgs) -> anyhow::Result<i32> {
    let (dry_run, days, json_out) = (args.dry_run, args.days, args.json);
    let _claim = if args.auto {
        match crate::retention::claim(project)? {
            Some(c) => Some(c),
            None => return Ok(0),
        }
    } else {
        None
    };
    // Compaction has no undo: say so, and ask (off a terminal, --yes is the answer).
    if !args.auto && !dry_run {
        eprintln!(
            "walj compact rewrites the journal without the settled records past the retention and removes the objects nothing names; it cannot be undone (`walj compact --dry-run` shows what goes)."
        );
        if !args.confirm.ask(
            "Compact now?",
            "nothing compacted: `walj compact` cannot be undone and there is no terminal to ask on; pass --yes to compact",
        )? {
            eprintln!("Nothing was changed.");
            return Ok(super::EXIT_ERROR);
        }
    }
    let rep = rewrite::compact(project, &CompactOptions { days, dry_run, progress: !json_out && !args.auto })?;
    if args.auto {
        // What the last automatic run did, for `walj status` readers and post-mortems.
        let last = serde_json::json!({"ts": crate::journal::record::now_ts(), "report": rep});
        crate::fsutil::atomic_write(
            &crate::retention::last_path(project),
            &serde_json::to_vec_pretty(&last)?,
            Some(0o600),
        )?;
        return Ok(0);
    }
    if json_out {
        println!("{}", serde_json::to_string_pretty(&rep)?);
        return Ok(0);
    }
    let verb = if dry_run { "would drop" } else { "dropped" };
    println!(
        "compact (retention {} days): {}{}",
        rep.retention_days.unwrap_or(0),
        rewrite_summary(&rep, verb),
        if rep.sessions_removed.is_empty() {
            String::new()
        } else {
            format!("; {} settled session(s) past the retention removed", rep.sessions_removed.len())
        }
    );
    Ok(0)
}

/// What a rewrite of the journal did (`compact`, `sessions delete`), after `verb`.
pub(crate) fn rewrite_summary(rep: &RewriteReport, verb: &str) -> String {
    let mut s = format!(
        "{verb}: {} of {} records ({} → {}), {} objects ({}){}",
        rep.dropped(),
        rep.records_before,
        human_bytes(rep.bytes_before),
        human_bytes(rep.bytes_after),
        rep.objects_removed,
        human_bytes(rep.object_bytes_removed),
        if rep.transcripts_removed > 0 {
            format!(
                ", {} transcript cop{}",
                rep.transcripts_removed,
                if rep.transcripts_removed == 1 { "y" } else { "ies" }
            )
        } else {
            String::new()
        }
    );
    if rep.objects_recent > 0 {
        let _ = write!(s, "; {} unnamed objects younger than an hour kept", rep.objects_recent);
    }
    if rep.objects_pending > 0 {
        let _ = write!(s, "; {} objects a Bash command waiting for its outcome snapshotted kept", rep.objects_pending);
    }
    if rep.unreadable > 0 {
        let _ = write!(s, "; {} unreadable line(s) dropped", rep.unreadable);
        if let Some(b) = &rep.broken_copy {
            let _ = write!(s, ", the original journal is kept in {}", shown_path(b));
        }
    }
    s
}
