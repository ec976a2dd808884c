//! The floor of any durable file hook, for `scripts/bench-hook-ab.py` (WALJ_BENCH_FLOOR):
//! a process that reads its stdin whole, appends one 350-byte line to `floor-journal.jsonl`
//! in its folder and `fdatasync`s it — the writes walj's contract needs, and no fewer, with
//! none of walj's own work (no parse, no image, no lock). Build: `rustc -O -o FLOOR
//! scripts/hook-floor.rs`.
//!
//! Built with `--cfg nomain` (`rustc -O --cfg nomain -o FLOOR scripts/hook-floor.rs`) it has
//! its own C `main`, skipping std's runtime start as walj's binary does on Linux
//! (src/main.rs): the floor to hold walj against once walj skips it too.
#![cfg_attr(nomain, no_main)]

use std::io::{Read, Write};

fn floor() -> std::io::Result<()> {
    let mut payload = Vec::new();
    std::io::stdin().read_to_end(&mut payload)?;
    let mut line = format!("{{\"v\":2,\"op\":\"intent\",\"payload_bytes\":{}", payload.len()).into_bytes();
    line.resize(349, b' ');
    line.extend_from_slice(b"}\n");
    let mut f = std::fs::OpenOptions::new().append(true).create(true).open("floor-journal.jsonl")?;
    f.write_all(&line)?;
    f.sync_data()
}

#[cfg(not(nomain))]
fn main() -> std::io::Result<()> {
    floor()
}

#[cfg(nomain)]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: i32, _argv: *const *const u8) -> i32 {
    i32::from(floor().is_err())
}
