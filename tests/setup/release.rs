//! The release's pieces that run here: the archive layout, the shell installer (which installs
//! nothing unless the release's checksum matches), the Homebrew formula, the release workflow's
//! scripts, and the rule that no document or message names an install from a registry where
//! walj is not published.

#![allow(clippy::unwrap_used, clippy::panic)] // test code: a failed step is a failed test

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

fn walj_bin() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_walj"))
}

/// The release target the installer picks on this machine (None: no release build for it).
fn release_target() -> Option<&'static str> {
    match (std::env::consts::OS, std::env::consts::ARCH) {
        ("linux", "x86_64") => Some("x86_64-unknown-linux-musl"),
        ("linux", "aarch64") => Some("aarch64-unknown-linux-musl"),
        ("macos", "x86_64") => Some("x86_64-apple-darwin"),
        ("macos", "aarch64") => Some("aarch64-apple-darwin"),
        _ => None,
    }
}

fn run(cmd: &mut Command) -> Output {
    cmd.stdin(Stdio::null()).output().unwrap()
}

/// `scripts/release/archive.sh TARGET walj DIR` and a SHA256SUMS beside it: a release folder.
fn release_dir(dir: &Path, target: &str) -> String {
    let o = run(Command::new(repo().join("scripts/release/archive.sh")).arg(target).arg(walj_bin()).arg(dir));
    assert!(o.status.success(), "archive.sh: {o:?}");
    let archive = PathBuf::from(String::from_utf8_lossy(&o.stdout).trim());
    let name = archive.file_name().unwrap().to_string_lossy().into_owned();
    assert_eq!(name, format!("walj-{}-{target}.tar.gz", env!("CARGO_PKG_VERSION")));
    let o = run(Command::new("sha256sum").arg(&name).current_dir(dir));
    assert!(o.status.success(), "{o:?}");
    fs::write(dir.join("SHA256SUMS"), &o.stdout).unwrap();
    name
}

fn install(from: &str, prefix: &Path) -> Output {
    run(Command::new("sh")
        .arg(repo().join("scripts/release/install.sh"))
        .args(["--from", from, "--prefix"])
        .arg(prefix)
        .env("PATH", "/usr/bin:/bin"))
}

#[test]
fn installer_installs_a_release_and_nothing_when_its_checksum_differs() {
    let Some(target) = release_target() else {
        println!("SKIPPED: no release build for this platform");
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let rel = tmp.path().join("release");
    let name = release_dir(&rel, target);

    // The archive holds walj-<version>-<target>/walj and the licenses.
    let o = run(Command::new("tar").arg("tzf").arg(rel.join(&name)));
    let listing = String::from_utf8_lossy(&o.stdout);
    let top = name.trim_end_matches(".tar.gz");
    for f in ["walj", "LICENSE-MIT", "LICENSE-APACHE", "README.md"] {
        assert!(listing.lines().any(|l| l == format!("{top}/{f}")), "{f} not in {listing}");
    }

    let prefix = tmp.path().join("prefix");
    let o = install(rel.to_str().unwrap(), &prefix);
    assert!(o.status.success(), "{o:?}");
    let v = run(&mut Command::new(prefix.join("bin/walj")));
    assert!(v.status.code().is_some(), "the installed walj does not run: {v:?}");
    let v = run(Command::new(prefix.join("bin/walj")).arg("--version"));
    assert_eq!(String::from_utf8_lossy(&v.stdout).trim(), format!("walj {}", env!("CARGO_PKG_VERSION")));
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(out.contains("is not on your PATH"), "{out}");

    // A checksum that does not match: refused, nothing installed.
    let sums = fs::read_to_string(rel.join("SHA256SUMS")).unwrap();
    let wrong = format!("{}{}", if sums.starts_with('0') { "1" } else { "0" }, &sums[1..]);
    fs::write(rel.join("SHA256SUMS"), wrong).unwrap();
    let prefix2 = tmp.path().join("prefix2");
    let o = install(rel.to_str().unwrap(), &prefix2);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(err.contains("refused") && err.contains("nothing was installed"), "{err}");
    assert!(!prefix2.join("bin/walj").exists(), "installed despite the checksum");

    // A tampered archive under the right checksum line: refused too.
    fs::write(rel.join("SHA256SUMS"), &sums).unwrap();
    let mut bytes = fs::read(rel.join(&name)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    fs::write(rel.join(&name), bytes).unwrap();
    let o = install(rel.to_str().unwrap(), &prefix2);
    assert_eq!(o.status.code(), Some(1), "{o:?}");
    assert!(!prefix2.join("bin/walj").exists(), "installed a tampered archive");

    // No release for this target, plain http, and no --from: clear errors.
    fs::write(rel.join("SHA256SUMS"), "").unwrap();
    let o = install(rel.to_str().unwrap(), &prefix2);
    assert!(String::from_utf8_lossy(&o.stderr).contains(&format!("no walj build for {target}")), "{o:?}");
    let o = install("http://example.invalid/walj", &prefix2);
    assert!(String::from_utf8_lossy(&o.stderr).contains("is not https"), "{o:?}");
    let o = run(Command::new("sh").arg(repo().join("scripts/release/install.sh")).arg("--prefix").arg(&prefix2));
    assert_eq!(o.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&o.stderr).contains("--from"), "{o:?}");
    assert!(!prefix2.join("bin/walj").exists());
}

#[test]
fn brew_formula_names_each_archive_with_its_checksum() {
    let tmp = tempfile::tempdir().unwrap();
    let v = env!("CARGO_PKG_VERSION");
    let targets =
        ["aarch64-apple-darwin", "x86_64-apple-darwin", "aarch64-unknown-linux-musl", "x86_64-unknown-linux-musl"];
    let sums: String =
        targets.iter().enumerate().map(|(i, t)| format!("{:064x}  walj-{v}-{t}.tar.gz\n", i + 1)).collect();
    fs::write(tmp.path().join("SHA256SUMS"), &sums).unwrap();
    let base = format!("https://github.com/example/walj/releases/download/v{v}");
    let o = run(Command::new(repo().join("scripts/release/brew-formula.sh"))
        .args([v, &base])
        .arg(tmp.path().join("SHA256SUMS")));
    assert!(o.status.success(), "{o:?}");
    let rb = String::from_utf8_lossy(&o.stdout);
    for (i, t) in targets.iter().enumerate() {
        let url = format!("url \"{base}/walj-{v}-{t}.tar.gz\"\n      sha256 \"{:064x}\"", i + 1);
        assert!(rb.contains(&url), "{t}: {rb}");
    }
    assert!(rb.contains("homepage \"https://github.com/example/walj\""), "{rb}");
    // A release missing one archive is refused, not a formula with a hole.
    fs::write(tmp.path().join("SHA256SUMS"), sums.lines().skip(1).collect::<Vec<_>>().join("\n")).unwrap();
    let o = run(Command::new(repo().join("scripts/release/brew-formula.sh"))
        .args([v, &base])
        .arg(tmp.path().join("SHA256SUMS")));
    assert!(!o.status.success() && String::from_utf8_lossy(&o.stderr).contains("aarch64-apple-darwin"), "{o:?}");
}

/// The release workflow runs the scripts CI runs, and every script it names exists.
#[test]
fn release_workflow_names_scripts_that_exist_and_runs_ci() {
    let wf = fs::read_to_string(repo().join(".github/workflows/release.yml")).unwrap();
    assert!(wf.contains("run: .ci/run"), "the release does not run CI's command");
    let mut named = 0;
    for word in wf.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
        let word = word.trim_end_matches([';', ')', '.', ',', ':']);
        if (word.starts_with("scripts/") || word.starts_with(".ci/")) && !word.contains('$') {
            let p = repo().join(word);
            assert!(p.is_file(), "the workflow names {word}, which does not exist");
            let mode = std::os::unix::fs::PermissionsExt::mode(&fs::metadata(&p).unwrap().permissions());
            assert!(mode & 0o111 != 0 || word.ends_with(".ps1"), "{word} is not executable");
            named += 1;
        }
    }
    assert!(named >= 6, "the workflow names {named} scripts");
    for script in ["scripts/npm-pack.sh", "scripts/plugin-pack.sh", "scripts/release/brew-formula.sh"] {
        assert!(wf.contains(script), "the workflow does not run {script}");
    }
}

/// Install commands for registries walj is in. Until a package is published there, no
/// document, launcher or message may tell a user to install it that way (they would get a
/// 404). Add a registry's line here in the change that publishes it.
const PUBLISHED: &[&str] = &[];

#[test]
fn no_document_or_message_names_an_install_from_an_unpublished_registry() {
    let commands =
        ["npm install -g walj", "npm i -g walj", "cargo install walj", "cargo binstall walj", "brew install walj"];
    let mut files = vec![repo().join("README.md"), repo().join("npm/walj/bin/walj"), repo().join("npm/walj/README.md")];
    for dir in ["docs", "plugin", "src", "npm", "scripts"] {
        let mut stack = vec![repo().join(dir)];
        while let Some(d) = stack.pop() {
            for e in fs::read_dir(&d).unwrap() {
                let p = e.unwrap().path();
                if p.is_dir() {
                    stack.push(p);
                } else if p
                    .extension()
                    .is_none_or(|x| ["md", "rs", "sh", "json", "ps1"].contains(&x.to_str().unwrap_or("")))
                {
                    files.push(p);
                }
            }
        }
    }
    let mut found = Vec::new();
    for f in &files {
        let Ok(text) = fs::read_to_string(f) else { continue };
        for c in commands.iter().filter(|c| !PUBLISHED.contains(c)) {
            for (i, line) in text.lines().enumerate() {
                // `npx walj install` is named where walj refuses it.
                let refused = line.contains("npx walj install") && (line.contains("refuse") || line.contains("Do not"));
                let rest = line.split(c).nth(1);
                if let Some(rest) = rest
                    && !rest.starts_with(|ch: char| ch.is_alphanumeric() || ch == '-')
                    && !refused
                {
                    found.push(format!("{}:{}: {}", f.strip_prefix(repo()).unwrap().display(), i + 1, line.trim()));
                }
            }
        }
    }
    assert!(found.is_empty(), "installs from registries where walj is not published:\n{}", found.join("\n"));
}
