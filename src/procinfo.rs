//! The Claude Code process behind a hook, and whether it still runs (DESIGN §4).
//!
//! The hook runs as `sh -c "walj hook"` under Claude Code, so the Claude Code process is
//! the nearest ancestor that is not a shell. Its start time is recorded with the pid so a
//! reused pid is not mistaken for the session still running. The start time is the
//! platform's own, compared only on the machine that recorded it:
//! - Linux: clock ticks since boot, field 22 of `/proc/<pid>/stat`;
//! - macOS: microseconds since the epoch, from `proc_pidinfo(PROC_PIDTBSDINFO)` (libc);
//! - Windows: the creation time (`GetProcessTimes`, 100 ns since 1601), the parents from a
//!   ToolHelp snapshot (kernel32, declared here: no extra crate).
//!
//! Elsewhere the answer is `unknown`. Only Linux is tested: see the README's Portability.

/// One running process, as far as the platform tells (for matching background commands).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct ProcEntry {
    pub pid: u32,
    /// The parent process.
    pub ppid: Option<u32>,
    /// The arguments joined by spaces.
    pub cmdline: String,
    pub cwd: Option<std::path::PathBuf>,
    /// When it started.
    pub started: Option<std::time::SystemTime>,
    /// `CLAUDE_CODE_SESSION_ID` in its environment: Claude Code (2.1.x) sets it for every
    /// process its Bash tool starts, and children inherit it (readable for the user's own
    /// processes only).
    pub claude_session: Option<String>,
}

/// Running processes.
pub(crate) type ProcTable = Vec<ProcEntry>;

/// The environment variable Claude Code sets to the session id in its tools' processes.
pub(crate) const SESSION_ENV: &str = "CLAUDE_CODE_SESSION_ID";

/// A process identity: pid plus start time.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
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

const SHELLS: &[&str] = &[
    "sh",
    "bash",
    "dash",
    "zsh",
    "fish",
    "ksh",
    "mksh",
    "ash",
    "busybox",
    "env",
    "nohup",
    "cmd",
    "powershell",
    "pwsh",
];

/// Whether a process name is a shell (or a launcher) between Claude Code and the hook: any
/// case, without Windows' `.exe`.
fn is_shell(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    let name = name.strip_suffix(".exe").unwrap_or(&name);
    SHELLS.contains(&name)
}

/// Whether a program name is Node.js (any case, without Windows' `.exe`).
fn is_node(name: &str) -> bool {
    let name = name.to_ascii_lowercase();
    matches!(name.strip_suffix(".exe").unwrap_or(&name), "node" | "nodejs")
}

/// One process on the way up from the hook, as the walk sees it.
#[derive(Debug, Clone, Default)]
struct Hop {
    /// Its name as the system keeps it (Linux's `comm`: a script's process is named after the
    /// script, `walj` for the plugin launcher, whatever its interpreter).
    name: String,
    /// The file name of the program it runs, where the platform tells (Linux: `/proc/<pid>/exe`;
    /// for a script, its interpreter).
    exe: Option<String>,
    /// Its arguments, read only for a Node.js process (`None` where unread or unreadable).
    args: Option<Vec<String>>,
    ppid: u32,
    start: u64,
}

/// Whether an argument list is npm's way of running walj's npm package: its launcher by path
/// (`…/node_modules/walj/bin/walj`, `node_modules/.bin/walj`), or `npx walj …` / `npm exec walj …`
/// (npm's own scripts, then `walj` or `walj@<version>` as the package).
fn runs_walj_package(args: &[String]) -> bool {
    let by_path = args.iter().any(|a| {
        let a = a.replace('\\', "/");
        a.ends_with("/walj/bin/walj") || a.ends_with("/.bin/walj") || a.ends_with("/walj/bin/walj.js")
    });
    let npm = args.iter().position(|a| {
        let a = a.replace('\\', "/");
        let file = a.rsplit('/').next().unwrap_or(&a);
        matches!(file, "npx-cli.js" | "npm-cli.js" | "npx" | "npm")
    });
    let package = |a: &String| a == "walj" || a.starts_with("walj@");
    by_path || npm.is_some_and(|i| args.iter().skip(i + 1).any(package))
}

/// Whether the hook's ancestor `h` only stands between Claude Code (or another agent) and walj,
/// by what it runs, not by its name alone: a shell (`sh -c`, or a shell running a launcher
/// script such as the marketplace plugin's `bin/walj`, whose process is named `walj`), or
/// Node.js running walj's npm package (npx). Node.js running anything else (Claude Code's own
/// `cli.js`) is the agent.
fn is_intermediary(h: &Hop) -> bool {
    let program = h.exe.as_deref().unwrap_or(&h.name);
    is_shell(program) || is_node(program) && h.args.as_deref().is_some_and(runs_walj_package)
}

/// The nearest ancestor that is not an intermediary ([`is_intermediary`]), walking up from
/// `parent` with `hop` (what the platform tells of a process): the process that ran the
/// hook. An ancestor that started after the process below it is a reused pid (its real
/// parent is gone): `None`.
fn nearest_non_shell(parent: u32, hop: impl Fn(u32) -> Option<Hop>) -> Option<ProcRef> {
    let mut pid = parent;
    let mut below: Option<u64> = None;
    for _ in 0..16 {
        if pid <= 1 {
            return None;
        }
        let h = hop(pid)?;
        if below.is_some_and(|b| h.start > b) {
            return None;
        }
        if !is_intermediary(&h) {
            return Some(ProcRef { pid, start: h.start });
        }
        below = Some(h.start);
        pid = h.ppid;
    }
    None
}

/// A [`Hop`] known by its name alone (platforms that tell no more).
#[cfg(any(target_os = "macos", test))]
fn named_hop((name, ppid, start): (String, u32, u64)) -> Hop {
    Hop { name, exe: None, args: None, ppid, start }
}

/// Liveness from what the platform found for a recorded process: its start time now, or
/// `Err(gone)` when it could not be read (`gone`: the platform says no such process).
fn liveness_of(p: ProcRef, found: Result<u64, bool>) -> Liveness {
    match found {
        Ok(start) if start == p.start => Liveness::Running,
        Ok(_) => Liveness::Gone, // pid reused by another process
        Err(true) => Liveness::Gone,
        Err(false) => Liveness::Unknown,
    }
}

#[cfg(target_os = "linux")]
mod imp {
    use super::*;

    /// (comm, ppid, start ticks) from /proc/<pid>/stat.
    pub(crate) fn stat(pid: u32) -> Option<(String, u32, u64)> {
        stat_with_state(pid).map(|(comm, _, ppid, start)| (comm, ppid, start))
    }

    /// (comm, state, ppid, start ticks) from /proc/<pid>/stat.
    fn stat_with_state(pid: u32) -> Option<(String, char, u32, u64)> {
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
        let state = rest.first()?.chars().next()?;
        let ppid = rest.get(1)?.parse().ok()?;
        let start = rest.get(19)?.parse().ok()?;
        Some((comm, state, ppid, start))
    }

    /// What the walk needs of a process: its stat, the program it runs (`/proc/<pid>/exe`,
    /// readable for the user's own processes) and, for Node.js, its arguments.
    pub(super) fn hop(pid: u32) -> Option<Hop> {
        let (name, ppid, start) = stat(pid)?;
        let exe = std::fs::read_link(format!("/proc/{pid}/exe"))
            .ok()
            .and_then(|p| p.file_name().map(|f| f.to_string_lossy().into_owned()))
            // A deleted or replaced program: "node (deleted)".
            .map(|f| f.strip_suffix(" (deleted)").map(str::to_string).unwrap_or(f));
        let args = exe.as_deref().filter(|e| is_node(e)).and_then(|_| {
            let raw = std::fs::read(format!("/proc/{pid}/cmdline")).ok()?;
            Some(
                raw.split(|&b| b == 0)
                    .filter(|a| !a.is_empty())
                    .map(|a| String::from_utf8_lossy(a).into_owned())
                    .collect(),
            )
        });
        Some(Hop { name, exe, args, ppid, start })
    }

    pub(crate) fn claude_process() -> Option<ProcRef> {
        nearest_non_shell(std::os::unix::process::parent_id(), hop)
    }

    pub(crate) fn liveness(p: ProcRef) -> Liveness {
        // A zombie (killed, not yet reaped by its parent) or a dying process has ended: it
        // keeps its /proc entry only until it is waited for, which a slow or dead parent
        // (a container's init that does not reap) may put off for seconds or for good.
        let found = stat_with_state(p.pid).filter(|&(_, state, _, _)| !matches!(state, 'Z' | 'X'));
        let found = found.map(|(_, _, _, start)| start);
        liveness_of(p, found.ok_or_else(|| std::path::Path::new("/proc/self/stat").exists()))
    }

    /// This process's start time (clock ticks since boot).
    pub(crate) fn own_start() -> Option<u64> {
        stat(std::process::id()).map(|(_, _, start)| start)
    }

    /// Processes started at or after `since` (clock ticks since boot) by a Claude Code tool
    /// call (`marker=1` in their environment), working inside `root`, that no running
    /// process in `live` (a live Claude Code) nor this process has started.
    pub(crate) fn started_by_tool_since(
        since: u64,
        root: &std::path::Path,
        session: &str,
        live: &[ProcRef],
        marker: &str,
    ) -> Option<Vec<u32>> {
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
            if !in_root || !has_marker(pid, marker) {
                continue;
            }
            // Claude Code (2.1.328) names the session in its tools' environment: another's is not it.
            if claude_session(pid).is_some_and(|s| s != session) {
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

    fn has_marker(pid: u32, marker: &str) -> bool {
        let Ok(env) = std::fs::read(format!("/proc/{pid}/environ")) else { return false };
        let want = format!("{marker}=1");
        env.split(|&b| b == 0).any(|kv| kv == want.as_bytes())
    }

    /// When the system booted: now minus `/proc/uptime` (to 10 ms; `btime` of /proc/stat is
    /// whole seconds, cut, so up to a second early).
    pub(crate) fn boot_time() -> Option<std::time::SystemTime> {
        let text = std::fs::read_to_string("/proc/uptime").ok()?;
        let up: f64 = text.split_whitespace().next()?.parse().ok()?;
        std::time::SystemTime::now().checked_sub(std::time::Duration::try_from_secs_f64(up).ok()?)
    }

    /// A start time in clock ticks since boot as wall-clock time. Linux's user-space tick is
    /// 100 Hz on every architecture walj runs on.
    fn ticks_to_time(boot: std::time::SystemTime, ticks: u64) -> Option<std::time::SystemTime> {
        const USER_HZ: u64 = 100;
        boot.checked_add(std::time::Duration::from_millis(ticks.checked_mul(1000)? / USER_HZ))
    }

    /// `CLAUDE_CODE_SESSION_ID` of a process's environment (its initial one).
    fn claude_session(pid: u32) -> Option<String> {
        let env = std::fs::read(format!("/proc/{pid}/environ")).ok()?;
        let prefix = format!("{SESSION_ENV}=");
        env.split(|&b| b == 0)
            .find_map(|kv| kv.strip_prefix(prefix.as_bytes()))
            .map(|v| String::from_utf8_lossy(v).into_owned())
            .filter(|v| !v.is_empty())
    }

    /// Every running process, from /proc; `ps` where /proc cannot be read.
    pub(crate) fn processes() -> Option<ProcTable> {
        let Ok(dir) = std::fs::read_dir("/proc") else { return super::processes_via_ps() };
        let btime = boot_time();
        let mut out = Vec::new();
        for e in dir.flatten() {
            let Ok(pid) = e.file_name().to_string_lossy().parse::<u32>() else { continue };
            let Ok(raw) = std::fs::read(format!("/proc/{pid}/cmdline")) else { continue };
            let cmdline = raw
                .split(|&b| b == 0)
                .filter(|s| !s.is_empty())
                .map(|s| String::from_utf8_lossy(s).into_owned())
                .collect::<Vec<_>>()
                .join(" ");
            if cmdline.is_empty() {
                continue; // a kernel thread or a zombie
            }
            let st = stat(pid);
            out.push(ProcEntry {
                pid,
                ppid: st.as_ref().map(|(_, ppid, _)| *ppid),
                cwd: std::fs::read_link(format!("/proc/{pid}/cwd")).ok(),
                started: btime.zip(st).and_then(|(b, (_, _, ticks))| ticks_to_time(b, ticks)),
                claude_session: claude_session(pid),
                cmdline,
            });
        }
        Some(out)
    }
}

/// What only Linux's /proc tells: the process table of other systems comes from `ps`, and
/// processes started by a tool call are not looked for.
#[cfg(not(target_os = "linux"))]
mod other {
    use super::*;
    /// Off Linux, `ps` lists the processes (no working folder, no environment).
    pub(crate) fn processes() -> Option<ProcTable> {
        super::processes_via_ps()
    }
    pub(crate) fn own_start() -> Option<u64> {
        None
    }
    pub(crate) fn boot_time() -> Option<std::time::SystemTime> {
        None
    }
    pub(crate) fn started_by_tool_since(
        _since: u64,
        _root: &std::path::Path,
        _session: &str,
        _live: &[ProcRef],
        _marker: &str,
    ) -> Option<Vec<u32>> {
        None
    }
}

#[cfg(target_os = "macos")]
#[allow(unsafe_code)]
mod imp {
    pub(crate) use super::other::{boot_time, own_start, processes, started_by_tool_since};
    use super::*;

    /// (name, parent, start in microseconds since the epoch); `Err(gone)` when unreadable.
    fn bsd(pid: u32) -> Result<(String, u32, u64), bool> {
        let mut info = std::mem::MaybeUninit::<libc::proc_bsdinfo>::zeroed();
        let size = std::mem::size_of::<libc::proc_bsdinfo>() as libc::c_int;
        let pid_c = libc::c_int::try_from(pid).map_err(|_| true)?;
        // SAFETY: the buffer is a zeroed proc_bsdinfo of the size given.
        let n = unsafe { libc::proc_pidinfo(pid_c, libc::PROC_PIDTBSDINFO, 0, info.as_mut_ptr().cast(), size) };
        if n != size {
            // No such process (ESRCH), or not ours to read (EPERM: it exists).
            // SAFETY: kill with signal 0 only checks the pid.
            let exists = unsafe { libc::kill(pid_c, 0) } == 0
                || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM);
            return Err(!exists);
        }
        // SAFETY: proc_pidinfo filled all `size` bytes.
        let info = unsafe { info.assume_init() };
        let name: Vec<u8> = info.pbi_comm.iter().take_while(|&&c| c != 0).map(|&c| c as u8).collect();
        let start = info.pbi_start_tvsec.saturating_mul(1_000_000).saturating_add(info.pbi_start_tvusec);
        Ok((String::from_utf8_lossy(&name).into_owned(), info.pbi_ppid, start))
    }

    pub(crate) fn claude_process() -> Option<ProcRef> {
        nearest_non_shell(std::os::unix::process::parent_id(), |pid| bsd(pid).ok().map(named_hop))
    }

    pub(crate) fn liveness(p: ProcRef) -> Liveness {
        liveness_of(p, bsd(p.pid).map(|(_, _, start)| start))
    }
}

#[cfg(windows)]
#[allow(unsafe_code)]
mod imp {
    pub(crate) use super::other::{boot_time, own_start, processes, started_by_tool_since};
    use super::*;

    use std::ffi::c_void;

    type Handle = *mut c_void;

    #[repr(C)]
    #[derive(Default)]
    struct FileTime {
        low: u32,
        high: u32,
    }

    /// PROCESSENTRY32W.
    #[repr(C)]
    struct ProcessEntry {
        size: u32,
        usage: u32,
        pid: u32,
        heap: usize,
        module: u32,
        threads: u32,
        ppid: u32,
        priority: i32,
        flags: u32,
        exe: [u16; 260],
    }

    const TH32CS_SNAPPROCESS: u32 = 0x2;
    const PROCESS_QUERY_LIMITED_INFORMATION: u32 = 0x1000;
    const STILL_ACTIVE: u32 = 259;
    const ERROR_INVALID_PARAMETER: i32 = 87;

    #[link(name = "kernel32")]
    unsafe extern "system" {
        fn CreateToolhelp32Snapshot(flags: u32, pid: u32) -> Handle;
        fn Process32FirstW(snapshot: Handle, entry: *mut ProcessEntry) -> i32;
        fn Process32NextW(snapshot: Handle, entry: *mut ProcessEntry) -> i32;
        fn OpenProcess(access: u32, inherit: i32, pid: u32) -> Handle;
        fn GetProcessTimes(
            process: Handle,
            creation: *mut FileTime,
            exit: *mut FileTime,
            kernel: *mut FileTime,
            user: *mut FileTime,
        ) -> i32;
        fn GetExitCodeProcess(process: Handle, code: *mut u32) -> i32;
        fn CloseHandle(handle: Handle) -> i32;
    }

    /// Every process: pid → (executable name, parent pid), from one ToolHelp snapshot.
    fn table() -> Option<std::collections::HashMap<u32, (String, u32)>> {
        // SAFETY: plain Win32 calls; the entry's size is set as ToolHelp requires.
        unsafe {
            let snap = CreateToolhelp32Snapshot(TH32CS_SNAPPROCESS, 0);
            if snap.is_null() || snap as isize == -1 {
                return None;
            }
            let mut out = std::collections::HashMap::new();
            let mut e: ProcessEntry = std::mem::zeroed();
            e.size = std::mem::size_of::<ProcessEntry>() as u32;
            let mut ok = Process32FirstW(snap, &mut e);
            while ok != 0 {
                let len = e.exe.iter().position(|&c| c == 0).unwrap_or(e.exe.len());
                out.insert(e.pid, (String::from_utf16_lossy(&e.exe[..len]), e.ppid));
                ok = Process32NextW(snap, &mut e);
            }
            CloseHandle(snap);
            Some(out)
        }
    }

    /// The creation time of a running process (100 ns since 1601); `Err(gone)` when it
    /// cannot be read (`gone`: no such process, or it has exited).
    fn created(pid: u32) -> Result<u64, bool> {
        // SAFETY: the handle is checked and closed; the out-pointers are valid locals.
        unsafe {
            let h = OpenProcess(PROCESS_QUERY_LIMITED_INFORMATION, 0, pid);
            if h.is_null() {
                return Err(std::io::Error::last_os_error().raw_os_error() == Some(ERROR_INVALID_PARAMETER));
            }
            let (mut c, mut x, mut k, mut u) =
                (FileTime::default(), FileTime::default(), FileTime::default(), FileTime::default());
            let mut code = 0u32;
            let times = GetProcessTimes(h, &mut c, &mut x, &mut k, &mut u) != 0;
            let exited = GetExitCodeProcess(h, &mut code) != 0 && code != STILL_ACTIVE;
            CloseHandle(h);
            if exited {
                return Err(true);
            }
            if !times {
                return Err(false);
            }
            Ok((u64::from(c.high) << 32) | u64::from(c.low))
        }
    }

    pub(crate) fn claude_process() -> Option<ProcRef> {
        let table = table()?;
        let parent = table.get(&std::process::id())?.1;
        nearest_non_shell(parent, |pid| {
            let (exe, ppid) = table.get(&pid)?;
            Some(Hop { name: exe.clone(), exe: Some(exe.clone()), args: None, ppid: *ppid, start: created(pid).ok()? })
        })
    }

    pub(crate) fn liveness(p: ProcRef) -> Liveness {
        liveness_of(p, created(p.pid))
    }
}

#[cfg(not(any(target_os = "linux", target_os = "macos", windows)))]
mod imp {
    pub(crate) use super::other::{boot_time, own_start, processes, started_by_tool_since};
    use super::*;
    pub(crate) fn claude_process() -> Option<ProcRef> {
        None
    }
    pub(crate) fn liveness(_p: ProcRef) -> Liveness {
        Liveness::Unknown
    }
}

/// The process table from `ps -A -ww -o pid= -o etime= -o args=` (POSIX `ps`: macOS, the
/// BSDs, and Linux without /proc): pid, start time (now minus the elapsed time) and command
/// line; no working folder or environment. `None` where `ps` cannot run (Windows).
#[cfg(unix)]
pub(crate) fn processes_via_ps() -> Option<ProcTable> {
    let out = std::process::Command::new("ps")
        .args(["-A", "-ww", "-o", "pid=", "-o", "etime=", "-o", "args="])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .output()
        .ok()?;
    if !out.status.success() {
        return None;
    }
    Some(parse_ps(&String::from_utf8_lossy(&out.stdout), std::time::SystemTime::now()))
}

#[cfg(not(unix))]
pub(crate) fn processes_via_ps() -> Option<ProcTable> {
    None
}

/// Parses `ps -o pid= -o etime= -o args=` output taken at `now`.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn parse_ps(text: &str, now: std::time::SystemTime) -> ProcTable {
    let mut out = Vec::new();
    for line in text.lines() {
        let mut parts = line.split_whitespace();
        let (Some(pid), Some(etime)) = (parts.next(), parts.next()) else { continue };
        let Ok(pid) = pid.parse::<u32>() else { continue };
        let cmdline = parts.collect::<Vec<_>>().join(" ");
        if cmdline.is_empty() {
            continue;
        }
        let started = elapsed_secs(etime).and_then(|s| now.checked_sub(std::time::Duration::from_secs(s)));
        out.push(ProcEntry { pid, ppid: None, cmdline, cwd: None, started, claude_session: None });
    }
    out
}

/// `ps`'s elapsed time `[[dd-]hh:]mm:ss` in seconds.
#[cfg_attr(not(unix), allow(dead_code))]
fn elapsed_secs(etime: &str) -> Option<u64> {
    let (days, rest) = match etime.split_once('-') {
        Some((d, r)) => (d.parse::<u64>().ok()?, r),
        None => (0, etime),
    };
    let mut secs = 0u64;
    for part in rest.split(':') {
        secs = secs.checked_mul(60)?.checked_add(part.parse::<u64>().ok()?)?;
    }
    days.checked_mul(86_400)?.checked_add(secs)
}

/// The Claude Code process running this hook (nearest ancestor that is not an intermediary).
/// Walked once per process: a hook stamps it on every record it writes, and its ancestry does
/// not change while it runs.
pub(crate) fn claude_process() -> Option<ProcRef> {
    static FOUND: std::sync::OnceLock<Option<ProcRef>> = std::sync::OnceLock::new();
    *FOUND.get_or_init(imp::claude_process)
}

/// Whether `p` still runs (the same pid with the same start time).
pub(crate) fn liveness(p: ProcRef) -> Liveness {
    imp::liveness(p)
}

/// Running processes; `None` where the platform cannot tell.
pub(crate) fn processes() -> Option<ProcTable> {
    imp::processes()
}

/// This process's start time in clock ticks since boot (`None` where unknown).
pub(crate) fn own_start() -> Option<u64> {
    imp::own_start()
}

/// When the system booted, where walj can tell (Linux); `None` elsewhere. Files walj wrote
/// without a sync since then are whole: only a machine crash (a reboot) can lose their bytes.
pub(crate) fn boot_time() -> Option<std::time::SystemTime> {
    imp::boot_time()
}

/// Orphans of Claude Code tool calls: processes started at or after `since` (clock ticks,
/// see [`own_start`]) whose environment has `marker=1` (Claude Code's mark on its tools'
/// processes, `claude::env::MARKER`), working inside `root`, not descending from a running
/// Claude Code in `live` nor from this process. `None` where the platform cannot tell.
pub(crate) fn started_by_tool_since(
    since: u64,
    root: &std::path::Path,
    session: &str,
    live: &[ProcRef],
    marker: &str,
) -> Option<Vec<u32>> {
    imp::started_by_tool_since(since, root, session, live, marker)
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod portable_tests {
    use super::*;

    /// The walk every platform shares: shells skipped (any case, `.exe`), the first other
    /// process taken, a reused parent pid refused.
    #[test]
    fn the_nearest_non_shell_ancestor_is_the_agent() {
        let table = |pid: u32| -> Option<Hop> {
            let t = |n: &str, ppid: u32, start: u64| Some(named_hop((n.into(), ppid, start)));
            match pid {
                40 => t("bash.exe", 30, 400),
                30 => t("PWSH.EXE", 20, 300),
                20 => t("node.exe", 10, 200),
                10 => t("explorer.exe", 1, 100),
                // A parent pid reused by a process started after its child.
                60 => t("sh", 50, 600),
                50 => t("claude", 1, 900),
                _ => None,
            }
        };
        assert_eq!(nearest_non_shell(40, table), Some(ProcRef { pid: 20, start: 200 }));
        assert_eq!(nearest_non_shell(20, table), Some(ProcRef { pid: 20, start: 200 }));
        assert_eq!(nearest_non_shell(60, table), None);
        assert_eq!(nearest_non_shell(99, table), None);
        assert_eq!(nearest_non_shell(1, table), None);
        assert!(is_shell("cmd.exe") && is_shell("zsh") && !is_shell("claude") && !is_shell("node"));
    }

    /// Intermediaries are known by what they run, not by their names alone: a shell running
    /// the marketplace plugin's launcher script is named `walj` (its `comm`) but runs `dash`;
    /// Node.js running npx's walj is walked past, Node.js running Claude Code's `cli.js` is the
    /// agent; a program named like a shell that is not one is not walked past.
    #[test]
    fn intermediaries_are_known_by_what_they_run() {
        let args = |a: &[&str]| Some(a.iter().map(|s| s.to_string()).collect::<Vec<_>>());
        let table = |pid: u32| -> Option<Hop> {
            let h = |name: &str, exe: &str, args: Option<Vec<String>>, ppid: u32, start: u64| {
                Some(Hop { name: name.into(), exe: Some(exe.into()), args, ppid, start })
            };
            match pid {
                // claude (node cli.js) → sh -c → node npx walj hook → sh -c → launcher (named walj)
                90 => h("walj", "dash", None, 80, 900),
                80 => h("sh", "dash", None, 70, 800),
                70 => h(
                    "npm exec walj",
                    "node",
                    args(&["node", "/usr/lib/node_modules/npm/bin/npx-cli.js", "--yes", "walj@0.3.0", "hook"]),
                    60,
                    700,
                ),
                60 => h("sh", "bash", None, 50, 600),
                50 => h(
                    "claude",
                    "node",
                    args(&["node", "/usr/lib/node_modules/@anthropic-ai/claude-code/cli.js"]),
                    1,
                    500,
                ),
                // A program called `sh` that is not a shell: the agent.
                30 => h("sh", "my-agent", None, 1, 300),
                _ => None,
            }
        };
        assert_eq!(nearest_non_shell(90, table), Some(ProcRef { pid: 50, start: 500 }));
        assert_eq!(nearest_non_shell(30, table), Some(ProcRef { pid: 30, start: 300 }));
        assert!(runs_walj_package(&["node".into(), "/p/lib/node_modules/walj/bin/walj".into(), "hook".into()]));
        assert!(runs_walj_package(&["node".into(), "/p/npm/bin/npm-cli.js".into(), "exec".into(), "walj".into()]));
        assert!(!runs_walj_package(&["node".into(), "/p/node_modules/@anthropic-ai/claude-code/cli.js".into()]));
        assert!(!runs_walj_package(&["node".into(), "/p/npm/bin/npx-cli.js".into(), "prettier".into()]));
    }

    /// The crate denies unsafe code; the only modules allowed it are the platform process
    /// calls above (macOS, Windows).
    #[test]
    fn unsafe_code_is_only_the_platform_process_calls() {
        fn walk(dir: &std::path::Path, out: &mut Vec<(String, usize)>) {
            for e in std::fs::read_dir(dir).unwrap().flatten() {
                let p = e.path();
                if p.is_dir() {
                    walk(&p, out);
                } else if p.extension().is_some_and(|x| x == "rs") {
                    let text = std::fs::read_to_string(&p).unwrap();
                    let n = text.matches(concat!("allow(", "unsafe_code)")).count();
                    if n > 0 {
                        out.push((p.strip_prefix(env!("CARGO_MANIFEST_DIR")).unwrap().display().to_string(), n));
                    }
                }
            }
        }
        let mut found = Vec::new();
        walk(&std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src"), &mut found);
        found.sort();
        assert_eq!(found, vec![("src/procinfo.rs".to_string(), 2)]);
        let lib = include_str!("lib.rs");
        assert!(lib.contains(concat!("#![deny(", "unsafe_code)]")));
    }

    #[test]
    fn liveness_is_running_only_for_the_same_start() {
        let p = ProcRef { pid: 7, start: 70 };
        assert_eq!(liveness_of(p, Ok(70)), Liveness::Running);
        assert_eq!(liveness_of(p, Ok(71)), Liveness::Gone);
        assert_eq!(liveness_of(p, Err(true)), Liveness::Gone);
        assert_eq!(liveness_of(p, Err(false)), Liveness::Unknown);
    }
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

    /// A shell script named `walj` (as the marketplace plugin's launcher) runs as a process
    /// whose name is `walj`, whose program is the shell: an intermediary.
    #[test]
    fn a_launcher_script_is_a_shell_by_its_program() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("walj");
        std::fs::write(&script, "#!/bin/sh\nsleep 30\n").unwrap();
        std::fs::set_permissions(&script, std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
        let mut child = std::process::Command::new(&script).spawn().unwrap();
        let pid = child.id();
        // The exec of the script may not have happened yet: look until its program is the shell.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        let mut h = imp::hop(pid).unwrap();
        while h.name != "walj" && std::time::Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(5));
            h = imp::hop(pid).unwrap();
        }
        let _ = child.kill();
        let _ = child.wait();
        assert_eq!(h.name, "walj", "{h:?}");
        assert!(h.exe.as_deref().is_some_and(is_shell), "{h:?}");
        assert!(is_intermediary(&h), "{h:?}");
    }

    #[test]
    fn a_killed_process_not_yet_reaped_is_gone() {
        let mut child = std::process::Command::new("sleep").arg("30").spawn().unwrap();
        let pid = child.id();
        let (_, _, start) = imp::stat(pid).unwrap();
        assert_eq!(liveness(ProcRef { pid, start }), Liveness::Running);
        child.kill().unwrap();
        // Not waited for: a zombie, whose /proc entry stays until `wait`.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|t| !t.contains(") Z "))
            && std::time::Instant::now() < deadline
        {
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        assert!(std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap().contains(") Z "), "a zombie");
        assert_eq!(liveness(ProcRef { pid, start }), Liveness::Gone);
        child.wait().unwrap();
    }

    #[test]
    fn ps_output_is_parsed() {
        let now = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
        let t = parse_ps(
            "    1 2-03:04:05 /sbin/init\n  4242    01:30 /bin/bash -c eval 'sleep 302'\n  77 00:00\n bad line\n",
            now,
        );
        assert_eq!(t.len(), 2);
        assert_eq!(t[0].pid, 1);
        assert_eq!(t[0].started, now.checked_sub(std::time::Duration::from_secs(2 * 86_400 + 3 * 3600 + 4 * 60 + 5)));
        assert_eq!((t[1].pid, t[1].cmdline.as_str()), (4242, "/bin/bash -c eval 'sleep 302'"));
        assert_eq!(t[1].started, now.checked_sub(std::time::Duration::from_secs(90)));
        // The fallback runs here too: this test's own process is in it.
        let me = std::process::id();
        assert!(processes_via_ps().unwrap().iter().any(|p| p.pid == me));
    }

    #[test]
    fn the_table_tells_start_time_and_claude_session() {
        let mut child =
            std::process::Command::new("sleep").arg("7").env(SESSION_ENV, "sess-under-test").spawn().unwrap();
        let pid = child.id();
        // A loaded machine may show the child before its command line: look again briefly.
        let mut table = processes().unwrap();
        for _ in 0..50 {
            if table.iter().any(|p| p.pid == pid) {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(20));
            table = processes().unwrap();
        }
        let _ = child.kill();
        let _ = child.wait();
        let p = table.iter().find(|p| p.pid == pid).unwrap();
        assert_eq!(p.claude_session.as_deref(), Some("sess-under-test"));
        let off = std::time::SystemTime::now().duration_since(p.started.unwrap()).unwrap_or_default();
        assert!(off < std::time::Duration::from_millis(500), "started {off:?} ago");
        assert_eq!(p.ppid, Some(std::process::id()));
    }
}
