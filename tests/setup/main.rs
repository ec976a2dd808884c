//! Tests of setting walj up: `walj install`/`uninstall`, `walj doctor`, and the Claude Code plugin.
//!
//! One test binary per subject (`cargo test --test setup`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod doctor;
mod install;
mod npm;
mod plugin;
mod release;
mod versioned;
