//! `walj sync` (issue 18) through the real binary and the real `git` command: several clones
//! of one bare repository (over a file path, and over `git daemon` on loopback), each with
//! its own HOME, exchanging journals under `refs/walj/`.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use crate::common::{outcome, scratch, walj_at, walj_bin};
use serde_json::Value;

/// Plain git with a clean config (the tests' own commits and inspections).
fn git(dir: &Path, args: &[&str]) -> String {
    crate::common::git(dir, args)
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
    /// The walj binary its commands run (default: this test build's).
    bin: PathBuf,
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
        Machine { dir, home, path_prefix: None, bin: walj_bin() }
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
        let mut c = Command::new(&self.bin);
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
            .env_remove("WALJ_PASSPHRASE")
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

    /// `walj sync --json ARGS`, with `--yes` (a sync has no undo: off a terminal it needs the
    /// flag) unless ARGS is a dry run or a status.
    fn sync_json(&self, args: &[&str]) -> Value {
        let mut a = vec!["sync", "--json"];
        if !args.iter().any(|x| matches!(*x, "--dry-run" | "--status" | "--yes")) {
            a.push("--yes");
        }
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
        // In walj's state folder of the per-worktree git dir, where git never carries it.
        fs::read_to_string(self.dir.join(".git/walj/sync/id")).unwrap().trim().to_string()
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

/// [`line`], settled (persisted and verified).
fn settled_line(i: usize, session: &str) -> String {
    let v = line(i, session)
        .replace(r#""persisted":false"#, r#""persisted":true"#)
        .replace(r#""op":"applied""#, r#""op":"persisted""#);
    checked(v.split(r#","crc""#).next().unwrap().to_string() + "}")
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
    for rec in crate::common::journal_records(&a.dir) {
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
fn a_sync_says_it_has_no_undo_and_off_a_terminal_needs_yes() {
    let w = World::new();
    let a = w.machine("laptop");
    a.demo();
    let journal = fs::read(a.journal()).unwrap();
    // No terminal to ask on: refused in one line that says why (no undo) and names the flag;
    // nothing published, nothing written. --json changes nothing about it.
    for args in [&["sync"][..], &["sync", "--json"]] {
        let (code, out, err) = a.walj(args);
        assert_eq!((code, out.as_str()), (1, ""), "{args:?}: {err}");
        assert_eq!(err.lines().count(), 1, "{err}");
        assert!(err.contains("nothing synced: `walj sync` has no undo"), "{err}");
        assert!(err.contains("pass --yes") && err.contains("--dry-run"), "{err}");
        assert!(!err.contains("[y/N]"), "nothing prompts off a terminal: {err}");
    }
    assert!(w.remote_refs().is_empty());
    assert!(!a.dir.join(".walj/sync").exists(), "a refused sync wrote its state");
    assert_eq!(fs::read(a.journal()).unwrap(), journal);
    // A dry run needs no --yes: it shows the plain-text notice and publishes nothing.
    let r = a.sync_json(&["--dry-run"]);
    assert!(r["notice"].as_str().unwrap().contains("unencrypted"), "{r:#}");
    assert!(r["notice"].as_str().unwrap().contains(&format!("remote \"origin\" ({})", w.url)), "{r:#}");
    assert_eq!(r["published"]["state"], "would_push");
    assert!(w.remote_refs().is_empty());
    // Inside a Claude Code tool call, without --yes: refused with the usual exit 3.
    let (code, _, err) = outcome(&a.cmd(&["sync"]).env("CLAUDECODE", "1").output().unwrap());
    assert_eq!(code, 3, "{err}");
    // --yes syncs, and agrees to plain text once: the next dry run shows no notice.
    a.ok(&["sync", "--yes"]);
    assert_eq!(w.remote_refs().len(), 1);
    assert!(a.sync_json(&["--dry-run"])["notice"].is_null());
    a.append(&[line(0, OTHER_SESSION)]);
    a.ok(&["sync", "--yes"]);
    // The background sync `[sync] auto` starts never asks nor refuses.
    a.append(&[line(1, OTHER_SESSION)]);
    let (code, out, err) = a.walj(&["sync", "--auto"]);
    assert_eq!((code, out.as_str(), err.as_str()), (0, "", ""));
    let last: Value = serde_json::from_slice(&fs::read(a.dir.join(".walj/sync/auto.last")).unwrap()).unwrap();
    assert_eq!(last["ok"], true, "{last:#}");
    assert_eq!(last["report"]["published"]["state"], "pushed", "{last:#}");
}

/// `walj ARGS` in `m` on a pseudo-terminal (util-linux `script`), typing `answer`: (exit
/// code, everything the terminal showed). `None` when `script` is missing.
fn in_pty(m: &Machine, args: &[&str], answer: &str) -> Option<(i32, String)> {
    if !Command::new("script").arg("-qec").arg("true").arg("/dev/null").output().is_ok_and(|o| o.status.success()) {
        assert!(std::env::var("WALJ_E2E_REQUIRE").as_deref() != Ok("1"), "script(1) is required");
        eprintln!("SKIPPED: script(1) from util-linux is not installed");
        return None;
    }
    let quote = |s: &str| format!("'{}'", s.replace('\'', r"'\''"));
    let mut line = vec![quote(&m.bin.to_string_lossy()), "--project".into(), quote(&m.dir.to_string_lossy())];
    line.extend(args.iter().map(|a| quote(a)));
    // The machine's environment (HOME, git's config), and a terminal.
    let c = m.cmd(&[]);
    let mut child = Command::new("script")
        .arg("-qec")
        .arg(line.join(" "))
        .arg("/dev/null")
        .envs(c.get_envs().filter_map(|(k, v)| v.map(|v| (k.to_owned(), v.to_owned()))))
        .env_remove("CLAUDECODE")
        .current_dir(&m.dir)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    std::io::Write::write_all(&mut child.stdin.take().unwrap(), answer.as_bytes()).unwrap();
    let out = child.wait_with_output().unwrap();
    Some((out.status.code().unwrap_or(-1), String::from_utf8_lossy(&out.stdout).into_owned()))
}

#[test]
fn on_a_terminal_a_sync_asks_first_and_no_publishes_nothing() {
    let w = World::new();
    let a = w.machine("laptop");
    a.demo();
    let Some((code, shown)) = in_pty(&a, &["sync"], "n\n") else { return };
    assert_eq!(code, 1, "{shown}");
    assert!(shown.contains("`walj sync` has no undo"), "{shown}");
    assert!(shown.contains("Sync now? (--dry-run shows what it would publish and fetch) [y/N]"), "{shown}");
    assert!(shown.contains("Nothing synced."), "{shown}");
    assert!(w.remote_refs().is_empty());
    // Yes, then yes to the first plain-text publish to this remote: published.
    let (code, shown) = in_pty(&a, &["sync"], "y\ny\n").unwrap();
    assert_eq!(code, 0, "{shown}");
    assert!(shown.contains("unencrypted") && shown.contains("Publish?"), "{shown}");
    assert_eq!(w.remote_refs().len(), 1, "{shown}");
}

#[test]
fn never_capture_paths_name_no_published_image() {
    let w = World::new();
    let a = w.machine("laptop");
    // An image in the store, named by a line on a path the config now never captures.
    let store = walj::store::Store::new(a.dir.join(".walj/store"));
    let secret = store.put(b"TOKEN=hunter2\n").unwrap();
    let open = store.put(b"fine\n").unwrap();
    // And an image of an ordinary file that holds a token: secrets are never synced either.
    let token = store.put(b"const KEY: &str = \"sk-ant-api03-abcdefghijklmnopqrstuvwxyz\";\n").unwrap();
    let mk = |path: &str, id: &str| {
        checked(format!(
            r#"{{"v":2,"sid":"5e55a0","ts":"2026-11-29T07:00:00.000Z","event":"file_modified","path":"{path}","persisted":false,"op":"applied","id":"toolu_{path}","session":"5e55a0b1-0000-4000-8000-000000000001","tool":"Edit","after":"{id}"}}"#
        ))
    };
    a.append(&[mk("deploy/secrets.env", &secret), mk("src/ok.rs", &open), mk("src/key.rs", &token)]);
    fs::write(a.dir.join(".walj/config.toml"), "[capture]\nnever = [\"*.env\"]\n[sync]\nname = \"laptop\"\n").unwrap();
    let r = a.sync_json(&["--yes"]);
    assert_eq!(r["published"]["images_withheld"], 1, "{r:#}");
    let head = &w.remote_refs()[0].1;
    let tree = git(&w.remote(), &["ls-tree", "-r", "--name-only", head]);
    assert!(tree.contains(&format!("objects/{}/{}", &open[..2], &open[2..])), "{tree}");
    assert!(!tree.contains(&secret[2..]), "{tree}");
    assert!(!tree.contains(&token[2..]), "{tree}");
    assert!(!remote_objects(&w).contains("sk-ant-api03"));
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

    let (code, out, err) = b.walj(&["sync", "--yes"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("laptop") && out.contains("refused"), "{out}");
    assert!(out.contains("does not extend the one accepted before"), "{out}");
    assert!(out.contains("not named by a journal id"), "{out}");
    assert!(out.contains("no manifest.json"), "{out}");
    assert!(err.contains("3 journals on origin could not be taken"), "{err}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), copy, "the accepted copy stays");
    let r: Value = serde_json::from_str(&b.walj(&["sync", "--yes", "--json"]).1).unwrap();
    let laptop = r["journals"].as_array().unwrap().iter().find(|j| j["journal"] == a.id().as_str()).unwrap();
    assert_eq!(laptop["verdict"], "refused");

    // The laptop does not push over a ref it did not write.
    let before = w.remote_refs();
    a.append(&[line(0, OTHER_SESSION)]);
    let (code, out, err) = a.walj(&["sync", "--yes"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert!(err.contains("is not what this checkout published"), "{err}");
    assert_eq!(w.remote_refs(), before);
}

/// Another machine's payload is read within `[limits]`: a blob over `max_object`, a manifest
/// claiming more than `max_decoded`, and a journal naming a session id walj does not accept are
/// refused with a message that says how to raise the limit, nothing aborts, and the last copy
/// (or none) stays.
#[test]
fn other_machines_payloads_are_read_within_limits_and_bad_session_ids_are_refused() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    let (code, out, err) = b.walj(&["sync", "--yes", "--max-object", "10"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("over max_object (10)") && out.contains("--max-object"), "{out}");
    assert!(!b.copy_of(&a).join("journal.jsonl").exists(), "nothing taken");
    fs::write(b.dir.join(".walj/config.toml"), "[sync]\nname = \"desktop\"\n[limits]\nmax_object = 10\n").unwrap();
    assert_eq!(b.walj(&["sync", "--yes"]).0, 1, "the config key bounds it too");
    b.ok(&["sync", "--yes", "--max-object", "100000000"]);
    let copy = fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap();

    // The laptop's journal now names a session id that would reach shells and file names.
    a.append(&[line(0, "$(touch PWNED)-session")]);
    a.ok(&["sync", "--yes"]);
    let (code, out, err) = b.walj(&["sync", "--yes", "--max-object", "100000000"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("is not one walj accepts"), "{out}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), copy, "the accepted copy stays");

    // A third machine, new to the laptop's ref, fetches a forged root commit whose manifest
    // claims a journal of a petabyte: refused before anything is allocated for it.
    let c = w.machine("tablet");
    let real = w.remote_refs().into_iter().find(|(r, _)| r.ends_with(&a.id())).unwrap();
    let forge = w.root.join("forge");
    git(&w.root, &["init", "-q", "forge"]);
    let mut manifest: Value =
        serde_json::from_str(&git(&w.remote(), &["show", &format!("{}:manifest.json", real.1)])).unwrap();
    manifest["journal_bytes"] = (1u64 << 50).into();
    manifest["segments"] = 1.into();
    fs::create_dir_all(forge.join("segments/0000")).unwrap();
    fs::write(forge.join("segments/0000/000000"), "x\n").unwrap();
    fs::write(forge.join("manifest.json"), serde_json::to_string_pretty(&manifest).unwrap()).unwrap();
    git(&forge, &["add", "-A"]);
    git(&forge, &["commit", "-qm", "forged"]);
    git(&forge, &["push", "-q", "-f", &w.url, &format!("HEAD:{}", real.0)]);
    let (code, out, err) = c.walj(&["sync", "--yes"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(!err.contains("panicked") && !err.contains("memory allocation"), "{err}");
    assert!(out.contains("over max_decoded") && out.contains("--max-decoded"), "{out}");
    assert!(!c.copy_of(&a).join("journal.jsonl").exists());
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
    let (code, ..) = a.walj(&["sync", "--yes"]);
    assert_eq!(code, -1, "killed by the signal");
    let on_remote = w.remote_refs()[0].1.clone();
    assert_ne!(a.published().as_deref(), Some(on_remote.as_str()), "walj did not see the push succeed");
    // Killed right after a fetch, before anything else.
    a.path_prefix = Some(killing_git(&w.root, "fetch"));
    assert_eq!(a.walj(&["sync", "--yes"]).0, -1);
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
        let mut cmd = a.cmd(&["sync", "--yes"]).clone_stdio_null();
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
    a.ok(&["sync", "--yes"]);
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
    // WALJ_SYNC_BENCH_ENCRYPT=1: the same, encrypted to an age recipient.
    let encrypted = std::env::var("WALJ_SYNC_BENCH_ENCRYPT").is_ok_and(|v| v == "1");
    #[cfg(feature = "age")]
    if encrypted {
        let (key, _) = age_key(&w.root, "bench");
        a.config(&format!("[sync]\nname = \"laptop\"\nrecipients = [\"{key}\"]\n"));
    }
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
        "sync bench{}: journal {journal} bytes ({n} lines); 10-line append uploads {bytes} bytes; first sync {first:?}, second {second:?}",
        if encrypted { " (encrypted)" } else { "" }
    );
    assert!(bytes <= 64 * 1024, "{bytes} bytes uploaded");
}

/// Many machines (issue 18's figure: 20 × 100,000 entries): each publishes its journal, one
/// more checkout fetches them all (timed), then `walj recover` folds every copy (timed).
/// `WALJ_SYNC_BENCH_MACHINES` and `WALJ_SYNC_BENCH_ENTRIES` set the size (default 3 × 2,000,
/// so the suite runs it small); each journal's entries are settled but its last 10.
#[test]
fn many_machines_sync_and_recover() {
    let env = |k: &str, d: usize| std::env::var(k).ok().and_then(|v| v.parse().ok()).unwrap_or(d);
    let (machines, entries) = (env("WALJ_SYNC_BENCH_MACHINES", 3), env("WALJ_SYNC_BENCH_ENTRIES", 2000));
    // WALJ_BIN: the walj binary to time (`RELEASE=1 scripts/bench-sync.sh` passes the release one).
    let bin = std::env::var_os("WALJ_BIN").map_or_else(walj_bin, PathBuf::from);
    assert!(bin.is_file(), "WALJ_BIN={} is not a file", bin.display());
    let w = World::new();
    let mut bytes = 0;
    let t = Instant::now();
    for m in 0..machines {
        let mut a = w.machine(&format!("m{m:02}"));
        a.bin = bin.clone();
        let session = format!("{m:08x}-0000-4000-8000-0000000000bb");
        {
            let mut f = std::io::BufWriter::new(fs::File::create(a.journal()).unwrap());
            for i in 0..entries {
                // Settled (persisted), but the last 10: what recover lists.
                let l = if i + 10 < entries { settled_line(i, &session) } else { line(i, &session) };
                writeln!(f, "{l}").unwrap();
            }
        }
        bytes += fs::metadata(a.journal()).unwrap().len();
        a.ok(&["sync", "--yes"]);
    }
    let publish = t.elapsed();
    let mut reader = w.machine("reader");
    reader.bin = bin.clone();
    let t = Instant::now();
    reader.ok(&["sync", "--yes"]);
    let fetch = t.elapsed();
    let t = Instant::now();
    let out = reader.ok(&["recover"]);
    let recover = t.elapsed();
    for m in 0..machines {
        assert!(out.contains(&format!("machine m{m:02}  10 unresolved entries")), "{out}");
    }
    // Without the copies' caches (`.walj/cache/remotes/`): every copy folded and its ids read
    // in full, as before they had caches (this run writes them again).
    fs::remove_dir_all(reader.dir.join(".walj/cache/remotes")).ok();
    let t = Instant::now();
    assert_eq!(reader.ok(&["recover"]), out);
    let uncached = t.elapsed();
    println!(
        "sync bench (many machines): {machines} machines x {entries} entries ({bytes} journal bytes), walj at {}; \
         publishing all {publish:?}; the reader's first sync {fetch:?}; its `walj recover` {recover:?} \
         (without the copies' caches {uncached:?})",
        bin.display()
    );
}

/// Every file under `dir` (relative path → bytes).
fn files_under(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in fs::read_dir(d).unwrap().flatten() {
            let p = e.path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push((p.strip_prefix(root).unwrap().to_path_buf(), fs::read(&p).unwrap()));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out.sort();
    out
}

/// A fold as text, field by field.
fn fold_view(f: &walj::fold::Fold) -> String {
    format!(
        "{:#?}\n{:#?}\n{:#?}\nrecords {} lines {} end {}\n{:?}",
        f.entries, f.sessions, f.handoffs, f.records, f.report.lines, f.report.end, f.report.problems
    )
}

/// Issue 18: another machine's copy is folded from a fold snapshot and an id index kept in
/// `.walj/cache/remotes/<id>/` (never in the copy's folder, which is sync's), exactly as a full
/// fold of the copy; after the next sync replaced the copy (new lines, a new epoch) and with a
/// damaged cache, the same; a sync after caching works; a copy removed takes its cache along.
#[test]
fn copies_are_folded_from_a_cache_outside_their_folder_like_a_full_fold() {
    use walj::fold::snapshot::{self, Unused};
    use walj::fold::{Fold, FoldOptions};
    use walj::sync::remotes;

    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    // Over 1 MB (a fold that reads more writes its snapshot): settled but the last 10.
    let n = 5000;
    a.append(
        &(0..n)
            .map(|i| if i + 10 < n { settled_line(i, OTHER_SESSION) } else { line(i, OTHER_SESSION) })
            .collect::<Vec<_>>(),
    );
    assert!(fs::metadata(a.journal()).unwrap().len() > snapshot::WRITE_AFTER);
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let copy = b.copy_of(&a);
    let journal = copy.join("journal.jsonl");
    let cache = b.dir.join(".walj/cache/remotes").join(a.id());
    let (snap, ids) = (cache.join("fold.snap"), cache.join("ids.idx"));
    let opts = FoldOptions::default();
    // Through the cache (never written here), and in full.
    let cached = || fold_view(&remotes::fold_copy(&journal, &cache, &opts, u64::MAX).unwrap());
    let full = || fold_view(&Fold::load_from(walj::journal::Source::journal(&journal), &opts).unwrap());
    let cached_ids = || remotes::ids_of(&journal, &cache, u64::MAX).unwrap();
    let full_ids = || walj::fold::ids::IdIndex::load_at(&journal, None, u64::MAX).unwrap();

    // The sync that brought the copy wrote its caches (folding it for the SessionStart counts).
    assert!(snap.is_file() && ids.is_file(), "{:?}", fs::read_dir(b.dir.join(".walj")).unwrap().collect::<Vec<_>>());
    assert_eq!(snapshot::check_at(&journal, &snap), None, "the snapshot matches the copy");
    assert_eq!(cached(), full());
    assert_eq!(cached_ids(), full_ids());
    assert_eq!(cached_ids().len(), 10, "the ids of intents and outcomes (persisted lines name no new one)");

    // `walj recover` reads the copy through them and writes nothing in the copy's folder.
    let before = files_under(&copy);
    let out = b.ok(&["recover", "--json"]);
    assert!(out.contains(r#""unresolved": 10"#), "{out}");
    // The same report as without the caches (read in full, then written again).
    fs::remove_dir_all(&cache).unwrap();
    assert_eq!(b.ok(&["recover", "--json"]), out);
    assert_eq!(snapshot::check_at(&journal, &snap), None, "written again by recover");
    assert!(ids.is_file());
    assert_eq!(files_under(&copy), before, "recover left the copy's folder as sync wrote it");
    let text = b.ok(&["recover"]);

    // The next sync replaces the copy with more lines: the snapshot of the copy before is stale
    // (another inode), and the sync writes a new one.
    let old_snap = fs::read(&snap).unwrap();
    a.append(&(n..n + 20).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    a.ok(&["sync", "--yes"]);
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "updated");
    assert_eq!(snapshot::check_at(&journal, &snap), None, "the sync wrote the copy's snapshot anew");
    assert_eq!(cached(), full());
    assert_eq!(cached_ids(), full_ids());
    assert!(b.ok(&["recover", "--json"]).contains(r#""unresolved": 30"#));
    fs::write(&snap, &old_snap).unwrap();
    assert!(matches!(snapshot::check_at(&journal, &snap), Some(Unused::Stale(_))), "the old snapshot is not used");
    assert_eq!(cached(), full());

    // A new epoch (the laptop dropped its first 100 lines): the same.
    let old_snap = fs::read(&snap).unwrap();
    let old_ids = fs::read(&ids).unwrap();
    let kept: String = fs::read_to_string(a.journal()).unwrap().lines().skip(100).map(|l| format!("{l}\n")).collect();
    fs::write(a.journal(), &kept).unwrap();
    assert_eq!(a.sync_json(&[])["published"]["new_epoch"], true);
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "new_epoch");
    assert_eq!(fs::read_to_string(&journal).unwrap(), kept);
    assert_eq!(snapshot::check_at(&journal, &snap), None);
    assert_eq!(cached(), full());
    assert_eq!(cached_ids(), full_ids());
    assert_eq!(cached_ids().len(), 30);
    fs::write(&snap, &old_snap).unwrap();
    fs::write(&ids, &old_ids).unwrap();
    assert!(matches!(snapshot::check_at(&journal, &snap), Some(Unused::Stale(_))));
    assert_eq!(cached(), full());
    assert_eq!(cached_ids(), full_ids());
    fs::remove_dir_all(&cache).unwrap();
    let out = b.ok(&["recover", "--json"]);
    let text_after = b.ok(&["recover"]);

    // A damaged snapshot or id index is ignored: the copy is read in full.
    for file in [&snap, &ids] {
        let mut raw = fs::read(file).unwrap();
        let last = raw.len() - 1;
        raw[last] ^= 1;
        fs::write(file, raw).unwrap();
    }
    assert!(matches!(snapshot::check_at(&journal, &snap), Some(Unused::Damaged(_))));
    assert_eq!(cached(), full());
    assert_eq!(cached_ids(), full_ids());
    assert_eq!(b.ok(&["recover", "--json"]), out);
    assert_eq!(b.ok(&["recover"]), text_after);
    assert_ne!(text_after, text, "the new epoch's report differs");

    // The manifest's states and this checkout's decisions are applied on top, never cached.
    let snap_bytes = fs::read(&snap).unwrap();
    let id = remotes::fold_copy(&journal, &cache, &opts, u64::MAX).unwrap().unresolved().next().unwrap().id.clone();
    b.ok(&["mark", &id, "--done", "--yes"]);
    let mpath = copy.join("manifest.json");
    let mut manifest: Value = serde_json::from_slice(&fs::read(&mpath).unwrap()).unwrap();
    for st in manifest["sessions"].as_array_mut().unwrap() {
        st["state"] = "live".into();
    }
    fs::write(&mpath, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let v: Value = serde_json::from_str(&b.ok(&["recover", "--json"])).unwrap();
    let m = &v["machines"][0];
    assert_eq!((m["unresolved"].as_u64(), m["sessions"][0]["state"].as_str()), (Some(29), Some("live")), "{m:#}");
    assert_eq!(remotes::fold_copy(&journal, &cache, &opts, u64::MAX).unwrap().unresolved().count(), 30);
    assert_eq!(fs::read(&snap).unwrap(), snap_bytes, "the snapshot is the copy's journal alone");
    assert_eq!(cached(), full());

    // Syncs after caching: nothing in `.walj/cache/` is taken for a copy.
    let r = b.sync_json(&[]);
    assert_eq!(
        (r["journals"][0]["verdict"].as_str(), r["journals"].as_array().unwrap().len()),
        (Some("up_to_date"), 1),
        "{r:#}"
    );
    b.ok(&["sync", "--status"]);
    assert_eq!(fs::read_to_string(&journal).unwrap(), kept);

    // The copy removed (by hand): its cache goes with the next load.
    fs::remove_dir_all(&copy).unwrap();
    b.ok(&["recover"]);
    assert!(!cache.exists(), "the cache of a copy that is gone is removed");
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

// ---------------------------------------------------------------------------------------------
// Encryption: [sync] recipients / passphrase (issue 18, privacy).

/// The demo's crashed session.
const DEMO_CRASHED: &str = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";
/// A prompt of the demo, and a line of one of its images: neither may be readable on the
/// remote of an encrypted sync.
const DEMO_PROMPT: &str = "Raise the retry count to 5";
#[cfg(feature = "age")]
const DEMO_IMAGE_TEXT: &str = "\"retries\": 5";

/// A new age key: (recipient, identity file).
#[cfg(feature = "age")]
fn age_key(dir: &Path, name: &str) -> (String, PathBuf) {
    use age::secrecy::ExposeSecret as _;
    let id = age::x25519::Identity::generate();
    let file = dir.join(format!("{name}.age-key"));
    fs::write(&file, format!("{}\n", id.to_string().expose_secret())).unwrap();
    (id.to_public().to_string(), file)
}

impl Machine {
    fn config(&self, text: &str) {
        fs::write(self.dir.join(".walj/config.toml"), text).unwrap();
    }

    /// A safe transcript copy for `session` (as the Stop hook makes them).
    fn transcript_copy(&self, session: &str, lines: &[String]) {
        let text: String = lines.iter().map(|l| format!("{l}\n")).collect();
        let project = walj::project::Project::at(self.dir.clone(), None);
        walj::session::transcript::install(&project, session, None, text.as_bytes()).unwrap();
    }
}

/// Every object of the remote, as text (`git cat-file --batch-all-objects`).
fn remote_objects(w: &World) -> String {
    git(&w.remote(), &["cat-file", "--batch-all-objects", "--batch", "--unordered"])
}

fn transcript_lines(cwd: &Path) -> Vec<String> {
    vec![
        serde_json::json!({"type": "user", "cwd": cwd, "sessionId": DEMO_CRASHED,
            "message": {"role": "user", "content": "TRANSCRIPT-MARKER deploy with password=hunter2secret"}})
        .to_string(),
        serde_json::json!({"type": "assistant", "cwd": cwd, "sessionId": DEMO_CRASHED,
            "message": {"role": "assistant", "content": [{"type": "text", "text": "Deploying."}]}})
        .to_string(),
    ]
}

#[cfg(feature = "age")]
#[test]
fn an_encrypted_sync_publishes_no_plain_text_and_machines_with_the_key_read_it() {
    let w = World::new();
    let (a, b, c) = (w.machine("laptop"), w.machine("desktop"), w.machine("stranger"));
    let (key, identity) = age_key(&w.root, "team");
    let sealed = |name: &str| {
        format!("[sync]\nname = \"{name}\"\nrecipients = [\"{key}\"]\nidentity = \"{}\"\n", identity.display())
    };
    a.config(&sealed("laptop"));
    b.config(&sealed("desktop"));
    a.demo();
    a.transcript_copy(DEMO_CRASHED, &transcript_lines(&a.dir));

    // No question and no --yes: nothing leaves in plain text.
    let r = a.sync_json(&[]);
    assert_eq!(r["published"]["state"], "pushed", "{r:#}");
    assert_eq!(r["published"]["encrypted"], "age", "{r:#}");
    assert_eq!(r["published"]["transcripts"], 1, "{r:#}");
    let everything = remote_objects(&w);
    for plain in [DEMO_PROMPT, DEMO_IMAGE_TEXT, "TRANSCRIPT-MARKER", "hunter2secret", "toolu_01"] {
        assert!(!everything.contains(plain), "{plain:?} is readable on the remote");
    }
    let head = w.remote_refs()[0].1.clone();
    let tree = git(&w.remote(), &["ls-tree", "-r", "--name-only", &head]);
    for rec in crate::common::journal_records(&a.dir) {
        for blob in [&rec.before, &rec.after].into_iter().flatten() {
            if let Some(id) = blob.id() {
                assert!(!tree.contains(&id[2..]), "the image id {id} names a tree entry:\n{tree}");
            }
        }
    }
    assert!(tree.lines().any(|l| l == "key.age"), "{tree}");
    let manifest: Value = serde_json::from_str(&git(&w.remote(), &["show", &format!("{head}:manifest.json")])).unwrap();
    assert_eq!(manifest["format"], 2);
    assert!(manifest["encryption"]["key"].as_str().unwrap().starts_with("age1"), "{manifest:#}");
    assert_eq!(manifest["encryption"]["recipients"][0], key.as_str());

    // A machine with the key reads everything: the journal byte for byte, the images, the
    // transcript (its secret redacted before it left).
    let r = b.sync_json(&[]);
    assert_eq!(r["journals"][0]["verdict"], "new", "{r:#}");
    let copy = b.copy_of(&a);
    assert_eq!(fs::read(copy.join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
    assert!(b.ok(&["diff", "01EditCfg", "--applied"]).contains(DEMO_IMAGE_TEXT));
    let remote_project = copy_project(&copy);
    let t = walj::session::transcript::read_copy(&remote_project, DEMO_CRASHED).unwrap().unwrap();
    let t = String::from_utf8(t).unwrap();
    assert!(t.contains("TRANSCRIPT-MARKER") && !t.contains("hunter2secret"), "{t}");
    assert!(b.ok(&["recover"]).contains("machine laptop"));

    // A machine without the key: the journal is locked (reported, exit 1), nothing written.
    let (code, out, err) = c.walj(&["sync", "--yes"]);
    assert_eq!(code, 1, "{out}\n{err}");
    assert!(out.contains("laptop") && out.contains("locked") && out.contains("[sync] identity"), "{out}");
    assert!(!c.copy_of(&a).exists());

    // The opened key is kept: later syncs need no identity file.
    a.append(&(0..10).map(|i| line(i, OTHER_SESSION)).collect::<Vec<_>>());
    let r = a.sync_json(&[]);
    assert_eq!(
        (r["published"]["state"].as_str(), r["published"]["new_epoch"].as_bool()),
        (Some("pushed"), Some(false))
    );
    b.config(&format!("[sync]\nname = \"desktop\"\nrecipients = [\"{key}\"]\n"));
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "updated");
    assert_eq!(fs::read(copy.join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}

#[cfg(feature = "age")]
#[test]
fn a_passphrase_is_asked_only_to_seal_the_key_and_once_per_key_to_open_it() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.config("[sync]\nname = \"laptop\"\npassphrase = true\n");
    b.config("[sync]\nname = \"desktop\"\npassphrase = true\n");
    a.demo();
    // No passphrase and no terminal: one line, nothing published.
    let (code, out, err) = a.walj(&["sync", "--yes"]);
    assert_eq!((code, out.as_str()), (1, ""), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("WALJ_PASSPHRASE"), "{err}");
    assert!(w.remote_refs().is_empty());
    let ok = a.cmd(&["sync", "--yes", "--json"]).env("WALJ_PASSPHRASE", "correct horse").output().unwrap();
    assert!(ok.status.success(), "{}", String::from_utf8_lossy(&ok.stderr));
    assert!(!remote_objects(&w).contains(DEMO_PROMPT));
    // The key is sealed once: the next sync needs no passphrase.
    a.append(&[line(0, OTHER_SESSION)]);
    assert_eq!(a.sync_json(&[])["published"]["state"], "pushed");

    // The reader: without the passphrase, or with a wrong one, the journal is locked.
    let (code, out, _) = b.walj(&["sync", "--yes"]);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("locked") && out.contains("WALJ_PASSPHRASE"), "{out}");
    let wrong = b.cmd(&["sync", "--yes"]).env("WALJ_PASSPHRASE", "battery staple").output().unwrap();
    let (code, out, _) = outcome(&wrong);
    assert_eq!(code, 1, "{out}");
    assert!(out.contains("wrong passphrase"), "{out}");
    assert!(!b.copy_of(&a).exists());
    let right = b.cmd(&["sync", "--yes", "--json"]).env("WALJ_PASSPHRASE", "correct horse").output().unwrap();
    assert!(right.status.success(), "{}", String::from_utf8_lossy(&right.stderr));
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
    // Opened once: new lines arrive without the passphrase.
    a.append(&[line(1, OTHER_SESSION)]);
    a.ok(&["sync", "--yes"]);
    assert_eq!(b.sync_json(&[])["journals"][0]["verdict"], "updated");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}

#[cfg(feature = "age")]
#[test]
fn turning_encryption_on_publishes_a_new_epoch_without_the_plain_history() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    let (key, identity) = age_key(&w.root, "team");
    a.demo();
    a.ok(&["sync", "--yes"]);
    b.config(&format!("[sync]\nname = \"desktop\"\nidentity = \"{}\"\n", identity.display()));
    b.ok(&["sync", "--yes"]);
    a.config(&format!("[sync]\nname = \"laptop\"\nrecipients = [\"{key}\"]\n"));
    let r = a.sync_json(&[]);
    assert_eq!(
        (r["published"]["new_epoch"].as_bool(), r["published"]["encrypted"].as_str()),
        (Some(true), Some("age"))
    );
    // What the remote's ref reaches holds no plain text any more.
    let head = w.remote_refs()[0].1.clone();
    let reachable = git(&w.remote(), &["rev-list", "--objects", &head]);
    let ids: Vec<&str> = reachable.lines().filter_map(|l| l.split(' ').next()).collect();
    for id in ids {
        let obj = git(&w.remote(), &["cat-file", "-p", id]);
        assert!(!obj.contains(DEMO_PROMPT) && !obj.contains(DEMO_IMAGE_TEXT), "{id} is plain:\n{obj}");
    }
    let r = b.sync_json(&[]);
    assert_eq!(r["journals"][0]["verdict"], "new_epoch", "{r:#}");
    assert_eq!(fs::read(b.copy_of(&a).join("journal.jsonl")).unwrap(), fs::read(a.journal()).unwrap());
}

#[test]
fn transcripts_are_published_in_plain_text_only_when_asked_and_never_with_secrets() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.transcript_copy(DEMO_CRASHED, &transcript_lines(&a.dir));
    let r = a.sync_json(&["--yes"]);
    assert!(r["published"]["transcripts"].is_null(), "{r:#}");
    assert!(!remote_objects(&w).contains("TRANSCRIPT-MARKER"));
    a.config("[sync]\nname = \"laptop\"\ntranscripts = true\n");
    let r = a.sync_json(&["--remote", "origin"]);
    assert_eq!(r["published"]["transcripts"], 1, "{r:#}");
    let everything = remote_objects(&w);
    assert!(everything.contains("TRANSCRIPT-MARKER"), "the opted-in transcript is not published");
    assert!(!everything.contains("hunter2secret"), "a secret left in a transcript");
    b.ok(&["sync", "--yes"]);
    let remote_project = copy_project(&b.copy_of(&a));
    let t = walj::session::transcript::read_copy(&remote_project, DEMO_CRASHED).unwrap().unwrap();
    assert!(String::from_utf8(t).unwrap().contains("TRANSCRIPT-MARKER"));
    let c = w.machine("third");
    c.config("[sync]\ntranscripts = true\n");
    let r = c.sync_json(&["--dry-run"]);
    assert!(r["notice"].as_str().unwrap().contains("transcripts of Claude Code sessions"), "{r:#}");
}

/// The folder of another journal's copy as a project (its transcripts are under it).
fn copy_project(copy: &Path) -> walj::project::Project {
    walj::project::Project { root: copy.to_path_buf(), dir: copy.to_path_buf(), journal: copy.join("journal.jsonl") }
}

/// `walj sessions resume` of another machine's session without a synced transcript still
/// records the brief here; with one, a different transcript already in Claude Code's folder is
/// never overwritten without --force.
#[test]
fn resuming_another_machines_session_writes_its_transcript_or_says_why_not() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let (code, out, err) = b.walj(&["sessions", "resume", "8f14"]);
    assert_eq!(code, 0, "{out}\n{err}");
    assert!(out.starts_with("This session ran on another machine (laptop"), "{out}");
    assert!(err.contains("no transcript of session 8f14e4 came from laptop"), "{err}");
    let handoffs: Vec<_> =
        crate::common::journal_records(&b.dir).into_iter().filter(|r| r.op() == walj::journal::op::HANDOFF).collect();
    assert_eq!(handoffs.len(), 1);
    assert_eq!(handoffs[0].session_key(), DEMO_CRASHED);

    // With a transcript: written under B's HOME, once; another conversation there is kept.
    a.transcript_copy(DEMO_CRASHED, &transcript_lines(&a.dir));
    a.config("[sync]\nname = \"laptop\"\ntranscripts = true\n");
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let dest = b.home.join(".claude/projects").join(walj::claude::paths::encode_dir(&b.dir));
    let file = dest.join(format!("{DEMO_CRASHED}.jsonl"));
    fs::create_dir_all(&dest).unwrap();
    fs::write(&file, "{\"other\":\"conversation\"}\n").unwrap();
    let (code, _, err) = b.walj(&["sessions", "resume", "8f14"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("holds another conversation") && err.contains("--force"), "{err}");
    assert_eq!(fs::read_to_string(&file).unwrap(), "{\"other\":\"conversation\"}\n");
    b.ok(&["sessions", "resume", "8f14", "--force"]);
    let text = fs::read_to_string(&file).unwrap();
    assert!(text.contains("TRANSCRIPT-MARKER"), "{text}");
    assert!(text.contains(&b.dir.display().to_string()) && !text.contains(&a.dir.display().to_string()), "{text}");
    let backups: Vec<_> =
        fs::read_dir(&dest).unwrap().flatten().filter(|e| e.path().to_string_lossy().ends_with(".bak")).collect();
    assert_eq!(backups.len(), 1);
    // Again: already there, nothing to do.
    let (_, _, err) = b.walj(&["sessions", "resume", "8f14"]);
    assert!(err.contains("present"), "{err}");
}

/// The `status` of entry `id` in `walj log --json` (this checkout's, or `machine`'s).
fn log_status(m: &Machine, id: &str, machine: Option<&str>) -> String {
    let log: Value = serde_json::from_str(&m.ok(&["log", "--json", "--all"])).unwrap();
    let e = log
        .as_array()
        .unwrap()
        .iter()
        .find(|e| e["id"] == id && e["machine"].as_str() == machine)
        .unwrap_or_else(|| panic!("no entry {id} ({machine:?}) in {log:#}"));
    e["status"].as_str().unwrap().to_string()
}

/// The SessionStart hook's stdout in checkout `m`.
fn session_start(m: &Machine, session: &str) -> String {
    let payload = serde_json::json!({
        "hook_event_name": "SessionStart", "session_id": session,
        "cwd": m.dir, "source": "startup", "transcript_path": m.home.join("t.jsonl"),
    });
    let mut hook = m.cmd(&["hook"]);
    hook.stdin(Stdio::piped()).stdout(Stdio::piped());
    let mut child = hook.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    String::from_utf8(child.wait_with_output().unwrap().stdout).unwrap()
}

/// `mark --done` and `handoff` on the laptop's entries, run on the desktop, travel back with
/// the syncs: both sides agree, and the laptop's own decision wins where both decided.
#[test]
fn marks_and_hand_backs_on_another_machines_entries_travel_back() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    b.ok(&["sync", "--yes"]);
    let unresolved = |m: &Machine| -> Value { serde_json::from_str(&m.ok(&["recover", "--json"])).unwrap() };
    assert_eq!(unresolved(&b)["machines"][0]["unresolved"], 6);
    // A revert or an undo of the laptop's entry here says whose it is and what works here.
    let journal = fs::read(b.dir.join(".walj/journal.jsonl")).unwrap_or_default();
    for args in [&["revert", "01EditCfg", "--yes"][..], &["undo", "01EditCfg", "--yes"]] {
        let (code, _, err) = b.walj(args);
        assert_eq!(code, 1, "{args:?}: {err}");
        assert!(err.contains("is laptop's entry:") && err.contains("there (or `walj mark"), "{args:?}: {err}");
    }
    assert_eq!(fs::read(b.dir.join(".walj/journal.jsonl")).unwrap_or_default(), journal);

    // On the desktop: one entry done, one handed back, one the laptop also decides about.
    let out = b.ok(&["mark", "01EditCfg", "--done", "--yes"]);
    assert!(out.contains("of laptop done here"), "{out}");
    let out = b.ok(&["handoff", "01WriteDoc", "--yes"]);
    assert!(out.contains("made on another machine (laptop"), "{out}");
    b.ok(&["mark", "01EditItems", "--done", "--yes"]);
    // Shown at once on the desktop; this checkout's own count is unchanged.
    let v = unresolved(&b);
    assert_eq!((v["unresolved"].as_u64(), v["machines"][0]["unresolved"].as_u64()), (Some(0), Some(3)), "{v:#}");
    assert_eq!(log_status(&b, "toolu_01EditCfg", Some("laptop")), "done");
    assert_eq!(log_status(&b, "toolu_01WriteDoc", Some("laptop")), "handed_back");
    // Those decisions are about the laptop's sessions: none appears here (an empty "unknown"
    // session did, from the records that carry them).
    let sessions: Value = serde_json::from_str(&b.ok(&["sessions", "list", "--json"])).unwrap();
    let here: Vec<&Value> =
        sessions.as_array().unwrap().iter().filter(|s| s["machine"].is_null() && s["remote"].is_null()).collect();
    assert!(here.is_empty(), "{sessions:#}");
    let opts = walj::fold::FoldOptions { keep_settled: true, ..Default::default() };
    let fold = walj::fold::Fold::load(&b.dir.join(".walj/journal.jsonl"), &opts).unwrap();
    let ids: Vec<&str> = fold.sessions.iter().map(|s| s.session.as_str()).collect();
    assert!(ids.iter().all(|s| !s.is_empty()), "a session without an id: {ids:?}");
    // Acting twice is refused; unknown ids still say so.
    let (code, _, err) = b.walj(&["mark", "01EditCfg", "--done", "--yes"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("already done"), "{err}");
    let (code, _, err) = b.walj(&["mark", "nosuchid", "--done"]);
    assert_eq!(code, 1, "{err}");
    // The desktop's brief goes to Claude on the desktop, at its next session start.
    let note = session_start(&b, "5e55a0b1-0000-4000-8000-0000000000d1");
    assert!(note.contains("made on another machine (laptop") && note.contains("docs/generated-index.md"), "{note}");

    // Meanwhile the laptop decides about 01EditItems itself: its decision stands.
    a.ok(&["mark", "01EditItems", "--done"]);
    let laptop_action = crate::common::journal_records(&a.dir)
        .into_iter()
        .rev()
        .find(|r| r.id == "toolu_01EditItems" && r.op() == walj::journal::op::RESOLVED)
        .unwrap()
        .action
        .unwrap();

    b.ok(&["sync", "--yes"]);
    let r = a.sync_json(&[]);
    assert_eq!(r["imported"], 2, "{r:#}");
    assert_eq!(r["published"]["state"], "pushed", "{r:#}");
    assert_eq!(log_status(&a, "toolu_01EditCfg", None), "done");
    assert_eq!(log_status(&a, "toolu_01WriteDoc", None), "handed_back");
    let by: Vec<String> = crate::common::journal_records(&a.dir)
        .into_iter()
        .filter(|r| r.op() == walj::journal::op::RESOLVED && r.get_str("by") == Some("walj sync: desktop"))
        .map(|r| r.id)
        .collect();
    assert_eq!(by, vec!["toolu_01EditCfg".to_string(), "toolu_01WriteDoc".to_string()]);
    // The laptop's Claude never gets the desktop's brief.
    let note = session_start(&a, "5e55a0b1-0000-4000-8000-0000000000a1");
    assert!(!note.contains("made on another machine"), "{note}");
    // Again: nothing more to record.
    assert_eq!(a.sync_json(&[])["imported"], 0);

    // Both sides agree, 01EditItems as the laptop decided.
    b.ok(&["sync", "--yes"]);
    for id in ["toolu_01EditCfg", "toolu_01WriteDoc", "toolu_01EditItems", "toolu_01EditServer"] {
        assert_eq!(log_status(&a, id, None), log_status(&b, id, Some("laptop")), "{id}");
    }
    let actions: Vec<String> = fs::read_to_string(b.copy_of(&a).join("journal.jsonl"))
        .unwrap()
        .lines()
        .filter(|l| l.contains("toolu_01EditItems") && l.contains("\"resolved\""))
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["action"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(actions, vec![laptop_action], "the laptop's own decision is the only one on 01EditItems");
    assert_eq!(unresolved(&a)["unresolved"], unresolved(&b)["machines"][0]["unresolved"]);
}

/// The SessionStart note tells the user, once per change, how many entries other machines
/// left unresolved: counts and the machine's name only, and nothing of it reaches Claude.
#[test]
fn session_start_tells_the_user_other_machines_counts_once() {
    let w = World::new();
    let (a, b) = (w.machine("laptop"), w.machine("desktop"));
    a.demo();
    a.ok(&["sync", "--yes"]);
    // Before any sync here: nothing to say.
    assert_eq!(session_start(&b, "5e55a0b1-0000-4000-8000-0000000000b0"), "");
    b.ok(&["sync", "--yes"]);
    let out = session_start(&b, "5e55a0b1-0000-4000-8000-0000000000b1");
    let v: Value = serde_json::from_str(&out).unwrap();
    let msg = v["systemMessage"].as_str().unwrap();
    assert!(msg.contains("laptop has 6 unresolved entries in 1 session"), "{msg}");
    assert!(msg.contains("walj recover"), "{msg}");
    assert!(v["hookSpecificOutput"]["additionalContext"].as_str().is_none_or(|c| !c.contains("laptop")), "{v:#}");
    for foreign in ["config/settings.json", DEMO_PROMPT, "8f14e4", "toolu_01"] {
        assert!(!out.contains(foreign), "{foreign:?} in {out}");
    }
    // Told once; told again when the count changes.
    assert_eq!(session_start(&b, "5e55a0b1-0000-4000-8000-0000000000b2"), "");
    b.ok(&["mark", "01EditCfg", "--done", "--yes"]);
    let out = session_start(&b, "5e55a0b1-0000-4000-8000-0000000000b3");
    assert!(out.contains("laptop has 5 unresolved entries"), "{out}");
}

/// A `git` that logs each push to `log` and takes `secs` seconds before it.
fn slow_push_git(dir: &Path, log: &Path, secs: u32) -> PathBuf {
    let bin = dir.join("slow-git");
    fs::create_dir_all(&bin).unwrap();
    let real = String::from_utf8(Command::new("sh").args(["-c", "command -v git"]).output().unwrap().stdout).unwrap();
    let script = format!(
        "#!/bin/sh\nfor a in \"$@\"; do\n  if [ \"$a\" = push ]; then echo push >> \"{}\"; sleep {secs}; break; fi\ndone\nexec \"{}\" \"$@\"\n",
        log.display(),
        real.trim()
    );
    let path = bin.join("git");
    fs::write(&path, script).unwrap();
    use std::os::unix::fs::PermissionsExt;
    fs::set_permissions(&path, fs::Permissions::from_mode(0o755)).unwrap();
    bin
}

/// Runs the hook on `event` for a session of `m`; returns how long it took.
fn hook_event(m: &Machine, event: &str) -> Duration {
    let payload = serde_json::json!({
        "hook_event_name": event, "session_id": "5e55a0b1-0000-4000-8000-0000000000e1",
        "cwd": m.dir, "transcript_path": m.home.join("t.jsonl"), "reason": "other",
    });
    let mut hook = m.cmd(&["hook"]);
    hook.stdin(Stdio::piped()).stdout(Stdio::null());
    let started = Instant::now();
    let mut child = hook.spawn().unwrap();
    child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
    assert!(child.wait().unwrap().success());
    started.elapsed()
}

fn wait_until(what: &str, timeout: Duration, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + timeout;
    while !f() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// `[sync] auto`: Stop and SessionEnd start a detached sync and return at once; never two at
/// once; nothing before the first sync by hand.
#[test]
fn auto_sync_runs_detached_after_stop_and_session_end_never_two_at_once() {
    let w = World::new();
    let mut a = w.machine("laptop");
    let pushes = w.root.join("pushes.log");
    a.path_prefix = Some(slow_push_git(&w.root, &pushes, 2));
    a.config("[sync]\nname = \"laptop\"\nauto = true\n");
    a.append(&[line(0, OTHER_SESSION)]);
    // Never synced by hand: the hook starts nothing.
    hook_event(&a, "Stop");
    std::thread::sleep(Duration::from_millis(500));
    assert!(!pushes.exists() && w.remote_refs().is_empty());
    a.ok(&["sync", "--yes"]);
    let published = || w.remote_refs().first().map(|r| r.1.clone());
    let first = published().unwrap();
    let count = || fs::read_to_string(&pushes).map_or(0, |t| t.lines().count());
    assert_eq!(count(), 1);

    // New lines, then Stop: the hook returns long before the (2 s) push ends.
    a.append(&[line(1, OTHER_SESSION)]);
    let took = hook_event(&a, "Stop");
    assert!(took < Duration::from_millis(1500), "the hook waited for the sync: {took:?}");
    let claim = a.dir.join(".walj/sync/auto");
    wait_until("the automatic sync to start", Duration::from_secs(10), || claim.exists());
    // While it runs, more Stops start no second sync.
    hook_event(&a, "Stop");
    hook_event(&a, "SessionEnd");
    wait_until("the automatic sync to end", Duration::from_secs(20), || !claim.exists());
    assert_ne!(published().unwrap(), first, "the automatic sync published nothing");
    assert_eq!(count(), 2, "two syncs ran");
    let last: Value = serde_json::from_slice(&fs::read(a.dir.join(".walj/sync/auto.last")).unwrap()).unwrap();
    assert_eq!((last["ok"].as_bool(), last["report"]["published"]["state"].as_str()), (Some(true), Some("pushed")));
    // The SessionEnd above added a line: the next Stop publishes it.
    hook_event(&a, "Stop");
    wait_until("the second automatic sync", Duration::from_secs(20), || count() == 3 && !claim.exists());
    assert_eq!(
        fs::read(w.remote().join("..").join("laptop/.walj/journal.jsonl")).unwrap().len() as u64,
        serde_json::from_str::<Value>(&git(&w.remote(), &["show", &format!("{}:manifest.json", published().unwrap())]))
            .unwrap()["journal_bytes"]
            .as_u64()
            .unwrap()
    );
}

/// Issue 26: the journal id and the consent live in walj's state folder in the per-worktree
/// git dir, where git never carries them. A checkout that synced with an older walj (both in
/// `.walj/sync/`) moves them there once and publishes under the same id: a new id would
/// publish a second journal, and the lease would refuse the old ref.
#[test]
fn an_id_kept_in_walj_sync_moves_once_and_publishes_under_the_same_id() {
    let w = World::new();
    let a = w.machine("laptop");
    a.demo();
    a.ok(&["sync", "--yes"]);
    let id = a.id();
    let refs = w.remote_refs();
    assert_eq!(refs.len(), 1, "{refs:?}");
    assert!(refs[0].0.ends_with(&id), "{refs:?}");
    let state = a.dir.join(".git/walj/sync");
    assert!(state.join("consent").is_file() && !a.dir.join(".walj/sync/id").exists());
    // What an older walj left: both files in `.walj/sync/`, none in the state folder.
    for f in ["id", "consent"] {
        fs::rename(state.join(f), a.dir.join(".walj/sync").join(f)).unwrap();
    }
    a.append(&[line(0, OTHER_SESSION)]);
    // No --yes: the moved consent still counts (no question, no refusal).
    a.ok(&["sync", "--yes"]);
    assert_eq!(a.id(), id, "the same id, moved");
    assert!(!a.dir.join(".walj/sync/id").exists() && !a.dir.join(".walj/sync/consent").exists());
    let after = w.remote_refs();
    assert_eq!(after.len(), 1, "one journal, not a second: {after:?}");
    assert_eq!(after[0].0, refs[0].0);
    assert_ne!(after[0].1, refs[0].1, "the append was published on the same ref");
}
