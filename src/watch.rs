//! The per-checkout watcher of Bash snapshots: its protocol, its places and its client.
//!
//! A full Bash snapshot costs one `lstat` per tracked file (src/bashsnap.rs). The watcher, a
//! detached `walj watch` process (src/cmd/watch.rs runs [`server::run`]), follows the work tree
//! through the platform's notifications (`notify`: inotify, FSEvents, ReadDirectoryChangesW)
//! and answers one question: *which paths changed since clock C?* A hook then stats only those.
//!
//! Contract:
//! - **Places.** One watcher per checkout (its canonical work tree), keyed by a digest of that
//!   path, in the user's runtime folder ([`run_dir`]: `$XDG_RUNTIME_DIR/walj`, else
//!   `<tmp>/walj-<uid>`), made 0700 and checked to be the user's own; never under `.walj/`. The
//!   claim file (`w-<key>.claim`, "pid start") makes it one per checkout; the socket is
//!   `w-<key>.sock`. Both ends check the peer's uid where the platform tells it (Linux).
//! - **Barrier.** A [`sync`] sends its request, then writes a cookie file into `.walj/` and
//!   waits (at most `wait`, a few ms) for the watcher to answer. The watcher answers when the
//!   cookie's own event reaches it: every change made before the cookie was written came
//!   earlier in the same event queue, so the answer holds all of them (watchman's cookies).
//! - **Doubt.** The answer is `paths` only when the watcher knows every change since the
//!   clock asked about; otherwise it says why not ([`Why`]: no clock, another epoch (a
//!   restarted watcher), an overflowed queue, the watch limit, changed ignore rules). Every
//!   failure of the client (no watcher, a stale socket, a timeout, another checkout's
//!   watcher, another user's socket) is a [`Why`] too: the caller then does the full scan.
//! - A request is one JSON line, the answer one JSON line; the socket is closed after it.

use std::io;
#[cfg(unix)]
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::{Deserialize, Serialize};

#[cfg(unix)]
pub mod server;

/// A point in one watcher's stream of changes: its epoch (a new one each start) and the
/// number of events it had taken in.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Clock {
    pub epoch: String,
    pub seq: u64,
}

/// A session the hook speaks for: the watcher notes when its Claude Code process ends.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SessionRef {
    pub id: String,
    pub pid: u32,
    pub start: u64,
}

/// One request line.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) struct Request {
    /// `sync` (wait for the cookie) or `ping`.
    pub op: String,
    /// The cookie's file name in `.walj/` (`cookie-…`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cookie: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<Clock>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<SessionRef>,
    /// The checkout the client means (canonical): a watcher of another one answers at once,
    /// without waiting for a cookie it would never see.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// Write the observer file's pending lines before answering: once the answer comes, every
    /// change the watcher took in before the cookie is in the file (a reader dating a killed
    /// command's deletions, `bashsnap::killed`). Hooks never ask (it costs the watcher a write).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub flush: bool,
}

/// One answer line.
#[derive(Debug, Clone, Serialize, Deserialize, Default)]
pub(crate) struct Answer {
    /// The checkout this watcher follows (canonical).
    pub root: String,
    pub epoch: String,
    pub seq: u64,
    /// Changed paths since the clock asked about, relative to the checkout, `/`-separated;
    /// `None` when the watcher cannot tell (then `doubt` says why).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub paths: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub doubt: Option<String>,
}

/// Why a snapshot could not use the watcher (what `walj doctor` shows).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Why {
    #[error("no watcher runs for this checkout")]
    NotRunning,
    #[error("stale watcher socket {0} (nobody listens)")]
    Stale(PathBuf),
    #[error("the watcher did not answer within {0} ms")]
    Timeout(u64),
    #[error("the socket answers for another checkout ({0})")]
    Foreign(String),
    #[error("the socket belongs to another user")]
    OtherUser,
    #[error("no usable runtime folder for the watcher's socket: {0}")]
    NoRunDir(String),
    #[error("watcher: {0}")]
    Doubt(String),
    #[error("watcher socket: {0}")]
    Io(String),
    #[error("the watcher is not available on this platform")]
    Unsupported,
}

/// What the watcher says when it cannot list changes (the `doubt` of an [`Answer`]).
#[cfg_attr(not(unix), allow(dead_code))]
pub mod doubt {
    pub(crate) const NO_CLOCK: &str = "no clock to start from (first snapshot since the watcher started)";
    pub(crate) const RESTARTED: &str = "the watcher restarted since the last snapshot";
    pub(crate) const OVERFLOW: &str = "the change queue overflowed (IN_Q_OVERFLOW or a rescan)";
    pub(crate) const WATCH_LIMIT: &str = "over the watch limit (fs.inotify.max_user_watches)";
    pub(crate) const IGNORE_RULES: &str = "ignore rules changed (.gitignore)";
    /// `.git/info/exclude`, `core.excludesFile` or the git configuration changed.
    pub(crate) const EXCLUDES: &str = "ignore rules changed (info/exclude, core.excludesFile or the git config)";
    /// More hard-linked files than the watcher re-reads each time (a write through another
    /// name of a file is no event in the folder watched).
    pub(crate) const TOO_MANY_LINKED: &str = "too many hard-linked files to vouch for";
    pub(crate) const TOO_MANY: &str = "too many changes to keep";
    /// A watcher outside git: it watches no folder, only sessions' Claude Code processes.
    pub(crate) const PROCESSES_ONLY: &str = "not a git checkout: the watcher observes Claude Code's processes only";
}

/// The name prefix of cookie files in `.walj/`.
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) const COOKIE_PREFIX: &str = "cookie-";

/// The user's runtime folder for watcher sockets, made 0700 and checked to be the user's own
/// real folder (not a link, no access for others).
pub(crate) fn run_dir() -> Result<PathBuf, Why> {
    let base = run_base();
    match std::fs::symlink_metadata(&base) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => {
            crate::fsutil::create_private_dir(&base).map_err(|e| Why::NoRunDir(format!("{}: {e}", base.display())))?;
        }
        Err(e) => return Err(Why::NoRunDir(format!("{}: {e}", base.display()))),
        Ok(_) => {}
    }
    usable(&base)?;
    Ok(base)
}

/// Where the runtime folder is: `$WALJ_RUNTIME_DIR`, else `$XDG_RUNTIME_DIR/walj`, else
/// `walj-<uid>` in the temp folder.
fn run_base() -> PathBuf {
    std::env::var_os("WALJ_RUNTIME_DIR")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("XDG_RUNTIME_DIR").map(|d| PathBuf::from(d).join("walj")))
        .unwrap_or_else(|| std::env::temp_dir().join(format!("walj-{}", uid())))
}

/// [`run_dir`] without making it (`walj doctor`): `Ok` with the folder when it is usable or
/// not made yet (walj makes it, 0700, when it starts a watcher).
pub(crate) fn check_run_dir() -> Result<PathBuf, Why> {
    let base = run_base();
    match std::fs::symlink_metadata(&base) {
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(base),
        Err(e) => Err(Why::NoRunDir(format!("{}: {e}", base.display()))),
        Ok(_) => usable(&base).map(|()| base),
    }
}

/// Whether the runtime folder at `base` is this user's own real folder, closed to others.
fn usable(base: &Path) -> Result<(), Why> {
    let meta = std::fs::symlink_metadata(base).map_err(|e| Why::NoRunDir(format!("{}: {e}", base.display())))?;
    if meta.file_type().is_symlink() {
        return Err(Why::NoRunDir(format!("{} is a link", base.display())));
    }
    if !meta.is_dir() {
        return Err(Why::NoRunDir(format!("{} is not a folder", base.display())));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::MetadataExt;
        if meta.uid() != uid() {
            return Err(Why::NoRunDir(format!("{} belongs to another user (uid {})", base.display(), meta.uid())));
        }
        if meta.mode() & 0o077 != 0 {
            return Err(Why::NoRunDir(format!("{} is not private to this user", base.display())));
        }
    }
    Ok(())
}

#[cfg(unix)]
fn uid() -> u32 {
    rustix::process::getuid().as_raw()
}
#[cfg(not(unix))]
fn uid() -> u32 {
    0
}

/// The places of one checkout's watcher.
#[derive(Debug, Clone)]
pub(crate) struct Places {
    /// The canonical work tree.
    pub root: PathBuf,
    #[cfg_attr(not(unix), allow(dead_code))]
    pub socket: PathBuf,
    pub claim: PathBuf,
}

impl Places {
    /// For the checkout whose work tree is `root` (canonicalized here).
    pub(crate) fn of(root: &Path) -> Result<Places, Why> {
        let root = std::fs::canonicalize(root).unwrap_or_else(|_| root.to_path_buf());
        let dir = run_dir()?;
        let key = &crate::sha::hex(&sha2_digest(root.to_string_lossy().as_bytes()))[..16];
        Ok(Places { socket: dir.join(format!("w-{key}.sock")), claim: dir.join(format!("w-{key}.claim")), root })
    }
}

fn sha2_digest(bytes: &[u8]) -> Vec<u8> {
    use sha2::Digest;
    sha2::Sha256::digest(bytes).to_vec()
}

/// Whether the claim file names a live process (a watcher runs or is starting).
pub(crate) fn claimed(places: &Places) -> bool {
    held(&places.claim)
}

/// Whether the claim file at `path` ("pid start", see [`claim`]) names a live process.
pub(crate) fn held(path: &Path) -> bool {
    let Ok(text) = std::fs::read_to_string(path) else { return false };
    let mut it = text.split_whitespace();
    let (Some(pid), Some(start)) = (it.next().and_then(|p| p.parse().ok()), it.next().and_then(|s| s.parse().ok()))
    else {
        // Being written, or damaged: only a fresh one counts.
        return std::fs::metadata(path)
            .and_then(|m| m.modified())
            .ok()
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|d| d < Duration::from_secs(5));
    };
    !zombie(pid)
        && crate::procinfo::liveness(crate::procinfo::ProcRef { pid, start }) != crate::procinfo::Liveness::Gone
}

/// A claim file held by this process ("pid start"), removed on drop.
#[derive(Debug)]
pub(crate) struct Claim(PathBuf);

impl Drop for Claim {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Takes the claim file `path` (created exclusively), or `None` while a live process holds it;
/// one left by a process that is gone (kill -9) is taken over.
pub(crate) fn claim(path: &Path) -> io::Result<Option<Claim>> {
    for _ in 0..2 {
        match crate::fsutil::open_private(path, std::fs::OpenOptions::new().write(true).create_new(true)) {
            Ok(mut f) => {
                let start = crate::procinfo::own_start().unwrap_or(0);
                io::Write::write_all(&mut f, format!("{} {start}\n", std::process::id()).as_bytes())?;
                return Ok(Some(Claim(path.to_path_buf())));
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {
                if held(path) {
                    return Ok(None);
                }
                let _ = std::fs::remove_file(path);
            }
            Err(e) => return Err(e),
        }
    }
    Ok(None)
}

/// A process that has exited but was not reaped yet (a killed watcher whose parent, often a
/// container's init, does not reap) holds no claim.
fn zombie(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        std::fs::read_to_string(format!("/proc/{pid}/stat"))
            .ok()
            .and_then(|t| t.rfind(')').and_then(|i| t.get(i + 2..i + 3)).map(|s| s == "Z" || s == "X"))
            .unwrap_or(false)
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = pid;
        false
    }
}

/// Starts the watcher `exe args…` detached ([`spawn_detached`]) unless a watcher holds the
/// checkout's claim. Returns whether one was started.
pub(crate) fn spawn(places: &Places, exe: &Path, args: &[&std::ffi::OsStr]) -> io::Result<bool> {
    if claimed(places) {
        return Ok(false);
    }
    spawn_detached(exe, args)?;
    Ok(true)
}

/// Starts `exe args…` detached: its own process group, no terminal, null stdio, without
/// Claude Code's markers and outside the checkout (so `walj procs` and the orphan search never
/// take it for a session's command). Pass paths in `args` absolute.
pub(crate) fn spawn_detached(exe: &Path, args: &[&std::ffi::OsStr]) -> io::Result<()> {
    let mut cmd = std::process::Command::new(exe);
    cmd.args(args)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null());
    // Not one of Claude Code's tool processes: without its markers (`CLAUDECODE`,
    // `CLAUDE_CODE_SESSION_ID`, …) and outside the checkout.
    for (key, _) in std::env::vars_os() {
        if key.to_string_lossy().starts_with("CLAUDE") {
            cmd.env_remove(&key);
        }
    }
    cmd.current_dir(std::env::temp_dir());
    #[cfg(unix)]
    {
        use std::os::unix::process::CommandExt;
        cmd.process_group(0);
    }
    cmd.spawn()?;
    Ok(())
}

/// Asks the checkout's watcher for the paths changed since `since`, behind a cookie written
/// into `cookie_dir` (the project's `.walj/`, which the watcher watches): waits at most
/// `wait` in all.
pub(crate) fn sync(
    places: &Places,
    cookie_dir: &Path,
    since: Option<&Clock>,
    session: Option<SessionRef>,
    wait: Duration,
) -> Result<Answer, Why> {
    #[cfg(unix)]
    {
        sync_unix(places, cookie_dir, since, session, wait, false)
    }
    #[cfg(not(unix))]
    {
        let _ = (places, cookie_dir, since, session, wait);
        Err(Why::Unsupported)
    }
}

/// Names `session` to the checkout's watcher (a `ping` carrying it), so that its Claude Code
/// process's end is noted from now on, whether or not a Bash snapshot ever reaches the watcher.
/// Writes the request and returns: the watcher's answer is not waited for.
pub(crate) fn register(places: &Places, session: SessionRef) -> Result<(), Why> {
    #[cfg(unix)]
    {
        use std::os::unix::net::UnixStream;
        let stream = match UnixStream::connect(&places.socket) {
            Ok(s) => s,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Why::NotRunning),
            Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Err(Why::Stale(places.socket.clone())),
            Err(e) => return Err(Why::Io(e.to_string())),
        };
        if peer_uid(&stream).is_some_and(|u| u != uid()) {
            return Err(Why::OtherUser);
        }
        let req = Request {
            op: "ping".into(),
            cookie: None,
            since: None,
            session: Some(session),
            root: Some(places.root.to_string_lossy().into_owned()),
            flush: false,
        };
        let mut line = serde_json::to_vec(&req).map_err(|e| Why::Io(e.to_string()))?;
        line.push(b'\n');
        let _ = stream.set_write_timeout(Some(Duration::from_millis(200)));
        (&stream).write_all(&line).map_err(|e| Why::Io(e.to_string()))
    }
    #[cfg(not(unix))]
    {
        let _ = (places, session);
        Err(Why::Unsupported)
    }
}

/// A barrier for a reader of the observer file: when it returns, every change the watcher took
/// in before the cookie was written to the file ([`Request::flush`]). The answer's epoch names
/// the watcher that answered.
pub(crate) fn sync_flushed(places: &Places, cookie_dir: &Path, wait: Duration) -> Result<Answer, Why> {
    #[cfg(unix)]
    {
        sync_unix(places, cookie_dir, None, None, wait, true)
    }
    #[cfg(not(unix))]
    {
        let _ = (places, cookie_dir, wait);
        Err(Why::Unsupported)
    }
}

#[cfg(unix)]
fn sync_unix(
    places: &Places,
    cookie_dir: &Path,
    since: Option<&Clock>,
    session: Option<SessionRef>,
    wait: Duration,
    flush: bool,
) -> Result<Answer, Why> {
    use std::os::unix::net::UnixStream;
    let started = std::time::Instant::now();
    let stream = match UnixStream::connect(&places.socket) {
        Ok(s) => s,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Err(Why::NotRunning),
        Err(e) if e.kind() == io::ErrorKind::ConnectionRefused => return Err(Why::Stale(places.socket.clone())),
        Err(e) => return Err(Why::Io(e.to_string())),
    };
    if peer_uid(&stream).is_some_and(|u| u != uid()) {
        return Err(Why::OtherUser);
    }
    let io_err = |e: io::Error| match e.kind() {
        io::ErrorKind::WouldBlock | io::ErrorKind::TimedOut => Why::Timeout(wait.as_millis() as u64),
        _ => Why::Io(e.to_string()),
    };
    let _ = stream.set_write_timeout(Some(wait));
    let cookie = format!(
        "{COOKIE_PREFIX}{}-{}",
        std::process::id(),
        std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos())
    );
    let req = Request {
        op: "sync".into(),
        cookie: Some(cookie.clone()),
        since: since.cloned(),
        session,
        root: Some(places.root.to_string_lossy().into_owned()),
        flush,
    };
    let mut line = serde_json::to_vec(&req).map_err(|e| Why::Io(e.to_string()))?;
    line.push(b'\n');
    (&stream).write_all(&line).map_err(io_err)?;
    // The cookie after the request: the watcher knows whom it answers when the event comes.
    let cookie_path = cookie_dir.join(&cookie);
    crate::fsutil::open_private(&cookie_path, std::fs::OpenOptions::new().write(true).create_new(true))
        .map_err(|e| Why::Io(format!("{}: {e}", cookie_path.display())))?;
    let left = wait.saturating_sub(started.elapsed()).max(Duration::from_micros(100));
    let _ = stream.set_read_timeout(Some(left));
    let mut answer = String::new();
    let read = io::BufReader::new(&stream).read_line(&mut answer);
    let _ = std::fs::remove_file(&cookie_path);
    read.map_err(io_err)?;
    if answer.is_empty() {
        return Err(Why::Io("the watcher closed the connection".into()));
    }
    let answer: Answer = serde_json::from_str(answer.trim_end()).map_err(|e| Why::Io(format!("answer: {e}")))?;
    if Path::new(&answer.root) != places.root {
        return Err(Why::Foreign(answer.root));
    }
    Ok(answer)
}

/// The peer's uid, where the platform tells it (Linux: `SO_PEERCRED`); elsewhere the 0700
/// runtime folder keeps other users out.
#[cfg(target_os = "linux")]
pub(crate) fn peer_uid(stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    rustix::net::sockopt::socket_peercred(stream).ok().map(|c| c.uid.as_raw())
}
#[cfg(all(unix, not(target_os = "linux")))]
pub(crate) fn peer_uid(_stream: &std::os::unix::net::UnixStream) -> Option<u32> {
    None
}

/// The uid of this process (for the watcher's own peer check).
#[cfg_attr(not(unix), allow(dead_code))]
pub(crate) fn own_uid() -> u32 {
    uid()
}

/// Whether a snapshot's reason for a full scan (a [`Why`], as text) is that no watcher
/// listened: none ran, its socket was stale, or it did not answer (not a doubt of one that did).
pub(crate) fn is_absence(why: &str) -> bool {
    [Why::NotRunning.to_string(), "(nobody listens)".into(), "did not answer within".into()]
        .iter()
        .any(|w| why.contains(w.as_str()))
}

/// Why no watcher listened for the checkout of `places`, in words, from what the watchers left:
/// the claim (a live process holds it or not) and the observer file `observed` (each watcher's
/// `start`, and whether it wrote `exit` on its way out). `walj doctor` and the records of a
/// killed command's changes say it where a snapshot found no watcher listening.
pub(crate) fn absence(places: Option<&Places>, observed: &Path) -> String {
    #[cfg(unix)]
    let listens = |p: &Places| std::os::unix::net::UnixStream::connect(&p.socket).is_ok();
    #[cfg(not(unix))]
    let listens = |_: &Places| false;
    let mut text = Vec::new();
    for f in [observed.with_extension("jsonl.1"), observed.to_path_buf()] {
        if let Ok(b) = crate::fsutil::read_regular(&f) {
            text.extend_from_slice(&b);
        }
    }
    // Each watcher's (pid, start ns, exit ns, last line's ns), oldest first.
    let mut runs: Vec<(u64, i64, Option<i64>, i64)> = Vec::new();
    for line in String::from_utf8_lossy(&text).lines() {
        let Ok(v) = serde_json::from_str::<serde_json::Value>(line) else { continue };
        let ns = v["ns"].as_i64().unwrap_or(0);
        match v["ev"].as_str() {
            Some("start") => runs.push((v["pid"].as_u64().unwrap_or(0), ns, None, ns)),
            Some("exit") => {
                if let Some(r) = runs.last_mut() {
                    r.2 = Some(ns);
                }
            }
            _ => {}
        }
        if let Some(r) = runs.last_mut() {
            r.3 = r.3.max(ns);
        }
    }
    let at =
        |ns: i64| chrono::DateTime::<chrono::Utc>::from_timestamp_nanos(ns).format("%Y-%m-%d %H:%M:%S UTC").to_string();
    let fate = |(pid, started, exit, last): (u64, i64, Option<i64>, i64)| match exit {
        Some(t) => format!(
            "pid {pid}, started {}, left at {}: no live session and no request for its linger time",
            at(started),
            at(t)
        ),
        None => format!(
            "pid {pid}, started {}, ended without leaving: killed, or it crashed (its last line {}), so its socket stayed",
            at(started),
            at(last)
        ),
    };
    // The watcher that holds the claim now, if any (its pid), and the last one before it.
    let holder = places.filter(|p| claimed(p)).map(|p| {
        let pid = std::fs::read_to_string(&p.claim)
            .ok()
            .and_then(|t| t.split_whitespace().next().and_then(|x| x.parse::<u64>().ok()));
        (pid, listens(p))
    });
    let before = runs.iter().rev().find(|r| holder.is_none_or(|(pid, _)| pid != Some(r.0))).copied();
    let before = before.map(fate);
    match (holder, before) {
        (Some((_, true)), Some(b)) => format!("a watcher listens now; the one before it ({b})"),
        (Some((_, true)), None) => {
            "a watcher listens now (it did not then: it was starting, or was started since)".into()
        }
        (Some((_, false)), b) => format!(
            "a live process holds the watcher's claim but does not listen on its socket yet (starting up, or stuck){}",
            b.map_or_else(String::new, |b| format!("; the one before it ({b})"))
        ),
        (None, Some(b)) => format!("the last watcher ({b})"),
        (None, None) => "no watcher has run for this checkout since its observer file began (none was started, or it \
                         could not start: see `walj doctor`)"
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_round_trip_and_doubts_have_no_paths() {
        let a =
            Answer { root: "/r".into(), epoch: "e".into(), seq: 3, paths: None, doubt: Some(doubt::OVERFLOW.into()) };
        let text = serde_json::to_string(&a).unwrap();
        assert!(!text.contains("paths"));
        let back: Answer = serde_json::from_str(&text).unwrap();
        assert_eq!(back.doubt.as_deref(), Some(doubt::OVERFLOW));
    }
}
