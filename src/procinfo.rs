//! The Claude Code process behind a hook, and whether it still runs (DESIGN §4).
//!
//! The hook runs as `sh -c "walj hook"` under Claude Code, so the Claude Code process is
//! the nearest ancestor that is not a shell. Its start time (clock ticks since boot,
//! field 22 of `/proc/<pid>/stat`) is recorded with the pid so a reused pid is not
//! mistaken for the session still running. Linux reads /proc; elsewhere the answer is
//! `unknown`.

/// Running processes: (pid, command line, cwd).
pub type ProcTable = Vec<(u32, String, Option<std::path::PathBuf>)>;

/// A process identity: pid plus start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ProcRef {
    pub pid: u32,
    pub start: u64,
}

/// Whether a recorded process still runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Liveness {
    Running,
    Gone,
    Unknown,
}

const SHELLS: &[&str] = &["sh", "bash", "dash", "zsh", "fish", "ksh", "mksh", "ash", "busybox", "env", "nohup"];

#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    /// (comm, ppid, start ticks) from /proc/<pid>/stat.
    pub fn stat(pid: u32) -> Option<(String, u32, u64)> {
        // One read into a fixed buffer: `read_to_string` grows from 32 bytes, six reads here.
        let mut buf = [0u8; 1024];
        let n = std::io::Read::read(&mut std::fs::File::open(format!("/proc/{pid}/stat")).ok()?, &mut buf).ok()?;
        let text = std::str::from_utf8(&buf[..n]).ok()?;
        // comm is in parentheses and may contain spaces or parentheses: use the last ')'.
        let open = text.find('(')?;
        let close = text.rfind(')')?;
        let comm = text.get(open + 1..close)?.to_string();
        let rest: Vec<&str> = text.get(close + 2..)?.split(' ').collect();
        // rest[0] is field 3 (state); ppid is field 4, starttime field 22.
        let ppid = rest.get(1)?.parse().ok()?;
        let start = rest.get(19)?.parse().ok()?;
        Some((comm, ppid, start))
    }

    pub fn claude_process() -> Option<ProcRef> {
        let mut pid = std::os::unix::process::parent_id();
        for _ in 0..16 {
            if pid <= 1 {
                return None;
            }
            let (comm, ppid, start) = stat(pid)?;
            if !SHELLS.contains(&comm.as_str()) {
                return Some(ProcRef { pid, start });
            }
            pid = ppid;
        }
        None
    }

    pub fn liveness(p: ProcRef) -> Liveness {
        match stat(p.pid) {
            Some((_, _, start)) if start == p.start => Liveness::Running,
            Some(_) => Liveness::Gone, // pid reused by another process
            None => {
                if std::path::Path::new("/proc/self/stat").exists() {
                    Liveness::Gone
                } else {
                    Liveness::Unknown
                }
            }
        }
    }

    /// This process's start time (clock ticks since boot).
    pub fn own_start() -> Option<u64> {
        stat(std::process::id()).map(|(_, _, start)| start)
    }

    /// Processes started at or after `since` (clock ticks since boot) by a Claude Code tool
    /// call (`CLAUDECODE=1` in their environment), working inside `root`, that no running
    /// process in `live` (a live Claude Code) nor this process has started.
    pub fn started_by_tool_since(since: u64, root: &std::path::Path, live: &[ProcRef]) -> Option<Vec<u32>> {
        let me = std::process::id();
        let mut own_line = Vec::new();
        let mut pid = me;
        for _ in 0..64 {
            if pid <= 1 {
                break;
            }
            own_line.push(pid);
            match stat(pid) {
                Some((_, ppid, _)) => pid = ppid,
                None => break,
            }
        }
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            if own_line.contains(&pid) {
                continue;
            }
            let Some((_, ppid, start)) = stat(pid) else { continue };
            if start < since {
                continue;
            }
            let in_root = std::fs::read_link(format!("/proc/{pid}/cwd")).is_ok_and(|c| c.starts_with(root));
            if !in_root || !has_marker(pid) {
                continue;
            }
            // Started (directly or not) by a running Claude Code, or by this process: not orphaned.
            let mut up = ppid;
            let mut owned = false;
            for _ in 0..64 {
                if up <= 1 {
                    break;
                }
                if own_line.contains(&up) {
                    owned = true;
                    break;
                }
                let Some((_, next, ustart)) = stat(up) else { break };
                if live.iter().any(|l| l.pid == up && l.start == ustart) {
                    owned = true;
                    break;
                }
                up = next;
            }
            if !owned {
                out.push(pid);
            }
        }
        Some(out)
    }

    fn has_marker(pid: u32) -> bool {
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
        let want = format!("{}=1", crate::claude::env::MARKER);
        env.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
    }

    /// Every running process's (pid, cmdline, cwd), for matching background commands.
    pub fn processes() -> Option<ProcTable> {
        let mut out = Vec::new();
        for e in std::fs::read_dir("/proc").ok()?.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
            let cmd = raw
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ");
            let cwd = std::fs::read_link(format!("/proc/{pid}/cwd")).ok();
            out.push((pid, cmd, cwd));
        }
        Some(out)
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use super::*;
    pub fn claude_process() -> Option<ProcRef> {
        None
    }
    pub fn liveness(_p: ProcRef) -> Liveness {
        Liveness::Unknown
    }
    pub fn processes() -> Option<ProcTable> {
        None
    }
    pub fn own_start() -> Option<u64> {
        None
    }
    pub fn started_by_tool_since(_since: u64, _root: &std::path::Path, _live: &[ProcRef]) -> Option<Vec<u32>> {
        None
    }
}

/// The Claude Code process running this hook (nearest non-shell ancestor).
pub fn claude_process() -> Option<ProcRef> {
    imp::claude_process()
}

/// Whether `p` still runs (the same pid with the same start time).
pub fn liveness(p: ProcRef) -> Liveness {
    imp::liveness(p)
}

/// Running processes as (pid, command line, cwd); `None` where the platform cannot tell.
pub fn processes() -> Option<ProcTable> {
    imp::processes()
}

/// This process's start time in clock ticks since boot (`None` where unknown).
pub fn own_start() -> Option<u64> {
    imp::own_start()
}

/// Orphans of Claude Code tool calls: processes started at or after `since` (clock ticks,
/// see [`own_start`]) with Claude Code's environment marker, working inside `root`, not
/// descending from a running Claude Code in `live` nor from this process. `None` where the
/// platform cannot tell.
pub fn started_by_tool_since(since: u64, root: &std::path::Path, live: &[ProcRef]) -> Option<Vec<u32>> {
    imp::started_by_tool_since(since, root, live)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn own_process_is_running() {
        let me = std::process::id();
        let (_, _, start) = imp::stat(me).unwrap();
        assert_eq!(liveness(ProcRef { pid: me, start }), Liveness::Running);
        assert_eq!(liveness(ProcRef { pid: me, start: start + 1 }), Liveness::Gone);
        assert_eq!(liveness(ProcRef { pid: u32::MAX - 1, start }), Liveness::Gone);
    }
}
