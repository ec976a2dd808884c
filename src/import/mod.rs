//! `walj import`: journal records rebuilt from the session files the agents keep themselves:
//! Claude Code's transcripts ([`claude`]) and the session files of Codex CLI, Gemini CLI and
//! Copilot CLI ([`agents`], parsed by [`codex`], [`gemini`], [`copilot`]), all written through
//! the one [`engine`] (records already in the journal skipped, images stored first).
//!
//! How an Edit's post-image is computed from its input is not import code: it is the hook's too,
//! in [`crate::agents::patch`].

pub mod agents;
pub mod auto;
pub mod claude;
pub mod codex;
pub mod copilot;
pub mod engine;
pub mod gemini;
pub mod session_file;

use std::fs;
use std::path::PathBuf;

use crate::claude::transcript::first_timestamp;
use crate::config::Config;
use crate::project::Project;

pub(crate) use claude::{all_transcripts, project_transcripts};
use engine::Sink;
pub(crate) use engine::{FileReport, ImportError, ImportOptions, ImportReport, MAX_LINE};
pub(crate) use engine::{jsonl_under, since_days};

use claude::Converter;

/// Imports `files` into `project`'s journal: Claude Code transcripts, and the session files of
/// Codex CLI, Gemini CLI and Copilot CLI ([`agents`]), each told by its content.
pub(crate) fn import(project: &Project, files: &[PathBuf], opts: &ImportOptions) -> Result<ImportReport, ImportError> {
    let (cfg, matcher) = Config::load_or_default(&project.config_path(), |e| {
        eprintln!("walj: warning: {e}; importing with the default settings");
    });
    let mut sink = Sink::open(project)?;
    let total: u64 = files.iter().filter_map(|f| fs::metadata(f).ok()).map(|m| m.len()).sum();
    let bar = if opts.progress && (files.len() > 1 || total > 8 << 20) {
        let b = indicatif::ProgressBar::new(total);
        b.set_style(
            indicatif::ProgressStyle::with_template("{msg:30!} [{bar:30}] {bytes}/{total_bytes} ({eta})")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
                .progress_chars("=> "),
        );
        b
    } else {
        indicatif::ProgressBar::hidden()
    };
    // Main transcripts before subagent ones, each in time order of its first line.
    let mut order: Vec<(bool, String, &PathBuf)> = files
        .iter()
        .map(|f| {
            let sub = f.components().any(|c| c.as_os_str() == "subagents");
            (sub, first_timestamp(f).unwrap_or_default(), f)
        })
        .collect();
    order.sort();
    for (_, _, path) in order {
        bar.set_message(path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default());
        if let Some(agent) = agents::detect(path) {
            let conv = agents::convert(project, &cfg, matcher.as_ref(), agent, path, &sink);
            bar.inc(fs::metadata(path).map(|m| m.len()).unwrap_or(0));
            sink.add(conv.report, conv.records, conv.blobs.list, conv.produced, true)?;
            continue;
        }
        let mut conv = Converter::new(project, &cfg, matcher.as_ref(), path, opts.config_dir.as_deref());
        let fr = match conv.read(&bar) {
            Ok(()) => conv.finish(),
            Err(e) => FileReport { path: path.clone(), error: Some(e.to_string()), ..FileReport::default() },
        };
        sink.add(fr, conv.records, conv.blobs.list, conv.produced, false)?;
    }
    bar.finish_and_clear();
    Ok(sink.report)
}
