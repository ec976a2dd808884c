//! Tests of `walj sync`: journals carried to other machines through the project's git remote.
//!
//! One test binary per subject (`cargo test --test sync`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod sync;
