#!/usr/bin/env bash
# Compiles walj for the platforms CI does not run (only Linux is tested):
# - Windows: the whole crate (`cargo clippy --target x86_64-pc-windows-gnu`; its C
#   dependencies need the mingw-w64 compiler: apt-get install gcc-mingw-w64-x86-64);
# - macOS: src/procinfo.rs alone (the macOS process calls), in a scratch crate: the C
#   dependencies (zstd, libgit2) cannot be cross-compiled here without Apple's SDK.
# Needs the targets: rustup target add x86_64-pc-windows-gnu x86_64-apple-darwin.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
cargo clippy --locked --target x86_64-pc-windows-gnu -- -D warnings
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
mkdir "$scratch/src"
cat > "$scratch/Cargo.toml" <<TOML
[package]
name = "procinfo-check"
version = "0.0.0"
edition = "2024"

[dependencies]
serde = { version = "1", features = ["derive"] }
libc = "0.2.191"
TOML
cp Cargo.lock "$scratch/"
cat > "$scratch/src/lib.rs" <<RS
#![deny(unsafe_code)]
// Only the compile is checked here: what the crate uses is not in this scratch crate.
#![allow(dead_code)]
#[path = "$root/src/procinfo.rs"]
pub mod procinfo;
RS
for target in x86_64-apple-darwin aarch64-apple-darwin; do
  if rustup target list --installed | grep -qx "$target"; then
    (cd "$scratch" && CARGO_TARGET_DIR="$scratch/target" cargo clippy --offline --target "$target" -- -D warnings)
  else
    echo "skipped $target (rustup target add $target)"
  fi
done
