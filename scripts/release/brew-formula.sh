#!/usr/bin/env bash
# Print walj's Homebrew formula for a release, from the release's SHA256SUMS:
#   scripts/release/brew-formula.sh VERSION BASE_URL SHA256SUMS > walj.rb
# BASE_URL is the release's download folder (https://…/releases/download/vVERSION). The formula
# installs the prebuilt binary of the Mac or Linux it runs on (no build); the release workflow
# commits it to the tap named in its settings.
set -euo pipefail
die() { echo "brew-formula.sh: $*" >&2; exit 1; }
[ $# -eq 3 ] || die "usage: brew-formula.sh VERSION BASE_URL SHA256SUMS"
version=$1 base=$2 sums=$3
case $base in https://*) ;; *) die "BASE_URL must be https: $base" ;; esac
sha() {
  local s
  s=$(awk -v n="walj-$version-$1.tar.gz" '$2 == n {print $1}' "$sums")
  [ -n "$s" ] || die "SHA256SUMS has no walj-$version-$1.tar.gz"
  echo "$s"
}
# Each checksum before printing anything: a missing archive fails the script, not the formula.
mac_arm=$(sha aarch64-apple-darwin)
mac_intel=$(sha x86_64-apple-darwin)
linux_arm=$(sha aarch64-unknown-linux-musl)
linux_intel=$(sha x86_64-unknown-linux-musl)
cat <<RUBY
class Walj < Formula
  desc "Write-ahead journal that makes Claude Code sessions crash-resilient"
  homepage "${base%/releases/download/*}"
  version "$version"
  license any_of: ["MIT", "Apache-2.0"]

  on_macos do
    on_arm do
      url "$base/walj-$version-aarch64-apple-darwin.tar.gz"
      sha256 "$mac_arm"
    end
    on_intel do
      url "$base/walj-$version-x86_64-apple-darwin.tar.gz"
      sha256 "$mac_intel"
    end
  end

  on_linux do
    on_arm do
      url "$base/walj-$version-aarch64-unknown-linux-musl.tar.gz"
      sha256 "$linux_arm"
    end
    on_intel do
      url "$base/walj-$version-x86_64-unknown-linux-musl.tar.gz"
      sha256 "$linux_intel"
    end
  end

  def install
    bin.install "walj"
  end

  test do
    assert_match "walj #{version}", shell_output("#{bin}/walj --version")
  end
end
RUBY
