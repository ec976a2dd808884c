#!/usr/bin/env bash
# Prints the path of the walj binary `cargo build [--release]` made in this checkout:
#   scripts/walj-bin.sh [release|debug]      (default: release)
# The repository's .cargo/config.toml names the host as the build target (for a static
# binary on Linux), so it is under target/<host tuple>/, not target/. CARGO_TARGET_DIR and
# CARGO_BUILD_TARGET are honoured.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
profile="${1:-release}"
tuple="${CARGO_BUILD_TARGET:-host-tuple}"
[ "$tuple" = host-tuple ] && tuple="$(rustc -vV | sed -n 's/^host: //p')"
echo "${CARGO_TARGET_DIR:-$root/target}/$tuple/$profile/walj"
