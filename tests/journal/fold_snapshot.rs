//! The fold snapshot. A fold that starts from a snapshot and reads the journal's
//! tail folds exactly like a full fold (property test over generated journals, and the
//! real fixtures); a snapshot that does not match the journal (compacted, truncated, another
//! version, damaged) is never used.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

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
pub(crate) fn view(f: &Fold) -> String {
    format!(
        "{:#?}\n{:#?}\n{:#?}\nrecords {} lines {} end {}\n{:?}",
        f.entries, f.sessions, f.handoffs, f.records, f.report.lines, f.report.end, f.report.problems
    )
}

pub(crate) fn full(journal: &Path) -> Fold {
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
pub(crate) fn line(g: (u8, u8, u8, u8)) -> Vec<u8> {
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

pub(crate) fn append(journal: &Path, bytes: &[u8]) {
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
    let repo = crate::common::Repo::fixture_in("p", "hooks/crash-mid-write/project");
    let mut seen = 0;
    crate::common::replay_crash_mid_write(&repo, true, |p| {
        let (code, _, err) = repo.hook_run(p, crate::common::Parent::Timeout(20), crate::common::Locate::Folder);
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
    let repo = crate::common::Repo::fixture_in("p", "hooks/crash-mid-write/project");
    crate::common::replay_crash_mid_write(&repo, true, |p| {
        repo.hook_run(p, crate::common::Parent::Timeout(20), crate::common::Locate::Folder);
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
    let repo = crate::common::Repo::new(&[("a.txt", "old\n")]);
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
    let out = crate::common::walj_at(&repo.root).arg("recover").output().unwrap();
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
    crate::common::hook_ok(&repo.root, &stop.to_string(), crate::common::Parent::Test);
    let (records, _) = crate::common::journal_scan(&repo.root);
    let verified_again = records.iter().filter(|r| r.op == op::PERSISTED && r.id == "toolu_01EarlyEdit").count();
    assert_eq!(verified_again, 0, "the Stop read the journal's prefix instead of the snapshot");
    // The full read does see the damaged line: the snapshot is what made the difference.
    assert!(full(&journal).entries.iter().any(|e| e.id == "toolu_01EarlyEdit"));
}

/// A journal of more than 1 MB (a fold of it writes a snapshot) in a git repository.
fn big_project() -> (crate::common::Repo, std::path::PathBuf) {
    let repo = crate::common::Repo::new(&[("a.txt", "a\n")]);
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
        let mut child = std::process::Command::new(crate::common::walj_bin())
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
    let out = crate::common::walj_at(&repo.root).arg("recover").output().unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(snapshot::check(&journal), None, "recover wrote a snapshot");
    assert!(!stale.exists(), "the stale temp file is swept");
    assert!(fresh.exists(), "a live writer's temp file is left alone");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// A fold in steps (issue 28): each step that runs out of time leaves a snapshot that is a
    /// valid prefix (snapshot + tail == full fold), the next load continues from it, and the
    /// last one ends like a fold without steps. Steps of a few hundred bytes, a deadline that
    /// has always passed (one step per load), zeroed bytes (a crash's hole) anywhere.
    #[test]
    fn a_fold_in_steps_keeps_a_valid_prefix_after_every_step(
        lines in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()), 1..120),
        step in 64u64..3000,
        zeros_at in proptest::option::of((0usize..120, 1usize..600)),
        torn_at_end in any::<bool>(),
    ) {
        let dir = tempfile::tempdir().unwrap();
        fs::create_dir(dir.path().join(".walj")).unwrap();
        let journal = dir.path().join(".walj/journal.jsonl");
        let mut bytes: Vec<Vec<u8>> = lines.into_iter().map(line).collect();
        if let Some((at, n)) = zeros_at {
            let mut z = vec![0u8; n];
            z.push(b'\n');
            bytes.insert(at.min(bytes.len()), z);
        }
        for b in &bytes { append(&journal, b); }
        if torn_at_end { append(&journal, b"{\"v\":2,\"op\":\"inte"); }
        let want = view(&full(&journal));
        let snap = snapshot::path(&journal);
        let steps = snapshot::Steps { write_after: 0, bytes: step, deadline: Some(std::time::Instant::now()) };
        let mut last = 0;
        let done = loop {
            match snapshot::load_stepped(&journal, snap.clone(), &FoldOptions::default(), &steps).unwrap().unwrap() {
                snapshot::Budgeted::Done(f) => break *f,
                snapshot::Budgeted::Partial { offset, len } => {
                    prop_assert!(offset > last && offset < len, "progress: {last} → {offset} of {len}");
                    prop_assert_eq!(header_offset(&journal), Some(offset), "the step's snapshot is on disk");
                    last = offset;
                    // A reader that writes nothing: the step's snapshot + the tail.
                    let through = snapshot::load(&journal, &FoldOptions::default(), u64::MAX).unwrap().unwrap();
                    prop_assert_eq!(view(&through), want.clone());
                }
            }
        };
        prop_assert_eq!(view(&done), want.clone());
        prop_assert_eq!(view(&cached(&journal)), want);
    }
}

/// The journal offset `.walj/fold.snap` covers, from its header (`None`: no snapshot).
fn header_offset(journal: &Path) -> Option<u64> {
    let raw = fs::read(snapshot::path(journal)?).ok()?;
    let header = raw.split(|&b| b == b'\n').nth(1)?;
    serde_json::from_slice::<serde_json::Value>(header).ok()?["offset"].as_u64()
}

/// Appends settled work of an ended session until the journal holds `bytes`: what a long
/// history is made of (intents, outcomes, persisted records of a few hundred paths).
fn pad(journal: &Path, bytes: u64) {
    let session = "f0000000-0000-4000-8000-00000000000f";
    let mut block = Vec::with_capacity(4 << 20);
    let mut i = 0u64;
    let mut have = fs::metadata(journal).map_or(0, |m| m.len());
    while have < bytes {
        let mut o = Record::new(op::INTENT, session);
        o.id = format!("toolu_01Pad{i}");
        o.tool = Some("Edit".into());
        o.event = "file_modified".into();
        o.path = format!("src/pad_{}.rs", i % 500);
        o.before = Some(Blob::Id(format!("{i:040x}")));
        block.extend(o.to_line());
        o.op = op::APPLIED.into();
        o.after = Some(Blob::Id(format!("{:040x}", i + 1)));
        block.extend(o.to_line());
        o.op = op::PERSISTED.into();
        o.persisted = true;
        block.extend(o.to_line());
        i += 1;
        if block.len() >= 4 << 20 {
            have += block.len() as u64;
            append(journal, &block);
            block.clear();
        }
    }
    append(journal, &block);
    append(journal, &build::session(Record::new(op::SESSION, session), kind::END).to_line());
}

/// A crashed session (an Edit applied, a Write whose outcome never came), then a long
/// history: a journal whose fold takes longer than SessionStart's budget in a debug build.
fn long_crashed_project(bytes: u64) -> crate::common::Repo {
    let repo = crate::common::Repo::fixture_in("p", "hooks/crash-mid-write/project");
    crate::common::replay_crash_mid_write(&repo, false, |p| {
        assert_eq!(repo.hook_run(p, crate::common::Parent::Timeout(20), crate::common::Locate::Folder).0, 0);
    });
    pad(&repo.path(".walj/journal.jsonl"), bytes);
    repo
}

/// How long folding `journal` in full takes here (a debug build is far slower than release).
fn full_fold_time(journal: &Path) -> std::time::Duration {
    let t = std::time::Instant::now();
    let _ = full(journal);
    t.elapsed()
}

/// The CPU time (user + system) this thread spent in a full fold of `journal` (the fold runs
/// on one thread). CPU time, not wall time: on a loaded machine the wall time of the fold and
/// of the hook it is compared with stretch by different amounts, their CPU times do not.
#[cfg(unix)]
fn full_fold_cpu(journal: &Path) -> std::time::Duration {
    let cpu = || {
        let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
        // SAFETY: a valid out-pointer for clock_gettime.
        let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
        assert_eq!(r, 0, "clock_gettime");
        std::time::Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
    };
    let before = cpu();
    let _ = full(journal);
    cpu() - before
}

/// Runs one `walj hook` with the test process as its parent (the session stays live); returns
/// its stdout and the CPU time (user + system) it used, read through `wait4` for this child
/// alone (`RUSAGE_CHILDREN` would mix in other tests' children).
#[cfg(unix)]
fn hook_live_cpu(root: &Path, payload: &str) -> (String, std::time::Duration) {
    use std::io::Read;
    use std::os::unix::process::ExitStatusExt;
    use std::process::{Command, Stdio};
    let mut child = Command::new(crate::common::walj_bin())
        .arg("--project")
        .arg(root)
        .arg("hook")
        .current_dir(root)
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(payload.as_bytes()).unwrap();
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    // SAFETY: zeroed rusage is a valid out-value; wait4 reaps this child only.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
    assert_eq!(r, pid, "wait4");
    assert!(std::process::ExitStatus::from_raw(status).success(), "walj hook must exit 0");
    std::mem::forget(child);
    let tv = |t: libc::timeval| std::time::Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (out, tv(usage.ru_utime) + tv(usage.ru_stime))
}

/// Issue 28 item 2: SessionStart on a journal it cannot fold in its budget returns in
/// budget without a note, keeps its progress in the snapshot (a reader it starts finishes
/// it), records no start yet; the session's first UserPromptSubmit then tells the crash as
/// `additionalContext` and records the marks, the start, the prompt, in that order.
#[test]
#[cfg(unix)]
fn a_session_start_out_of_budget_tells_the_crash_at_the_first_prompt() {
    let repo = long_crashed_project(256 << 20);
    let journal = repo.path(".walj/journal.jsonl");
    let len = fs::metadata(&journal).unwrap().len();
    let took = full_fold_time(&journal);
    let full_cpu = full_fold_cpu(&journal);
    eprintln!("a full fold of {len} bytes takes {took:?} ({full_cpu:?} of CPU)");
    assert!(took > std::time::Duration::from_millis(2500), "the journal folds in {took:?}: too short to test a budget");
    let _ = fs::remove_file(repo.path(".walj/fold.snap"));
    let before = repo.records().len();
    let claude =
        crate::common::Claude { repo: &repo, session: "22222222-3333-4444-5555-666666666666".into(), live: true };
    let mut v = serde_json::json!({
        "session_id": claude.session, "cwd": repo.root, "hook_event_name": "SessionStart",
        "transcript_path": format!("/home/test/.claude/projects/x/{}.jsonl", claude.session), "source": "startup",
    });
    let (out, start_cpu) = hook_live_cpu(&repo.root, &v.to_string());
    assert_eq!(out.trim(), "", "no note at a SessionStart out of budget");
    eprintln!("SessionStart used {start_cpu:?} of CPU");
    // Its fold stops at its 1.5 s budget (wall time: on a loaded machine it gets less CPU in
    // it, never more): its CPU time stays under 3.5 s and under the full fold's. CPU time, so
    // that the machine's load can neither fail nor pass the check (the wall time of the hook
    // and of the fold it is compared with stretch by different amounts on a busy machine).
    let bound = std::time::Duration::from_millis(3500).min(full_cpu);
    assert!(start_cpu < bound, "SessionStart used {start_cpu:?} of CPU (full fold {full_cpu:?}, bound {bound:?})");
    let got = header_offset(&journal).expect("the fold's progress is kept");
    assert!(got > 0 && got < len, "snapshot at {got} of {len}");
    assert_eq!(repo.records().len(), before, "the start waits for the first prompt");
    // The reader SessionStart started finishes the snapshot.
    let wait = std::time::Instant::now();
    // To its end, but for a tail shorter than a snapshot is written for.
    while header_offset(&journal).is_none_or(|at| at + snapshot::WRITE_AFTER < len) {
        assert!(wait.elapsed() < std::time::Duration::from_secs(240), "the background fold never finished");
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
    v = serde_json::json!({
        "session_id": claude.session, "cwd": repo.root, "hook_event_name": "UserPromptSubmit",
        "transcript_path": "/home/test/.claude/projects/x/t.jsonl", "prompt": "go on",
    });
    v["prompt_id"] = serde_json::json!("p-1");
    let (out, prompt_cpu) = hook_live_cpu(&repo.root, &v.to_string());
    let o: serde_json::Value = serde_json::from_str(out.trim()).expect("one JSON object at the first prompt");
    assert_eq!(o["hookSpecificOutput"]["hookEventName"], "UserPromptSubmit", "{o}");
    let context = o["hookSpecificOutput"]["additionalContext"].as_str().unwrap();
    assert!(context.contains("config/settings.json"), "{context}");
    assert!(o["systemMessage"].as_str().unwrap().contains("2 changes"), "{o}");
    assert!(prompt_cpu < bound, "the first prompt used {prompt_cpu:?} of CPU (bound {bound:?})");
    let recs = repo.records();
    let new: Vec<(String, String)> = recs[before..]
        .iter()
        .filter(|r| r["op"] == "session")
        .map(|r| (r["kind"].as_str().unwrap_or("").to_string(), r["session"].as_str().unwrap_or("").to_string()))
        .collect();
    let kinds: Vec<&str> = new.iter().map(|(k, _)| k.as_str()).collect();
    assert_eq!(kinds, ["announced", "start", "prompt"], "{new:?}");
    assert!(new.iter().all(|(_, s)| s == &claude.session));
    assert!(!repo.path(".walj/deferred").read_dir().unwrap().any(|_| true), "nothing waits any more");
    // Told once: the next session hears nothing of it.
    let other =
        crate::common::Claude { repo: &repo, session: "33333333-4444-5555-6666-777777777777".into(), live: true };
    let out = other.start();
    assert!(!out.contains("config/settings.json"), "{out}");
}

/// Issue 28: `kill -9` at random points of folds that write their snapshot in steps (`walj
/// status`: a reader that folds to the end, as the one SessionStart starts does) never
/// leaves a snapshot that folds differently from the journal, never loses a step written
/// (the snapshot's offset only grows), and the journal is folded to its end in the end.
/// Iterations: WALJ_KILL_ITERATIONS (default 12, at most 150).
#[test]
fn kill_9_loop_during_a_stepped_snapshot_loses_no_folded_work() {
    let repo = long_crashed_project(96 << 20);
    let journal = repo.path(".walj/journal.jsonl");
    let len = fs::metadata(&journal).unwrap().len();
    let took = full_fold_time(&journal);
    eprintln!("a full fold of {len} bytes takes {took:?}");
    let iterations: u64 =
        std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(12).min(150);
    let mut seed = 0x9e37_79b9_7f4a_7c15u64;
    let (mut last, mut grew) = (0u64, 0);
    let mut i = 0;
    // Until the snapshot covers the journal but for a tail shorter than one is written for.
    while i < iterations || header_offset(&journal).is_none_or(|at| at + snapshot::WRITE_AFTER < len) {
        assert!(
            i < iterations + 40,
            "the snapshot never reached the journal's end: {:?} of {len}",
            header_offset(&journal)
        );
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let mut child = std::process::Command::new(crate::common::walj_bin())
            .args(["status", "--json"])
            .current_dir(&repo.root)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .spawn()
            .unwrap();
        // Anywhere in the first three quarters of a full fold's time (the child also starts up
        // first): before and between steps. A window past the fold's end let the first run that
        // wrote anything finish every step, and then the snapshot grew once only.
        let window = (took.as_micros() as u64 * 3 / 4).max(1);
        std::thread::sleep(std::time::Duration::from_micros(seed % window));
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        if let Some(at) = header_offset(&journal) {
            assert!(at >= last, "iteration {i}: the snapshot went back from {last} to {at}");
            grew += usize::from(at > last);
            last = at;
            assert_eq!(snapshot::check(&journal), None, "iteration {i}: a snapshot that does not apply");
        }
        i += 1;
    }
    assert!(grew >= 2, "the snapshot grew {grew} times: no run was cut off between steps");
    // The snapshot every killed run left, read without writing: exactly the full fold.
    let through = snapshot::load(&journal, &FoldOptions::default(), u64::MAX).unwrap().unwrap();
    assert_eq!(view(&through), view(&full(&journal)));
}

/// `walj fold`, what a SessionStart out of time starts detached: it folds the journal into
/// its snapshot to the end and prints nothing; where there is no journal it writes nothing.
#[test]
fn walj_fold_writes_the_snapshot_and_nothing_else() {
    let repo = long_crashed_project(24 << 20);
    let journal = repo.path(".walj/journal.jsonl");
    let _ = fs::remove_file(repo.path(".walj/fold.snap"));
    let len = fs::metadata(&journal).unwrap().len();
    let out = crate::common::walj_at(&repo.root).arg("fold").output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty() && out.stderr.is_empty(), "{out:?}");
    let at = header_offset(&journal).expect("a snapshot");
    assert!(at + snapshot::WRITE_AFTER >= len, "snapshot at {at} of {len}");
    assert_eq!(view(&cached(&journal)), view(&full(&journal)), "the snapshot folds the same");
    assert!(!repo.path(".walj/errors.log").exists());

    let empty = tempfile::tempdir().unwrap();
    let out = crate::common::walj_at(empty.path()).arg("fold").output().unwrap();
    assert!(out.status.success() && out.stdout.is_empty(), "{out:?}");
    assert_eq!(fs::read_dir(empty.path()).unwrap().count(), 0, "nothing written where there is no journal");
}
