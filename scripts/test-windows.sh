#!/usr/bin/env bash
# walj's Windows build, run for real under Wine: the journal with concurrent writers killed at
# random moments, the tolerant reader, revert and undo through the checked rename, a file held
# open by another process, and ToolHelp liveness (scripts/windows/drive.py says what each checks).
#
#   scripts/test-windows.sh            # installs what it needs (Debian: mingw-w64, wine64; rustup target)
#
# Wine is an emulation: its locks, share modes, renames and process ends can differ from
# Windows', so a pass here is evidence, not proof; the release workflow runs the library's tests
# on a real Windows runner. Without the tools (and nothing to install them with) it prints
# SKIPPED and exits 0, unless WALJ_WINDOWS_REQUIRE=1.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
target=x86_64-pc-windows-gnu
out="$root/target/windows"
skip() {
  if [ "${WALJ_WINDOWS_REQUIRE:-}" = 1 ]; then echo "test-windows.sh: $*" >&2; exit 1; fi
  echo "SKIPPED: test-windows.sh: $*"; exit 0
}

if ! command -v x86_64-w64-mingw32-gcc >/dev/null || ! command -v wine >/dev/null; then
  if command -v apt-get >/dev/null && [ "$(id -u)" = 0 ]; then
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q gcc-mingw-w64-x86-64 wine64 >/dev/null ||
      skip "apt-get could not install mingw-w64 and wine64"
  else
    skip "needs x86_64-w64-mingw32-gcc and wine (Debian: apt-get install gcc-mingw-w64-x86-64 wine64)"
  fi
fi
if ! rustup target list --installed 2>/dev/null | grep -qx "$target"; then
  rustup target add "$target" >/dev/null 2>&1 || skip "rustup could not add the $target target"
fi

start=$(date +%s)
# Optimised as released, but without the release profile's LTO and with more codegen units:
# these checks are of behaviour, not speed, and CI builds from nothing on two cores.
CARGO_TARGET_X86_64_PC_WINDOWS_GNU_LINKER=x86_64-w64-mingw32-gcc \
  CARGO_PROFILE_RELEASE_LTO=off CARGO_PROFILE_RELEASE_CODEGEN_UNITS=16 \
  cargo build --release --locked --target "$target" --target-dir "$out" --bin walj
exe="$out/$target/release/walj.exe"
helpers="$out/helpers"
mkdir -p "$helpers"
for f in claude hold; do
  x86_64-w64-mingw32-gcc -municode -O2 -o "$helpers/$f.exe" "scripts/windows/$f.c"
done
# Rust's std for Windows asks bcryptprimitives.dll for random bytes (ProcessPrng), which Wine
# has only from 8.13: for an older Wine, a stand-in beside walj.exe.
wine_version=$(wine --version 2>/dev/null | sed -n 's/^wine-\([0-9]*\)\.\([0-9]*\).*/\1 \2/p')
read -r major minor <<<"${wine_version:-0 0}"
if [ "$major" -lt 8 ] || { [ "$major" -eq 8 ] && [ "$minor" -lt 13 ]; }; then
  x86_64-w64-mingw32-gcc -shared -O2 -o "$(dirname "$exe")/bcryptprimitives.dll" scripts/windows/bcryptprimitives.c -ladvapi32
  echo "wine $(wine --version): using the ProcessPrng stand-in (scripts/windows/bcryptprimitives.c)"
fi
build_s=$(($(date +%s) - start))

export WINEPREFIX="$out/wineprefix" WINEDEBUG=-all WINEDLLOVERRIDES="mscoree,mshtml="
[ -d "$WINEPREFIX" ] || wineboot --init >/dev/null 2>&1 || true
wine "$exe" --version
rc=0
WALJ_EXE="$exe" WALJ_WIN_HELPERS="$helpers" WINE=wine python3 scripts/windows/drive.py || rc=$?
wineserver -k 2>/dev/null || true
echo "test-windows.sh: build ${build_s} s, checks $(($(date +%s) - start - build_s)) s, under $(wine --version)"
exit $rc
