//! Tests of the dashboard: rendered screens (insta snapshots at several sizes) and a real terminal
//! driven through tmux.
//!
//! One test binary per subject (`cargo test --test tui`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod render;
mod tmux;
