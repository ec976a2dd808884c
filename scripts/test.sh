#!/usr/bin/env bash
# The whole test suite: unit tests, integration tests through the real binary, and the
# end-to-end tests against the real Claude Code CLI (installed by scripts/setup-test-deps.sh).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-test-deps.sh
cargo test --locked "$@"
