//! Tests of setting walj up: `walj install`/`uninstall`, `walj doctor`, and the Claude Code plugin.
//!
//! One test binary per subject (`cargo test --test setup`); each module is one file of tests,
//! run through the real `walj` binary.

#[path = "../common/mod.rs"]
mod common;
#[path = "../support/mod.rs"]
mod support;

mod doctor;
mod install;
mod plugin;
