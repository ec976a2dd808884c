//! `walj doctor`: whether `.walj/` is walj's own (`crate::project::trust`), links planted where
//! walj keeps its own files, and which keys of a `config.toml` git tracks are ignored. A refused folder is an error with the fix; doctor
//! then reads nothing else from it.

use super::{DoctorFinding, Level, check};
use crate::project::Project;
use crate::project::trust::{self, Standing};

/// The findings, and whether the rest of doctor may read `.walj/`.
pub(crate) fn check(project: &Project) -> (Vec<DoctorFinding>, bool) {
    let dir = project.dir.display();
    match trust::check(project) {
        Standing::Absent => {
            (vec![DoctorFinding::new(Level::Ok, check::WALJ_DIR, format!("{dir}: not made yet (walj makes it)"))], true)
        }
        Standing::Foreign(why) => {
            let mut f = DoctorFinding::new(
                Level::Error,
                check::WALJ_DIR,
                format!("{why}; walj reads nothing from it and writes nothing through it: nothing is journaled here"),
            );
            f.details = vec![format!("fix: {}", why.fix())];
            (vec![f], false)
        }
        Standing::Own => {
            let marker = trust::state_dir(&project.root).map(|s| s.join(trust::MARKER));
            let mut out = vec![DoctorFinding::new(
                Level::Ok,
                check::WALJ_DIR,
                match marker {
                    Some(m) => format!("{dir}: walj's own (marker {})", m.display()),
                    None => format!("{dir}: walj's own (no state folder to keep a marker in)"),
                },
            )];
            out.extend(links(project));
            let path = project.config_path();
            if trust::config_is_tracked(&path) {
                let ignored =
                    crate::config::Config::parse_as_written(&path).map(|c| c.unsafe_keys()).unwrap_or_default();
                let (level, what) = if ignored.is_empty() {
                    (Level::Info, "only its safe keys count (it sets no other)".to_string())
                } else {
                    (Level::Warn, format!("these keys are ignored: {}", ignored.join(", ")))
                };
                let mut f = DoctorFinding::new(
                    level,
                    check::WALJ_DIR,
                    format!("{} is tracked by git, so anyone's: {what}", path.display()),
                );
                f.details = vec![
                    "set them in an untracked config: `git rm --cached .walj/config.toml` (docs/security.md)"
                        .to_string(),
                ];
                out.push(f);
            }
            (out, true)
        }
    }
}

/// Links in `.walj/` and in its folders, where walj keeps only files and folders of its own
/// (the journal, the observer file, the Bash cache, transcript copies…): another program
/// planted them, and walj never writes through one (`O_NOFOLLOW`, a linked folder refused), so
/// what would have gone there is not written. One warning, naming each.
fn links(project: &Project) -> Option<DoctorFinding> {
    const SHOWN: usize = 20;
    let mut found = Vec::new();
    let walk = |dir: &std::path::Path, found: &mut Vec<std::path::PathBuf>, sub: &mut Vec<std::path::PathBuf>| {
        let Ok(rd) = std::fs::read_dir(dir) else { return };
        for e in rd.flatten() {
            match e.file_type() {
                Ok(t) if t.is_symlink() => found.push(e.path()),
                Ok(t) if t.is_dir() => sub.push(e.path()),
                _ => {}
            }
        }
    };
    let mut subs = Vec::new();
    walk(&project.dir, &mut found, &mut subs);
    // One level down (`bash/`, `transcripts/`, …); the store's fan-out folders hold only objects.
    for d in subs.iter().filter(|d| d.file_name().is_none_or(|n| n != "store")) {
        walk(d, &mut found, &mut Vec::new());
    }
    if found.is_empty() {
        return None;
    }
    found.sort();
    let mut f = DoctorFinding::new(
        Level::Warn,
        check::WALJ_DIR,
        format!(
            "{} link(s) in {} where walj keeps its own files: never written through, so what walj would keep there is not kept",
            found.len(),
            project.dir.display()
        ),
    );
    f.details = found
        .iter()
        .take(SHOWN)
        .map(|p| {
            let to = std::fs::read_link(p).map(|t| t.display().to_string()).unwrap_or_else(|_| "?".into());
            format!(
                "link: {} -> {}",
                crate::present::text::shown(&p.display().to_string()),
                crate::present::text::shown(&to)
            )
        })
        .collect();
    if found.len() > SHOWN {
        f.details.push(format!("and {} more", found.len() - SHOWN));
    }
    f.details.push("fix: remove them (walj makes its own files again where it needs them)".into());
    Some(f)
}
