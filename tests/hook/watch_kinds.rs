//! Each kind of change the full scan sees, seen the same with the watcher on and with it off:
//! the regression tests of the watcher/full-scan differences (docs/reliability.md). Every test
//! runs its command through the real hook twice, in two repositories: once with the checkout
//! watcher serving the Post (`watch` = `watcher` in the summary), once with `[bash] watcher =
//! false` (the full scan with the untracked cache).

use super::*;

/// A fresh repository of `files`, set up by `setup` (before any hook: it is the state the session
/// finds), with the watcher on or off; a first command is journaled so the next one's Pre has a
/// base the watcher vouches from.
fn session(files: &[(&str, &str)], watcher: bool, setup: &dyn Fn(&W)) -> W {
    let w = W::new(files);
    setup(&w);
    if !watcher {
        w.config("[bash]\nwatcher = false\nwatch_ms = 2000\n");
    }
    w.start();
    if watcher {
        w.wait_ready();
    }
    w.pre("toolu_warm");
    w.post("toolu_warm");
    w
}

/// Runs `cmd` in the shell as command `id` between its Pre and Post; the children it got.
fn run(w: &W, id: &str, cmd: &str) -> Vec<(String, Value)> {
    w.pre(id);
    sh(w.root(), cmd);
    w.post(id);
    w.children(id)
}

/// Asserts the watcher served the Post (so the test checks the watcher path, not a fallback).
fn served(w: &W, id: &str, watcher: bool) {
    if watcher {
        assert_eq!(w.summary(id)["watch"], json!(WATCHED), "{}", w.summary(id));
    }
}

fn each(f: impl Fn(bool)) {
    for watcher in [true, false] {
        f(watcher);
    }
}

#[test]
fn tracked_files_in_an_ignored_folder_or_matching_an_ignore_rule_are_journaled() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            w.repo.write(".gitignore", "build/\n*.log\n");
            w.repo.write("build/keep.txt", "k\n");
            w.repo.write("build/gone.txt", "g\n");
            w.repo.write("app.log", "l\n");
            w.repo.git(&["add", "-f", "build/keep.txt", "build/gone.txt", "app.log", ".gitignore"]);
            w.repo.commit("tracked under ignore rules");
        });
        let kids = run(&w, "toolu_i", "echo k2 > build/keep.txt && rm build/gone.txt && echo l2 > app.log");
        served(&w, "toolu_i", on);
        assert_eq!(
            kids,
            vec![
                ("app.log".to_string(), blob("l2\n")),
                ("build/gone.txt".to_string(), Value::Null),
                ("build/keep.txt".to_string(), blob("k2\n")),
            ],
            "watcher {on}"
        );
    });
}

#[test]
fn files_unignored_through_info_exclude_are_journaled_then_and_later() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            fs::write(w.root().join(".git/info/exclude"), "gen/\n").unwrap();
            w.repo.write("gen/old.txt", "o\n");
        });
        let kids = run(&w, "toolu_x", "printf '' > .git/info/exclude && echo n > gen/new.txt");
        assert!(kids.contains(&("gen/new.txt".to_string(), blob("n\n"))), "watcher {on}: {kids:?}");
        // The folder is no longer ignored: the next command's change in it is seen too.
        let kids = run(&w, "toolu_x2", "echo o2 > gen/old.txt && echo m > gen/more.txt");
        served(&w, "toolu_x2", on);
        assert_eq!(
            kids,
            vec![("gen/more.txt".to_string(), blob("m\n")), ("gen/old.txt".to_string(), blob("o2\n"))],
            "watcher {on}"
        );
    });
}

#[test]
fn files_unignored_through_core_excludes_file_are_journaled_then_and_later() {
    each(|on| {
        let out = tempfile::tempdir().unwrap();
        let excludes = out.path().join("excludes");
        fs::write(&excludes, "gen/\n").unwrap();
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            w.repo.git(&["config", "core.excludesFile", &excludes.to_string_lossy()]);
            w.repo.write("gen/old.txt", "o\n");
        });
        let kids = run(&w, "toolu_e", &format!("printf '' > '{}' && echo n > gen/new.txt", excludes.display()));
        assert!(kids.contains(&("gen/new.txt".to_string(), blob("n\n"))), "watcher {on}: {kids:?}");
        let kids = run(&w, "toolu_e2", "echo o2 > gen/old.txt");
        served(&w, "toolu_e2", on);
        assert_eq!(kids, vec![("gen/old.txt".to_string(), blob("o2\n"))], "watcher {on}");
        // Ignored again through the file: a new file there is not a change.
        let kids = run(&w, "toolu_e3", &format!("echo 'gen/' > '{}' && echo z > gen/z.txt", excludes.display()));
        assert_eq!(kids, vec![], "watcher {on}");
    });
}

#[test]
fn a_gitignore_edit_that_unignores_a_folder_lets_later_changes_in_it_be_seen() {
    each(|on| {
        let w = session(&[("a.txt", "a\n"), (".gitignore", "gen/\n")], on, &|w| {
            w.repo.write("gen/old.txt", "o\n");
        });
        run(&w, "toolu_g", "printf '' > .gitignore");
        let kids = run(&w, "toolu_g2", "echo o2 > gen/old.txt");
        served(&w, "toolu_g2", on);
        assert_eq!(kids, vec![("gen/old.txt".to_string(), blob("o2\n"))], "watcher {on}");
    });
}

#[test]
fn a_write_through_a_hard_link_from_outside_the_project_is_journaled() {
    each(|on| {
        let out = tempfile::tempdir().unwrap();
        let link = out.path().join("x");
        let w = session(&[("a.txt", "a\n"), ("b.txt", "b\n")], on, &|w| {
            fs::hard_link(w.root().join("a.txt"), &link).unwrap();
        });
        let kids = run(&w, "toolu_h", &format!("echo via-link > '{}'", link.display()));
        served(&w, "toolu_h", on);
        assert_eq!(kids, vec![("a.txt".to_string(), blob("via-link\n"))], "watcher {on}");
        // A second name made in the tree during the session: a write through one is a change of
        // both (the other name has no event of its own).
        run(&w, "toolu_h2", "ln b.txt c.txt");
        let kids = run(&w, "toolu_h3", "echo via-c > c.txt");
        served(&w, "toolu_h3", on);
        assert_eq!(
            kids,
            vec![("b.txt".to_string(), blob("via-c\n")), ("c.txt".to_string(), blob("via-c\n"))],
            "watcher {on}"
        );
    });
}

#[test]
fn paths_with_a_walj_component_below_the_top_are_journaled() {
    each(|on| {
        let w = session(&[("a.txt", "a\n"), ("docs/readme.md", "r\n")], on, &|_| {});
        let kids = run(&w, "toolu_w", "mkdir -p docs/.walj && echo x > docs/.walj/x.txt");
        served(&w, "toolu_w", on);
        assert_eq!(kids, vec![("docs/.walj/x.txt".to_string(), blob("x\n"))], "watcher {on}");
        let kids = run(&w, "toolu_w2", "echo y > docs/.walj/x.txt");
        served(&w, "toolu_w2", on);
        assert_eq!(kids, vec![("docs/.walj/x.txt".to_string(), blob("y\n"))], "watcher {on}");
    });
}

#[test]
fn a_file_whose_name_is_not_utf8_made_by_bash_is_journaled() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|_| {});
        let kids = run(&w, "toolu_u", "printf 'u\\n' > \"$(printf 'caf\\351.txt')\"");
        served(&w, "toolu_u", on);
        let name = walj::fsutil::name::encode(b"caf\xe9.txt").into_owned();
        assert_eq!(kids, vec![(name.clone(), blob("u\n"))], "watcher {on}");
        let kids = run(&w, "toolu_u2", "printf 'u2\\n' > \"$(printf 'caf\\351.txt')\"");
        served(&w, "toolu_u2", on);
        assert_eq!(kids, vec![(name, blob("u2\n"))], "watcher {on}");
    });
}

#[test]
fn a_moved_folder_of_old_files_is_deletions_and_creations_with_content() {
    each(|on| {
        let w = session(&[("a.txt", "a\n"), ("d/k.txt", "k\n"), ("d/e/l.txt", "l\n")], on, &|w| {
            // Older than the racy window: a stat that does not change proves nothing new.
            sh(w.root(), "touch -d '2020-01-01' d/k.txt d/e/l.txt d/e d");
        });
        // Untracked old files move along too.
        sh(w.root(), "echo u > d/u.txt && touch -d '2020-01-01' d/u.txt d");
        run(&w, "toolu_m0", "true");
        // Past the racy window of every stamp above (their ctimes are now).
        std::thread::sleep(Duration::from_millis(2100));
        let kids = run(&w, "toolu_m", "mv d n");
        served(&w, "toolu_m", on);
        assert_eq!(
            kids,
            vec![
                ("d/e/l.txt".to_string(), Value::Null),
                ("d/k.txt".to_string(), Value::Null),
                ("d/u.txt".to_string(), Value::Null),
                ("n/e/l.txt".to_string(), blob("l\n")),
                ("n/k.txt".to_string(), blob("k\n")),
                ("n/u.txt".to_string(), blob("u\n")),
            ],
            "watcher {on}"
        );
    });
}

#[test]
fn a_file_written_into_a_folder_the_same_command_git_inits_is_journaled() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|_| {});
        let kids = run(&w, "toolu_n", "mkdir sub && echo f > sub/f.txt && git -C sub init -q");
        served(&w, "toolu_n", on);
        assert!(kids.contains(&("sub/f.txt".to_string(), blob("f\n"))), "watcher {on}: {kids:?}");
    });
}

/// The session dies after the command (no PostToolUse) and its watcher is killed before the
/// next look: the command's changes of each kind are still derived, from a full scan.
#[test]
fn each_kind_is_derived_when_claude_code_dies_after_the_command_and_the_watcher_is_killed() {
    let w = W::new(&[("a.txt", "a\n"), ("d/k.txt", "k\n")]);
    w.repo.write(".gitignore", "build/\n*.log\n");
    w.repo.write("build/keep.txt", "k\n");
    w.repo.write("app.log", "l\n");
    w.repo.git(&["add", "-f", "build/keep.txt", "app.log", ".gitignore"]);
    w.repo.commit("tracked under ignore rules");
    sh(w.root(), "touch -d '2020-01-01' d/k.txt d");
    std::thread::sleep(Duration::from_millis(2100));
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    fs::write(d.join("start.json"), w.payload("SessionStart", "").to_string()).unwrap();
    fs::write(d.join("pre.json"), w.payload("PreToolUse", "toolu_dead").to_string()).unwrap();
    // Its Claude Code: `timeout`, which runs SessionStart and the command's PreToolUse, then
    // ends (no Post: killed).
    let script = r#"
        w() { while [ ! -e "$D/$1" ]; do sleep 0.02; done; }
        "$WALJ" --project "$ROOT" hook < "$D/start.json" > /dev/null; touch "$D/started"; w go1
        "$WALJ" --project "$ROOT" hook < "$D/pre.json" > /dev/null; touch "$D/pre-done"; w go2
    "#;
    let mut claude = Command::new("timeout")
        .args(["60", "sh", "-c", script])
        .env("WALJ", walj_bin())
        .env("ROOT", w.root())
        .env("D", d)
        .current_dir(w.root())
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .env_remove("CLAUDE_PROJECT_DIR")
        .env_remove("WALJ_JOURNAL")
        .spawn()
        .unwrap();
    let wait_for = |name: &str| {
        let t = Instant::now();
        while !d.join(name).exists() {
            assert!(t.elapsed() < Duration::from_secs(20), "the fake Claude Code never got to {name}");
            std::thread::sleep(Duration::from_millis(10));
        }
    };
    wait_for("started");
    let watcher = w.wait_ready();
    fs::write(d.join("go1"), "").unwrap();
    wait_for("pre-done");
    std::thread::sleep(Duration::from_millis(50));
    sh(
        w.root(),
        "echo k2 > build/keep.txt && echo l2 > app.log && mkdir -p docs/.walj && echo x > docs/.walj/x.txt \
         && printf 'u\\n' > \"$(printf 'caf\\351.txt')\" && mv d n",
    );
    std::thread::sleep(Duration::from_millis(50));
    fs::write(d.join("go2"), "").unwrap();
    assert!(claude.wait().unwrap().success());
    kill(watcher, "-9");

    let out = crate::common::walj_at(w.root())
        .args(["recover", "--json"])
        .env("WALJ_RUNTIME_DIR", w.rt.path())
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let kids = w.children("toolu_dead");
    let name = walj::fsutil::name::encode(b"caf\xe9.txt").into_owned();
    for (path, after) in [
        ("app.log", blob("l2\n")),
        ("build/keep.txt", blob("k2\n")),
        (name.as_str(), blob("u\n")),
        ("d/k.txt", Value::Null),
        ("docs/.walj/x.txt", blob("x\n")),
        ("n/k.txt", blob("k\n")),
    ] {
        assert!(kids.contains(&(path.to_string(), after)), "{path}: {kids:?}");
    }
}

/// `chmod +x` by a command: an entry whose images are the same bytes and whose mode changed
/// (`mode_before` / `mode_after`, as git writes them), for a tracked and an untracked file, with
/// the watcher and without; `walj diff` shows the mode, `walj revert` gives the old one back
/// (the bytes untouched), `walj undo` the new one.
#[test]
fn a_chmod_is_journaled_shown_by_diff_and_reverted() {
    use std::os::unix::fs::PermissionsExt;
    each(|on| {
        let w = session(&[("run.sh", "echo hi\n")], on, &|w| {
            w.repo.write("tool.sh", "echo tool\n");
            fs::set_permissions(w.root().join("tool.sh"), fs::Permissions::from_mode(0o644)).unwrap();
            fs::set_permissions(w.root().join("run.sh"), fs::Permissions::from_mode(0o644)).unwrap();
        });
        let kids = run(&w, "toolu_x", "chmod +x run.sh tool.sh");
        served(&w, "toolu_x", on);
        assert_eq!(
            kids,
            vec![("run.sh".to_string(), blob("echo hi\n")), ("tool.sh".to_string(), blob("echo tool\n"))],
            "watcher {on}"
        );
        let recs: Vec<Value> = w.lines().into_iter().filter(|r| r["parent"] == json!("toolu_x")).collect();
        for r in &recs {
            assert_eq!(r["before"], r["after"], "watcher {on}: {r}");
            assert_eq!(r["mode_before"], json!("100644"), "watcher {on}: {r}");
            assert_eq!(r["mode_after"], json!("100755"), "watcher {on}: {r}");
        }
        let id = recs.iter().find(|r| r["path"] == json!("run.sh")).unwrap()["id"].as_str().unwrap().to_string();
        let diff =
            crate::common::walj_at(w.root()).args(["diff", &id, "--applied", "--color", "never"]).output().unwrap();
        let diff = String::from_utf8_lossy(&diff.stdout).into_owned();
        assert!(diff.contains("old mode 100644") && diff.contains("new mode 100755"), "watcher {on}: {diff}");
        // The session is live (the test is its Claude Code): --force.
        let out = crate::common::walj_at(w.root()).args(["revert", &id, "--force", "--yes"]).output().unwrap();
        assert!(out.status.success(), "watcher {on}: {}", String::from_utf8_lossy(&out.stderr));
        let mode = |p: &str| fs::metadata(w.root().join(p)).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode("run.sh"), 0o644, "watcher {on}: the revert gives the mode back");
        assert_eq!(fs::read_to_string(w.root().join("run.sh")).unwrap(), "echo hi\n");
        assert_eq!(mode("tool.sh"), 0o755, "watcher {on}: only the entry reverted");
        let out = crate::common::walj_at(w.root()).args(["undo", "--force", "--yes"]).output().unwrap();
        assert!(out.status.success(), "watcher {on}: {}", String::from_utf8_lossy(&out.stderr));
        assert_eq!(mode("run.sh"), 0o755, "watcher {on}: undo gives the command's mode back");
    });
}

/// A file an ignore rule hid when the watcher crawled, hard-linked from outside the project: once
/// the rule is gone, a write through the outside name is journaled (the watcher's crawl after
/// the rule change notes the file's other name; before, only folders were read again, and the
/// differential long run missed such writes: docs/reliability.md).
#[test]
fn a_hard_linked_file_a_rule_change_made_visible_is_journaled_when_written_from_outside() {
    each(|on| {
        let out = tempfile::tempdir().unwrap();
        let link = out.path().join("x");
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            w.repo.write(".gitignore", "*.log\n");
            w.repo.git(&["add", ".gitignore"]);
            w.repo.commit("ignore logs");
            w.repo.write("c.log", "c\n");
            fs::hard_link(w.root().join("c.log"), &link).unwrap();
        });
        run(&w, "toolu_r", "printf '' > .gitignore");
        let kids = run(&w, "toolu_l", &format!("echo via-link > '{}'", link.display()));
        served(&w, "toolu_l", on);
        assert_eq!(kids, vec![("c.log".to_string(), blob("via-link\n"))], "watcher {on}");
    });
}

/// A file this repository's rules ignore (`*.log`, `build/`), written into a folder the same
/// command `git init`s: the outer rules do not reach into a nested repository (git lists it as
/// one untracked entry), so its files are the command's whatever their names. Found by the
/// differential long run (seed 4646, programs 782, 2939, 3252): both paths applied the outer
/// rules there and missed the file.
#[test]
fn an_ignored_name_in_a_folder_the_same_command_git_inits_is_journaled() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            w.repo.write(".gitignore", "*.log\nbuild/\n");
            w.repo.git(&["add", ".gitignore"]);
            w.repo.commit("ignore logs and builds");
        });
        let kids = run(
            &w,
            "toolu_n",
            "mkdir -p sub/build && echo c > sub/c.log && echo b > sub/build/b.txt && git -C sub init -q",
        );
        served(&w, "toolu_n", on);
        assert!(kids.contains(&("sub/c.log".to_string(), blob("c\n"))), "watcher {on}: {kids:?}");
        assert!(kids.contains(&("sub/build/b.txt".to_string(), blob("b\n"))), "watcher {on}: {kids:?}");
    });
}

/// The tree of files under `root` (`.git` and `.walj` left out): path → (content, executable),
/// and the folders, so a revert that leaves an empty folder behind shows.
fn tree(root: &Path) -> (Vec<(String, String, bool)>, Vec<String>) {
    use std::os::unix::fs::PermissionsExt;
    let (mut files, mut dirs) = (Vec::new(), Vec::new());
    let mut todo = vec![root.to_path_buf()];
    while let Some(d) = todo.pop() {
        for e in fs::read_dir(&d).unwrap() {
            let e = e.unwrap();
            let p = e.path();
            let rel = p.strip_prefix(root).unwrap().to_string_lossy().into_owned();
            if rel == ".git" || rel == ".walj" {
                continue;
            }
            let m = fs::symlink_metadata(&p).unwrap();
            if m.is_dir() {
                dirs.push(rel);
                todo.push(p);
            } else {
                let exec = m.permissions().mode() & 0o111 != 0;
                files.push((rel, fs::read_to_string(&p).unwrap_or_default(), exec));
            }
        }
    }
    files.sort();
    dirs.sort();
    (files, dirs)
}

/// A folder of old files moved by one command (Claude Code's real Bash payloads): `walj revert
/// --session` puts the folder back as a unit (every file, its mode, the moved-to folder gone),
/// and `walj undo` makes the move again; `recover` and `log` say it was a move.
#[test]
fn a_moved_folder_is_reverted_as_a_unit_and_the_revert_undone() {
    each(|on| {
        let w = session(
            &[("a.txt", "a\n"), ("d/k.txt", "k\n"), ("d/e/l.txt", "l\n"), ("d/run.sh", "echo r\n")],
            on,
            &|w| {
                sh(w.root(), "chmod +x d/run.sh && git add d/run.sh && git commit -qm exec");
                sh(w.root(), "echo u > d/e/u.txt && touch -d '2020-01-01' d/k.txt d/e/l.txt d/e/u.txt d/run.sh d/e d");
            },
        );
        run(&w, "toolu_m0", "true");
        std::thread::sleep(Duration::from_millis(2100));
        let before = tree(w.root());
        let pre = w.real("07-PreToolUse-Bash.json", "toolu_mv", "mv d n");
        let mut post = pre.clone();
        post["hook_event_name"] = json!("PostToolUse");
        post["tool_response"] = json!({"stdout": "", "stderr": "", "interrupted": false, "isImage": false});
        w.hook(&pre);
        sh(w.root(), "mv d n");
        w.hook(&post);
        served(&w, "toolu_mv", on);
        let moved = tree(w.root());
        assert_eq!(w.children("toolu_mv").len(), 8, "watcher {on}: {:?}", w.children("toolu_mv"));
        let walj = |args: &[&str]| {
            let out =
                crate::common::walj_at(w.root()).args(args).env("WALJ_RUNTIME_DIR", w.rt.path()).output().unwrap();
            assert!(out.status.success(), "watcher {on}: walj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        // The readers say the eight entries are one move.
        let said = "folder moved: d/ → n/ (4 files, each a deletion and a creation";
        let recover = walj(&["recover", "--color", "never"]);
        assert!(recover.contains(said), "watcher {on}: {recover}");
        let log = walj(&["log", "--color", "never"]);
        assert!(log.contains(said) && log.contains("mv d n"), "watcher {on}: {log}");
        let v: Value = serde_json::from_str(&walj(&["recover", "--json"])).unwrap();
        assert_eq!(
            v["sessions"][0]["folder_moves"],
            json!([{"command": "toolu_mv", "from": "d", "to": "n", "files": 4}]),
            "watcher {on}: {v}"
        );
        // `sessions show` names it too, text and JSON.
        let show = walj(&["sessions", "show", SESSION, "--color", "never"]);
        assert!(
            show.contains("Folder moves (1)") && show.contains(said) && show.contains("mv d n"),
            "watcher {on}: {show}"
        );
        let v: Value = serde_json::from_str(&walj(&["sessions", "show", SESSION, "--json"])).unwrap();
        assert_eq!(v["folder_moves"], json!([{"command": "toolu_mv", "from": "d", "to": "n", "files": 4}]), "{v}");
        // A dry run says which folders the revert removes and which it makes, and changes nothing.
        let dry = walj(&["revert", "--session", SESSION, "--force", "--dry-run"]);
        assert_eq!(folders_said(&dry, "it leaves empty ("), ["n", "n/e"], "watcher {on}: {dry}");
        assert_eq!(folders_said(&dry, "it needs ("), ["d", "d/e"], "watcher {on}: {dry}");
        assert_eq!(tree(w.root()), moved, "watcher {on}: a dry run changes nothing");
        let out = walj(&["revert", "--session", SESSION, "--force", "--yes"]);
        assert!(out.contains("removed the folders it left empty (n/e, n)"), "watcher {on}: {out}");
        assert_eq!(tree(w.root()), before, "watcher {on}: the folder is back, nothing left behind");
        walj(&["undo", "--force", "--yes"]);
        assert_eq!(tree(w.root()), moved, "watcher {on}: undo moves it again");
    });
}

/// The folders a dry run's lines name after `marker` ("it leaves empty (", "it needs ("), sorted.
fn folders_said(text: &str, marker: &str) -> Vec<String> {
    let mut v: Vec<String> = text
        .split(marker)
        .skip(1)
        .filter_map(|rest| rest.split(')').next())
        .flat_map(|list| list.split(", ").map(str::to_string))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// A folder moved by a command whose turn then ended (its Stop settled the entries): nothing is
/// unresolved, and `walj sessions show` (text and JSON) still says the deletions and creations
/// were one move.
#[test]
fn a_folder_move_settled_by_a_stop_is_still_named_by_sessions_show() {
    each(|on| {
        let w = session(
            &[
                (
                    "a.txt", "a
",
                ),
                (
                    "d/k.txt", "k
",
                ),
                (
                    "d/e/l.txt",
                    "l
",
                ),
            ],
            on,
            &|w| {
                sh(w.root(), "touch -d '2020-01-01' d/k.txt d/e/l.txt d/e d");
            },
        );
        std::thread::sleep(Duration::from_millis(2100));
        run(&w, "toolu_mv", "mv d n");
        w.stop();
        w.wait_reconciled();
        let walj = |args: &[&str]| {
            let out =
                crate::common::walj_at(w.root()).args(args).env("WALJ_RUNTIME_DIR", w.rt.path()).output().unwrap();
            assert!(out.status.success(), "watcher {on}: walj {args:?}: {}", String::from_utf8_lossy(&out.stderr));
            String::from_utf8_lossy(&out.stdout).into_owned()
        };
        let v: Value = serde_json::from_str(&walj(&["recover", "--json"])).unwrap();
        assert_eq!(v["unresolved"], 0, "watcher {on}: the Stop settled them: {v}");
        let show = walj(&["sessions", "show", SESSION, "--color", "never"]);
        assert!(
            show.contains("Folder moves (1)") && show.contains("folder moved: d/ → n/ (2 files"),
            "watcher {on}: {show}"
        );
        let v: Value = serde_json::from_str(&walj(&["sessions", "show", SESSION, "--json"])).unwrap();
        assert_eq!(v["folder_moves"], json!([{"command": "toolu_mv", "from": "d", "to": "n", "files": 2}]), "{v}");
    });
}

/// A `.git` *file* a command makes below the top (a gitlink, as `git worktree add` and `git
/// init --separate-git-dir` write it; `git submodule` too): an entry like any file, with the
/// watcher and without, beside the files of the new work tree. (Git's own folders, `.git/`,
/// stay out.)
#[test]
fn a_gitlink_file_a_command_makes_is_journaled() {
    each(|on| {
        let out = tempfile::tempdir().unwrap();
        let w = session(&[("a.txt", "a\n")], on, &|_| {});
        let sep = out.path().join("sep");
        let kids = run(
            &w,
            "toolu_g",
            &format!(
                "git worktree add -q wt && git init -q --separate-git-dir '{}' sub && echo s > sub/s.txt",
                sep.display()
            ),
        );
        served(&w, "toolu_g", on);
        let wt = fs::read_to_string(w.root().join("wt/.git")).unwrap();
        let sub = fs::read_to_string(w.root().join("sub/.git")).unwrap();
        assert!(wt.starts_with("gitdir: ") && sub.starts_with("gitdir: "), "{wt:?} {sub:?}");
        for (path, after) in
            [("wt/.git", blob(&wt)), ("wt/a.txt", blob("a\n")), ("sub/.git", blob(&sub)), ("sub/s.txt", blob("s\n"))]
        {
            assert!(kids.contains(&(path.to_string(), after)), "watcher {on}: {path}: {kids:?}");
        }
        assert!(kids.iter().all(|(p, _)| !p.contains(".git/")), "watcher {on}: nothing of git's own folders: {kids:?}");
        // Reverting it deletes it; the revert says what the file is to git.
        let id =
            w.lines().into_iter().find(|r| r["parent"] == json!("toolu_g") && r["path"] == json!("sub/.git")).unwrap()
                ["id"]
                .as_str()
                .unwrap()
                .to_string();
        let out = crate::common::walj_at(w.root()).args(["revert", &id, "--force", "--yes"]).output().unwrap();
        let said = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(out.status.success(), "watcher {on}: {}", String::from_utf8_lossy(&out.stderr));
        assert!(said.contains("a gitlink file"), "watcher {on}: {said}");
        assert!(!w.root().join("sub/.git").exists(), "watcher {on}");
    });
}

/// A nested repository the command removes and makes again at the same path: a new repository,
/// so its files are the command's (made, with their bytes, even where they equal the old
/// repository's, which this repository never compared), on both paths alike. Found by the
/// differential long run (seed 4647, program 769), where the oracle keyed nested repositories by
/// path and expected nothing; the oracle now keys them by their `.git` (walj was unchanged).
#[test]
fn a_nested_repository_made_again_at_its_path_is_the_commands() {
    each(|on| {
        let w = session(&[("a.txt", "a\n")], on, &|w| {
            sh(w.root(), "mkdir sub && echo old > sub/nested.txt && git -C sub init -q");
            // "There before the command": older than the margin within which a snapshot counts
            // a nested repository's `.git` as new (`NESTED_NEW_NS`, 20 ms: the kernel's coarse
            // file clock), else the Pre walks the old one and its equal file is no change.
            std::thread::sleep(std::time::Duration::from_millis(60));
        });
        let kids = run(&w, "toolu_r", "rm -rf sub && mkdir sub && echo old > sub/nested.txt && git -C sub init -q");
        served(&w, "toolu_r", on);
        assert_eq!(kids, vec![("sub/nested.txt".to_string(), blob("old\n"))], "watcher {on}");
    });
}

/// A gitlink made by a command Claude Code never finished (killed: no PostToolUse): its
/// changes are derived later by the next reader, from the Pre snapshot and a full scan, and the
/// `.git` files of a new worktree and of `git init --separate-git-dir` are entries like any
/// file there, with the watcher on at the Pre and without it. The session's every hook runs
/// under a parent that is gone when it returns (its Claude Code), so the session reads as
/// crashed; the watcher is killed before the reader looks.
#[test]
fn a_gitlink_file_a_killed_command_made_is_derived_later() {
    each(|on| {
        let out = tempfile::tempdir().unwrap();
        let w = W::new(&[("a.txt", "a\n")]);
        if !on {
            w.config("[bash]\nwatcher = false\nwatch_ms = 2000\n");
        }
        w.hook_with(&w.payload("SessionStart", ""), true);
        let watcher = on.then(|| w.wait_ready());
        w.hook_with(&w.payload("PreToolUse", "toolu_warm"), true);
        w.hook_with(&w.payload("PostToolUse", "toolu_warm"), true);
        w.hook_with(&w.payload("PreToolUse", "toolu_gk"), true);
        let sep = out.path().join("sep");
        sh(
            w.root(),
            &format!(
                "git worktree add -q --detach wt && git init -q --separate-git-dir '{}' sub && echo s > sub/s.txt",
                sep.display()
            ),
        );
        if let Some(pid) = watcher {
            kill(pid, "-9");
        }
        let said = crate::common::walj_at(w.root())
            .args(["recover", "--json"])
            .env("WALJ_RUNTIME_DIR", w.rt.path())
            .output()
            .unwrap();
        assert!(said.status.success(), "{}", String::from_utf8_lossy(&said.stderr));
        let kids = w.children("toolu_gk");
        let wt = fs::read_to_string(w.root().join("wt/.git")).unwrap();
        let sub = fs::read_to_string(w.root().join("sub/.git")).unwrap();
        for (path, after) in
            [("wt/.git", blob(&wt)), ("wt/a.txt", blob("a\n")), ("sub/.git", blob(&sub)), ("sub/s.txt", blob("s\n"))]
        {
            assert!(kids.contains(&(path.to_string(), after)), "watcher {on}: {path}: {kids:?}");
        }
        assert!(kids.iter().all(|(p, _)| !p.contains(".git/")), "watcher {on}: nothing of git's own folders: {kids:?}");
        let recover: Value = serde_json::from_slice(&said.stdout).unwrap();
        let paths: Vec<&str> =
            recover["sessions"][0]["entries"].as_array().unwrap().iter().filter_map(|e| e["path"].as_str()).collect();
        assert!(paths.contains(&"wt/.git") && paths.contains(&"sub/.git"), "watcher {on}: {recover}");
    });
}
