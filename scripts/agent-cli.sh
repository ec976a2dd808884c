#!/usr/bin/env bash
# Install a pinned coding-agent CLI (Codex, Gemini or Copilot) from the npm registry into a cache
# folder outside the source tree, and print the path of its command on stdout.
#
#   scripts/agent-cli.sh codex|gemini|copilot
#   WALJ_AGENT_CACHE=/some/dir scripts/agent-cli.sh copilot    # install somewhere else
#
# Idempotent: when the command is installed and answers `--version`, it only prints the path.
# Exits non-zero with a message on stderr when npm or the package cannot be had. Like
# scripts/claude-code.sh: one installer at a time (flock), a private package.json.
set -euo pipefail

die() { echo "agent-cli.sh: $*" >&2; exit 1; }

agent="${1:-}"
case "$agent" in
  codex)   PKG=@openai/codex;      VERSION="${WALJ_CODEX_VERSION:-0.171.0}";  BIN=codex ;;
  gemini)  PKG=@google/gemini-cli; VERSION="${WALJ_GEMINI_VERSION:-0.61.0}";  BIN=gemini ;;
  copilot) PKG=@github/copilot;    VERSION="${WALJ_COPILOT_VERSION:-1.0.102}"; BIN=copilot ;;
  *) die "usage: agent-cli.sh codex|gemini|copilot" ;;
esac
CACHE="${WALJ_AGENT_CACHE:-${HOME}/.cache/walj-e2e}/${agent}-${VERSION}"

find_binary() {
  local cand="$CACHE/node_modules/.bin/$BIN" out
  [ -x "$cand" ] || return 1
  out="$(timeout 60 "$cand" --version 2>/dev/null </dev/null)" || return 1
  [[ "$out" == *"$VERSION"* ]] || return 1
  echo "$cand"
}

if bin="$(find_binary)"; then echo "$bin"; exit 0; fi
command -v npm >/dev/null 2>&1 || die "npm not found on PATH; cannot install ${PKG}@${VERSION}"
mkdir -p "$CACHE" || die "cannot create cache folder $CACHE"
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.install.lock"
  flock 9
  if bin="$(find_binary)"; then echo "$bin"; exit 0; fi
fi
[ -f "$CACHE/package.json" ] || printf '{"name":"walj-e2e-%s","private":true}\n' "$agent" >"$CACHE/package.json"
echo "agent-cli.sh: installing ${PKG}@${VERSION} into $CACHE ..." >&2
log="$CACHE/npm-install.log"
if ! npm install --prefix "$CACHE" --no-save --no-audit --no-fund --no-package-lock \
      --include=optional "${PKG}@${VERSION}" >"$log" 2>&1; then
  tail -n 20 "$log" >&2 || true
  die "npm install ${PKG}@${VERSION} failed (see $log)"
fi
bin="$(find_binary)" || die "installed ${PKG}@${VERSION} but $CACHE/node_modules/.bin/$BIN does not answer --version with $VERSION"
echo "$bin"
