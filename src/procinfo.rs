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

    /// When `pid` started: boot time (`btime` of /proc/stat) plus its start ticks. Linux's
    /// user-space tick is 100 Hz on every architecture walj runs on.
    pub fn started_at(pid: u32) -> Option<std::time::SystemTime> {
        const USER_HZ: u64 = 100;
        let (_, _, ticks) = stat(pid)?;
        let text = std::fs::read_to_string("/proc/stat").ok()?;
        let btime: u64 = text.lines().find_map(|l| l.strip_prefix("btime "))?.trim().parse().ok()?;
        let ms = btime.checked_mul(1000)?.checked_add(ticks.checked_mul(1000)? / USER_HZ)?;
        std::time::UNIX_EPOCH.checked_add(std::time::Duration::from_millis(ms))
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
    pub fn started_at(_pid: u32) -> Option<std::time::SystemTime> {
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

/// When process `pid` started (to second precision or better); `None` where the platform
/// cannot tell or the process is gone.
pub fn started_at(pid: u32) -> Option<std::time::SystemTime> {
    imp::started_at(pid)
}

/// Running processes as (pid, command line, cwd); `None` where the platform cannot tell.
pub fn processes() -> Option<ProcTable> {
    imp::processes()
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

    #[test]
    fn a_new_process_started_now() {
        let mut child = std::process::Command::new("sleep").arg("5").spawn().unwrap();
        let at = started_at(child.id()).unwrap();
        let now = std::time::SystemTime::now();
        let off = now.duration_since(at).unwrap_or_else(|e| e.duration());
        let _ = child.kill();
        let _ = child.wait();
        assert!(off < std::time::Duration::from_secs(3), "started {off:?} away from now");
    }
}
