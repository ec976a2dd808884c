#!/usr/bin/env bash
# Build the walj Claude Code marketplace with the binaries bundled: the plugin committed in
# plugin/ (hooks, slash commands, the sh launcher) plus one walj binary per platform in
# bin/platforms/<os>-<cpu>/walj, which the launcher runs before looking on PATH. So a user who
# adds this marketplace and installs walj@walj needs nothing else on the machine.
#
#   scripts/plugin-pack.sh                                # cargo build --release, this machine's platform
#   scripts/plugin-pack.sh --bin linux-x64=path/to/walj   # a binary built elsewhere (repeatable)
#   scripts/plugin-pack.sh --no-build --out DIR           # use the release build as it is
#
# Writes DIR/walj-marketplace/ (default DIR: target/plugin/) — `claude plugin marketplace add
# DIR/walj-marketplace`, then `claude plugin install walj@walj` — and the same folder as
# DIR/walj-marketplace-<version>.tar.gz with its SHA-256 in DIR/walj-marketplace-<version>.tar.gz.sha256.
# Platform names are npm's (linux-x64, linux-arm64, darwin-x64, darwin-arm64); the launcher is
# sh, so Windows is not bundled (on Windows, install walj on PATH).
set -euo pipefail

die() { echo "plugin-pack.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/plugin"
build=1
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,16p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || die "no version in Cargo.toml"

host_platform() {
  local os cpu
  case $(uname -s) in Linux) os=linux ;; Darwin) os=darwin ;; *) die "unsupported host $(uname -s)" ;; esac
  case $(uname -m) in x86_64|amd64) cpu=x64 ;; aarch64|arm64) cpu=arm64 ;; *) die "unsupported cpu $(uname -m)" ;; esac
  echo "$os-$cpu"
}

if [ ${#bins[@]} -eq 0 ]; then
  if [ $build = 1 ]; then
    (cd "$root" && cargo build --release --locked --bin walj) || die "cargo build --release failed"
  fi
  built=$("$root/scripts/walj-bin.sh" release)
  [ -x "$built" ] || die "no $built (build it, or give --bin)"
  bins=("$(host_platform)=$built")
fi

mkdir -p "$out"
out=$(cd "$out" && pwd)
market="$out/walj-marketplace"
rm -rf "$market"
mkdir -p "$market/.claude-plugin"
cp "$root/.claude-plugin/marketplace.json" "$market/.claude-plugin/"
# The marketplace names its plugin at ./plugin, as in the repository.
cp -R "$root/plugin" "$market/plugin"
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$market/"

for spec in "${bins[@]}"; do
  plat=${spec%%=*}
  bin=${spec#*=}
  [ "$plat" != "$spec" ] || die "--bin wants PLATFORM=PATH, got $spec"
  [ -f "$bin" ] || die "$bin: no such file"
  case $plat in
    linux-x64|linux-arm64|darwin-x64|darwin-arm64|freebsd-x64|freebsd-arm64) ;;
    *) die "unknown platform $plat (linux-x64, linux-arm64, darwin-x64, darwin-arm64)" ;;
  esac
  mkdir -p "$market/plugin/bin/platforms/$plat"
  cp "$bin" "$market/plugin/bin/platforms/$plat/walj"
  chmod 755 "$market/plugin/bin/platforms/$plat/walj"
done

tarball="$out/walj-marketplace-$version.tar.gz"
tar -C "$out" -czf "$tarball" walj-marketplace
if command -v sha256sum >/dev/null; then
  (cd "$out" && sha256sum "${tarball##*/}") > "$tarball.sha256"
else
  (cd "$out" && shasum -a 256 "${tarball##*/}") > "$tarball.sha256"
fi
echo "$market"
echo "$tarball"
