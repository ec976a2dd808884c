//! Tests of the journal and the fold: the line format, the durable appender under kill -9 and
//! write failures, the tolerant reader, the fold snapshot, real recorded journals, and the edge cases
//! of reading them.
//!
//! One test binary per subject (`cargo test --test journal`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod core;
mod crash;
mod edge_cases;
mod fold_snapshot;
mod fuzz_reader;
mod line_index;
mod lock;
mod proposal_compat;
mod real_fixtures;
mod write_failures;
