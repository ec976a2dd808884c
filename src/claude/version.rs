//! The version of the Claude Code on PATH (`claude --version`), for `walj install` to choose the
//! hook form it honours ([`super::settings::HookForm::for_version`]). Never used by the hook.
//!
//! `claude` is looked up on PATH as the shell would (first executable `claude`); it is run with
//! stdin closed and at most [`TIMEOUT`] to answer, then killed. `None` when there is no `claude`,
//! it fails, or says nothing that holds a version.

use std::io::Read;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// How long `claude --version` may take.
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// What `claude --version` said, and which `claude` said it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Installed {
    pub program: PathBuf,
    /// The first line of its output ("2.1.328 (Claude Code)").
    pub text: String,
}

/// The first executable `claude` on PATH.
pub(crate) fn on_path() -> Option<PathBuf> {
    let name = if cfg!(windows) { "claude.exe" } else { "claude" };
    let paths = std::env::var_os("PATH")?;
    std::env::split_paths(&paths).map(|d| d.join(name)).find(|p| is_executable(p))
}

fn is_executable(p: &std::path::Path) -> bool {
    let Ok(meta) = std::fs::metadata(p) else { return false };
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        meta.is_file() && meta.permissions().mode() & 0o111 != 0
    }
    #[cfg(not(unix))]
    {
        meta.is_file()
    }
}

/// Runs `claude --version` (the one on PATH); `None` when there is none or it gives no answer
/// in time.
pub(crate) fn installed() -> Option<Installed> {
    let program = on_path()?;
    let mut child = Command::new(&program)
        .arg("--version")
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .ok()?;
    let started = Instant::now();
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if started.elapsed() < TIMEOUT => std::thread::sleep(Duration::from_millis(10)),
            _ => {
                let _ = child.kill();
                let _ = child.wait();
                return None;
            }
        }
    }
    let mut out = String::new();
    child.stdout.take()?.take(4096).read_to_string(&mut out).ok()?;
    let text = out.lines().map(str::trim).find(|l| !l.is_empty())?.to_string();
    Some(Installed { program, text })
}
