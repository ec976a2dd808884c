//! Journals from before one project root (docs/project-root.md, "Journals from before one
//! root"), through the real `walj` binary in real git repositories.
//!
//! The journal is `tests/fixtures/legacy-subfolder/`, written in `pkg/core/.walj/` by the walj
//! of main before this change (`scripts/record-legacy-fixture.sh` re-records it): a session
//! started in `pkg/core/` whose Write's Post never came and whose Bash command was killed
//! mid-run. Copied into a fresh repository, it must read at the root with `pkg/core/…` paths;
//! `diff`, `revert` and `undo` act on the right file and hold across restarts; `sync`
//! publishes it once under its own id; `compact --merge-legacy` verifies, merges and is a
//! no-op the second time; a planted (tracked, linked) journal is never read.

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
fn the_old_binarys_subfolder_journal_reads_at_the_root_and_triage_acts_on_the_right_file() {
    let w = World::new();
    assert!(
        fs::read_to_string(fixture().join("meta.json")).unwrap().contains("walj"),
        "the fixture says which binary wrote it"
    );
    let core = w.root.join("pkg/core");
    let at_root = w.unresolved(&w.root);
    let paths: Vec<&str> = at_root.values().map(|(p, _)| p.as_str()).collect();
    for want in ["pkg/core/config/settings.json", "pkg/core/docs/generated-index.md", "pkg/core/run.log"] {
        assert!(paths.contains(&want), "{want} in {at_root:?}");
    }
    assert_eq!(at_root.get("toolu_01WriteDoc").map(|e| e.1.as_str()), Some("in_flight"), "the Write with no Post");
    assert_eq!(w.unresolved(&core), at_root, "recover in the subfolder reads the same");
    let json: Value = serde_json::from_str(&w.ok(&["recover", "--json"])).unwrap();
    assert_eq!(json["sessions"][0]["entries"][0]["legacy"], "pkg/core", "{json}");
    assert_eq!(json["sessions"][0]["state"], "crashed", "{json}");
    let text = w.ok(&["recover"]);
    assert!(text.contains("crashed") && text.contains("echo started > run.log"), "{text}");
    assert!(text.contains("pkg/core/.walj/") && text.contains("read beside this one"), "{text}");

    // diff: the subfolder journal's images, the subfolder's file.
    let diff = w.ok(&["diff", "toolu_01EditCfg"]);
    assert!(diff.contains("pkg/core/config/settings.json"), "{diff}");
    assert!(diff.contains("-  \"retries\": 3") && diff.contains("+  \"retries\": 5"), "{diff}");

    // revert: pkg/core/config/settings.json, never a config/settings.json at the root.
    let root_journal_before = fs::read(w.root.join(".walj/journal.jsonl")).unwrap_or_default();
    let (code, _, err) = w.walj_in(&w.root, &["revert", "toolu_01EditCfg", "--yes"]);
    assert_eq!(code, 0, "{err}");
    assert!(err.contains("acting through pkg/core/.walj/journal.jsonl"), "{err}");
    assert!(fs::read_to_string(core.join("config/settings.json")).unwrap().contains("\"retries\": 3"));
    assert!(!w.root.join("config").exists(), "nothing written at the root's config/");
    // The record is the old journal's (its fold holds the entry), and a restart reads it.
    assert_eq!(lines_with(&w.old_journal(), "\"how\":\"reverted\""), 1);
    assert_eq!(fs::read(w.root.join(".walj/journal.jsonl")).unwrap_or_default(), root_journal_before);
    let after = w.unresolved(&w.root);
    assert!(!after.contains_key("toolu_01EditCfg"), "reverted, across a restart: {after:?}");
    // The Write with no Post: reverting deletes the file it made, in pkg/core/docs/.
    w.ok(&["revert", "toolu_01WriteDoc", "--yes"]);
    assert!(!core.join("docs/generated-index.md").exists());
    // undo by the entry's id restores it, through the same journal.
    w.ok(&["undo", "toolu_01WriteDoc", "--yes"]);
    assert!(core.join("docs/generated-index.md").exists());
    assert!(w.unresolved(&w.root).contains_key("toolu_01WriteDoc"));

    // The session: listed, shown, and resumed where it was started.
    let list = w.ok(&["sessions", "list"]);
    assert!(list.contains("8f14e4") && list.contains("crashed"), "{list}");
    let show: Value = serde_json::from_str(&w.ok(&["sessions", "show", "8f14", "--json"])).unwrap();
    assert_eq!(show["resume"], format!("cd pkg/core && claude --resume {SESSION}"));
    let show = w.ok(&["sessions", "show", "8f14"]);
    assert!(show.contains(&format!("cd pkg/core && claude --resume {SESSION}")), "{show}");
    assert!(show.contains("pkg/core/run.log"), "{show}");
    let (_, status, _) = w.walj_in(&w.root, &["status", "--json"]);
    let status: Value = serde_json::from_str(&status).unwrap();
    assert_eq!(status["unresolved"], 2, "{status}");
}

#[test]
fn sync_publishes_the_old_journal_once_under_its_own_id() {
    let w = World::new();
    let remote = w.base.join("remote.git");
    git(&w.base, &["init", "-q", "--bare", remote.to_str().unwrap()]);
    git(&w.root, &["remote", "add", "origin", remote.to_str().unwrap()]);
    let refs = || -> Vec<String> {
        git(&remote, &["for-each-ref", "--format=%(refname)", "refs/walj/journals/"])
            .lines()
            .map(str::to_string)
            .collect()
    };
    let out: Value = serde_json::from_str(&w.ok(&["sync", "--yes", "--json"])).unwrap();
    let legacy = out["legacy"].as_array().unwrap();
    assert_eq!(legacy.len(), 1, "{out}");
    assert_eq!(legacy[0]["folder"], "pkg/core");
    let id = legacy[0]["journal"].as_str().unwrap().to_string();
    assert_ne!(id, out["journal"].as_str().unwrap(), "its own id, not the root's");
    assert_eq!(legacy[0]["published"]["state"], "pushed", "{out}");
    let published = refs();
    assert_eq!(published.iter().filter(|r| r.ends_with(&id)).count(), 1, "{published:?}");
    // The id is kept in walj's place in the git dir, never in .walj/ or elsewhere in .git/.
    let kept = git(&w.root, &["rev-parse", "--absolute-git-dir"]);
    let walj_place = PathBuf::from(kept.trim()).join("walj");
    let found = Command::new("grep").args(["-rl", &id]).arg(&walj_place).output().unwrap();
    assert!(String::from_utf8_lossy(&found.stdout).contains("/sync/id"), "{}", walj_place.display());
    // A second sync: the same id, up to date, still one ref; the copy is never another machine's.
    let again: Value = serde_json::from_str(&w.ok(&["sync", "--yes", "--json"])).unwrap();
    assert_eq!(again["legacy"][0]["journal"], id.as_str());
    assert_eq!(again["legacy"][0]["published"]["state"], "up_to_date", "{again}");
    assert_eq!(refs(), published, "published once, not twice");
    let rec: Value = serde_json::from_str(&w.ok(&["recover", "--json"])).unwrap();
    assert!(rec.get("machines").is_none(), "its own copy is no other machine: {rec}");
    assert_eq!(w.unresolved(&w.root).len(), 3);
}

#[test]
fn compact_merge_legacy_verifies_merges_and_is_a_no_op_the_second_time() {
    let w = World::new();
    let before = w.unresolved(&w.root);
    assert_eq!(before.len(), 3);
    // Off a terminal without --yes: refused, nothing changed.
    let old_bytes = fs::read(w.old_journal()).unwrap();
    let (code, _, err) = w.walj_in(&w.root, &["compact", "--merge-legacy"]);
    assert_eq!(code, 1, "{err}");
    assert!(err.contains("pass --yes"), "{err}");
    let dry = w.ok(&["compact", "--merge-legacy", "--dry-run"]);
    assert!(dry.contains("would merge pkg/core/.walj/journal.jsonl") && dry.contains("verified"), "{dry}");
    assert_eq!(fs::read(w.old_journal()).unwrap().len(), old_bytes.len(), "a dry run changes nothing");
    assert!(!w.root.join(".walj/journal.jsonl").exists());

    let out = w.ok(&["compact", "--merge-legacy", "--yes"]);
    assert!(out.contains("merged pkg/core/.walj/journal.jsonl"), "{out}");
    assert!(!w.old_journal().exists() && w.root.join("pkg/core/.walj/journal.jsonl.merged").is_file(), "kept renamed");
    let root_journal = w.root.join(".walj/journal.jsonl");
    assert!(lines_with(&root_journal, "\"path\":\"pkg/core/config/settings.json\"") >= 2, "rebased into the root's");
    assert_eq!(w.unresolved(&w.root), before, "the same entries, from the root journal alone now");
    let text = w.ok(&["recover"]);
    assert!(!text.contains("read beside this one"), "{text}");
    // diff and revert now read the root's store.
    let diff = w.ok(&["diff", "toolu_01EditCfg"]);
    assert!(diff.contains("-  \"retries\": 3"), "{diff}");
    // Twice: nothing to merge, nothing changed.
    let merged_bytes = fs::read(&root_journal).unwrap();
    let again = w.ok(&["compact", "--merge-legacy", "--yes"]);
    assert!(again.contains("Nothing to merge"), "{again}");
    assert_eq!(fs::read(&root_journal).unwrap(), merged_bytes);
    w.ok(&["revert", "toolu_01EditCfg", "--yes"]);
    assert!(fs::read_to_string(w.root.join("pkg/core/config/settings.json")).unwrap().contains("\"retries\": 3"));
    assert_eq!(lines_with(&root_journal, "\"how\":\"reverted\""), 1, "after the merge, in the root's journal");
}

#[cfg(unix)]
#[test]
fn a_planted_subfolder_journal_tracked_or_linked_is_never_read() {
    let w = World::new();
    // A journal git carries (a clone could bring it), and a .walj that is a link.
    let evil = w.root.join("pkg/evil");
    copy_tree(&fixture().join("after/dot-walj"), &evil.join(".walj"));
    let planted = evil.join(".walj/journal.jsonl");
    let text = fs::read_to_string(&planted).unwrap().replace("toolu_01", "toolu_02");
    fs::write(&planted, text).unwrap();
    git(&w.root, &["add", "-f", "pkg/evil/.walj/journal.jsonl"]);
    git(&w.root, &["commit", "-q", "-m", "plant"]);
    let elsewhere = w.base.join("elsewhere");
    copy_tree(&fixture().join("after/dot-walj"), &elsewhere);
    fs::create_dir_all(w.root.join("pkg/link")).unwrap();
    std::os::unix::fs::symlink(&elsewhere, w.root.join("pkg/link/.walj")).unwrap();

    let found = w.unresolved(&w.root);
    assert!(found.keys().all(|id| !id.starts_with("toolu_02")), "the tracked one is not read: {found:?}");
    assert!(found.values().all(|(p, _)| p.starts_with("pkg/core/")), "{found:?}");
    assert_eq!(found.len(), 3, "pkg/core's own, read once (the link's copy of it is not): {found:?}");
    let text = w.ok(&["recover"]);
    assert!(text.contains("Not read: pkg/evil/.walj/journal.jsonl"), "{text}");
    assert!(text.contains("Not read: pkg/link/.walj/journal.jsonl") && text.contains("symbolic link"), "{text}");
    let (_, doctor, _) = w.walj_in(&w.root, &["doctor"]);
    assert!(doctor.contains("pkg/evil/.walj/journal.jsonl is not read"), "{doctor}");
    // Acting on a planted entry by id: no such entry.
    let (code, _, _) = w.walj_in(&w.root, &["revert", "toolu_02EditCfg", "--yes"]);
    assert_ne!(code, 0);
}

#[test]
fn claude_codes_projects_folder_finds_a_journal_the_bounded_walk_skips() {
    let w = World::new();
    // A start folder under a build folder (the walk skips `build/`): Claude Code's projects
    // folder names it, by the `cwd` of a session's transcript.
    let deep = w.root.join("build/tools/gen");
    copy_tree(&fixture().join("after/dot-walj"), &deep.join(".walj"));
    fs::remove_dir_all(w.root.join("pkg/core/.walj")).unwrap();
    let encoded: String =
        deep.to_string_lossy().chars().map(|c| if c.is_ascii_alphanumeric() { c } else { '-' }).collect();
    let folder = w.base.join("home/.claude/projects").join(encoded);
    fs::create_dir_all(&folder).unwrap();
    let line = serde_json::json!({"type": "user", "cwd": deep, "sessionId": SESSION});
    fs::write(folder.join(format!("{SESSION}.jsonl")), format!("{line}\n")).unwrap();

    let found = w.unresolved(&w.root);
    assert!(found.values().any(|(p, _)| p == "build/tools/gen/config/settings.json"), "{found:?}");
}

#[test]
fn the_next_session_start_at_the_root_is_told_once_with_rebased_paths() {
    let w = World::new();
    // The first command after the upgrade finds the old journal and lists it (`.walj/legacy`);
    // SessionStart reads the list (it never walks the tree).
    fs::create_dir_all(w.root.join(".walj")).unwrap();
    w.ok(&["recover"]);
    assert_eq!(fs::read_to_string(w.root.join(".walj/legacy")).unwrap(), "pkg/core\n");
    let start = |session: &str| -> String {
        let payload = serde_json::json!({"session_id": session, "transcript_path": "/nonexistent/t.jsonl",
            "cwd": w.root, "hook_event_name": "SessionStart", "source": "startup", "model": "claude-test"});
        let mut c = w.cmd(&w.root, &["hook"]);
        c.env("CLAUDE_PROJECT_DIR", &w.root).stdin(Stdio::piped()).stdout(Stdio::piped());
        let mut child = c.spawn().unwrap();
        use std::io::Write as _;
        child.stdin.take().unwrap().write_all(payload.to_string().as_bytes()).unwrap();
        let out = child.wait_with_output().unwrap();
        assert!(out.status.success());
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    let told = start("s-next");
    assert!(told.contains("pkg/core/config/settings.json"), "{told}");
    // The mark that it was told is the old journal's (its fold holds the session).
    assert_eq!(lines_with(&w.old_journal(), "\"kind\":\"announced\""), 1);
    assert_eq!(lines_with(&w.root.join(".walj/journal.jsonl"), "\"kind\":\"announced\""), 0);
    let again = start("s-after");
    assert!(!again.contains("pkg/core/config/settings.json"), "told once: {again}");
}
