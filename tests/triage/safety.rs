//! Second read of triage's writes to users' files (revert, undo): every test here
//! failed before the fix it names. Through the real binary against real git
//! repositories, like `tests/triage/actions.rs`.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};

use crate::common::{Claude, Repo};
use serde_json::Value;
use walj::store::blob_id;

const SESSION: &str = "5e55a0b1-0000-4000-8000-000000000002";
const NUMBERS: &str = "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n";

/// Files in `dir` whose name contains `walj-tmp` (litter of atomic writes).
fn temp_litter(dir: &std::path::Path) -> Vec<String> {
    fs::read_dir(dir)
        .expect("read dir")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("walj-tmp"))
        .collect()
}

// Defect: the temp file of an atomic write was `.<name>.walj-tmp-<pid>`, which is longer
// than the longest file name the file system allows when the name itself is long: such
// files could not be reverted (or a revert undone).
#[test]
fn files_with_long_names_can_be_reverted_and_the_revert_undone() {
    let name = format!("{}.txt", "n".repeat(246)); // 250 bytes, under NAME_MAX (255)
    let repo = Repo::new(&[(name.as_str(), NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_LONG", &name, "two", "TWO");
    let post = repo.blob_id(&name);
    let out = repo.ok(&["revert", "toolu_LONG"]);
    assert!(out.contains("wrote the pre-image back"), "{out}");
    assert_eq!(repo.read(&name), NUMBERS);
    repo.ok(&["undo"]);
    assert_eq!(repo.blob_id(&name), post);
    assert!(temp_litter(&repo.root).is_empty(), "{:?}", temp_litter(&repo.root));
}

// Defect: revert overwrote the file first and appended the record naming the bytes it
// overwrote after. Bytes no record names (what a crashed tool call wrote, or a hand edit)
// were lost to the journal if walj died or the journal could not be written in between.
// Now a record naming them is appended before anything is overwritten: when the journal
// cannot be written, nothing is.
#[test]
fn nothing_is_overwritten_before_the_journal_names_the_bytes() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    // A crashed Write: the intent is recorded, the bytes reached the disk, no outcome.
    c.write_intent("toolu_CRASH", "f.txt", "written by the crashed call\n");
    repo.write("f.txt", "written by the crashed call\n");
    let journal = repo.journal_bytes();
    // The journal can be read but not appended to: its lock cannot be opened, and the side
    // file a writer falls back to cannot be created either (a file where its folder goes).
    let lock = repo.root.join(".walj/journal.lock");
    fs::remove_file(&lock).unwrap();
    fs::create_dir(&lock).unwrap();
    let side = repo.root.join(".walj/journal.side");
    fs::write(&side, "").unwrap();
    let err = repo.fails(&["revert", "toolu_CRASH"]);
    assert!(err.contains("journal") && err.contains("Nothing was changed"), "{err}");
    assert_eq!(repo.read("f.txt"), "written by the crashed call\n", "overwritten before it was recorded: {err}");
    assert_eq!(repo.journal_bytes(), journal);

    // With a writable journal the revert names the crashed call's bytes before writing.
    fs::remove_dir(&lock).unwrap();
    fs::remove_file(&side).unwrap();
    repo.ok(&["revert", "toolu_CRASH"]);
    assert_eq!(repo.read("f.txt"), NUMBERS);
    let crashed = blob_id(b"written by the crashed call\n");
    let recs = repo.records();
    let capture = recs.iter().position(|r| r["op"] == "audit" && r["before"] == crashed.as_str());
    let resolved = recs.iter().position(|r| r["op"] == "resolved" && r["before"] == crashed.as_str());
    assert!(capture.is_some() && capture < resolved, "a record names the bytes before the revert: {recs:?}");
    assert_eq!(recs[capture.unwrap()]["action"], recs[resolved.unwrap()]["action"]);
    assert!(repo.store_object(&crashed).is_file());
}

// Defect: with several ids, each revert captured, wrote and recorded in turn, so a
// capture failing on a later id (disk full, a damaged store) left the earlier ones done.
// Now every capture happens before the first write.
#[test]
fn a_capture_failing_on_a_later_id_changes_nothing() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("g.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_G", "g.txt", "two", "TWO");
    // A hand edit after the tool: bytes the store does not have yet.
    let hand = NUMBERS.replace("two", "TWO").replace("nine", "NINE");
    repo.write("g.txt", &hand);
    c.edit("toolu_F", "f.txt", "two", "TWO");
    // The store cannot take the hand edit's bytes (their folder is blocked by a file).
    let hid = blob_id(hand.as_bytes());
    let sub = repo.root.join(".walj/store").join(&hid[..2]);
    assert!(!sub.exists(), "pick other contents: {hid} shares its folder with an object");
    // The hook wrote no object (small images are carried in their lines): the store may not be.
    fs::create_dir_all(sub.parent().unwrap()).unwrap();
    fs::write(&sub, b"not a folder").unwrap();
    let journal = repo.journal_bytes();
    // Newest first: f.txt (fine), then g.txt (its capture fails).
    let err = repo.fails(&["revert", "toolu_G", "toolu_F"]);
    assert!(err.contains("store") && err.contains("Nothing was changed"), "{err}");
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("two", "TWO"), "f.txt reverted although the call failed: {err}");
    assert_eq!(repo.read("g.txt"), hand);
    assert_eq!(repo.journal_bytes(), journal, "nothing recorded: {err}");
}

// Defect: a revert that deleted a file (the tool created it) did not record its
// permissions, so undoing it brought the bytes back with default permissions: a script
// lost its executable bit.
#[test]
fn undo_of_a_revert_that_deleted_a_file_restores_its_permissions() {
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    let c = Claude::new(&repo, SESSION);
    c.write("toolu_SH", "run.sh", "#!/bin/sh\necho hi\n");
    fs::set_permissions(repo.path("run.sh"), fs::Permissions::from_mode(0o750)).unwrap();
    let out = repo.ok(&["revert", "toolu_SH"]);
    assert!(out.contains("deleted run.sh"), "{out}");
    repo.ok(&["undo"]);
    assert_eq!(repo.read("run.sh"), "#!/bin/sh\necho hi\n");
    let mode = fs::metadata(repo.path("run.sh")).unwrap().permissions().mode() & 0o7777;
    assert_eq!(mode, 0o750, "undo restores the permissions the file had: {mode:o}");
}

// Defect: the written file got the owner of whoever ran walj. A `sudo walj revert` in a
// user's project left root-owned files the user could no longer write.
#[test]
fn revert_and_undo_keep_the_files_owner() {
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("skipped: only root can give files to another owner");
        return;
    }
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    std::os::unix::fs::chown(repo.path("f.txt"), Some(4321), Some(4322)).unwrap();
    repo.ok(&["revert", "toolu_A"]);
    let m = fs::metadata(repo.path("f.txt")).unwrap();
    assert_eq!((m.uid(), m.gid()), (4321, 4322), "revert keeps the owner");
    repo.ok(&["undo"]);
    let m = fs::metadata(repo.path("f.txt")).unwrap();
    assert_eq!((m.uid(), m.gid()), (4321, 4322), "undo keeps the owner");
}

// Defect: capturing trusted any object already in the store under the bytes' id. A
// damaged object (bit rot, a copy cut short) made the capture a no-op and the revert
// then overwrote the only good copy of the bytes.
#[test]
fn a_damaged_store_object_is_rewritten_before_the_overwrite() {
    let repo = Repo::new(&[("f.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    let hand = NUMBERS.replace("two", "TWO").replace("nine", "NINE");
    repo.write("f.txt", &hand);
    let hid = blob_id(hand.as_bytes());
    let obj = repo.store_object(&hid);
    fs::create_dir_all(obj.parent().unwrap()).unwrap();
    fs::write(&obj, b"").unwrap(); // an empty object file, as a crash can leave
    repo.ok(&["revert", "toolu_A"]);
    assert_eq!(repo.read("f.txt"), NUMBERS.replace("nine", "NINE"));
    let stored = walj::store::Store::new(repo.root.join(".walj/store")).get(&hid);
    assert_eq!(stored.ok().as_deref(), Some(hand.as_bytes()), "the overwritten bytes are readable from the store");
    repo.ok(&["undo"]);
    assert_eq!(repo.read("f.txt"), hand);
}

// Defect: `walj undo ID` of a hand-back reopened the entry but left the brief pending,
// so the next session start still asked Claude to finish a change the user took back.
#[test]
fn undoing_a_hand_back_by_id_withdraws_the_brief_not_delivered_yet() {
    let repo = Repo::new(&[("f.txt", NUMBERS), ("g.txt", NUMBERS)]);
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_A", "f.txt", "two", "TWO");
    c.edit("toolu_B", "g.txt", "two", "TWO");
    repo.ok(&["handoff", "toolu_A", "toolu_B"]);
    // Another command after it, so the hand-back is not the last command.
    c.write("toolu_C", "h.txt", "h\n");
    repo.ok(&["mark", "toolu_C", "--done"]);
    let out = repo.ok(&["undo", "toolu_A"]);
    assert!(out.contains("withdrew the brief"), "{out}");
    assert!(out.contains("B (g.txt)"), "the other entry of the brief is named: {out}");
    let v: Value = serde_json::from_str(&repo.ok(&["log", "--json", "--all"])).unwrap();
    let status = |id: &str| v.as_array().unwrap().iter().find(|e| e["id"] == id).unwrap()["status"].clone();
    assert_eq!(status("toolu_A"), "applied");
    assert_eq!(status("toolu_B"), "applied", "an entry whose brief was withdrawn is not left handed back");
    assert_eq!(status("toolu_C"), "done", "other commands are left alone");
    let start = repo.start_payload("9a9a9a9a-1111-4222-8333-444455556666");
    let out = repo.hook(&start);
    assert!(!out.contains("walj hand-back"), "the withdrawn brief was delivered: {out}");
}

// Defect: when the path was a folder before the tool ran, the hook records its pre-image
// as "absent" with `nocap: directory`; revert read that as "the file did not exist" and
// deleted the file found there now ("it did not exist before").
#[test]
fn a_path_that_was_a_folder_before_the_tool_is_not_deleted_as_if_absent() {
    use walj::journal::{Blob, JournalWriter, Record, op};
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    let p = walj::project::Project::at(repo.root.clone(), None);
    p.ensure_dir().unwrap();
    let mut intent = Record::new(op::INTENT, SESSION);
    intent.id = "toolu_DIR".into();
    intent.path = "out".into();
    intent.tool = Some("Write".into());
    intent.event = "file_modified".into();
    intent.before = Some(Blob::Absent);
    intent.nocap = Some("directory".into());
    let mut failed = intent.clone();
    failed.op = op::FAILED.into();
    failed.before = None;
    failed.nocap = None;
    JournalWriter::new(&p.journal).append_all(&[intent, failed]).unwrap();
    // The folder was replaced by a file since.
    repo.write("out", "the user's file\n");
    let journal = repo.journal_bytes();
    let err = repo.fails(&["revert", "toolu_DIR"]);
    assert!(err.contains("folder"), "{err}");
    assert_eq!(repo.read("out"), "the user's file\n");
    assert_eq!(repo.journal_bytes(), journal);
}

// Checked and sound (kept as regression tests): empty files, CRLF and a missing final
// newline survive a merge byte for byte, binary files are never merged.
#[test]
fn empty_crlf_no_final_newline_and_binary_files_come_back_byte_for_byte() {
    let crlf = "a\r\nb\r\nc\r\nd\r\ne\r\nf\r\ng\r\nh";
    let repo = Repo::new(&[("empty.txt", ""), ("crlf.txt", crlf)]);
    let c = Claude::new(&repo, SESSION);
    // An empty pre-image written back.
    c.write("toolu_E", "empty.txt", "filled\n");
    repo.ok(&["revert", "toolu_E"]);
    assert!(repo.exists("empty.txt") && repo.read("empty.txt").is_empty());
    // CRLF without a final newline: the earlier change taken out, the later kept.
    c.edit("toolu_C1", "crlf.txt", "b\r\n", "B\r\n");
    c.edit("toolu_C2", "crlf.txt", "\r\nh", "\r\nH");
    repo.ok(&["revert", "toolu_C1"]);
    assert_eq!(repo.read("crlf.txt"), crlf.replace("\r\nh", "\r\nH"));
    // Binary: changed since, refused; forced, the pre-image exactly, undone exactly.
    repo.write_bytes("bin.dat", b"\0\x01\x02 old\n");
    repo.commit("bin");
    c.write("toolu_B", "bin.dat", "\0\x01\x02 new\n");
    repo.write_bytes("bin.dat", b"\0\x01\x02 new, edited\n");
    let err = repo.fails(&["revert", "toolu_B"]);
    assert!(err.contains("binary"), "{err}");
    repo.ok(&["revert", "toolu_B", "--force"]);
    assert_eq!(fs::read(repo.path("bin.dat")).unwrap(), b"\0\x01\x02 old\n");
    repo.ok(&["undo"]);
    assert_eq!(fs::read(repo.path("bin.dat")).unwrap(), b"\0\x01\x02 new, edited\n");
}

// Checked and sound: a never-captured file (a secret) is not reverted to garbage or to
// nothing: without its pre-image the revert is refused and nothing changes; when the
// disk already holds the pre-image (same id) nothing is written.
#[test]
fn never_captured_files_are_refused_not_guessed() {
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    repo.write(".walj/config.toml", "[capture]\nnever = [\".env\"]\n");
    repo.write(".env", "TOKEN=old\n"); // not committed: git cannot stand in
    let c = Claude::new(&repo, SESSION);
    c.edit("toolu_S", ".env", "old", "new");
    let journal = repo.journal_bytes();
    let err = repo.fails(&["revert", "toolu_S"]);
    assert!(err.contains("never-capture"), "{err}");
    assert_eq!(repo.read(".env"), "TOKEN=new\n");
    assert_eq!(repo.journal_bytes(), journal);
    assert!(!repo.store_object(&blob_id(b"TOKEN=old\n")).exists(), "the secret was never stored");
    // Put back by hand: the revert sees the pre-image by its id and writes nothing.
    repo.write(".env", "TOKEN=old\n");
    let out = repo.ok(&["revert", "toolu_S"]);
    assert!(out.contains("already equals the pre-image"), "{out}");
    assert_eq!(repo.read(".env"), "TOKEN=old\n");
}

// Defect: the hand-back brief showed the lines of a never-captured file (a secret Claude
// created, whose pre-image is "absent") and the brief is kept in the journal: the secret
// ended up in `.walj/journal.jsonl`, which never-capture exists to prevent.
#[test]
fn a_hand_back_brief_never_shows_a_never_captured_files_content() {
    let repo = Repo::new(&[("keep.txt", "x\n")]);
    repo.write(".walj/config.toml", "[capture]\nnever = [\".env\"]\n");
    let c = Claude::new(&repo, SESSION);
    c.write("toolu_S", ".env", "TOKEN=s3cr3t-value\n");
    c.edit("toolu_K", "keep.txt", "x", "y");
    let secret = "s3cr3t-value";
    assert!(!String::from_utf8_lossy(&repo.journal_bytes()).contains(secret), "the hook kept it out");
    let out = repo.ok(&["handoff", "toolu_S", "toolu_K"]);
    assert!(out.contains(".env"), "the entry is still handed back: {out}");
    assert!(out.contains("-x") && out.contains("+y"), "other diffs are shown: {out}");
    assert!(!out.contains(secret), "{out}");
    assert!(
        !String::from_utf8_lossy(&repo.journal_bytes()).contains(secret),
        "the brief put the secret in the journal"
    );
}
