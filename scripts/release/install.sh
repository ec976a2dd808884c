#!/bin/sh
# walj installer: fetches the walj binary for this machine from a walj release, checks its
# SHA-256 against the release's SHA256SUMS, and installs it as PREFIX/bin/walj.
#
#   sh install.sh [--from URL|DIR] [--prefix DIR]
#
# --from   where the release's files are: a https:// address (the release's download folder)
#          or a local folder holding them. The copy of this script attached to a release has
#          that release's address built in; the copy in the repository has none and needs --from.
# --prefix where to install (default ~/.local): the binary goes to PREFIX/bin/walj.
#
# Nothing is installed unless the checksum matches. Needs curl or wget for https, and
# sha256sum or shasum. Windows: install.ps1.
set -eu

# Filled in by the release workflow for the copy it attaches to a release.
WALJ_RELEASE_BASE=""

die() { echo "walj install: $*" >&2; exit 1; }

from=${WALJ_RELEASE_BASE}
prefix=${HOME:-}/.local
while [ $# -gt 0 ]; do
    case $1 in
    --from) [ $# -ge 2 ] || die "--from needs a value"; from=$2; shift 2 ;;
    --prefix) [ $# -ge 2 ] || die "--prefix needs a value"; prefix=$2; shift 2 ;;
    -h | --help) sed -n '2,15p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
    esac
done
[ -n "$from" ] || die "no release to install from: give --from URL or --from DIR (this copy of the script has no release address built in)"
[ -n "$prefix" ] || die "no --prefix and no HOME"

case $(uname -s) in
Linux) os=unknown-linux-musl ;;
Darwin) os=apple-darwin ;;
*) die "no walj release build for $(uname -s); build from source: cargo install --path . in a walj checkout" ;;
esac
case $(uname -m) in
x86_64 | amd64) cpu=x86_64 ;;
aarch64 | arm64) cpu=aarch64 ;;
*) die "no walj release build for the CPU $(uname -m); build from source: cargo install --path . in a walj checkout" ;;
esac
target=$cpu-$os

tmp=$(mktemp -d "${TMPDIR:-/tmp}/walj-install.XXXXXX") || die "cannot make a temporary folder"
trap 'rm -rf "$tmp"' EXIT INT TERM

fetch() { # fetch NAME: the release's file NAME into $tmp/NAME
    case $from in
    https://*)
        if command -v curl >/dev/null 2>&1; then
            curl --proto '=https' --tlsv1.2 -fsSL -o "$tmp/$1" "$from/$1" || die "cannot download $from/$1"
        elif command -v wget >/dev/null 2>&1; then
            wget -q -O "$tmp/$1" "$from/$1" || die "cannot download $from/$1"
        else
            die "neither curl nor wget is installed"
        fi
        ;;
    http://* | ftp://*) die "refused: $from is not https" ;;
    *) [ -f "$from/$1" ] || die "no $1 in $from"; cp "$from/$1" "$tmp/$1" ;;
    esac
}

sha256() {
    if command -v sha256sum >/dev/null 2>&1; then
        sha256sum "$1" | cut -d' ' -f1
    elif command -v shasum >/dev/null 2>&1; then
        shasum -a 256 "$1" | cut -d' ' -f1
    else
        die "neither sha256sum nor shasum is installed: cannot check the download"
    fi
}

fetch SHA256SUMS
# The one archive for this target: walj-<version>-<target>.tar.gz.
line=$(grep -E "^[0-9a-f]{64}  walj-[0-9A-Za-z.+-]+-$target\.tar\.gz\$" "$tmp/SHA256SUMS" | head -n1 || true)
[ -n "$line" ] || die "the release has no walj build for $target"
want=${line%% *}
name=${line#*  }
fetch "$name"
got=$(sha256 "$tmp/$name")
[ "$got" = "$want" ] || die "refused: $name's SHA-256 is $got, the release's SHA256SUMS says $want; nothing was installed"

mkdir "$tmp/x"
tar -xzf "$tmp/$name" -C "$tmp/x" || die "cannot unpack $name"
dir=${name%.tar.gz}
[ -f "$tmp/x/$dir/walj" ] || die "$name holds no $dir/walj"
mkdir -p "$prefix/bin" || die "cannot create $prefix/bin"
# Replace atomically: a running walj (a hook) keeps its old file.
cp "$tmp/x/$dir/walj" "$prefix/bin/.walj.new.$$" || die "cannot write into $prefix/bin"
chmod 755 "$prefix/bin/.walj.new.$$"
mv -f "$prefix/bin/.walj.new.$$" "$prefix/bin/walj" || die "cannot install $prefix/bin/walj"
echo "walj: installed $("$prefix/bin/walj" --version 2>/dev/null || echo "$name") as $prefix/bin/walj"
case ":${PATH:-}:" in
*":$prefix/bin:"*) ;;
*) echo "walj: $prefix/bin is not on your PATH; add it, then run \`walj install\` in a project (or use the plugin)" ;;
esac
