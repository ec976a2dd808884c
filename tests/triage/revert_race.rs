//! Revert against a program writing the same file at the same time (issue 13, item 8).
//!
//! Through the real binary: each round makes an entry on a file of its own, then runs
//! `walj revert` while a racer thread rewrites that file in a loop (atomically: a temp file
//! renamed over it, as editors and formatters do), alternating the bytes revert plans against
//! with bytes of its own. Whatever the racer wrote and something other than the racer itself
//! replaced must be on disk at the end or in walj's store: a revert never loses a concurrent
//! write. Rounds: WALJ_RACE_ROUNDS (default 300; a third of that for the delete and undo
//! variants).

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use crate::common::{Claude, Repo};
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

/// What a round races.
#[derive(Clone, Copy, PartialEq)]
enum Race {
    /// `walj revert` of an Edit: the pre-image is swapped in.
    RevertEdit,
    /// `walj revert` of a Write that created the file: it is moved aside and deleted.
    RevertCreate,
    /// `walj undo` of a revert of an Edit: the post-image is swapped back in.
    Undo,
}

/// Runs `rounds` rounds of `what`, each on a file of its own with a racer beside the walj
/// command, and checks that every write the racer lost to something else is on disk or in
/// the store, and that every concurrent write walj reports is in the store and named by the
/// journal.
fn race_rounds(what: Race, rounds: usize) {
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    let c = Claude::new(&repo, SESSION);
    let (mut lost, mut displaced, mut reported, mut done, mut writes, mut swapped) = (Vec::new(), 0, 0, 0, 0, 0);
    let mut kept_ids = Vec::new();
    for round in 0..rounds {
        let rel = format!("race/f{round}.txt");
        let id = format!("toolu_RACE{round:04}");
        let args: Vec<&str> = match what {
            Race::RevertEdit => {
                repo.write(&rel, NUMBERS);
                c.edit(&id, &rel, "two", "TWO");
                vec!["revert", &id, "--json"]
            }
            Race::RevertCreate => {
                c.write(&id, &rel, &NUMBERS.replace("two", "TWO"));
                vec!["revert", &id, "--json"]
            }
            Race::Undo => {
                repo.write(&rel, NUMBERS);
                c.edit(&id, &rel, "two", "TWO");
                repo.ok(&["revert", &id]);
                vec!["undo", "--json"]
            }
        };
        let plan = fs::read(repo.path(&rel)).unwrap();
        let stop = Arc::new(AtomicBool::new(false));
        let racer = {
            let (path, stop) = (repo.path(&rel), stop.clone());
            std::thread::spawn(move || race(path, plan, round, stop))
        };
        let (code, out, err) = repo.run(&args);
        stop.store(true, Ordering::Relaxed);
        let raced = racer.join().unwrap();
        writes += raced.writes;
        // 0: done; 1: refused (the file changed before walj looked) or reported concurrent.
        assert!(code == 0 || code == 1, "round {round}: exit {code}\nstdout: {out}\nstderr: {err}");
        if !out.trim().is_empty() {
            let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("round {round}: {e}: {out}\n{err}"));
            let o = &v["outcomes"][0];
            if o["changed"] == true {
                done += 1;
            }
            assert_eq!(code == 1, v["concurrent"] == true, "round {round}: {v}");
            if o["concurrent"] == true {
                reported += 1;
                let kept = o["kept"].as_array().unwrap();
                if !kept.is_empty() {
                    swapped += 1;
                    if std::env::var_os("SHOWME").is_some() {
                        eprintln!("{out}");
                    }
                    assert!(o["message"].as_str().unwrap().contains("kept in the store"), "round {round}: {o}");
                }
                // What the user is told was kept is in the store.
                for k in kept {
                    let k = k.as_str().unwrap();
                    assert!(in_store(&repo.root, k), "round {round}: {o}");
                    kept_ids.push(k.to_string());
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
    // The journal names every kept write (so compaction keeps it).
    let recs = repo.records();
    for k in &kept_ids {
        assert!(
            recs.iter().any(|r| r["op"] == "audit" && r["kind"] == "concurrent_write" && r["before"] == k.as_str()),
            "no record names {k}"
        );
    }
    let verb = match what {
        Race::RevertEdit => "reverts of an edit",
        Race::RevertCreate => "reverts deleting a created file",
        Race::Undo => "undos of a revert",
    };
    eprintln!(
        "{rounds} {verb}: {writes} racer writes, {displaced} displaced by another writer, {done} done, \
         {reported} reported as concurrent ({swapped} found by the swap itself), {} lost",
        lost.len()
    );
    assert!(
        lost.is_empty(),
        "{} racer writes lost (neither on disk nor in the store):\n{}",
        lost.len(),
        lost.join("\n")
    );
}

#[test]
fn a_revert_racing_a_writer_never_loses_a_write() {
    race_rounds(Race::RevertEdit, rounds());
}

#[test]
fn a_revert_deleting_a_file_a_writer_races_never_loses_a_write() {
    race_rounds(Race::RevertCreate, rounds().div_ceil(3));
}

#[test]
fn an_undo_racing_a_writer_never_loses_a_write() {
    race_rounds(Race::Undo, rounds().div_ceil(3));
}
