//! walj: a write-ahead journal that makes Claude Code sessions crash-resilient.
//!
//! Data flows one way (DESIGN §1): `walj hook` appends records to `.walj/journal.jsonl`
//! and images to `.walj/store`; everything else reads the journal through [`fold`] and
//! records what the user decides by appending more records.
//!
//! - [`journal`]: the line format, the tolerant reader, the durable appender.
//! - [`store`]: content-addressed pre- and post-images (git blob ids).
//! - [`claude`], [`hook`]: Claude Code's boundary (payloads, events, settings, paths) and the hook itself.
//! - [`fold`]: records → entry states and session context.
//! - [`checkpoint`], [`announce`], [`report`]: verification, SessionStart notes, reports.
//! - [`triage`]: what the user does about entries: diff, mark done, revert, undo, hand back.
//! - [`session`]: session context: list/show/resume, transcript copies, bundles, procs, compaction.
//! - [`project`], [`config`], [`git`], [`procinfo`], [`fsutil`]: the surroundings.

// No unsafe code, except the process calls of macOS and Windows in `procinfo` (cfg-gated:
// never built on Linux), each module allowed it by name, with a SAFETY note per call;
// `unsafe_code_is_only_the_platform_process_calls` keeps it so.
#![deny(unsafe_code)]

pub mod agents;
pub mod announce;
pub mod bashsnap;
pub mod bisect;
pub mod checkpoint;
pub mod claude;
pub mod cli;
pub mod cmd;
pub mod config;
pub mod crypt;
pub mod failmark;
pub mod fold;
pub mod fsutil;
pub mod git;
pub mod hook;
pub mod import;
pub mod journal;
pub mod plugin;
pub mod present;
pub mod procinfo;
pub mod project;
pub mod report;
pub mod retention;
pub mod sampled;
pub mod secrets;
pub mod session;
pub mod sha;
pub mod store;
pub mod style;
pub mod sync;
pub mod triage;
pub mod tui;
