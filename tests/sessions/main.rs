//! Tests of session context: `walj sessions`, importing transcripts, and bundles from others.
//!
//! One test binary per subject (`cargo test --test sessions`); each module is one file of tests,
//! run through the real `walj` binary.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

#[path = "../common/mod.rs"]
mod common;

mod bundle_trust;
mod import;
mod mcp;
mod note;
mod repair;
mod sessions;
