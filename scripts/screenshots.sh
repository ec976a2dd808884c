#!/usr/bin/env bash
# Renders the README screenshots of `walj tui` into screenshots/*.png.
#
# The screens are drawn by the real TUI code into ratatui's TestBackend on the demo
# project (`walj tui --demo`), written as SVG by the ignored test `screenshots` in
# tests/tui/render.rs, then rasterised with rsvg-convert (installed with apt-get when missing).
# Rerun after any change to the screens: `scripts/screenshots.sh`.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v rsvg-convert >/dev/null; then
  if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
    apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq librsvg2-bin fonts-dejavu-core >/dev/null
  else
    echo "screenshots.sh needs rsvg-convert (Debian/Ubuntu: apt-get install librsvg2-bin; macOS: brew install librsvg)" >&2
    exit 1
  fi
fi
out="$(pwd)/screenshots"
mkdir -p "$out"
WALJ_SCREENSHOTS="$out" cargo test --quiet --test tui -- --ignored --exact render::screenshots
for svg in "$out"/*.svg; do
  rsvg-convert --zoom 1.5 "$svg" -o "${svg%.svg}.png"
  echo "wrote ${svg%.svg}.png"
done
rm -f "$out"/*.svg
