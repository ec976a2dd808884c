//! walj: a write-ahead journal that makes Claude Code sessions crash-resilient.
//!
//! Data flows one way (DESIGN §1): `walj hook` appends records to `.walj/journal.jsonl`
//! and images to `.walj/store`; everything else reads the journal through [`fold`] and
//! records what the user decides by appending more records.
//!
//! ## The floors
//! Every module stands on one floor and imports only from its own floor or below
//! (`tests/house/floors.rs` reads the `use` lines and holds the table; no import runs upward):
//!
//! - **ground**, knowing neither Claude Code nor the journal: [`fsutil`] (private files, atomic
//!   swaps, the error log), [`sha`] (digests), [`git`] (the `git` process), [`procinfo`]
//!   (process liveness), [`crypt`] (age encryption), [`secrets`] (what is never captured),
//!   [`sampled`] (identities of files over the capture cap).
//! - **boundary**, the formats walj reads and writes: [`claude`] (Claude Code's payloads,
//!   events, settings, paths, transcripts), [`journal`] (the line format, the tolerant reader,
//!   the durable appender), [`store`] (content-addressed images), [`project`] (where a
//!   project's files are), [`config`] (`.walj/config.toml`), [`failmark`] (the failure marker).
//! - **model**, what the records mean: [`agents`] (every agent's payload as one event model, and
//!   how a post-image is computed), [`fold`] (records → entry states and session context),
//!   [`bashsnap`] (a Bash call's side effects), [`present`] (the words: what a state means, text
//!   helpers and escaping, the one diff model; it draws nothing, so the actions' briefs use it).
//! - **actions**, what walj does with them: [`triage`] (diff, mark, revert, undo, hand back),
//!   [`session`] (list/show/resume, transcript copies, bundles, procs, the fold every reader
//!   shows), [`sync`] (journals across machines), [`import`] (the agents' own session files
//!   into the journal),
//!   [`checkpoint`] (Stop-time verification), [`retention`] (what is kept how long).
//! - **faces**, what the user sees and runs: [`report`] (recover/log/diff text and JSON), [`announce`] (SessionStart notes),
//!   [`style`] (colour), [`hook`] (the hook itself), [`tui`] (the dashboard), [`compact`]
//!   (compaction and session delete), [`plugin`] (the Claude Code plugin), [`mcp`] (the read-only
//!   MCP server Claude queries), [`doctor`] (the whole
//!   house's health check: Claude's hooks, the plugins', the other agents', `.walj/`, the
//!   journal), [`cmd`] (the commands), [`cli`] (the clap tree).

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
pub mod compact;
pub mod config;
pub mod crypt;
pub mod doctor;
pub mod failmark;
pub mod fold;
pub mod fsutil;
pub mod git;
pub mod hook;
pub mod import;
pub mod journal;
pub mod mcp;
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
pub mod watch;
