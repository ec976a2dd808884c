//! Issue 14: the fold snapshot. A fold that starts from a snapshot and reads the journal's
//! tail folds exactly like a full fold (property test over generated journals, and the
//! real fixtures); a snapshot that does not match the journal (compacted, truncated, another
//! version, damaged) is never used.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use std::fs::{self, OpenOptions};
use std::io::Write;
use std::path::Path;

use proptest::prelude::*;
use walj::fold::snapshot::{self, Unused};
use walj::fold::{Fold, FoldOptions};
use walj::journal::build;
use walj::journal::record::{Blob, Record, how, kind, op};
use walj::journal::{JournalWriter, Source};

/// What a fold says, field by field (liveness is read fresh by both).
fn view(f: &Fold) -> String {
    format!(
        "{:#?}\n{:#?}\n{:#?}\nrecords {} lines {} end {}\n{:?}",
        f.entries, f.sessions, f.handoffs, f.records, f.report.lines, f.report.end, f.report.problems
    )
}

fn full(journal: &Path) -> Fold {
    Fold::load_from(Source::journal(journal), &FoldOptions::default()).unwrap()
}

/// Through the snapshot (written whenever anything was read past it).
fn cached(journal: &Path) -> Fold {
    match snapshot::load(journal, &FoldOptions::default(), 0).unwrap() {
        Some(f) => f,
        // No journal yet (nothing appended before the first cut): nothing to cache, the
        // caller folds in full.
        None => {
            assert!(!journal.exists(), "the snapshot applies");
            full(journal)
        }
    }
}

/// One generated line: records of a few sessions, ids and paths from small pools so that
/// they meet (outcomes before intents, persisted, resolutions, undo), id-less pairs, bad
/// lines.
fn line(g: (u8, u8, u8, u8)) -> Vec<u8> {
    let (kind_, s, i, p) = g;
    let session = ["sess-aaaaaa-1", "sess-bbbbbb-2", "sess-cccccc-3"][s as usize % 3];
    let id = format!("toolu_{}", i % 12);
    let path = format!("src/f{}.rs", p % 5);
    let blob = |n: u8| Some(if n.is_multiple_of(4) { Blob::Absent } else { Blob::Id(format!("{n:040x}")) });
    let file = |o: &str| {
        let mut r = Record::new(o, session);
        r.id = id.clone();
        r.path = path.clone();
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r
    };
    let r = match kind_ % 14 {
        0 | 1 => {
            let mut r = file(op::INTENT);
            r.before = blob(i);
            r
        }
        2 | 3 => {
            let mut r = file(op::APPLIED);
            r.after = blob(p);
            r
        }
        4 => file(op::FAILED),
        5 => file(op::PERSISTED),
        6 => build::resolution(file(op::RESOLVED), [how::DONE, how::NOT_APPLIED, how::HANDED_BACK][p as usize % 3], "user"),
        7 => build::session(Record::new(op::SESSION, session), [kind::START, kind::PROMPT, kind::STOP, kind::END][p as usize % 4]),
        8 => {
            // An id-less intent/outcome, paired by (session, tool, path).
            let mut r = file(if i % 2 == 0 { op::INTENT } else { op::APPLIED });
            r.id = walj::journal::record::new_id("w");
            r.extra.insert(walj::journal::key::PAIR.into(), true.into());
            r
        }
        9 => return b"{\"v\":2,\"op\":\"intent\",broken\n".to_vec(),
        10 => {
            let mut l = file(op::INTENT).to_line();
            l[5] ^= 0x01; // bad checksum
            return l;
        }
        11 => return b"\n".to_vec(),
        12 => {
            let mut r = Record::new(op::UNDO, session);
            r.target = Some(id.clone());
            r
        }
        _ => return format!("{{\"v\":1,\"sid\":\"{}\",\"ts\":\"2025-01-01T00:00:00Z\",\"event\":\"file_modified\",\"path\":\"{path}\",\"persisted\":false}}\n", &session[..6]).into_bytes(),
    };
    r.to_line()
}

fn append(journal: &Path, bytes: &[u8]) {
    OpenOptions::new().create(true).append(true).open(journal).unwrap().write_all(bytes).unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, failure_persistence: None, ..ProptestConfig::default() })]

    /// snapshot + tail == full, with the snapshot taken at a random cut, a torn tail at the
    /// cut or at the end, and a second snapshot + tail after more lines.
    #[test]
    fn a_fold_from_a_snapshot_equals_the_full_fold(
        lines in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()), 1..120),
        cut in 0usize..120,
        cut2 in 0usize..120,
        torn_at_cut in any::<bool>(),
        torn_at_end in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".walj")).unwrap();
        let journal = dir.path().join(".walj/journal.jsonl");
        let bytes: Vec<Vec<u8>> = lines.into_iter().map(line).collect();
        let cut = cut.min(bytes.len());
        let cut2 = cut2.clamp(cut, bytes.len());
        for b in &bytes[..cut] { append(&journal, b); }
        if torn_at_cut { append(&journal, b"{\"v\":2,\"op\":\"appl"); }
        prop_assert_eq!(view(&cached(&journal)), view(&full(&journal)));
        if torn_at_cut { append(&journal, b"\n"); }
        for b in &bytes[cut..cut2] { append(&journal, b); }
        prop_assert_eq!(view(&cached(&journal)), view(&full(&journal)));
        for b in &bytes[cut2..] { append(&journal, b); }
        if torn_at_end { append(&journal, b"{\"v\":2,\"op\":\"inte"); }
        prop_assert_eq!(snapshot::check(&journal), None);
        prop_assert_eq!(view(&cached(&journal)), view(&full(&journal)));
        // And what every reader calls.
        prop_assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
    }
}

/// The recorded hook fixtures, folded through a snapshot taken after each line.
#[test]
fn real_fixtures_fold_the_same_through_snapshots() {
    let repo = common::Repo::fixture_in("p", "hooks/crash-mid-write/project");
    let mut seen = 0;
    common::replay_crash_mid_write(&repo, true, |p| {
        let (code, _, err) = repo.hook_run(p, common::Parent::Timeout(20), common::Locate::Folder);
        assert_eq!(code, 0, "{err}");
        let journal = repo.journal();
        assert_eq!(view(&cached(&journal)), view(&full(&journal)));
        seen += 1;
    });
    assert!(seen > 5);
    let journal = repo.journal();
    let w = JournalWriter::new(&journal);
    w.append(&build::session(Record::new(op::SESSION, "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10"), kind::STOP)).unwrap();
    assert_eq!(snapshot::check(&journal), None, "appending keeps the snapshot usable");
    assert_eq!(view(&cached(&journal)), view(&full(&journal)));
}

fn journal_with_snapshot() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".walj")).unwrap();
    let journal = dir.path().join(".walj/journal.jsonl");
    for i in 0..200u8 {
        append(&journal, &line((i % 8, i, i / 3, i / 7)));
    }
    cached(&journal);
    assert_eq!(snapshot::check(&journal), None);
    (dir, journal)
}

/// The snapshot is what a load reads: a byte changed early in the journal (outside the bytes
/// checked before the offset, same inode and length) is not seen by a load through the
/// snapshot, only by a full fold. (This is the check's known limit: an in-place edit of old
/// lines; walj never does one, and `walj compact` replaces the file.)
#[test]
fn a_load_reads_the_snapshot_not_the_covered_prefix() {
    let (_dir, journal) = journal_with_snapshot();
    let mut b = fs::read(&journal).unwrap();
    let start = b.iter().position(|&c| c == b'{').unwrap();
    b[start] = b'#'; // the first record becomes a malformed line
    fs::write(&journal, &b).unwrap();
    assert_eq!(snapshot::check(&journal), None);
    assert_ne!(view(&cached(&journal)), view(&full(&journal)));
}

/// Only a project's own journal is cached: never another machine's copy (`.walj/remotes/`),
/// nor a `--journal` file.
#[test]
fn only_a_projects_journal_has_a_snapshot() {
    assert_eq!(snapshot::path(Path::new("/p/.walj/journal.jsonl")), Some("/p/.walj/fold.snap".into()));
    assert_eq!(snapshot::path(Path::new("/p/.walj/remotes/ab12/journal.jsonl")), None);
    assert_eq!(snapshot::path(Path::new("/tmp/journal.jsonl")), None);
    assert_eq!(snapshot::path(Path::new("/p/.walj/other.jsonl")), None);
}

#[test]
fn a_replaced_journal_invalidates_the_snapshot() {
    let (_dir, journal) = journal_with_snapshot();
    // What compaction does: a new file renamed over the journal (same bytes, here).
    let copy = journal.with_file_name("journal.new");
    fs::copy(&journal, &copy).unwrap();
    fs::rename(&copy, &journal).unwrap();
    assert_eq!(snapshot::check(&journal), Some(Unused::Stale("the journal was replaced (compacted)")));
    assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
}

/// `walj sessions delete` rewrites the journal through compaction's code (`walj::compact`).
#[test]
fn a_journal_rewrite_invalidates_the_snapshot() {
    let repo = common::Repo::fixture_in("p", "hooks/crash-mid-write/project");
    common::replay_crash_mid_write(&repo, true, |p| {
        repo.hook_run(p, common::Parent::Timeout(20), common::Locate::Folder);
    });
    let journal = repo.journal();
    cached(&journal);
    assert_eq!(snapshot::check(&journal), None);
    let out = repo.ok(&["sessions", "delete", "8f14e45f", "--force", "--yes"]);
    assert!(!repo.records().is_empty() || !out.is_empty());
    assert!(matches!(snapshot::check(&journal), Some(Unused::Stale(_))), "{:?}", snapshot::check(&journal));
    assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
}

#[test]
fn a_truncated_journal_invalidates_the_snapshot() {
    let (_dir, journal) = journal_with_snapshot();
    let len = fs::metadata(&journal).unwrap().len();
    OpenOptions::new().write(true).open(&journal).unwrap().set_len(len / 2).unwrap();
    assert_eq!(snapshot::check(&journal), Some(Unused::Stale("the journal is shorter than the snapshot")));
    assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
}

#[test]
fn a_journal_rewritten_in_place_invalidates_the_snapshot() {
    let (_dir, journal) = journal_with_snapshot();
    let mut b = fs::read(&journal).unwrap();
    let n = b.len();
    b[n - 10] ^= 0x20;
    fs::write(&journal, &b).unwrap(); // same inode, same length
    assert_eq!(snapshot::check(&journal), Some(Unused::Stale("the journal's bytes before the snapshot changed")));
    assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
}

#[test]
fn another_version_or_a_damaged_snapshot_is_not_used() {
    let (_dir, journal) = journal_with_snapshot();
    let snap = snapshot::path(&journal).unwrap();
    let good = fs::read(&snap).unwrap();
    let mut other = good.clone();
    other[20] = b'9'; // "walj fold snapshot v9"
    fs::write(&snap, &other).unwrap();
    assert_eq!(snapshot::check(&journal), Some(Unused::Stale("another version")));
    let mut flipped = good.clone();
    let n = flipped.len();
    flipped[n - 5] ^= 0x01;
    fs::write(&snap, &flipped).unwrap();
    assert!(matches!(snapshot::check(&journal), Some(Unused::Damaged(_))));
    fs::write(&snap, &good[..good.len() / 2]).unwrap();
    assert!(matches!(snapshot::check(&journal), Some(Unused::Damaged(_))));
    assert_eq!(view(&Fold::load(&journal, &FoldOptions::default()).unwrap()), view(&full(&journal)));
}

/// Issue 14 item 3: a Stop verifies its own session's entries from the fold snapshot and the
/// lines after it, without reading the rest of the journal. Shown by a change only a full read
/// would see: the line that settled this session's early entry is made unreadable in place
/// (inside the snapshot's prefix). Reading the whole journal, the Stop would find the entry
/// unverified and write a `persisted` record for it; through the snapshot it stays settled.
#[test]
fn a_stop_verifies_its_session_from_the_snapshot_not_the_whole_journal() {
    let repo = common::Repo::new(&[("a.txt", "old\n")]);
    repo.write("a.txt", "new\n");
    let journal = repo.path(".walj/journal.jsonl");
    fs::create_dir_all(repo.path(".walj")).unwrap();
    let me = "5e551011-0000-4000-8000-00000000000a";
    let w = JournalWriter::new(&journal);
    let mut r = Record::new(op::INTENT, me);
    r.id = "toolu_01EarlyEdit".into();
    r.tool = Some("Edit".into());
    r.event = "file_modified".into();
    r.path = "a.txt".into();
    r.before = Some(Blob::Id(walj::store::blob_id(b"old\n")));
    w.append(&r).unwrap();
    r.op = op::APPLIED.into();
    r.before = None;
    r.after = Some(Blob::Id(walj::store::blob_id(b"new\n")));
    w.append(&r).unwrap();
    let settled_at = fs::metadata(&journal).unwrap().len();
    r.op = op::PERSISTED.into();
    r.persisted = true;
    w.append(&r).unwrap();
    // Another session's work: more than the 1 MB a fold reads before it writes a snapshot.
    let mut bulk = Vec::new();
    for i in 0..4000 {
        let mut o = Record::new(op::INTENT, "0the0000-0000-4000-8000-00000000000b");
        o.id = format!("toolu_01Other{i}");
        o.tool = Some("Edit".into());
        o.event = "file_modified".into();
        o.path = format!("src/other_{i}.rs");
        o.before = Some(Blob::Id(format!("{i:040x}")));
        bulk.extend(o.to_line());
        o.op = op::APPLIED.into();
        o.after = Some(Blob::Id(format!("{:040x}", i + 1)));
        bulk.extend(o.to_line());
        o.op = op::PERSISTED.into();
        o.persisted = true;
        bulk.extend(o.to_line());
    }
    w.append_bytes(&bulk).unwrap();
    assert!(fs::metadata(&journal).unwrap().len() > 1 << 20);
    let out = common::walj_at(&repo.root).arg("recover").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot::check(&journal), None, "recover left a snapshot");

    let mut b = fs::read(&journal).unwrap();
    assert_eq!(b[settled_at as usize], b'{');
    b[settled_at as usize] = b'#';
    fs::write(&journal, &b).unwrap();
    assert_eq!(snapshot::check(&journal), None, "an in-place edit of old lines is not seen");

    let stop = serde_json::json!({
        "session_id": me, "transcript_path": repo.path("no-transcript.jsonl"), "cwd": repo.root,
        "hook_event_name": "Stop", "stop_hook_active": false,
    });
    common::hook_ok(&repo.root, &stop.to_string(), common::Parent::Test);
    let (records, _) = common::journal_scan(&repo.root);
    let verified_again = records.iter().filter(|r| r.op == op::PERSISTED && r.id == "toolu_01EarlyEdit").count();
    assert_eq!(verified_again, 0, "the Stop read the journal's prefix instead of the snapshot");
    // The full read does see the damaged line: the snapshot is what made the difference.
    assert!(full(&journal).entries.iter().any(|e| e.id == "toolu_01EarlyEdit"));
}

/// A journal of more than 1 MB (a fold of it writes a snapshot) in a git repository.
fn big_project() -> (common::Repo, std::path::PathBuf) {
    let repo = common::Repo::new(&[("a.txt", "a\n")]);
    fs::create_dir_all(repo.path(".walj")).unwrap();
    let journal = repo.path(".walj/journal.jsonl");
    for i in 0..1200u32 {
        append(&journal, &line(((i % 8) as u8, (i % 251) as u8, (i / 3 % 251) as u8, (i / 7 % 251) as u8)));
    }
    let mut bulk = Vec::new();
    for i in 0..3000 {
        let mut o = Record::new(op::INTENT, "b0000000-0000-4000-8000-00000000000b");
        o.id = format!("toolu_01Bulk{i}");
        o.tool = Some("Edit".into());
        o.event = "file_modified".into();
        o.path = format!("src/bulk_{i}.rs");
        o.before = Some(Blob::Id(format!("{i:040x}")));
        bulk.extend(o.to_line());
        o.op = op::APPLIED.into();
        o.after = Some(Blob::Id(format!("{:040x}", i + 1)));
        bulk.extend(o.to_line());
        if i % 10 != 0 {
            o.op = op::PERSISTED.into();
            o.persisted = true;
            bulk.extend(o.to_line());
        }
    }
    append(&journal, &bulk);
    assert!(fs::metadata(&journal).unwrap().len() > 1 << 20);
    (repo, journal)
}

/// Issue 14: `kill -9` of walj processes while they write the snapshot (a fold that read more
/// than 1 MB writes one) never leaves a snapshot that folds differently from the journal,
/// and the temp files of killed writers do not pile up. Iterations: WALJ_KILL_ITERATIONS
/// (default 40, at most 150).
#[test]
fn kill_9_during_snapshot_writes_never_leaves_a_wrong_snapshot() {
    let (repo, journal) = big_project();
    let snap = repo.path(".walj/fold.snap");
    let iterations: u64 =
        std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(40).min(150);
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut written = 0;
    for i in 0..iterations {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        if i % 2 == 0 {
            // No snapshot: the next fold reads everything and writes one.
            let _ = fs::remove_file(&snap);
        } else {
            for k in 0..20u32 {
                let k = (i as u32).wrapping_mul(31).wrapping_add(k);
                append(&journal, &line(((k % 8) as u8, (k % 251) as u8, (k / 5 % 251) as u8, (k / 11 % 251) as u8)));
            }
        }
        let mut child = std::process::Command::new(common::walj_bin())
            .arg("recover")
            .current_dir(&repo.root)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        std::thread::sleep(std::time::Duration::from_micros(seed % 250_000));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if snapshot::check(&journal).is_none() {
            written += 1;
            assert_eq!(view(&cached(&journal)), view(&full(&journal)), "iteration {i}: snapshot + tail != full");
        }
    }
    assert!(written > 0, "no run got as far as writing a snapshot: the loop tested nothing");
    let temps = fs::read_dir(repo.path(".walj"))
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with(".fold.snap.tmp-"))
        .count();
    assert!(temps as u64 <= iterations, "{temps} temp files");
}

/// A temp file a killed writer left (older than a minute) is removed by the next writer.
#[test]
fn a_killed_writers_temp_file_is_swept_by_the_next_writer() {
    let (repo, journal) = big_project();
    let stale = repo.path(".walj/.fold.snap.tmp-4000001");
    let fresh = repo.path(".walj/.fold.snap.tmp-4000002");
    fs::write(&stale, b"cut short").unwrap();
    fs::write(&fresh, b"being written").unwrap();
    let st = std::process::Command::new("touch").args(["-d", "10 minutes ago"]).arg(&stale).status().unwrap();
    assert!(st.success());
    let out = common::walj_at(&repo.root).arg("recover").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot::check(&journal), None, "recover wrote a snapshot");
    assert!(!stale.exists(), "the stale temp file is swept");
    assert!(fresh.exists(), "a live writer's temp file is left alone");
}
