#!/usr/bin/env bash
# Install a pinned Claude Code CLI from the npm registry into a cache folder outside the
# source tree, and print the path of its native `claude` binary on stdout.
#
#   scripts/claude-code.sh            # install (if needed) and print the binary path
#   WALJ_CLAUDE_VERSION=2.1.332 scripts/claude-code.sh   # try another version
#   WALJ_CLAUDE_CACHE=/some/dir scripts/claude-code.sh   # install somewhere else
#
# Idempotent: when the binary is already installed and answers `--version`, it only prints
# the path. Exits non-zero with a message on stderr when npm or the package cannot be had.
set -euo pipefail

# The version the end-to-end tests run (the recorded fixtures were made with 2.1.328, which the
# `…_with_claude_code_2_1_328` tests still run).
PINNED_VERSION=2.1.332
VERSION="${WALJ_CLAUDE_VERSION:-$PINNED_VERSION}"
CACHE="${WALJ_CLAUDE_CACHE:-${HOME}/.cache/walj-e2e/claude-code-${VERSION}}"
PKG="@anthropic-ai/claude-code"

die() { echo "claude-code.sh: $*" >&2; exit 1; }

# The platform package that carries the native binary (an optional dependency of $PKG).
platform_pkg() {
  local os arch libc=""
  case "$(uname -s 2>/dev/null)" in
    Linux) os=linux ;;
    Darwin) os=darwin ;;
    *) return 1 ;;
  esac
  case "$(uname -m 2>/dev/null)" in
    x86_64|amd64) arch=x64 ;;
    aarch64|arm64) arch=arm64 ;;
    *) return 1 ;;
  esac
  if [ "$os" = linux ] && ! (ldd --version 2>&1 | grep -qi -e glibc -e 'gnu libc'); then
    if ldd --version 2>&1 | grep -qi musl || [ -e /lib/ld-musl-x86_64.so.1 ] || [ -e /lib/ld-musl-aarch64.so.1 ]; then
      libc=-musl
    fi
  fi
  echo "${PKG}-${os}-${arch}${libc}"
}

# Print the native binary's path if it is installed and runs; fail otherwise.
find_binary() {
  local mods="$CACHE/node_modules" cand p
  local plat
  plat="$(platform_pkg || true)"
  for cand in ${plat:+"$mods/$plat/claude"} "$mods"/@anthropic-ai/claude-code-*/claude \
              "$mods/$PKG/bin/claude.exe" "$mods/$PKG/bin/claude"; do
    [ -f "$cand" ] && [ -x "$cand" ] || continue
    # The wrapper bin/claude.exe may be a placeholder until the postinstall step ran;
    # accept only a binary that answers --version with the version we want.
    if p="$("$cand" --version 2>/dev/null)" && [[ "$p" == "$VERSION"* ]]; then
      echo "$cand"
      return 0
    fi
  done
  return 1
}

if bin="$(find_binary)"; then
  echo "$bin"
  exit 0
fi

command -v npm >/dev/null 2>&1 || die "npm not found on PATH; cannot install ${PKG}@${VERSION}"

mkdir -p "$CACHE" || die "cannot create cache folder $CACHE"
# One installer at a time (parallel test binaries may call this script together).
if command -v flock >/dev/null 2>&1; then
  exec 9>"$CACHE/.install.lock"
  flock 9
  if bin="$(find_binary)"; then
    echo "$bin"
    exit 0
  fi
fi
# A private package.json so npm installs into $CACHE/node_modules and nowhere else.
if [ ! -f "$CACHE/package.json" ]; then
  printf '{"name":"walj-e2e-claude-code","private":true}\n' >"$CACHE/package.json"
fi

echo "claude-code.sh: installing ${PKG}@${VERSION} into $CACHE ..." >&2
log="$CACHE/npm-install.log"
if ! npm install --prefix "$CACHE" --no-save --no-audit --no-fund --no-package-lock \
      --include=optional "${PKG}@${VERSION}" >"$log" 2>&1; then
  tail -n 20 "$log" >&2 || true
  die "npm install ${PKG}@${VERSION} failed (see $log)"
fi

if bin="$(find_binary)"; then
  echo "$bin"
  exit 0
fi

# npm sometimes skips the optional platform package (e.g. with --omit=optional in the user's
# npmrc); install it explicitly.
plat="$(platform_pkg)" || die "no Claude Code native package for $(uname -s)/$(uname -m)"
echo "claude-code.sh: installing ${plat}@${VERSION} explicitly ..." >&2
if ! npm install --prefix "$CACHE" --no-save --no-audit --no-fund --no-package-lock \
      "${plat}@${VERSION}" >>"$log" 2>&1; then
  tail -n 20 "$log" >&2 || true
  die "npm install ${plat}@${VERSION} failed (see $log)"
fi

bin="$(find_binary)" || die "installed ${PKG}@${VERSION} but found no working native claude binary under $CACHE/node_modules"
echo "$bin"
