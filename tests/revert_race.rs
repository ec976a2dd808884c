//! Revert against a program writing the same file at the same time (issue 13, item 8).
//!
//! Through the real binary: each round makes an entry on a file of its own, then runs
//! `walj revert` while a racer thread rewrites that file in a loop (atomically: a temp file
//! renamed over it, as editors and formatters do), alternating the bytes revert plans against
//! with bytes of its own. Whatever the racer wrote and something other than the racer itself
//! replaced must be on disk at the end or in walj's store: a revert never loses a concurrent
//! write. Rounds: WALJ_RACE_ROUNDS (default 300).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use common::{Claude, Repo};
use serde_json::Value;
use walj::store::blob_id;

const SESSION: &str = "5e55a0b1-0000-4000-8000-00000000ace8";
const NUMBERS: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

fn rounds() -> usize {
    std::env::var("WALJ_RACE_ROUNDS").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

/// What the racer saw of one round.
struct Raced {
    /// Every write of the racer that something else replaced (seen before its next write,
    /// or at the end).
    displaced: Vec<Vec<u8>>,
    writes: usize,
}

/// Rewrites `path` in a loop until `stop`: `plan` (the bytes revert plans against) and bytes
/// of its own in turn, each through a temp file renamed over it. Before each write it reads
/// the file: when that is not its own last write, something else replaced that write.
fn race(path: PathBuf, plan: Vec<u8>, round: usize, stop: Arc<AtomicBool>) -> Raced {
    let tmp = path.with_file_name(format!(".racer-{round}.tmp"));
    let mut last: Option<Vec<u8>> = None;
    let mut out = Raced { displaced: Vec::new(), writes: 0 };
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let cur = fs::read(&path).ok();
        if let Some(l) = &last
            && cur.as_ref() != Some(l)
        {
            out.displaced.push(l.clone());
        }
        let bytes = if n.is_multiple_of(2) {
            plan.clone()
        } else {
            // The last line changes (the entry changed the second): a revert planned against
            // these bytes merges cleanly.
            NUMBERS.replace("two", "TWO").replace("ten", &format!("racer {round} write {n}")).into_bytes()
        };
        n += 1;
        fs::write(&tmp, &bytes).unwrap();
        fs::rename(&tmp, &path).unwrap();
        last = Some(bytes);
        out.writes += 1;
    }
    let cur = fs::read(&path).ok();
    if let Some(l) = last
        && cur.as_ref() != Some(&l)
    {
        out.displaced.push(l);
    }
    out
}

fn in_store(root: &Path, id: &str) -> bool {
    root.join(".walj/store").join(&id[..2]).join(&id[2..]).is_file()
}

#[test]
fn a_revert_racing_a_writer_never_loses_a_write() {
    let rounds = rounds();
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    let c = Claude::new(&repo, SESSION);
    let (mut lost, mut displaced, mut reported, mut reverted, mut writes) = (Vec::new(), 0, 0, 0, 0);
    for round in 0..rounds {
        let rel = format!("race/f{round}.txt");
        repo.write(&rel, NUMBERS);
        let id = format!("toolu_RACE{round:04}");
        c.edit(&id, &rel, "two", "TWO");
        let post = repo.read(&rel).into_bytes();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (path, stop) = (repo.path(&rel), stop.clone());
            std::thread::spawn(move || race(path, post, round, stop))
        };
        let (code, out, err) = repo.run(&["revert", &id, "--json"]);
        stop.store(true, Ordering::Relaxed);
        let raced = racer.join().unwrap();
        writes += raced.writes;
        assert!(code == 0 || code == 1, "round {round}: exit {code}\nstdout: {out}\nstderr: {err}");
        if code == 0 || !out.trim().is_empty() {
            let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("round {round}: {e}: {out}\n{err}"));
            let o = &v["outcomes"][0];
            if o["changed"] == true {
                reverted += 1;
            }
            if o["concurrent"] == true {
                reported += 1;
                // What the user is told was kept is in the store.
                for k in o["kept"].as_array().unwrap() {
                    assert!(in_store(&repo.root, k.as_str().unwrap()), "round {round}: {o}");
                }
            }
        }
        let end = fs::read(repo.path(&rel)).ok();
        for d in raced.displaced {
            displaced += 1;
            if end.as_ref() != Some(&d) && !in_store(&repo.root, &blob_id(&d)) {
                lost.push(format!("round {round}: {:?}", String::from_utf8_lossy(&d).lines().last()));
            }
        }
    }
    eprintln!(
        "{rounds} rounds, {writes} racer writes, {displaced} displaced by another writer, \
         {reverted} reverts done, {reported} reported as concurrent, {} lost",
        lost.len()
    );
    assert!(lost.is_empty(), "{} racer writes lost (neither on disk nor in the store):\n{}", lost.len(), lost.join("\n"));
}
