//! Tests of end to end with the real Claude Code CLI (and the real Codex, Gemini and Copilot CLIs),
//! offline against scripted stand-ins for their model APIs (see docs/e2e.md). Skipped with a
//! `SKIPPED:` line when a CLI cannot be installed; `WALJ_E2E_REQUIRE=1` (CI) makes that a failure.
//!
//! One test binary per subject (`cargo test --test e2e`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../support/recover.rs"]
mod recover_text;
#[path = "../support/mod.rs"]
mod support;

mod after_crash;
mod agent_import;
mod agents;
mod bash;
mod big_crash;
mod bulk;
mod captures;
mod mock_selftest;
mod plugin;
mod project_root;
mod repair;
mod routes;
mod skills;
mod smoke;
mod subagents;
mod sync;
mod turns;
mod walj;
