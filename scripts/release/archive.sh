#!/usr/bin/env bash
# Pack one release binary the way the installers, Homebrew and cargo-binstall expect it:
#   scripts/release/archive.sh TARGET BINARY OUT_DIR
# writes OUT_DIR/walj-<version>-<TARGET>.tar.gz (.zip for Windows) holding
# walj-<version>-<TARGET>/{walj[.exe],README.md,LICENSE-MIT,LICENSE-APACHE}, and prints its path.
set -euo pipefail
die() { echo "archive.sh: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: archive.sh TARGET BINARY OUT_DIR"
target=$1 bin=$2 out=$3
root=$(cd "$(dirname "$0")/../.." && pwd)
version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -f "$bin" ] || die "$bin: no such file"
mkdir -p "$out"
out=$(cd "$out" && pwd)
name="walj-$version-$target"
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir "$stage/$name"
case $target in
  *windows*) exe=walj.exe ;;
  *) exe=walj ;;
esac
cp "$bin" "$stage/$name/$exe"
chmod 755 "$stage/$name/$exe"
cp "$root/README.md" "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$stage/$name/"
case $target in
  *windows*)
    (cd "$stage" && if command -v zip >/dev/null; then zip -qr "$out/$name.zip" "$name"; else
      7z a -tzip "$out/$name.zip" "$name" >/dev/null; fi)
    echo "$out/$name.zip" ;;
  *)
    tar -C "$stage" -czf "$out/$name.tar.gz" "$name"
    echo "$out/$name.tar.gz" ;;
esac
