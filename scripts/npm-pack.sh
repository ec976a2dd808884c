#!/usr/bin/env bash
# Build walj's npm packages from release binaries: the small `walj` package (npm/walj/, a sh
# launcher, no install script) and one `@walj/<os>-<cpu>` package per binary, each with `os`
# and `cpu` fields (and `libc` for a binary that links glibc or musl dynamically).
#
#   scripts/npm-pack.sh                                # cargo build --release, this machine's platform
#   scripts/npm-pack.sh --bin linux-x64=path/to/walj   # a binary built elsewhere (repeatable)
#   scripts/npm-pack.sh --no-build --out DIR           # use the release build as it is (scripts/walj-bin.sh)
#
# Tarballs go to DIR (default target/npm/): walj-<version>.tgz and walj-<os>-<cpu>-<version>.tgz.
# Install them without a registry: npm install -g --offline ./walj-linux-x64-*.tgz ./walj-0*.tgz
# Publish: npm publish each platform tarball first, then walj-<version>.tgz.
set -euo pipefail

die() { echo "npm-pack.sh: $*" >&2; exit 1; }

root=$(cd "$(dirname "$0")/.." && pwd)
out="$root/target/npm"
build=1
bins=()
while [ $# -gt 0 ]; do
  case $1 in
    --out) out=$2; shift 2 ;;
    --bin) bins+=("$2"); shift 2 ;;
    --no-build) build=0; shift ;;
    -h|--help) sed -n '2,13p' "$0"; exit 0 ;;
    *) die "unknown argument $1 (see --help)" ;;
  esac
done
command -v npm >/dev/null || die "npm is not installed"
command -v node >/dev/null || die "node is not installed"

version=$(sed -n 's/^version = "\(.*\)"$/\1/p' "$root/Cargo.toml" | head -n1)
[ -n "$version" ] || die "no version in Cargo.toml"

# This machine's npm platform name (process.platform-process.arch).
host_platform() { node -p 'process.platform + "-" + process.arch'; }

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
stage="$out/stage"
rm -rf "$stage"
mkdir -p "$stage"

platforms=()
for spec in "${bins[@]}"; do
  plat=${spec%%=*}
  bin=${spec#*=}
  [ "$plat" != "$spec" ] || die "--bin wants PLATFORM=PATH, got $spec"
  [ -f "$bin" ] || die "$bin: no such file"
  os=${plat%%-*}
  cpu=${plat#*-}
  case $os in
    linux|darwin|freebsd) ;;
    win32) die "win32: the package's launcher is a sh script; Windows is not packaged yet" ;;
    *) die "unknown os $os in $plat (linux-x64, linux-arm64, darwin-arm64, darwin-x64)" ;;
  esac
  case $cpu in x64|arm64) ;; *) die "unknown cpu $cpu in $plat" ;; esac
  # A dynamically linked Linux binary runs only on its libc.
  libc=""
  if [ "$os" = linux ] && command -v ldd >/dev/null; then
    deps=$(ldd "$bin" 2>&1 || true)
    case $deps in
      *musl*) libc=musl ;;
      *libc.so.6*) libc=glibc ;;
    esac
  fi
  dir="$stage/$plat"
  mkdir -p "$dir/bin"
  cp "$bin" "$dir/bin/walj"
  chmod 755 "$dir/bin/walj"
  cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$dir/"
  PKG_NAME="@walj/$plat" PKG_VERSION="$version" PKG_OS="$os" PKG_CPU="$cpu" PKG_LIBC="$libc" node -e '
    const e = process.env;
    const p = {
      name: e.PKG_NAME,
      version: e.PKG_VERSION,
      description: `The walj binary for ${e.PKG_OS}-${e.PKG_CPU} (installed by the walj package)`,
      license: "MIT OR Apache-2.0",
      os: [e.PKG_OS],
      cpu: [e.PKG_CPU],
      files: ["bin/walj", "LICENSE-MIT", "LICENSE-APACHE"],
      preferUnplugged: true,
    };
    if (e.PKG_LIBC) p.libc = [e.PKG_LIBC];
    process.stdout.write(JSON.stringify(p, null, 2) + "\n");
  ' > "$dir/package.json"
  printf '# @walj/%s\n\nThe walj %s binary for %s. Install the `walj` package, which depends on it, instead of this one.\n' \
    "$plat" "$version" "$plat" > "$dir/README.md"
  (cd "$dir" && npm pack --silent --pack-destination "$out" >/dev/null) || die "npm pack of @walj/$plat failed"
  platforms+=("$plat")
done

main="$stage/walj"
cp -R "$root/npm/walj" "$main"
cp "$root/LICENSE-MIT" "$root/LICENSE-APACHE" "$main/"
chmod 755 "$main/bin/walj"
PKG_DIR="$main" PKG_VERSION="$version" PKG_PLATFORMS="${platforms[*]}" node -e '
  const fs = require("fs");
  const e = process.env;
  process.chdir(e.PKG_DIR);
  const p = JSON.parse(fs.readFileSync("package.json", "utf8"));
  p.version = e.PKG_VERSION;
  p.files = [...new Set([...p.files, "LICENSE-MIT", "LICENSE-APACHE"])];
  p.optionalDependencies = {};
  for (const plat of e.PKG_PLATFORMS.split(" ").filter(Boolean)) p.optionalDependencies[`@walj/${plat}`] = e.PKG_VERSION;
  if (p.scripts && (p.scripts.postinstall || p.scripts.install || p.scripts.preinstall)) {
    console.error("npm-pack.sh: npm/walj/package.json has an install script; walj ships none");
    process.exit(1);
  }
  fs.writeFileSync("package.json", JSON.stringify(p, null, 2) + "\n");
' --  || die "writing walj's package.json failed"
(cd "$main" && npm pack --silent --pack-destination "$out" >/dev/null) || die "npm pack of walj failed"
rm -rf "$stage"

echo "$out/walj-$version.tgz"
for plat in "${platforms[@]}"; do
  echo "$out/walj-$plat-$version.tgz"
done
