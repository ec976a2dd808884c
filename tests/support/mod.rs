//! Test support for end-to-end tests with the real Claude Code CLI, and with the real Codex,
//! Gemini and Copilot CLIs (see README.md).

pub mod agent_mock;
pub mod agents;
pub mod anthropic_mock;
pub mod claude;
