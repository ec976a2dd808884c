//! The line index (`.walj/lines.idx`): a fold of one session through it (the session's
//! indexed lines, the loose ones, the unindexed tail) equals the full filtered fold, whatever
//! the cut the index was written at, torn tails included; an index that does not describe the
//! journal (replaced, truncated, damaged, lines moved under it) is never trusted; and the
//! real binary answers the same with the index as with a full scan.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::Path;

use proptest::prelude::*;
use walj::fold::located::{self, Skipped};
use walj::fold::{Fold, FoldOptions};
use walj::journal::Source;

use super::fold_snapshot::{append, line, view};

const FILTERS: [&str; 5] = ["sess-aaaaaa-1", "sess-bbbbbb", "sess-cccccc-3", "sess-", "sess-aaaaaa-9"];

fn opts(filter: &str, keep_settled: bool) -> FoldOptions {
    FoldOptions { session: Some(filter.to_string()), keep_settled, all_commands: keep_settled }
}

fn full(journal: &Path, o: &FoldOptions) -> Fold {
    Fold::load_from(Source::journal(journal), o).unwrap()
}

/// Through the index, which must apply.
fn indexed(journal: &Path, o: &FoldOptions) -> Fold {
    match located::load_fold(journal, o).unwrap() {
        Ok(f) => f,
        Err(why) => panic!("the index was not used: {why:?}"),
    }
}

/// Through the index read from its file and the tail, then through the index this process
/// keeps ([`located::load`]): both equal the full filtered fold.
fn same_everywhere(journal: &Path) -> Result<(), TestCaseError> {
    // No journal yet (nothing appended before the cut): there is nothing to index or compare.
    if !journal.exists() {
        return Ok(());
    }
    for round in 0..2 {
        for f in FILTERS {
            for keep in [false, true] {
                let o = opts(f, keep);
                prop_assert_eq!(
                    view(&indexed(journal, &o)),
                    view(&full(journal, &o)),
                    "filter {} keep {} round {}",
                    f,
                    keep,
                    round
                );
                prop_assert_eq!(view(&Fold::load(journal, &o).unwrap()), view(&full(journal, &o)));
            }
        }
        let _ = located::load(journal);
    }
    Ok(())
}

fn project_journal() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap();
    fs::create_dir(dir.path().join(".walj")).unwrap();
    let journal = dir.path().join(".walj/journal.jsonl");
    (dir, journal)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, failure_persistence: None, ..ProptestConfig::default() })]

    /// index + tail == full, for every filter, with the index written at a random cut, a torn
    /// tail at the cut or at the end, and a second index + tail after more lines.
    #[test]
    fn a_fold_through_the_index_equals_the_full_filtered_fold(
        lines in proptest::collection::vec((any::<u8>(), any::<u8>(), any::<u8>(), any::<u8>()), 1..120),
        cut in 0usize..120,
        cut2 in 0usize..120,
        torn_at_cut in any::<bool>(),
        torn_at_end in any::<bool>(),
    ) {
        let (_dir, journal) = project_journal();
        let bytes: Vec<Vec<u8>> = lines.into_iter().map(line).collect();
        let cut = cut.min(bytes.len());
        let cut2 = cut2.clamp(cut, bytes.len());
        for b in &bytes[..cut] { append(&journal, b); }
        if torn_at_cut { append(&journal, b"{\"v\":2,\"op\":\"appl"); }
        let _ = located::load_writing_after(&journal, 0);
        same_everywhere(&journal)?;
        if torn_at_cut { append(&journal, b"\n"); }
        for b in &bytes[cut..cut2] { append(&journal, b); }
        same_everywhere(&journal)?;
        let _ = located::load_writing_after(&journal, 0);
        for b in &bytes[cut2..] { append(&journal, b); }
        if torn_at_end { append(&journal, b"{\"v\":2,\"op\":\"inte"); }
        same_everywhere(&journal)?;
    }
}

/// A journal of 300 generated lines, its index written.
fn journal_with_index() -> (tempfile::TempDir, std::path::PathBuf) {
    let (dir, journal) = project_journal();
    for i in 0..300u16 {
        let i8 = (i % 256) as u8;
        append(&journal, &line((i8 % 8, i8, i8 / 3, i8 / 7)));
    }
    let ix = located::load_writing_after(&journal, 0).unwrap();
    assert!(ix.unused.is_none());
    assert!(journal.with_file_name("lines.idx").is_file());
    (dir, journal)
}

fn all_filters_match(journal: &Path) {
    for f in FILTERS {
        for keep in [false, true] {
            let o = opts(f, keep);
            assert_eq!(view(&Fold::load(journal, &o).unwrap()), view(&full(journal, &o)), "filter {f}");
        }
    }
}

/// What a compaction does: a new file renamed over the journal (here fewer lines). The old
/// index names another inode: not used, and rebuilt.
#[test]
fn a_replaced_journal_is_read_in_full() {
    let (_dir, journal) = journal_with_index();
    let b = fs::read(&journal).unwrap();
    let cut = b[..b.len() / 2].iter().rposition(|&c| c == b'\n').unwrap() + 1;
    let copy = journal.with_file_name("journal.new");
    fs::write(&copy, &b[cut..]).unwrap();
    fs::rename(&copy, &journal).unwrap();
    let ix = located::load_writing_after(&journal, u64::MAX).unwrap();
    assert!(ix.unused.as_deref().is_some_and(|w| w.starts_with("stale")), "{:?}", ix.unused);
    all_filters_match(&journal);
}

/// A crash that cut the journal short of the bytes the index covers (and left a torn line).
#[test]
fn a_truncated_journal_is_read_in_full() {
    let (_dir, journal) = journal_with_index();
    let len = fs::metadata(&journal).unwrap().len();
    fs::OpenOptions::new().write(true).open(&journal).unwrap().set_len(len - 37).unwrap();
    let ix = located::load_writing_after(&journal, u64::MAX).unwrap();
    assert!(ix.unused.as_deref().is_some_and(|w| w.starts_with("stale")), "{:?}", ix.unused);
    all_filters_match(&journal);
}

/// A damaged index file (a byte flipped in its body, cut short, garbage, another version).
#[test]
fn a_damaged_index_is_not_used() {
    for damage in 0..4 {
        let (_dir, journal) = journal_with_index();
        let idx = journal.with_file_name("lines.idx");
        let mut b = fs::read(&idx).unwrap();
        match damage {
            0 => {
                let n = b.len() - 3;
                b[n] ^= 0x40;
            }
            1 => b.truncate(b.len() / 2),
            2 => b = b"not an index".to_vec(),
            _ => b.splice(0..18, b"walj line index v0".iter().copied()).for_each(drop),
        }
        fs::write(&idx, &b).unwrap();
        let ix = located::load_writing_after(&journal, u64::MAX).unwrap();
        assert!(ix.unused.is_some(), "damage {damage} went unseen");
        all_filters_match(&journal);
    }
}

/// Lines changed under a valid index (same length, inode and last bytes: the checks of the
/// header all pass): a line read through the index that is no longer the session's it is
/// indexed under (here its checksum fails) stops the indexed read, and the full fold answers.
/// (The known limit, as for the fold snapshot: a fold of *another* session does not read that
/// line, so an in-place edit of old lines is seen only by a full read; walj never edits a
/// line in place, and `walj compact` replaces the file.)
#[test]
fn a_line_changed_under_the_index_means_a_full_read() {
    let (_dir, journal) = journal_with_index();
    let mut b = fs::read(&journal).unwrap();
    let at = memchr::memmem::find(&b, b"sess-aaaaaa-1").unwrap();
    b[at..at + 13].copy_from_slice(b"sess-bbbbbb-2");
    fs::write(&journal, &b).unwrap();
    for f in ["sess-aaaaaa-1", "sess-"] {
        for keep in [false, true] {
            let o = opts(f, keep);
            assert_eq!(located::load_fold(&journal, &o).unwrap().err(), Some(Skipped::LineMismatch));
            assert_eq!(view(&Fold::load(&journal, &o).unwrap()), view(&full(&journal, &o)), "filter {f}");
        }
    }
}

/// Which session holds an id: the one session, or none when several do, none does, or the
/// typed text names its session.
#[test]
fn the_index_names_the_session_of_an_id() {
    let (_dir, journal) = project_journal();
    use walj::journal::record::{Record, op};
    let add = |session: &str, id: &str| {
        let mut r = Record::new(op::INTENT, session);
        r.id = id.into();
        r.path = "a.rs".into();
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        append(&journal, &r.to_line());
    };
    add("sess-one", "toolu_01AbcDef");
    add("sess-two", "toolu_01AbzXyz");
    add("sess-two", "toolu_01Qrs");
    add("sess-three", "call_zzz");
    let ix = located::load_writing_after(&journal, 0).unwrap();
    assert_eq!(ix.session_of(&["abcd"]).as_deref(), Some("sess-one"));
    assert_eq!(ix.session_of(&["toolu_01ABCDEF"]).as_deref(), Some("sess-one"));
    assert_eq!(ix.session_of(&["01Qr"]).as_deref(), Some("sess-two"));
    assert_eq!(ix.session_of(&["Abz", "qrs"]).as_deref(), Some("sess-two"));
    assert_eq!(ix.session_of(&["ab"]), None, "two sessions");
    assert_eq!(ix.session_of(&["abcd", "qrs"]), None, "two sessions");
    assert_eq!(ix.session_of(&["nothing"]), None);
    assert_eq!(ix.session_of(&["sess-one/abcd"]), None);
    assert_eq!(ix.session_of(&["call_z"]).as_deref(), Some("sess-three"));
    // The same from the lines past the index.
    add("sess-four", "toolu_01Late");
    let ix = located::load_writing_after(&journal, u64::MAX).unwrap();
    assert_eq!(ix.session_of(&["late"]).as_deref(), Some("sess-four"));
}

/// Only a project's own journal has an index.
#[test]
fn only_a_projects_journal_has_an_index() {
    assert_eq!(located::path(Path::new("/p/.walj/journal.jsonl")), Some("/p/.walj/lines.idx".into()));
    assert_eq!(located::path(Path::new("/p/.walj/remotes/ab12/journal.jsonl")), None);
    assert_eq!(located::path(Path::new("/tmp/journal.jsonl")), None);
}

/// Runs `walj ARGS` in `repo` with the line index and with it off ([`located::OFF_ENV`]) and
/// asserts the same exit code and stdout (and stderr, with `stderr`).
fn same_without_index(repo: &crate::common::Repo, args: &[&str], when: &str, stderr: bool) {
    let with = repo.run(args);
    let mut c = repo.walj(args);
    c.env(located::OFF_ENV, "1");
    let without = crate::common::outcome(&c.output().unwrap());
    assert_eq!(with.0, without.0, "{when}: walj {args:?} exit code\n{}\n{}", with.2, without.2);
    assert_eq!(with.1, without.1, "{when}: walj {args:?} differs with the index");
    if stderr {
        assert_eq!(with.2, without.2, "{when}: walj {args:?} says otherwise on stderr with the index");
    }
}

/// Appends `n` settled Edit entries (intent, applied, persisted) of `session`, ids
/// `{prefix}{i:06}`, over 50 paths: a long journal with nothing to show.
fn append_filler(w: &walj::journal::JournalWriter, session: &str, prefix: &str, n: usize) {
    use walj::journal::record::{Blob, Record, op};
    for i in 0..n {
        let mut r = Record::new(op::INTENT, session);
        r.id = format!("{prefix}{i:06}");
        r.tool = Some("Edit".into());
        r.event = "file_modified".into();
        r.path = format!("src/filler_{}.rs", i % 50);
        r.before = Some(Blob::Id(format!("{i:040x}")));
        w.append(&r).unwrap();
        r.op = op::APPLIED.into();
        r.before = None;
        r.after = Some(Blob::Id(format!("{:040x}", i + 1)));
        w.append(&r).unwrap();
        r.op = op::PERSISTED.into();
        r.persisted = true;
        w.append(&r).unwrap();
    }
}

/// The real binary: each read answers the same through the index as with a full scan
/// ([`located::OFF_ENV`] set), on a project whose journal is long enough for the index to be
/// written (a filler session of 1.3 MB), then after a crash-truncated tail, a damaged index,
/// a compaction (the journal replaced: the index is stale) and more sessions.
#[test]
fn the_binary_answers_the_same_with_the_index_as_with_a_full_scan() {
    use crate::common::{Claude, Repo};
    use walj::journal::JournalWriter;

    let repo = Repo::new(&[("src/a.rs", "fn a() {}\n"), ("src/b.rs", "fn b() {}\n")]);
    let filler = |n: usize, tag: &str| {
        let w = JournalWriter::new(&repo.journal());
        append_filler(&w, &format!("{tag}-0000-filler-session"), &format!("toolu_01Filler{tag}"), n);
    };
    let one = Claude::new(&repo, "aaaa1111-2222-3333-4444-555555555555");
    one.start();
    one.prompt("first");
    one.edit("toolu_01OneEditAaaa", "src/a.rs", "fn a() {}", "fn a() { 1 }");
    one.stop();
    filler(3500, "f1");
    let two = Claude::new(&repo, "bbbb1111-2222-3333-4444-555555555555");
    two.start();
    two.edit("toolu_01TwoEditBbbb", "src/b.rs", "fn b() {}", "fn b() { 2 }");
    two.write_intent("toolu_01TwoCrashCccc", "src/c.rs", "new file\n");

    let reads: Vec<Vec<&str>> = vec![
        vec!["log", "--session", "aaaa1111", "--all"],
        vec!["log", "--session", "bbbb", "--all", "--json"],
        vec!["sessions", "show", "aaaa1111"],
        vec!["sessions", "show", "bbbb1111", "--json"],
        vec!["diff", "OneEdit"],
        vec!["diff", "TwoEditB"],
        vec!["diff", "TwoCrash"],
        vec!["status"],
        vec!["status", "--json"],
        vec!["recover", "--json"],
        vec!["sessions", "list"],
        vec!["sessions", "list", "--json"],
    ];
    let idx = repo.journal().with_file_name("lines.idx");
    let usage = repo.journal().with_file_name("usage.idx");
    let check = |when: &str| {
        for args in &reads {
            same_without_index(&repo, args, when, false);
        }
    };
    check("first read");
    assert!(idx.is_file(), "a read of more than 1 MB writes the index");
    assert!(usage.is_file(), "`sessions list` reading more than 1 MB writes the usage index");
    check("index written");
    assert!(located::load(&repo.journal()).unwrap().unused.is_none());

    // A crash cut the last line short.
    let mut f = fs::OpenOptions::new().append(true).open(repo.journal()).unwrap();
    std::io::Write::write_all(&mut f, b"{\"v\":2,\"op\":\"intent\",\"session\":\"bbbb1111-2222").unwrap();
    drop(f);
    check("torn tail");
    // The hook heals the torn tail on its next append.
    two.edit("toolu_01TwoLaterDddd", "src/b.rs", "fn b() { 2 }", "fn b() { 3 }");
    check("healed tail");

    // A damaged index.
    let mut b = fs::read(&idx).unwrap();
    let n = b.len() - 5;
    b[n] ^= 0x10;
    fs::write(&idx, &b).unwrap();
    assert!(located::load_writing_after(&repo.journal(), u64::MAX).unwrap().unused.is_some());
    let mut b = fs::read(&usage).unwrap();
    let n = b.len() - 5;
    b[n] ^= 0x10;
    fs::write(&usage, &b).unwrap();
    check("damaged index");

    // A compaction replaces the journal: every index written before is stale.
    let _ = located::load_writing_after(&repo.journal(), 0);
    repo.ok(&["sessions", "list"]);
    let (old, old_usage) = (fs::read(&idx).unwrap(), fs::read(&usage).unwrap());
    repo.ok(&["compact", "--days", "0", "--yes"]);
    fs::write(&idx, &old).unwrap();
    fs::write(&usage, &old_usage).unwrap();
    assert!(located::load_writing_after(&repo.journal(), u64::MAX).unwrap().unused.is_some());
    check("after compaction");
    filler(3500, "f2");
    let three = Claude::new(&repo, "cccc1111-2222-3333-4444-555555555555");
    three.start();
    three.edit("toolu_01ThreeEditEeee", "src/a.rs", "fn a() { 1 }", "fn a() { 3 }");
    check("after compaction, more sessions");
    assert!(located::load(&repo.journal()).unwrap().unused.is_none());
}

/// An image a journal line carries and the store lacks is put back from the line the index
/// names, without a scan; a line that no longer carries it is never taken for it.
#[test]
fn a_carried_image_is_found_through_the_index() {
    use crate::common::{Claude, Repo};
    let repo = Repo::new(&[("src/a.rs", "fn a() {}\n")]);
    let one = Claude::new(&repo, "aaaa1111-2222-3333-4444-555555555555");
    one.start();
    one.edit("toolu_01OneEditAaaa", "src/a.rs", "fn a() {}", "fn a() { 1 }");
    let line = fs::read(repo.journal()).unwrap();
    let carried: Vec<String> = line
        .split(|&b| b == b'\n')
        .flat_map(|l| walj::store::carried_ids_of(l).map(str::to_string).collect::<Vec<_>>())
        .collect();
    assert!(!carried.is_empty(), "the hook carries a small image in its line");
    let store = walj::store::Store::new(repo.path(".walj/store"));
    let _ = located::load_writing_after(&repo.journal(), 0);
    for id in &carried {
        let _ = fs::remove_file(store.object_path(id));
        assert!(!store.contains(id));
        let ix = located::load(&repo.journal()).unwrap();
        assert!(!ix.carrying(id).is_empty(), "the index names the line");
        assert!(located::keep_carried(&repo.journal(), &store, id));
        assert!(store.contains(id));
        assert_eq!(walj::store::blob_id(&store.get(id).unwrap()), *id);
    }
    // An index whose offsets point elsewhere (the journal rewritten, same length): nothing
    // is taken from a line that does not carry the image.
    let id = &carried[0];
    let _ = fs::remove_file(store.object_path(id));
    let mut b = fs::read(repo.journal()).unwrap();
    let at = memchr::memmem::find(&b, format!("\"{id}\":\"").as_bytes()).unwrap() + 1;
    b[at] = if b[at] == b'0' { b'1' } else { b'0' };
    fs::write(repo.journal(), &b).unwrap();
    assert!(!located::keep_carried(&repo.journal(), &store, id));
    assert!(!store.contains(id));
}

/// Times (`2026-03-23 09:43:02 UTC`, `09:43:02`, RFC 3339) as `<t>`: two projects built the
/// same way a second apart answer the same but for them.
fn untimed(s: &str) -> String {
    let mut out = String::new();
    let mut run = String::new();
    let flush = |run: &mut String, out: &mut String| {
        if run.len() >= 8 && run.contains(':') {
            out.push_str("<t>");
        } else {
            out.push_str(run);
        }
        run.clear();
    };
    for c in s.chars() {
        if c.is_ascii_digit() || matches!(c, ':' | '-' | '.' | 'T' | 'Z') && !run.is_empty() {
            run.push(c);
        } else {
            flush(&mut run, &mut out);
            out.push(c);
        }
    }
    flush(&mut run, &mut out);
    out
}

/// A project for the triage commands by id: three Claude sessions and a filler session of
/// 1.3 MB (so the index is written and read), an entry without a post-image (a crashed Write)
/// with a later entry of another session on its path, and an imported bundle's entry whose
/// mark was recorded inside the bundle (its provenance is the bundle's).
fn triage_project() -> crate::common::Repo {
    use crate::common::{Claude, Repo};
    use walj::journal::JournalWriter;
    use walj::journal::record::{Blob, Record, how, kind, op};

    let repo = Repo::new(&[("src/a.rs", "fn a() {}\n"), ("src/b.rs", "fn b() {}\n"), ("src/c.rs", "c0\n")]);
    let w = JournalWriter::new(&repo.journal());
    let one = Claude::new(&repo, "aaaa1111-2222-3333-4444-555555555555");
    one.start();
    one.prompt("first");
    one.edit("toolu_01OneEditAaaa", "src/a.rs", "fn a() {}", "fn a() { 1 }");
    one.write_intent("toolu_01OneCrashCccc", "src/c.rs", "c1\n");
    append_filler(&w, "f1-0000-filler-session", "toolu_01Filler", 3500);
    let two = Claude::new(&repo, "bbbb1111-2222-3333-4444-555555555555");
    two.start();
    two.edit("toolu_01TwoEditBbbb", "src/b.rs", "fn b() {}", "fn b() { 2 }");
    two.write("toolu_01TwoWriteCccc", "src/c.rs", "c2\n");
    two.edit("toolu_01TwoEditAaaa", "src/a.rs", "fn a() { 1 }", "fn a() { 1 }\nfn z() {}");
    // A bundle's records (a session, an entry, its mark), then the mark `import` writes after them.
    let bundle = "eeee1111-2222-3333-4444-555555555555";
    let mut start = Record::new(op::SESSION, bundle);
    start.kind = Some(kind::START.into());
    let mut intent = Record::new(op::INTENT, bundle);
    intent.id = "toolu_01BundleEeee".into();
    intent.tool = Some("Write".into());
    intent.event = "file_created".into();
    intent.path = "src/e.rs".into();
    intent.before = Some(Blob::Absent);
    let mut applied = intent.clone();
    applied.op = op::APPLIED.into();
    applied.before = None;
    applied.after = Some(Blob::Id(format!("{:040x}", 7)));
    let mut done = intent.clone();
    done.op = op::RESOLVED.into();
    done.before = None;
    done.how = Some(how::DONE.into());
    done.action = Some("a-bundle-mark".into());
    let mut mark = Record::new(op::SESSION, "");
    mark.kind = Some("imported".into());
    let mark = mark.with("records", 4u64).with("bundle", "theirs.walj").with("target", bundle);
    w.append_all(&[start, intent, applied, done, mark]).unwrap();
    one.stop();
    repo
}

/// `mark`, `revert`, `undo`, `handoff` and `redo` by id fold only the session the line index
/// names: each answers the same as with a full scan ([`located::OFF_ENV`]): dry runs on one
/// project (index written, then damaged, then stale after the journal was replaced), and the
/// writes themselves on two projects built alike, one read through the index and one not,
/// which end with the same files and answers. The cases that need other sessions' entries
/// are among them: an entry without a post-image whose path a later session changed, several
/// entries of one path, ids of two sessions, a bundle's entry (provenance), a hand-back's undo.
#[test]
fn triage_by_id_answers_the_same_with_the_index_as_with_a_full_scan() {
    let repo = triage_project();
    let dry: Vec<Vec<&str>> = vec![
        vec!["mark", "--dry-run", "OneEditA"],
        vec!["mark", "--dry-run", "--json", "OneEditA", "OneCrash"],
        vec!["mark", "--dry-run", "OneEditA", "TwoEditB"],
        vec!["mark", "--dry-run", "BundleE"],
        vec!["revert", "--dry-run", "--force", "OneEditA"],
        vec!["revert", "--dry-run", "--force", "--json", "TwoEditB"],
        vec!["revert", "--dry-run", "--force", "OneCrash"],
        vec!["revert", "--dry-run", "--force", "TwoWrite"],
        vec!["revert", "--dry-run", "--force", "TwoEditA", "OneEditA"],
        vec!["revert", "--dry-run", "--force", "BundleE"],
        vec!["undo", "--dry-run", "BundleE"],
        vec!["undo", "--dry-run", "OneEditA"],
        vec!["undo", "--dry-run"],
        vec!["handoff", "--print", "--force", "TwoEditB"],
        vec!["handoff", "--dry-run", "--json", "--force", "OneEditA"],
        vec!["redo", "--dry-run"],
        vec!["mark", "--dry-run", "NoSuchId"],
    ];
    let idx = repo.journal().with_file_name("lines.idx");
    let check = |when: &str| {
        for args in &dry {
            same_without_index(&repo, args, when, true);
        }
    };
    check("first read");
    assert!(idx.is_file(), "a read of more than 1 MB writes the index");
    assert!(located::load(&repo.journal()).unwrap().unused.is_none());
    check("index written");

    // A damaged index, then a stale one (the journal replaced, same bytes).
    let mut b = fs::read(&idx).unwrap();
    let n = b.len() - 5;
    b[n] ^= 0x10;
    fs::write(&idx, &b).unwrap();
    check("damaged index");
    let _ = located::load_writing_after(&repo.journal(), 0);
    let bytes = fs::read(repo.journal()).unwrap();
    let moved = repo.journal().with_file_name("journal.moved");
    fs::write(&moved, &bytes).unwrap();
    let old = fs::read(&idx).unwrap();
    fs::rename(&moved, repo.journal()).unwrap();
    fs::write(&idx, &old).unwrap();
    assert!(located::load_writing_after(&repo.journal(), u64::MAX).unwrap().unused.is_some());
    check("stale index");

    // The writes: the same commands on a twin project read in full, step by step.
    let twin = triage_project();
    let _ = located::load_writing_after(&repo.journal(), 0);
    let writes: Vec<Vec<&str>> = vec![
        vec!["mark", "--force", "OneEditA"],
        vec!["undo", "OneEditA"],
        vec!["revert", "--force", "--yes", "TwoEditB"],
        vec!["revert", "--force", "--yes", "TwoEditB"],
        vec!["undo", "TwoEditB"],
        vec!["revert", "--force", "--yes", "OneCrash"],
        vec!["mark", "--force", "--yes", "BundleE"],
        vec!["undo", "--yes", "BundleE"],
        vec!["handoff", "--force", "OneEditA"],
        vec!["undo", "OneEditA"],
        vec!["redo"],
        vec!["revert", "--force", "--yes", "TwoEditA", "OneEditA"],
        vec!["undo"],
        vec!["mark", "--force", "TwoEditB", "OneCrash"],
    ];
    for args in &writes {
        let with = repo.run(args);
        let mut c = twin.walj(args);
        c.env(located::OFF_ENV, "1");
        let without = crate::common::outcome(&c.output().unwrap());
        assert_eq!(with.0, without.0, "walj {args:?} exit code\n{}\n{}", with.2, without.2);
        // `redo` names the operation by its id, new in each project.
        let ops = |s: &str| {
            untimed(s)
                .lines()
                .map(|l| if l.starts_with("Redo operation") { "Redo" } else { l })
                .collect::<Vec<_>>()
                .join("\n")
        };
        assert_eq!(ops(&with.1), ops(&without.1), "walj {args:?} differs with the index");
        assert_eq!(ops(&with.2), ops(&without.2), "walj {args:?} says otherwise on stderr with the index");
        if args.contains(&"BundleE") {
            assert!(with.2.contains("theirs.walj"), "the bundle's entry is named as the bundle's: {with:?}");
        }
        for f in ["src/a.rs", "src/b.rs", "src/c.rs"] {
            assert_eq!(repo.exists(f), twin.exists(f), "after walj {args:?}: {f}");
            if repo.exists(f) {
                assert_eq!(repo.read(f), twin.read(f), "after walj {args:?}: {f}");
            }
        }
    }
    assert!(located::load(&repo.journal()).unwrap().unused.is_none(), "the index was read throughout");
}
