//! Tests of `walj hook` on Claude Code's events: Bash side effects, turns, who made a change, git
//! state, the in-tool-call gate, what is never captured, and a hook that never blocks.
//!
//! One test binary per subject (`cargo test --test hook`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod attribution;
mod bash;
mod bulk;
mod claude_gate;
mod git_state;
mod hookless;
mod never_blocks;
mod secrets;
mod stop_tasks;
mod symlinks;
mod turns;
mod watcher;
