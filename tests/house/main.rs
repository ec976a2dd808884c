//! Tests of the house itself: the command line, the README's promises, and the floors of the
//! module graph.
//!
//! One test binary per subject (`cargo test --test house`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod cli;
mod floors;
mod legacy;
mod project_root;
mod readme;
