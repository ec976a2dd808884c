//! Nothing walj did not make itself is trusted (bundles): every write of revert, undo and
//! import stays inside the project, out of `.walj/` and out of every `.git`; a bundle's
//! entries and triage records count as the bundle's (by where they lie in the journal, never
//! by their fields); a bundle is read within bounds. Each attack runs the real binary in a real
//! git repository against a bundle forged in the real format (`bundle::write`, checksums
//! recomputed as any forger can), and ends with `.git/` byte-for-byte as it was, nothing
//! written outside, no command run and no abort.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};

use crate::common::{Claude, Repo};
use walj::journal::record::{Blob, Record, parse_record};
use walj::session::bundle::{self, Contents, Keys, Protection};

const SRC_SESSION: &str = "5e5e5e5e-0000-4000-8000-00000000aaaa";

/// Every file under `dir` (links as their target text), by relative path: hashed by content.
fn tree(dir: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(base: &Path, dir: &Path, out: &mut BTreeMap<PathBuf, Vec<u8>>) {
        let Ok(rd) = fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            let p = e.path();
            let t = e.file_type().unwrap();
            let rel = p.strip_prefix(base).unwrap().to_path_buf();
            // The watcher's observer log: written by the watcher process whenever it notes
            // something (a session's end), never by the command under test.
            if e.file_name().to_string_lossy().starts_with("observed.jsonl") {
                continue;
            }
            if t.is_symlink() {
                out.insert(rel, fs::read_link(&p).unwrap().into_os_string().into_encoded_bytes());
            } else if t.is_dir() {
                out.insert(rel.clone(), b"<dir>".to_vec());
                walk(base, &p, out);
            } else {
                out.insert(rel, walj::store::blob_id(&fs::read(&p).unwrap()).into_bytes());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// `<root>/.git` as [`tree`] reads it, less `.git/walj/`: walj's own ownership marker and its
/// cache of the files git tracks in `.walj/` (docs/security.md), which no bundle can write.
fn git_tree(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut git = tree(&root.join(".git"));
    git.retain(|p, _| !p.starts_with("walj"));
    git
}

/// A session exported from a sender's repository: one Edit of `a.txt` ("one" → "two").
fn exported() -> (Repo, Contents) {
    let src = Repo::new(&[("a.txt", "one\n")]);
    let c = Claude::new(&src, SRC_SESSION);
    c.start();
    c.prompt("change a");
    c.edit("toolu_a", "a.txt", "one", "two");
    c.stop();
    let out = src.tmp.join("good.walj");
    src.ok(&["sessions", "export", "5e5e5e5e", "-o", out.to_str().unwrap()]);
    let mut none = || None;
    let contents = bundle::read(&out, &mut Keys { passphrase: &mut none, identities: vec![] }).unwrap();
    (src, contents)
}

fn records(c: &Contents) -> Vec<Record> {
    c.records.split(|&b| b == b'\n').filter(|l| !l.is_empty()).map(|l| parse_record(l).unwrap()).collect()
}

fn set_records(c: &mut Contents, recs: &[Record]) {
    c.records = recs.iter().flat_map(Record::to_line).collect();
}

/// The bundle's records of the `a.txt` entry, copied for an entry `id` at `path` whose
/// pre-image is `pre` (added as an object) and post-image the blob id `post`.
fn forge_entry(c: &mut Contents, id: &str, path: &str, pre: &[u8], post: &str) -> Vec<Record> {
    let pre_id = walj::store::blob_id(pre);
    if !c.objects.iter().any(|(i, _)| *i == pre_id) {
        c.objects.push((pre_id.clone(), pre.to_vec()));
    }
    let mut out = Vec::new();
    for r in records(c).into_iter().filter(|r| r.id == "toolu_a") {
        let mut r = r;
        r.id = id.to_string();
        r.path = path.to_string();
        if r.before.is_some() {
            r.before = Some(Blob::Id(pre_id.clone()));
        }
        if r.after.is_some() {
            r.after = Some(Blob::Id(post.to_string()));
        }
        out.push(r);
    }
    assert!(!out.is_empty(), "the exported bundle has the a.txt entry");
    out
}

/// A forged triage record: the entry `id` (at `path`) "was reverted" over `overwrote` (an
/// object of the bundle), to the blob `wrote`. Put last, it is the journal's last action.
fn forge_revert(c: &mut Contents, id: &str, path: &str, overwrote: &[u8], wrote: &str) -> Record {
    let oid = walj::store::blob_id(overwrote);
    if !c.objects.iter().any(|(i, _)| *i == oid) {
        c.objects.push((oid.clone(), overwrote.to_vec()));
    }
    let first = records(c).into_iter().next().unwrap();
    let mut r = Record::new("resolved", &first.session);
    r.sid = first.sid.clone();
    r.id = id.to_string();
    r.path = path.to_string();
    r.event = "post".into();
    r.how = Some("reverted".into());
    r.action = Some("a-forged-0001".into());
    r.before = Some(Blob::Id(oid));
    r.after = Some(Blob::Id(wrote.to_string()));
    r.with("batch", "b-forged").with("seq", 0).with("origin", "local")
}

fn write_bundle(c: &Contents, path: &Path) {
    bundle::write(path, c, &Protection::None).unwrap();
}

/// A receiving repository with `a.txt` as the sender left it, `.walj/` already made (so its
/// making is not what a before/after of `.git/` sees), and a folder outside it to watch.
struct Dst {
    repo: Repo,
    outside: tempfile::TempDir,
    pwned: PathBuf,
}

fn dst() -> Dst {
    let repo = Repo::new(&[("a.txt", "two\n")]);
    Claude::new(&repo, "d5d5d5d5-0000-4000-8000-000000000001").start();
    let outside = tempfile::tempdir().unwrap();
    fs::write(outside.path().join("victim"), b"precious\n").unwrap();
    let pwned = outside.path().join("PWNED");
    Dst { repo, outside, pwned }
}

impl Dst {
    fn snapshot(&self) -> (BTreeMap<PathBuf, Vec<u8>>, BTreeMap<PathBuf, Vec<u8>>) {
        (git_tree(&self.repo.root), tree(self.outside.path()))
    }

    /// A `.git/config` that runs `touch PWNED` at the next `git status`.
    fn evil_config(&self) -> Vec<u8> {
        let mut cfg = fs::read(self.repo.root.join(".git/config")).unwrap();
        cfg.extend_from_slice(format!("[core]\n\tfsmonitor = \"touch {}; false\"\n", self.pwned.display()).as_bytes());
        cfg
    }

    fn no_command_ran(&self) {
        self.repo.git(&["status", "--short"]);
        assert!(!self.pwned.exists(), "git ran the bundle's command");
    }
}

#[test]
fn a_forged_git_config_entry_is_never_written_by_revert_or_undo() {
    let (src, mut c) = exported();
    let d = dst();
    // The pre-image adds core.fsmonitor; the post-image is the predictable id of the
    // receiver's config, so the entry shows as applied and "revertable".
    let evil = d.evil_config();
    let current = d.repo.blob_id(".git/config");
    let mut recs = records(&c);
    recs.extend(forge_entry(&mut c, "toolu_forged_git", ".git/config", &evil, &current));
    recs.extend(forge_entry(&mut c, "toolu_forged_GIT", ".GIT/config", &evil, &current));
    // And the journal's last line: a forged revert of that entry, for a plain `walj undo`.
    recs.push(forge_revert(&mut c, "toolu_forged_git", ".git/config", &evil, &current));
    set_records(&mut c, &recs);
    let forged = src.tmp.join("forged.walj");
    write_bundle(&c, &forged);

    let before = d.snapshot();
    let out = d.repo.ok(&["sessions", "import", "--yes", forged.to_str().unwrap()]);
    assert!(out.contains("imported session"), "{out}");
    // Shown (the user can look at it) ...
    let log = d.repo.ok(&["log", "--all"]);
    assert!(log.contains(".git/config"), "{log}");
    // ... never written: not by revert, not forced, not confirmed.
    for args in [
        vec!["revert", "toolu_forged_git"],
        vec!["revert", "toolu_forged_git", "--yes"],
        vec!["revert", "toolu_forged_git", "--yes", "--force"],
        vec!["revert", "toolu_forged_GIT", "--yes", "--force"],
    ] {
        let (code, stdout, stderr) = d.repo.run(&args);
        assert_ne!(code, 0, "{args:?}: {stdout}");
        assert!(!stderr.contains("panicked"), "{stderr}");
    }
    let (code, _, stderr) = d.repo.run(&["revert", "toolu_forged_GIT", "--yes", "--force"]);
    assert_eq!(code, 1);
    assert!(stderr.contains("inside git's own folder") && stderr.contains("from bundle forged.walj"), "{stderr}");
    // A plain undo right after the import: the forged triage record is the journal's last
    // line, but only this checkout's own actions count.
    let (code, stdout, stderr) = d.repo.run(&["undo"]);
    assert_ne!(code, 0, "{stdout}");
    assert!(stderr.contains("nothing to undo"), "{stderr}");
    let (code, _, stderr) = d.repo.run(&["undo", "toolu_forged_git", "--yes", "--force"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("git's own folder"), "{stderr}");
    assert_eq!(d.snapshot(), before, ".git/ or the outside folder changed");
    d.no_command_ran();
}

#[test]
fn a_plain_undo_after_an_import_undoes_this_checkouts_own_last_action() {
    let (src, mut c) = exported();
    let d = dst();
    // Own history first: a session here edits b.txt and the user reverts it.
    d.repo.write("b.txt", "mine\n");
    let me = Claude::new(&d.repo, "d5d5d5d5-0000-4000-8000-000000000002");
    me.prompt("edit b");
    me.edit("toolu_b", "b.txt", "mine", "changed");
    me.stop();
    d.repo.ok(&["revert", "toolu_b", "--force"]);
    assert_eq!(d.repo.read("b.txt"), "mine\n");
    // The bundle's last line: a forged revert of a.txt, whose "overwritten" bytes are evil.
    let mut recs = records(&c);
    let current = d.repo.blob_id("a.txt");
    recs.push(forge_revert(&mut c, "toolu_a", "a.txt", b"EVIL\n", &current));
    set_records(&mut c, &recs);
    let forged = src.tmp.join("forged.walj");
    write_bundle(&c, &forged);
    d.repo.ok(&["sessions", "import", "--yes", forged.to_str().unwrap()]);
    let before = d.snapshot();
    let out = d.repo.ok(&["undo", "--force"]);
    assert!(out.contains("b.txt"), "{out}");
    assert_eq!(d.repo.read("b.txt"), "changed\n", "the own revert was undone");
    assert_eq!(d.repo.read("a.txt"), "two\n", "the bundle's forged action was not");
    assert_eq!(d.snapshot(), before);
}

#[test]
fn an_own_sessions_git_config_change_is_shown_and_reverted_only_with_force() {
    let repo = Repo::new(&[("a.txt", "one\n")]);
    let before_cfg = fs::read_to_string(repo.root.join(".git/config")).unwrap();
    let c = Claude::new(&repo, "0a0a0a0a-0000-4000-8000-000000000001");
    c.start();
    c.prompt("set an alias");
    c.edit("toolu_cfg", ".git/config", "[core]", "[alias]\n\tst = status\n[core]");
    c.stop();
    let changed = fs::read_to_string(repo.root.join(".git/config")).unwrap();
    assert_ne!(changed, before_cfg);
    let diff = repo.ok(&["diff", "toolu_cfg", "--applied"]);
    assert!(diff.contains(".git/config") && diff.contains("st = status"), "{diff}");
    let (code, _, stderr) = repo.run(&["revert", "toolu_cfg"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(
        stderr.contains("inside git's own folder")
            && stderr.contains("git's configuration")
            && stderr.contains("--force"),
        "{stderr}"
    );
    assert_eq!(fs::read_to_string(repo.root.join(".git/config")).unwrap(), changed, "refused: nothing written");
    let out = repo.ok(&["revert", "toolu_cfg", "--force"]);
    assert!(out.contains("--force: .git/config is git's configuration"), "{out}");
    assert_eq!(fs::read_to_string(repo.root.join(".git/config")).unwrap(), before_cfg);
    // And its undo needs --force too.
    let (code, _, stderr) = repo.run(&["undo"]);
    assert_eq!(code, 1, "{stderr}");
    repo.ok(&["undo", "--force"]);
    assert_eq!(fs::read_to_string(repo.root.join(".git/config")).unwrap(), changed);
}

#[test]
fn export_import_revert_of_an_ordinary_file_still_works_once_confirmed() {
    let (_src, c) = exported();
    let d = dst();
    let file = d.repo.tmp.join("../good.walj");
    let file = fs::canonicalize(file.parent().unwrap()).unwrap().join("good-copy.walj");
    write_bundle(&c, &file);
    d.repo.ok(&["sessions", "import", "--yes", file.to_str().unwrap()]);
    // Off a terminal, an imported entry is reverted only with --yes, and the output names it.
    let (code, _, stderr) = d.repo.run(&["revert", "toolu_a"]);
    assert_eq!(code, 1, "{stderr}");
    assert!(stderr.contains("from bundle good-copy.walj") && stderr.contains("--yes"), "{stderr}");
    assert_eq!(d.repo.read("a.txt"), "two\n");
    // --session leaves the bundle's entries out, and says so.
    let (code, _, stderr) = d.repo.run(&["revert", "--session", "5e5e5e5e", "--yes"]);
    assert_ne!(code, 0);
    assert!(stderr.contains("1 entry from imported bundles left out"), "{stderr}");
    assert_eq!(d.repo.read("a.txt"), "two\n");
    let (code, out, stderr) = d.repo.run(&["revert", "toolu_a", "--yes"]);
    assert_eq!(code, 0, "{out}{stderr}");
    assert!(stderr.contains("from bundle good-copy.walj"), "{stderr}");
    assert_eq!(d.repo.read("a.txt"), "one\n");
}

#[test]
fn bundles_with_session_ids_walj_does_not_accept_are_refused_with_nothing_written() {
    let (src, c) = exported();
    let d = dst();
    for bad in ["$(id)", "..", ".", "a/b", "../../etc", &"x".repeat(129), "tab\there", "é"] {
        let mut c = c.clone();
        let old = c.meta.session.clone();
        c.meta.session = bad.to_string();
        let recs: Vec<Record> = records(&c)
            .into_iter()
            .map(|mut r| {
                if r.session == old {
                    r.session = bad.to_string();
                }
                r
            })
            .collect();
        set_records(&mut c, &recs);
        let f = src.tmp.join("bad.walj");
        write_bundle(&c, &f);
        let journal = d.repo.journal_bytes();
        let store = tree(&d.repo.root.join(".walj"));
        let (code, stdout, stderr) = d.repo.run(&["sessions", "import", "--yes", f.to_str().unwrap()]);
        assert_eq!(code, 2, "{bad:?}: {stdout}{stderr}");
        assert!(stderr.contains("is not one walj accepts"), "{stderr}");
        assert_eq!(d.repo.journal_bytes(), journal, "{bad:?}: nothing written");
        assert_eq!(tree(&d.repo.root.join(".walj")), store);
    }
}

#[test]
fn a_bundle_cannot_add_to_a_session_recorded_here_nor_bring_marks_only_this_checkout_writes() {
    let (src, c) = exported();
    // The sender imports its own session's bundle with one more (forged) record: refused,
    // its hooks recorded that session here.
    let mut more = c.clone();
    let mut recs = records(&more);
    let mut extra = recs[0].clone();
    extra.id = "toolu_more".into();
    extra.kind = Some("prompt".into());
    recs.push(extra.with("prompt", "more"));
    set_records(&mut more, &recs);
    let f = src.tmp.join("more.walj");
    write_bundle(&more, &f);
    let journal = src.journal_bytes();
    let (code, _, stderr) = src.run(&["sessions", "import", "--yes", f.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("recorded here by this checkout's own hooks"), "{stderr}");
    assert_eq!(src.journal_bytes(), journal);
    // Importing the unchanged bundle back adds nothing and is not refused.
    let good = src.tmp.join("good.walj");
    let out = src.ok(&["sessions", "import", "--yes", good.to_str().unwrap()]);
    assert!(out.contains("already here"), "{out}");
}

/// Runs walj with `args` and returns (exit code, its peak resident memory in KiB, stderr).
/// Measured from a fresh process (this test binary run again, [`rss_helper`]): Linux keeps the
/// largest resident size across `exec`, so a child spawned by this big test process would
/// report this process's own peak.
#[cfg(target_os = "linux")]
pub(crate) fn peak_kib(args: &[&str]) -> (i32, u64, String) {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([&exact_name("rss_helper"), "--exact", "--nocapture", "--test-threads", "1", "-q"])
        .env("WALJ_RSS_HELPER", serde_json::to_string(args).unwrap())
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let line = text.lines().find(|l| l.starts_with("RSS ")).unwrap_or_else(|| panic!("{text}"));
    let f: Vec<&str> = line.split(' ').collect();
    (f[3].parse().unwrap(), f[1].parse().unwrap(), String::from_utf8_lossy(&out.stderr).into_owned())
}

/// Not a test of its own: with `WALJ_RSS_HELPER` (a JSON list of arguments) it runs walj,
/// waits for it with `wait4` and prints `RSS <KiB> CODE <code>` ([`peak_kib`]).
#[test]
#[cfg(target_os = "linux")]
#[allow(clippy::zombie_processes)] // reaped by the wait4 below, which also reads its rusage
fn rss_helper() {
    use std::os::unix::process::ExitStatusExt;
    let Ok(args) = std::env::var("WALJ_RSS_HELPER") else { return };
    let args: Vec<String> = serde_json::from_str(&args).unwrap();
    let child = std::process::Command::new(crate::common::walj_bin())
        .env_remove("CLAUDECODE")
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .env("NO_COLOR", "1")
        .args(&args)
        .stdout(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let pid = child.id() as libc::pid_t;
    let mut status = 0;
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    assert_eq!(unsafe { libc::wait4(pid, &mut status, 0, &mut usage) }, pid);
    let st = std::process::ExitStatus::from_raw(status);
    assert!(st.signal().is_none(), "killed by a signal: {st:?}");
    println!("RSS {} CODE {}", usage.ru_maxrss, st.code().unwrap());
}

#[test]
#[cfg(target_os = "linux")]
fn a_decompression_bomb_is_refused_with_exit_2_and_little_memory() {
    use std::io::Write;
    let (src, c) = exported();
    let d = dst();
    // A real header, then a transcript section that says 3 GiB and is 3 GiB of zeros: about
    // 100 KB of zstd.
    let mut meta = serde_json::to_vec(&c.meta).unwrap();
    meta.push(b'\n');
    let len: u64 = 3 << 30;
    let bomb = src.tmp.join("bomb.walj");
    let mut enc = zstd::stream::write::Encoder::new(fs::File::create(&bomb).unwrap(), 1).unwrap();
    enc.write_all(&meta).unwrap();
    enc.write_all(format!("records 0\ntranscript {len}\n").as_bytes()).unwrap();
    let zeros = vec![0u8; 1 << 20];
    for _ in 0..(len >> 20) {
        enc.write_all(&zeros).unwrap();
    }
    enc.finish().unwrap();
    let size = fs::metadata(&bomb).unwrap().len();
    assert!(size < 200_000, "the bomb is small: {size}");
    let journal = d.repo.journal_bytes();
    let (code, kib, stderr) =
        peak_kib(&["--project", d.repo.root.to_str().unwrap(), "sessions", "import", "--yes", bomb.to_str().unwrap()]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("decompression bomb") && stderr.contains("--max-ratio"), "{stderr}");
    assert!(kib < 96 * 1024, "peak memory {kib} KiB: {stderr}");
    assert_eq!(d.repo.journal_bytes(), journal);
}

#[test]
fn each_limit_refuses_with_its_flag_and_the_flag_raises_it() {
    let (src, mut c) = exported();
    let d = dst();
    // 40 MiB of zeros: a few KB of zstd, over the ratio; one object over a small max_object.
    c.transcript = Some(vec![0u8; 40 << 20]);
    let f = src.tmp.join("big.walj");
    write_bundle(&c, &f);
    let f = f.to_str().unwrap();
    let (code, _, stderr) = d.repo.run(&["sessions", "import", "--yes", f]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("max_ratio") && stderr.contains("--max-ratio"), "{stderr}");
    let (code, _, stderr) =
        d.repo.run(&["sessions", "import", "--yes", f, "--max-ratio", "1000000", "--max-decoded", "1000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("max_decoded") && stderr.contains("--max-decoded"), "{stderr}");
    let (code, _, stderr) =
        d.repo.run(&["sessions", "import", "--yes", f, "--max-ratio", "1000000", "--max-object", "1000"]);
    assert_eq!(code, 2, "{stderr}");
    assert!(stderr.contains("over max_object") && stderr.contains("--max-object"), "{stderr}");
    // The config key raises it as the flag does.
    fs::write(d.repo.root.join(".walj/config.toml"), "[limits]\nmax_ratio = 1000000\n").unwrap();
    let out = d.repo.ok(&["sessions", "import", "--yes", f]);
    assert!(out.contains("imported session"), "{out}");
}

/// The exported session every property case forges from (made once: a sender's repository
/// and its session cost a dozen walj runs).
fn shared_export() -> &'static (Repo, Contents) {
    static ONCE: std::sync::OnceLock<(Repo, Contents)> = std::sync::OnceLock::new();
    ONCE.get_or_init(exported)
}

/// The pieces random record paths are made of: ways out, git's folders in several spellings,
/// walj's folder, links (out of the project, into `.git`), NUL, odd names, non-UTF-8 names.
const PARTS: &[&str] = &[
    "..",
    ".",
    ".git",
    ".GIT",
    ".Git",
    ".git.",
    "git",
    "a",
    "b.txt",
    ".walj",
    ".WALJ",
    "out",
    "in_git",
    "sub",
    "x\0y",
    "\u{fffd}",
    "~",
    "c\\d",
    "config",
    "hooks",
    "",
    "a",
    "sub",
    "new",
    "sub",
    "new.txt",
    "a",
    // Weighted: the ways into git's folders, and plain names, come up most.
    ".git",
    "in_git",
    ".git",
    "in_git",
    "sub/.git",
    "config",
    "hooks",
    "new",
    "new.txt",
    // Names that are not UTF-8, as a record carries them (`walj::fsutil::name`): `bad\xff.txt`,
    // a lone continuation byte, `.git` followed by a raw byte, raw bytes that together spell
    // `é`, and a literal char of the mapped range that the encoding must not confuse.
    "bad\u{10ffff}.txt",
    "\u{10ff80}",
    ".git\u{10ffff}",
    "\u{10ffc3}\u{10ffa9}",
    "bad\u{10ffff}.txt",
];

/// Every file under the project that holds `needle`, outside `.git` and `.walj` (the walk
/// follows no link: these are where the bytes really are).
fn holding(root: &Path, needle: &[u8]) -> Vec<PathBuf> {
    tree(root)
        .keys()
        .filter(|rel| {
            let p = root.join(rel);
            fs::symlink_metadata(&p).is_ok_and(|m| m.is_file())
                && fs::read(&p).is_ok_and(|b| b.windows(needle.len()).any(|w| w == needle))
        })
        .cloned()
        .collect()
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig { cases: 40, failure_persistence: None, ..Default::default() })]

    /// A bundle entry (and a forged revert of it) at a random path, imported, then reverted
    /// and undone with every confirmation and `--force`: whatever is written lands inside the
    /// project, never under a `.git` (any spelling) or `.walj`, never through a link, never
    /// outside; `.git/` and the outside folder stay byte-for-byte as they were.
    #[test]
    fn random_record_paths_never_write_outside_the_allowed_set(
        parts in proptest::collection::vec(proptest::sample::select(PARTS), 1..5),
        absolute in proptest::bool::ANY,
    ) {
        let (src, base) = shared_export();
        let mut c = base.clone();
        let repo = Repo::init_in("proj");
        repo.write("a.txt", "two\n");
        repo.write("sub/config", "sub\n");
        let outside = repo.tmp.join("outside");
        fs::create_dir_all(&outside).unwrap();
        fs::write(outside.join("config"), b"precious\n").unwrap();
        std::os::unix::fs::symlink(&outside, repo.root.join("out")).unwrap();
        std::os::unix::fs::symlink(".git", repo.root.join("in_git")).unwrap();
        repo.commit("initial");
        Claude::new(&repo, "d5d5d5d5-0000-4000-8000-000000000009").start();

        let rel = format!("{}{}", if absolute { "/" } else { "" }, parts.join("/"));
        let on_disk = fs::read(repo.root.join(walj::fsutil::name::to_path(&rel))).ok();
        let post = walj::store::blob_id(on_disk.as_deref().unwrap_or(b"nothing"));
        let mut recs = records(&c);
        recs.extend(forge_entry(&mut c, "toolu_prop", &rel, b"EVIL-PRE\n", &post));
        // A second entry at the same path, "already reverted" by a forged record: for undo.
        recs.extend(forge_entry(&mut c, "toolu_prop2", &rel, b"EVIL-PRE\n", &post));
        recs.push(forge_revert(&mut c, "toolu_prop2", &rel, b"EVIL-UNDO\n", &post));
        set_records(&mut c, &recs);
        let f = repo.tmp.join("prop.walj");
        write_bundle(&c, &f);

        let git_before = git_tree(&repo.root);
        let outside_before = tree(&outside);
        let _ = src;
        let runs = [
            vec!["sessions", "import", "--yes", f.to_str().unwrap()],
            vec!["revert", "toolu_prop", "--yes", "--force"],
            vec!["undo", "toolu_prop2", "--yes", "--force"],
            vec!["undo", "--force"],
        ];
        for args in &runs {
            let (code, _, stderr) = repo.run(args);
            proptest::prop_assert!(code == 0 || code == 1 || code == 2, "{rel:?} {args:?}: exit {code}: {stderr}");
            proptest::prop_assert!(!stderr.contains("panicked"), "{rel:?} {args:?}: {stderr}");
        }
        proptest::prop_assert_eq!(git_tree(&repo.root), git_before, "{:?}: .git/ changed", rel);
        proptest::prop_assert_eq!(tree(&outside), outside_before, "{:?}: the outside folder changed", rel);
        for needle in [&b"EVIL-PRE"[..], b"EVIL-UNDO"] {
            for p in holding(&repo.root, needle) {
                let bad = p.components().any(|c| {
                    let n = c.as_os_str().to_string_lossy().to_ascii_lowercase();
                    n.trim_end_matches(['.', ' ']) == ".git"
                }) || p.starts_with(".walj");
                proptest::prop_assert!(!bad, "{:?}: wrote {:?}", rel, p);
            }
        }
    }
}

/// `test`'s name as libtest knows it in this test binary (`module::test`): a test that runs
/// itself again as a child with `--exact` must name itself so, or the child runs nothing.
fn exact_name(test: &str) -> String {
    match module_path!().split_once("::") {
        Some((_, module)) => format!("{module}::{test}"),
        None => test.to_string(),
    }
}
