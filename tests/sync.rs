//! `walj sync` (issue 18) through the real binary and the real `git` command: several clones
//! of one bare repository (over a file path, and over `git daemon` on loopback), each with
//! its own HOME, exchanging journals under `refs/walj/`.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

mod common;

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{outcome, scratch, walj_at, walj_bin};
use serde_json::Value;

/// Plain git with a clean config (the tests' own commits and inspections).
fn git(dir: &Path, args: &[&str]) -> String {
    common::git(dir, args)
}

/// One bare repository and the machines that share it.
struct World {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    /// The URL every machine clones (a path, or git:// on loopback).
    url: String,
}

struct Machine {
    dir: PathBuf,
    home: PathBuf,
    /// Extra PATH entries in front (a wrapping `git`).
    path_prefix: Option<PathBuf>,
}

impl World {
    fn new() -> World {
        let (tmp, root) = scratch();
        git(&root, &["init", "-q", "--bare", "remote.git"]);
        // One commit on main, so the clones have a branch with an upstream.
        let seed = root.join("seed");
        git(&root, &["init", "-q", "-b", "main", "seed"]);
        fs::write(seed.join("README"), "shop\n").unwrap();
        git(&seed, &["add", "README"]);
        git(&seed, &["commit", "-qm", "first"]);
        git(&seed, &["push", "-q", root.join("remote.git").to_str().unwrap(), "main"]);
        let url = root.join("remote.git").display().to_string();
        World { _tmp: tmp, root, url }
    }

    fn remote(&self) -> PathBuf {
        self.root.join("remote.git")
    }

    /// A clone named `name` (also its `[sync] name`), with its own HOME.
    fn machine(&self, name: &str) -> Machine {
        git(&self.root, &["clone", "-q", &self.url, name]);
        let dir = fs::canonicalize(self.root.join(name)).unwrap();
        let home = self.root.join(format!("home-{name}"));
        fs::create_dir_all(&home).unwrap();
        fs::create_dir_all(dir.join(".walj")).unwrap();
        fs::write(dir.join(".walj/config.toml"), format!("[sync]\nname = \"{name}\"\n")).unwrap();
        Machine { dir, home, path_prefix: None }
    }

    /// `refs/walj/*` of the bare repository: ref → commit.
    fn remote_refs(&self) -> Vec<(String, String)> {
        git(&self.remote(), &["for-each-ref", "--format=%(refname) %(objectname)", "refs/walj/"])
            .lines()
            .filter_map(|l| l.split_once(' ').map(|(a, b)| (a.to_string(), b.to_string())))
            .collect()
    }
}

impl Machine {
    fn cmd(&self, args: &[&str]) -> Command {
        let mut c = Command::new(walj_bin());
        c.env_remove("CLAUDECODE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .env("NO_COLOR", "1")
            .arg("--project")
            .arg(&self.dir)
            .args(args)
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("GIT_TERMINAL_PROMPT", "0")
            .env("LC_ALL", "C");
        if let Some(p) = &self.path_prefix {
            c.env("PATH", format!("{}:{}", p.display(), std::env::var("PATH").unwrap_or_default()));
        }
        c
    }

    fn walj(&self, args: &[&str]) -> (i32, String, String) {
        outcome(&self.cmd(args).output().unwrap())
    }

    /// `walj ARGS`, which must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.walj(args);
        assert_eq!(code, 0, "walj {args:?}\nstdout:\n{out}\nstderr:\n{err}");
        out
    }

    fn sync_json(&self, args: &[&str]) -> Value {
        let mut a = vec!["sync", "--json"];
        a.extend_from_slice(args);
        serde_json::from_str(&self.ok(&a)).unwrap()
    }

    /// The demo's crashed session, replayed through `walj hook` in this checkout.
    fn demo(&self) {
        let out = Command::new(walj_bin())
            .args(["tui", "--demo-replay"])
            .arg(&self.dir)
            .current_dir(&self.dir)
            .env("HOME", &self.home)
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .output()
            .unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }

    fn journal(&self) -> PathBuf {
        self.dir.join(".walj/journal.jsonl")
    }

    fn id(&self) -> String {
        fs::read_to_string(self.dir.join(".walj/sync/id")).unwrap().trim().to_string()
    }

    fn copy_of(&self, other: &Machine) -> PathBuf {
        self.dir.join(".walj/remotes").join(other.id())
    }

    /// Appends raw journal lines (complete, with a newline each).
    fn append(&self, lines: &[String]) {
        let mut f = fs::OpenOptions::new().append(true).create(true).open(self.journal()).unwrap();
        for l in lines {
            f.write_all(l.as_bytes()).unwrap();
            f.write_all(b"\n").unwrap();
        }
    }

    /// The commit this checkout last published (walj's repository).
    fn published(&self) -> Option<String> {
        let out = Command::new("git")
            .arg(format!("--git-dir={}", self.dir.join(".walj/sync/repo.git").display()))
            .args(["rev-parse", "--verify", "-q", &format!("refs/walj/journals/{}", self.id())])
            .output()
            .unwrap();
        out.status.success().then(|| String::from_utf8_lossy(&out.stdout).trim().to_string())
    }
}

/// A journal line as walj writes it: the fields given, then its CRC32C (`crc`, always last).
fn checked(json: String) -> String {
    let r: walj::journal::Record = serde_json::from_str(&json).unwrap();
    String::from_utf8(r.to_line()).unwrap().trim_end().to_string()
}

/// A session line as the hook writes them (no images), `i`-th of session `sid`.
fn line(i: usize, session: &str) -> String {
    let id = walj::store::blob_id(format!("{session}{i}").as_bytes());
    checked(format!(
        r#"{{"v":2,"sid":"{}","ts":"2026-11-29T07:{:02}:{:02}.000Z","event":"file_modified","path":"src/module_{}.rs","persisted":false,"op":"applied","id":"toolu_{id}","session":"{session}","tool":"Edit","after":"{id}"}}"#,
        &session[..6],
        (i / 60) % 60,
        i % 60,
        i % 997
    ))
}

const OTHER_SESSION: &str = "5e55a0b1-0000-4000-8000-0000000000aa";

fn user_git_objects(dir: &Path) -> usize {
    fn count(p: &Path) -> usize {
        fs::read_dir(p).map_or(0, |rd| rd.flatten().map(|e| if e.path().is_dir() { count(&e.path()) } else { 1 }).sum())
    }
    count(&dir.join(".git/objects"))
}

#[test]
fn two_clones_exchange_journals_and_images_under_refs_walj_only() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    fs::create_dir_all(a.dir.join(".walj/transcripts")).unwrap();
    fs::write(a.dir.join(".walj/transcripts/8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10.jsonl.zst"), "TRANSCRIPT COPY")
        .unwrap();
    let objects_before = user_git_objects(&a.dir);

    let r = a.sync_json(&["--yes"]);
    assert_eq!(r["published"]["state"], "pushed", "{r:#}");
    assert_eq!(r["remote"], "origin");
    assert!(r["published"]["images_added"].as_u64().unwrap() > 0, "{r:#}");
    let refs = w.remote_refs();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert_eq!(refs[0].0, format!("refs/walj/journals/{}", a.id()));
    // Branches and tags untouched; the user's repository got no objects and no refs.
    assert_eq!(
        git(&w.remote(), &["for-each-ref", "--format=%(refname)", "refs/heads", "refs/tags"]),
        "refs/heads/main\n"
    );
    assert_eq!(user_git_objects(&a.dir), objects_before);
    assert_eq!(git(&a.dir, &["for-each-ref", "refs/walj"]), "");
    // The commit holds the manifest, the segments and the images: no transcripts.
    assert_eq!(git(&w.remote(), &["ls-tree", "--name-only", &refs[0].1]), "manifest.json\nobjects\nsegments\n");
    let everything = git(&w.remote(), &["cat-file", "--batch-all-objects", "--batch", "--unordered"]);
    assert!(!everything.contains("TRANSCRIPT COPY"), "a transcript copy was published");
    // The commit is walj's, whatever user.name says (unset here).
    let who = git(&w.remote(), &["log", "-1", "--format=%an <%ae>|%cn <%ce>", &refs[0].1]);
    assert_eq!(who.trim(), "walj <walj@localhost>|walj <walj@localhost>");
    // A plain clone and a plain fetch do not download them.
    git(&w.root, &["clone", "-q", &w.url, "plain"]);
    assert_eq!(git(&w.root.join("plain"), &["for-each-ref", "refs/walj"]), "");
    git(&b.dir, &["fetch", "-q"]);
    assert_eq!(git(&b.dir, &["for-each-ref", "refs/walj"]), "");

    // The second machine fetches it: the journal byte for byte, the images, the manifest.
    let r = b.sync_json(&["--yes"]);
    assert_eq!(r["published"]["state"], "nothing", "{r:#}");
    let j = &r["journals"][0];
    assert_eq!((j["name"].as_str(), j["verdict"].as_str()), (Some("laptop"), Some("new")), "{r:#}");
    assert_eq!(j["missing_images"], 0);
    let copy = b.copy_of(&a);
    assert_eq!(fs::read(copy.join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
    let manifest: Value = serde_json::from_slice(&fs::read(copy.join("manifest.json")).unwrap()).unwrap();
    assert_eq!(manifest["name"], "laptop");
    assert!(manifest["sessions"].as_array().unwrap().iter().any(|s| s["state"] == "crashed"), "{manifest:#}");
    for rec in common::journal_records(&a.dir) {
        for blob in [&rec.before, &rec.after].into_iter().flatten() {
            if let Some(id) = blob.id()
                && walj::store::Store::new(a.dir.join(".walj/store")).contains(id)
            {
                let got = walj::store::Store::new(copy.join("store")).get(id).unwrap();
                assert_eq!(walj::store::blob_id(&got), id);
            }
        }
    }
    // Again: nothing new on either side.
    assert_eq!(a.sync_json(&[])["published"]["state"], "up_to_date");
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "up_to_date");

    // New lines on the laptop travel as an update.
    a.append(&(0..10).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    let r = a.sync_json(&[]);
    assert_eq!(
        (r["published"]["state"].as_str(), r["published"]["new_epoch"].as_bool()),
        (Some("pushed"), Some(false))
    );
    let status = b.ok(&["sync", "--status"]);
    assert!(status.contains("laptop") && status.contains("behind"), "{status}");
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "updated");
    assert_eq!(fs::read(copy.join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}

#[test]
fn a_torn_last_line_is_not_published_until_it_is_complete() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.append(&[line(0, OTHER_SESSION)]);
    let mut f = fs::OpenOptions::new().append(true).open(a.journal()).unwrap();
    f.write_all(&line(1, OTHER_SESSION).as_bytes()[..40]).unwrap();
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let copy = fs::read_to_string(b.copy_of(&a).join("journal.jsonl")).unwrap();
    assert_eq!(copy, format!("{}\n", line(0, OTHER_SESSION)));
}

#[test]
fn missing_remote_unreachable_remote_and_no_repository_are_one_line_and_change_nothing() {
    let w = World::new();
    let a = w.machine("laptop");
    a.demo();
    let journal = fs::read(a.journal()).unwrap();

    let (code, out, err) = a.walj(&["sync", "--yes", "--remote", "nope"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("no git remote named \"nope\""), "{err}");
    assert!(!a.dir.join(".walj/sync").exists(), "nothing may be created");

    // A remote nobody answers on (connection refused on loopback).
    git(&a.dir, &["remote", "add", "dead", "git://127.0.0.1:9/nothing.git"]);
    let (code, _, err) = a.walj(&["sync", "--yes", "--remote", "dead"]);
    assert_eq!(code, 1, "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("cannot reach remote dead"), "{err}");
    assert_eq!(fs::read(a.journal()).unwrap(), journal);
    assert!(!a.dir.join(".walj/remotes").exists());

    // Not a git repository at all.
    let (_t, plain) = scratch();
    let (code, _, err) = outcome(&walj_at(&plain).args(["sync", "--yes"]).output().unwrap());
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("is not in a git repository"), "{err}");
}

#[test]
fn the_first_plain_text_sync_names_the_remote_and_asks() {
    let w = World::new();
    let a = w.machine("laptop");
    a.demo();
    // No terminal to ask on: the notice, then a refusal; nothing published.
    let (code, out, err) = a.walj(&["sync"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains(&format!("remote \"origin\" ({})", w.url)), "{err}");
    assert!(err.contains("prompts, Bash command lines"), "{err}");
    assert!(err.contains("--yes"), "{err}");
    assert!(w.remote_refs().is_empty());
    // A dry run shows the notice and publishes nothing either.
    let r = a.sync_json(&["--dry-run"]);
    assert!(r["notice"].as_str().unwrap().contains("unencrypted"), "{r:#}");
    assert_eq!(r["published"]["state"], "would_push");
    assert!(w.remote_refs().is_empty());
    // Inside a Claude Code tool call, without --yes: refused with the usual exit 3.
    let (code, _, err) = outcome(&a.cmd(&["sync"]).env("CLAUDECODE", "1").output().unwrap());
    assert_eq!(code, 3, "{err}");
    // --yes agrees once; later syncs do not ask again.
    a.ok(&["sync", "--yes"]);
    assert_eq!(w.remote_refs().len(), 1);
    a.append(&[line(0, OTHER_SESSION)]);
    a.ok(&["sync"]);
}

#[test]
fn never_capture_paths_name_no_published_image() {
    let w = World::new();
    let a = w.machine("laptop");
    // An image in the store, named by a line on a path the config now never captures.
    let store = walj::store::Store::new(a.dir.join(".walj/store"));
    let secret = store.put(b"TOKEN=hunter2\n").unwrap();
    let open = store.put(b"fine\n").unwrap();
    let mk = |path: &str, id: &str| {
        checked(format!(
            r#"{{"v":2,"sid":"5e55a0","ts":"2026-11-29T07:00:00.000Z","event":"file_modified","path":"{path}","persisted":false,"op":"applied","id":"toolu_{path}","session":"5e55a0b1-0000-4000-8000-000000000001","tool":"Edit","after":"{id}"}}"#
        ))
    };
    a.append(&[mk("deploy/secrets.env", &secret), mk("src/ok.rs", &open)]);
    fs::write(a.dir.join(".walj/config.toml"), "[capture]\nnever = [\"*.env\"]\n[sync]\nname = \"laptop\"\n").unwrap();
    a.ok(&["sync", "--yes"]);
    let head = &w.remote_refs()[0].1;
    let tree = git(&w.remote(), &["ls-tree", "-r", "--name-only", head]);
    assert!(tree.contains(&format!("objects/{}/{}", &open[..2], &open[2..])), "{tree}");
    assert!(!tree.contains(&secret[2..]), "{tree}");
}

/// A forged or rewritten ref is refused and reported, the last accepted copy stays, and the
/// checkout that owns the journal refuses to push over it.
#[test]
fn forged_rewritten_foreign_and_damaged_refs_are_refused() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let copy = fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap();
    let real = w.remote_refs()[0].clone();

    // A forger's history: a root commit whose manifest names the laptop's journal, same
    // epoch, other lines.
    let forge = w.root.join("forge");
    git(&w.root, &["init", "-q", "forge"]);
    let mut manifest: Value =
        serde_json::from_str(&git(&w.remote(), &["show", &format!("{}:manifest.json", real.1)])).unwrap();
    let evil = "{\"v\":2,\"op\":\"applied\",\"path\":\"evil\"}\n";
    manifest["journal_bytes"] = evil.len().into();
    manifest["sealed_bytes"] = 0.into();
    manifest["segments"] = 1.into();
    manifest["sealed"] = 0.into();
    fs::create_dir_all(forge.join("segments/0000")).unwrap();
    fs::write(forge.join("segments/0000/000000"), evil).unwrap();
    fs::write(forge.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    git(&forge, &["add", "-A"]);
    git(&forge, &["commit", "-qm", "forged"]);
    git(&forge, &["push", "-q", "-f", &w.url, &format!("HEAD:{}", real.0)]);
    // A ref that is not a journal id, and one with no manifest.
    fs::remove_file(forge.join("manifest.json")).unwrap();
    git(&forge, &["commit", "-qam", "no manifest"]);
    git(&forge, &["push", "-q", &w.url, "HEAD:refs/walj/journals/not-a-journal"]);
    git(&forge, &["push", "-q", &w.url, &format!("HEAD:refs/walj/journals/{}", "0".repeat(32))]);

    let (code, out, err) = b.walj(&["sync"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("laptop") && out.contains("refused"), "{out}");
    assert!(out.contains("does not extend the one accepted before"), "{out}");
    assert!(out.contains("not named by a journal id"), "{out}");
    assert!(out.contains("no manifest.json"), "{out}");
    assert!(err.contains("3 journals on origin could not be taken"), "{err}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), copy, "the accepted copy stays");
    let r: Value = serde_json::from_str(&b.walj(&["sync", "--json"]).1).unwrap();
    let laptop = r["journals"].as_array().unwrap().iter().find(|j| j["journal"] == a.id().as_str()).unwrap();
    assert_eq!(laptop["verdict"], "refused");

    // The laptop does not push over a ref it did not write.
    let before = w.remote_refs();
    a.append(&[line(0, OTHER_SESSION)]);
    let (code, out, err) = a.walj(&["sync"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("is not what this checkout published"), "{err}");
    assert_eq!(w.remote_refs(), before);
}

/// `walj compact` (or a deletion) rewrites the journal: the next sync publishes a new epoch,
/// which readers accept.
#[test]
fn a_rewritten_journal_is_published_as_a_new_epoch_and_accepted() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.append(&(0..50).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let old = w.remote_refs()[0].1.clone();
    // Drop the first 20 lines, as a rewrite would.
    let text = fs::read_to_string(a.journal()).unwrap();
    let kept: String = text.lines().skip(20).map(|l| format!("{l}\n")).collect();
    fs::write(a.journal(), &kept).unwrap();
    let r = a.sync_json(&[]);
    assert_eq!(
        (r["published"]["state"].as_str(), r["published"]["new_epoch"].as_bool()),
        (Some("pushed"), Some(true)),
        "{r:#}"
    );
    assert_eq!(r["published"]["epoch"], 1);
    let new = w.remote_refs()[0].1.clone();
    assert_eq!(git(&w.remote(), &["rev-list", "--count", &new]).trim(), "1", "a root commit");
    let manifest: Value = serde_json::from_str(&git(&w.remote(), &["show", &format!("{new}:manifest.json")])).unwrap();
    assert_eq!(manifest["previous"], old.as_str());
    let r = b.sync_json(&[]);
    assert_eq!(r["journals"][0]["verdict"], "new_epoch", "{r:#}");
    assert_eq!(fs::read_to_string(b.copy_of(&a).join("journal.jsonl")).unwrap(), kept);
}

/// A `git` that runs the real one and then kills walj (its parent) with SIGKILL right after
/// the push the remote accepted: the worst moment, the remote moved and walj did not see it.
fn killing_git(dir: &Path, when: &str) -> PathBuf {
    let bin = dir.join(format!("kill-after-{when}"));
    fs::create_dir_all(&bin).unwrap();
    let real = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = {when} ]; then \"{}\" \"$@\"; kill -9 $PPID; exit 1; fi\ndone\nexec \"{}\" \"$@\"\n",
        real.trim(),
        real.trim()
    );
    let path = bin.join("git");
    fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

#[test]
fn kill_9_during_a_sync_then_running_it_again_completes() {
    let w = World::new();
    let (mut a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    // Killed right after the remote took the push.
    a.append(&(0..10).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    a.path_prefix = Some(killing_git(&w.root, "push"));
    let (code, ..) = a.walj(&["sync"]);
    assert_eq!(code, -1, "killed by the signal");
    let on_remote = w.remote_refs()[0].1.clone();
    assert_ne!(a.published().as_deref(), Some(on_remote.as_str()), "walj did not see the push succeed");
    // Killed right after a fetch, before anything else.
    a.path_prefix = Some(killing_git(&w.root, "fetch"));
    assert_eq!(a.walj(&["sync"]).0, -1);
    // Run again: it recognises its own push and completes.
    a.path_prefix = None;
    let r = a.sync_json(&[]);
    assert_eq!(r["published"]["state"], "up_to_date", "{r:#}");
    assert_eq!(a.published().as_deref(), Some(on_remote.as_str()));

    // Killed at random moments, lines appended between tries: the last sync completes,
    // and the other machine's copy is the journal.
    let n: usize = std::env::var("WALJ_KILL_ITERATIONS").ok().and_then(|v| v.parse().ok()).unwrap_or(6);
    let mut seed = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64;
    for round in 0..n {
        a.append(&(0..10).map(|i| line(round * 10 + i + 100, OTHER_SESSION)).collect::<Vec<_>>());
        seed = seed.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let delay = Duration::from_millis((seed >> 33) % 250);
        let mut cmd = a.cmd(&["sync"]).clone_stdio_null();
        // Odd rounds: walj and the git it runs (its process group); even rounds: walj alone.
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd.spawn().unwrap();
        std::thread::sleep(delay);
        if round % 2 == 1 {
            let _ = Command::new("kill").args(["-9", "--", &format!("-{}", child.id())]).status();
        } else {
            let _ = child.kill(); // SIGKILL
        }
        let _ = child.wait();
    }
    settle_remote(&w.remote());
    a.ok(&["sync"]);
    assert_eq!(a.published().as_deref(), Some(w.remote_refs()[0].1.as_str()));
    b.ok(&["sync", "--yes"]);
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}

/// After the kills: a `git push` orphaned by a killed walj finishes on its own (wait for it);
/// a receive-pack killed with its process group leaves its ref lock in the bare remote, which
/// a real server's own process would have released: remove it, as its admin would.
fn settle_remote(remote: &Path) {
    let needle = remote.to_string_lossy().into_owned();
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let busy = || {
        fs::read_dir("/proc").into_iter().flatten().flatten().any(|e| {
            e.file_name().to_string_lossy().parse::<u32>().is_ok()
                && fs::read(e.path().join("cmdline")).is_ok_and(|c| String::from_utf8_lossy(&c).contains(&needle))
        })
    };
    while busy() && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    fn sweep(dir: &Path) {
        for e in fs::read_dir(dir).into_iter().flatten().flatten() {
            let p = e.path();
            if p.is_dir() {
                sweep(&p);
            } else if p.extension().is_some_and(|x| x == "lock") {
                let _ = fs::remove_file(&p);
            }
        }
    }
    sweep(&remote.join("refs"));
    let _ = fs::remove_file(remote.join("packed-refs.lock"));
}

trait CloneStdioNull {
    fn clone_stdio_null(&self) -> Command;
}

impl CloneStdioNull for Command {
    /// A copy of the command (program, arguments, environment, folder) with null stdio.
    fn clone_stdio_null(&self) -> Command {
        let mut c = Command::new(self.get_program());
        c.args(self.get_args());
        for (k, v) in self.get_envs() {
            match v {
                Some(v) => c.env(k, v),
                None => c.env_remove(k),
            };
        }
        if let Some(d) = self.get_current_dir() {
            c.current_dir(d);
        }
        c.stdin(Stdio::null()).stdout(Stdio::null()).stderr(Stdio::null());
        c
    }
}

#[test]
fn two_machines_syncing_at_once_both_land() {
    let w = World::new();
    let machines: Vec<Machine> = ["laptop", "desktop", "devbox"].iter().map(|n| w.machine(n)).collect();
    for (k, m) in machines.iter().enumerate() {
        let session = format!("5e55a0b1-0000-4000-8000-00000000000{k}");
        m.append(&(0..30).map(|i| line(i, &session)).collect::<Vec<_>>());
    }
    let children: Vec<_> = machines
        .iter()
        .map(|m| {
            let mut c = m.cmd(&["sync", "--yes"]).clone_stdio_null();
            c.stderr(Stdio::piped());
            c.spawn().unwrap()
        })
        .collect();
    for c in children {
        let out: Output = c.wait_with_output().unwrap();
        assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    }
    assert_eq!(w.remote_refs().len(), 3);
    for m in &machines {
        let r = m.sync_json(&[]);
        let names: Vec<_> =
            r["journals"].as_array().unwrap().iter().map(|j| j["name"].as_str().unwrap().to_string()).collect();
        assert_eq!(names.len(), 2, "{r:#}");
    }
}

/// Bytes a sync uploads for a 10-line append to a large journal: the pack git sends (what
/// `git push` runs: `pack-objects --revs --thin --stdout`, the remote's tip as the base).
/// `WALJ_SYNC_BENCH_MB` sets the journal size (default 20 MB; the README's figure: 100).
#[test]
fn ten_line_append_to_a_large_journal_uploads_little() {
    let w = World::new();
    let a = w.machine("laptop");
    let mb: usize = std::env::var("WALJ_SYNC_BENCH_MB").ok().and_then(|v| v.parse().ok()).unwrap_or(20);
    let per = line(0, OTHER_SESSION).len() + 1;
    let n = mb * 1024 * 1024 / per;
    {
        let mut f = std::io::BufWriter::new(fs::File::create(a.journal()).unwrap());
        for i in 0..n {
            writeln!(f, "{}", line(i, OTHER_SESSION)).unwrap();
        }
    }
    let t = Instant::now();
    a.ok(&["sync", "--yes"]);
    let first = t.elapsed();
    let old = a.published().unwrap();
    a.append(&(n..n + 10).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    let t = Instant::now();
    let r = a.sync_json(&[]);
    let second = t.elapsed();
    assert_eq!(r["published"]["state"], "pushed");
    let new = a.published().unwrap();
    let mut pack = Command::new("git")
        .arg(format!("--git-dir={}", a.dir.join(".walj/sync/repo.git").display()))
        .args(["pack-objects", "--revs", "--thin", "--stdout", "--delta-base-offset", "-q"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    pack.stdin.take().unwrap().write_all(format!("{new}\n^{old}\n").as_bytes()).unwrap();
    let bytes = pack.wait_with_output().unwrap().stdout.len();
    let journal = fs::metadata(a.journal()).unwrap().len();
    println!(
        "sync bench: journal {journal} bytes ({n} lines); 10-line append uploads {bytes} bytes; first sync {first:?}, second {second:?}"
    );
    assert!(bytes <= 64 * 1024, "{bytes} bytes uploaded");
}

/// The same exchange over a real network protocol: `git daemon` on loopback.
#[test]
fn over_git_daemon_on_loopback() {
    let probe = Command::new("git").args(["daemon", "--help"]).stdout(Stdio::null()).stderr(Stdio::null()).status();
    let has_daemon = Command::new("git")
        .args(["--exec-path"])
        .output()
        .ok()
        .map(|o| PathBuf::from(String::from_utf8_lossy(&o.stdout).trim()).join("git-daemon"))
        .is_some_and(|p| p.exists());
    if probe.is_err() || !has_daemon {
        eprintln!("SKIPPED: git daemon is not installed");
        return;
    }
    let mut w = World::new();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let mut daemon = Command::new("git")
        .args(["daemon", "--export-all", "--enable=receive-pack", "--reuseaddr", "--listen=127.0.0.1"])
        .arg(format!("--port={port}"))
        .arg(format!("--base-path={}", w.root.display()))
        .arg(&w.root)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(Instant::now() < deadline, "git daemon did not start");
        std::thread::sleep(Duration::from_millis(50));
    }
    w.url = format!("git://127.0.0.1:{port}/remote.git");
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    let r = a.sync_json(&["--yes"]);
    assert_eq!(r["url"], w.url.as_str());
    assert_eq!(r["published"]["state"], "pushed");
    let r = b.sync_json(&["--yes"]);
    assert_eq!(r["journals"][0]["verdict"], "new", "{r:#}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
    let _ = daemon.kill();
    let _ = daemon.wait();
}

/// The other machine's crashed session in `recover`, `sessions`, `log` and `diff`, under its
/// name, with its state as of its last sync; never in Claude's SessionStart context.
#[test]
fn other_machines_sessions_are_read_with_their_name_and_synced_state() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);

    let out = b.ok(&["recover"]);
    assert!(out.contains("machine laptop"), "{out}");
    assert!(out.contains("session 8f14e4  crashed"), "{out}");
    assert!(out.contains("state crashed, as of the last sync from laptop"), "{out}");
    // The laptop's ids, shown unique among every id of this journal and the copies
    // (`toolu_01EditCfg`; the laptop also has `toolu_01EditSrv…`).
    assert!(out.contains("    EditC  "), "{out}");
    let v: Value = serde_json::from_str(&b.ok(&["recover", "--json"])).unwrap();
    assert_eq!(v["unresolved"], 0, "this checkout's own count");
    let m = &v["machines"][0];
    assert_eq!((m["name"].as_str(), m["journal"].as_str()), (Some("laptop"), Some(a.id().as_str())));
    assert_eq!(m["sessions"][0]["state"], "crashed");
    assert!(m["unresolved"].as_u64().unwrap() > 0);

    let out = b.ok(&["sessions"]);
    assert!(out.contains("Other machines' sessions"), "{out}");
    assert!(out.lines().any(|l| l.starts_with("laptop") && l.contains("8f14e4") && l.contains("crashed")), "{out}");
    let log: Value = serde_json::from_str(&b.ok(&["log", "--json"])).unwrap();
    assert!(log.as_array().unwrap().iter().any(|e| e["machine"] == "laptop" && e["short"] == "EditC"), "{log:#}");
    assert!(b.ok(&["log"]).contains("machine laptop"));

    // diff reads the laptop's images (synced) against this checkout's disk.
    let out = b.ok(&["diff", "01EditCfg", "--applied"]);
    assert!(out.contains("from laptop"), "{out}");
    assert!(out.contains("\"retries\": 5"), "{out}");

    // States are the manifest's, not read from a pid here: change the copy's manifest.
    let mpath = b.copy_of(&a).join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&mpath).unwrap()).unwrap();
    for s in manifest["sessions"].as_array_mut().unwrap() {
        if s["sid"] == "8f14e4" {
            s["state"] = "live".into();
        }
    }
    fs::write(&mpath, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let list: Value = serde_json::from_str(&b.ok(&["sessions", "list", "--json"])).unwrap();
    let s = list.as_array().unwrap().iter().find(|s| s["sid"] == "8f14e4").unwrap();
    assert_eq!((s["state"].as_str(), s["machine"].as_str()), (Some("live"), Some("laptop")), "{s:#}");

    // Claude's SessionStart context on the desktop says nothing of the laptop's text.
    let payload = serde_json::json!({
        "hook_event_name": "SessionStart", "session_id": "5e55a0b1-0000-4000-8000-0000000000ff",
        "cwd": b.dir, "source": "startup", "transcript_path": b.home.join("t.jsonl"),
    });
    let mut hook = b.cmd(&["hook"]);
    hook.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = hook.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    let out = String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap();
    assert!(!out.contains("retry count") && !out.contains("01EditCfg"), "{out}");
}

/// A journal whose objects are missing on the remote is reported; the others still sync.
#[test]
fn an_object_missing_on_the_remote_is_reported_and_the_rest_syncs() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    // A commit on the remote whose tree names a blob the remote does not have.
    let missing = "1".repeat(40);
    let mut mk = Command::new("git")
        .args(["mktree", "--missing"])
        .current_dir(w.remote())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    mk.stdin.take().unwrap().write_all(format!("100644 blob {missing}\tmanifest.json\n").as_bytes()).unwrap();
    let tree = String::from_utf8(mk.wait_with_output().unwrap().stdout).unwrap();
    let commit = git(&w.remote(), &["commit-tree", tree.trim(), "-m", "broken"]);
    let broken = "b".repeat(32);
    git(&w.remote(), &["update-ref", &format!("refs/walj/journals/{broken}"), commit.trim()]);

    let (code, out, err) = b.walj(&["sync", "--yes"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains(&broken) && out.contains("fetch failed"), "{out}");
    assert!(err.contains("1 journal on origin could not be taken"), "{err}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}
