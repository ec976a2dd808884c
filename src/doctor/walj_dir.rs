//! `walj doctor`: whether `.walj/` is walj's own (`crate::project::trust`), and which keys of a
//! `config.toml` git tracks are ignored. A refused folder is an error with the fix; doctor
//! then reads nothing else from it.

use super::{DoctorFinding, Level, check};
use crate::project::Project;
use crate::project::trust::{self, Standing};

/// The findings, and whether the rest of doctor may read `.walj/`.
pub fn check(project: &Project) -> (Vec<DoctorFinding>, bool) {
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
