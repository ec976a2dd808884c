#!/usr/bin/env bash
# Records real Claude Code fixtures: the hook payloads, the transcript and the model requests
# of two scripted sessions (a clean one, and one killed with SIGKILL during a Bash call), run by
# the pinned real CLI (scripts/claude-code.sh) against the stand-in model server.
#
#   scripts/record-fixtures.sh [OUT_DIR]      # default: target/recorded-fixtures
#   WALJ_CLAUDE_VERSION=2.1.332 scripts/record-fixtures.sh   # record with another version
#
# Writes OUT_DIR/real-<version>-clean/ and OUT_DIR/real-<version>-killed-mid-bash/, each with
# hooks/NN-<Event>[-<Tool>].json, transcript.jsonl, model-requests.jsonl and meta.json.
# Paths are replaced by ${PROJECT}, ${HOME}, ${PROJECT_KEY}, ${TMPDIR}, ${SANDBOX}.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-target/recorded-fixtures}"
mkdir -p "$OUT"
OUT="$(cd "$OUT" && pwd)"

# Install (or find) the CLI first so that a failure is reported plainly.
if ! bin="$(scripts/claude-code.sh)"; then
  echo "record-fixtures.sh: the real Claude Code CLI is not available (see above)" >&2
  exit 1
fi
export WALJ_CLAUDE_BIN="$bin"
export WALJ_FIXTURES_OUT="$OUT"

cargo test --test e2e -- --ignored --exact smoke::record_fixtures --nocapture
echo "record-fixtures.sh: fixtures of $("$bin" --version) in $OUT:" >&2
ls -1 "$OUT" >&2
