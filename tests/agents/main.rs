//! Tests of the other agents (Codex, Gemini, Copilot): their hook payloads, their install, and
//! importing their own session files.
//!
//! One test binary per subject (`cargo test --test agents`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod agents;
mod import;
mod install;
