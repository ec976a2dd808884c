#!/usr/bin/env bash
# Installs what the test suite uses beyond cargo: git, python3 (the proposal's baseline
# scripts), tmux (the TUI's end-to-end test), zsh and fish (completion tests), npm (the real Claude Code, Codex, Gemini and
# Copilot CLIs for the end-to-end tests). Each is optional for the tests, which skip with a message when a tool is
# missing; CI installs them so nothing is skipped there.
set -uo pipefail
need=()
command -v git >/dev/null || need+=(git)
command -v python3 >/dev/null || need+=(python3)
command -v tmux >/dev/null || need+=(tmux)
command -v npm >/dev/null || need+=(npm)
# zsh and fish: the id completion tests run the real shells (tests/house/cli.rs).
command -v zsh >/dev/null || need+=(zsh)
command -v fish >/dev/null || need+=(fish)
if [ ${#need[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    echo "installing: ${need[*]}"
    apt-get update -qq >/dev/null 2>&1 || true
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null 2>&1 || echo "warning: could not install ${need[*]}"
  else
    echo "warning: missing ${need[*]}; the tests that need them will say SKIPPED"
  fi
fi
if [ -x scripts/claude-code.sh ]; then
  scripts/claude-code.sh >/dev/null || echo "warning: the pinned Claude Code CLI could not be installed; its tests will say SKIPPED"
fi
# The other agents' CLIs (tests/e2e/agents.rs): each installed in 5-11 s here (npm, pinned
# versions, ~100-420 MB each, into ~/.cache/walj-e2e/).
if [ -x scripts/agent-cli.sh ]; then
  for agent in codex gemini copilot; do
    scripts/agent-cli.sh "$agent" >/dev/null || echo "warning: the pinned $agent CLI could not be installed; its tests will say SKIPPED"
  done
fi
exit 0
