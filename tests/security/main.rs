//! Tests of data walj did not make: writes kept inside the allowed set, state from clones and
//! bundles never trusted, recorded text escaped before it reaches a terminal.
//!
//! One test binary per subject (`cargo test --test security`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod bad_input;
mod escapes;
mod nonutf8_names;
mod untrusted_state;
mod untrusted_writes;
