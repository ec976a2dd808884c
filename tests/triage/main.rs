//! Tests of acting on entries: mark, revert, undo, hand back, their safety under races, and bisect.
//!
//! One test binary per subject (`cargo test --test triage`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod actions;
mod bisect;
mod every_action;
mod git_op;
mod handoff_authorship;
mod repeated_ids;
mod revert_race;
mod safety;
