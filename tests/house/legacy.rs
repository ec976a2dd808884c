//! Journals in subfolders from walj builds that were never released (docs/project-root.md, "A
//! journal in a subfolder"), through the real `walj` binary in real git repositories.
//!
//! The journal is `tests/fixtures/legacy-subfolder/`, written in `pkg/core/.walj/` by such a
//! build (`scripts/record-legacy-fixture.sh` re-records it): a session started in `pkg/core/`
//! whose Write's Post never came and whose Bash command was killed mid-run. Copied into a fresh
//! repository, walj at the root reads only the root's journal and names this one with the
//! command that reads it; read that way, its v1 lines fold and triage as they always did.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::collections::BTreeMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde_json::Value;

const SESSION: &str = "8f14e45f-ceea-467f-a0e6-4c2d1b7e9a10";

fn fixture() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/legacy-subfolder")
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git")
        .current_dir(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "T")
        .env("GIT_AUTHOR_EMAIL", "t@example.com")
        .env("GIT_COMMITTER_NAME", "T")
        .env("GIT_COMMITTER_EMAIL", "t@example.com")
        .stderr(Stdio::inherit())
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Copies `from` into `to`, `dot-walj` → `.walj` and `dot-gitignore` → `.gitignore` (the
/// fixture's names, so that git carries them).
fn copy_tree(from: &Path, to: &Path) {
    fs::create_dir_all(to).unwrap();
    for e in fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let name = e.file_name().to_string_lossy().replace("dot-walj", ".walj").replace("dot-gitignore", ".gitignore");
        let dest = to.join(name);
        if e.file_type().unwrap().is_dir() {
            copy_tree(&e.path(), &dest);
        } else {
            fs::copy(e.path(), &dest).unwrap();
            // As a checkout makes them (git keeps no write bit), whatever the source's mode.
            let mut perm = fs::metadata(&dest).unwrap().permissions();
            #[allow(clippy::permissions_set_readonly_false)]
            perm.set_readonly(false);
            fs::set_permissions(&dest, perm).unwrap();
        }
    }
}

/// A scratch HOME and state dirs, and a repository whose `pkg/core/` holds the old journal.
struct World {
    _tmp: tempfile::TempDir,
    base: PathBuf,
    root: PathBuf,
}

impl World {
    fn new() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = fs::canonicalize(tmp.path()).unwrap();
        for d in ["home", "run", "state"] {
            fs::create_dir_all(base.join(d)).unwrap();
        }
        let root = base.join("repo");
        let core = root.join("pkg/core");
        copy_tree(&fixture().join("committed"), &core);
        fs::write(root.join("README"), "mono\n").unwrap();
        git(&root, &["init", "-q", "-b", "main"]);
        git(&root, &["add", "-A"]);
        git(&root, &["commit", "-q", "-m", "initial"]);
        // The disk after the crash, the old walj's .walj/ with it (untracked, this user's).
        copy_tree(&fixture().join("after"), &core);
        World { _tmp: tmp, base, root }
    }

    fn cmd(&self, cwd: &Path, args: &[&str]) -> Command {
        let mut c = Command::new(env!("CARGO_BIN_EXE_walj"));
        c.current_dir(cwd)
            .args(args)
            .env_remove("CLAUDECODE")
            .env_remove("CLAUDE_PROJECT_DIR")
            .env_remove("WALJ_JOURNAL")
            .env_remove("CLAUDE_CONFIG_DIR")
            .env_remove("WALJ_PASSPHRASE")
            .env("HOME", self.base.join("home"))
            .env("XDG_RUNTIME_DIR", self.base.join("run"))
            .env("XDG_STATE_HOME", self.base.join("state"))
            .env("GIT_CONFIG_GLOBAL", "/dev/null")
            .env("GIT_CONFIG_NOSYSTEM", "1")
            .env("NO_COLOR", "1")
            .stdin(Stdio::null());
        c
    }

    /// `walj ARGS` in `cwd`: (exit code, stdout, stderr).
    fn walj_in(&self, cwd: &Path, args: &[&str]) -> (i32, String, String) {
        let out = self.cmd(cwd, args).output().unwrap();
        (
            out.status.code().unwrap_or(-1),
            String::from_utf8_lossy(&out.stdout).into(),
            String::from_utf8_lossy(&out.stderr).into(),
        )
    }

    /// `walj ARGS` at the root, which must succeed: its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let (code, out, err) = self.walj_in(&self.root, args);
        assert_eq!(code, 0, "walj {args:?}\nstdout:\n{out}\nstderr:\n{err}");
        out
    }

    /// `recover --json` run in `cwd`: unresolved entry id → (path, status).
    fn unresolved(&self, cwd: &Path) -> BTreeMap<String, (String, String)> {
        let (code, out, err) = self.walj_in(cwd, &["recover", "--json"]);
        assert_eq!(code, 0, "{err}");
        let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
        let mut map = BTreeMap::new();
        for s in v["sessions"].as_array().unwrap() {
            for e in s["entries"].as_array().unwrap() {
                map.insert(
                    e["id"].as_str().unwrap().to_string(),
                    (e["path"].as_str().unwrap().to_string(), e["status"].as_str().unwrap().to_string()),
                );
            }
        }
        map
    }

    fn old_journal(&self) -> PathBuf {
        self.root.join("pkg/core/.walj/journal.jsonl")
    }
}

fn lines_with(journal: &Path, needle: &str) -> usize {
    fs::read_to_string(journal).unwrap_or_default().lines().filter(|l| l.contains(needle)).count()
}

#[test]
fn a_subfolder_journal_is_named_with_how_to_read_it_and_reads_as_a_project_of_its_own() {
    let w = World::new();
    assert!(
        fs::read_to_string(fixture().join("meta.json")).unwrap().contains("walj"),
        "the fixture says which binary wrote it"
    );
    // At the root: named, with the command that reads it; not read beside the root's journal.
    let text = w.ok(&["recover"]);
    assert!(text.contains("pkg/core/.walj/") && text.contains("`walj --project pkg/core recover`"), "{text}");
    assert!(w.unresolved(&w.root).is_empty(), "nothing of it read at the root");
    let (_, doctor, _) = w.walj_in(&w.root, &["doctor"]);
    assert!(doctor.contains("pkg/core/.walj/ holds a journal from before"), "{doctor}");
    assert!(doctor.contains("`walj --project pkg/core recover`"), "{doctor}");

    // Read as the message says: its v1 lines, its own paths, its crash.
    let (code, out, err) = w.walj_in(&w.root, &["--project", "pkg/core", "recover", "--json"]);
    assert_eq!(code, 0, "{err}");
    let v: Value = serde_json::from_str(&out).unwrap_or_else(|e| panic!("{e}: {out}"));
    assert_eq!(v["sessions"][0]["session"], SESSION, "{v}");
    assert_eq!(v["sessions"][0]["state"], "crashed", "{v}");
    let paths: Vec<&str> =
        v["sessions"][0]["entries"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
    for want in ["config/settings.json", "docs/generated-index.md", "run.log"] {
        assert!(paths.contains(&want), "{want} in {paths:?}");
    }
    // Triage acts there: the subfolder's file, the subfolder's journal.
    let (code, _, err) = w.walj_in(&w.root, &["--project", "pkg/core", "revert", "toolu_01EditCfg", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(fs::read_to_string(w.root.join("pkg/core/config/settings.json")).unwrap().contains("\"retries\": 3"));
    assert!(!w.root.join("config").exists(), "nothing written at the root's config/");
    assert_eq!(lines_with(&w.old_journal(), "\"how\":\"reverted\""), 1);
}
