//! Test support for end-to-end tests with the real Claude Code CLI (see README.md).

pub mod anthropic_mock;
pub mod claude;
