#!/bin/sh
# Bytes `walj sync` uploads for a 10-line append to a large journal (issue 18): the pack git
# sends (`git pack-objects --revs --thin`, the remote's previous tip as base), and the time of
# the first and the second sync. MB sets the journal size (default 100); ENCRYPT=1 syncs encrypted
# (to an age recipient).
#
# MACHINES=N (with ENTRIES, default 100000): instead, N machines each publish a journal of
# ENTRIES entries (all settled but 10), one more checkout fetches them all, then runs
# `walj recover` over every copy (from the copies' caches the sync wrote, then once more
# without them); prints the times (issue 18's figure: MACHINES=20).
# Debug build (what `cargo test` builds); with RELEASE=1 (MACHINES only) the walj commands run
# the release build instead (WALJ_BIN, scripts/walj-bin.sh), which this script does not
# build: run `cargo build --release --locked` first.
set -eu
cd "$(dirname "$0")/.."
if [ -n "${MACHINES:-}" ]; then
    if [ "${RELEASE:-0}" = 1 ]; then
        WALJ_BIN="$(scripts/walj-bin.sh release)"
        if [ ! -x "$WALJ_BIN" ]; then
            echo "RELEASE=1: $WALJ_BIN is missing; build it first: cargo build --release --locked" >&2
            exit 1
        fi
        export WALJ_BIN
    fi
    WALJ_SYNC_BENCH_MACHINES="$MACHINES" WALJ_SYNC_BENCH_ENTRIES="${ENTRIES:-100000}" \
        cargo test --locked --test sync sync::many_machines -- --nocapture 2>&1 | grep 'sync bench'
    exit 0
fi
if [ "${RELEASE:-0}" = 1 ]; then
    echo "RELEASE=1 times the release binary with MACHINES=N only" >&2
    exit 1
fi
WALJ_SYNC_BENCH_MB="${MB:-100}" WALJ_SYNC_BENCH_ENCRYPT="${ENCRYPT:-0}" cargo test --locked --test sync sync::ten_line_append -- --nocapture 2>&1 | grep 'sync bench'
