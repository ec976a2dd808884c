//! What a killed `walj bisect` could leave behind, and what removes it.
//!
//! - **Scratch copies** (and the command's output file) live in one folder per user:
//!   `$XDG_CACHE_HOME/walj/bisect`, else `~/.cache/walj/bisect` (made 0700, refused unless it
//!   is a real folder owned by this user; never a predictable name in a shared temp folder).
//!   Each bisect's folder is named after its owner, `<pid>-<start>-<nanos>`.
//! - **A guard** ([`Guard`]): a small `walj` process in a process group of its own, started by
//!   every bisect, that reads what to clean up from a pipe. When the pipe closes without the
//!   bisect's "end" (it was killed, even with SIGKILL), the guard kills the test command's
//!   process group and removes the scratch copy.
//! - **The next walj command** of any kind (never the hook) runs [`sweep`]: copies whose owner
//!   is gone are removed (the guard was killed too, say), and walj's temp files
//!   (`.NAME.walj-tmp-PID-…`) whose owner is gone are removed from the folders an in-place
//!   bisect wrote (named by its marker), `.walj/` and `.walj/staging/`, their bytes put in the
//!   store first (a temp file may hold bytes swapped out of the tree: none is destroyed).

use std::io::{self, Write};
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use crate::project::Project;

use super::BisectError;

/// Where the per-user folder of scratch copies is (whether it exists or not).
fn base_path() -> io::Result<PathBuf> {
    let cache = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| Path::new(v).is_absolute())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").filter(|v| !v.is_empty()).map(|h| PathBuf::from(h).join(".cache")));
    #[cfg(windows)]
    let cache = cache.or_else(|| std::env::var_os("LOCALAPPDATA").map(PathBuf::from));
    let Some(cache) = cache else {
        return Err(io::Error::new(
            io::ErrorKind::NotFound,
            "no folder of this user's for scratch copies: neither XDG_CACHE_HOME nor HOME is set",
        ));
    };
    Ok(cache.join("walj").join("bisect"))
}

/// The per-user folder of scratch copies when it exists and passes [`scratch_base`]'s checks
/// (never made: the sweep before every command writes nothing outside the project).
fn existing_base() -> Option<PathBuf> {
    let base = base_path().ok()?;
    std::fs::symlink_metadata(&base).ok()?.is_dir().then_some(())?;
    check_base(&base).ok()?;
    Some(base)
}

/// The per-user folder of scratch copies, made when missing and checked: a real folder (not
/// a link), owned by this user, mode 0700 (tightened when looser).
pub(crate) fn scratch_base() -> io::Result<PathBuf> {
    let base = base_path()?;
    crate::fsutil::create_private_dir(&base)?;
    check_base(&base)?;
    Ok(base)
}

fn check_base(base: &Path) -> io::Result<()> {
    let meta = std::fs::symlink_metadata(base)?;
    if !meta.is_dir() {
        return Err(io::Error::other(format!(
            "{}: not a folder (a link?); walj keeps no scratch copy there",
            base.display()
        )));
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt, PermissionsExt};
        if meta.uid() != rustix::process::geteuid().as_raw() {
            return Err(io::Error::other(format!(
                "{}: owned by another user; walj keeps no scratch copy there",
                base.display()
            )));
        }
        if meta.mode() & 0o077 != 0 {
            std::fs::set_permissions(base, std::fs::Permissions::from_mode(0o700))?;
        }
    }
    Ok(())
}

/// A bisect's own folder in [`scratch_base`], removed when dropped (and by the guard or the
/// next walj command when the bisect is killed).
pub(crate) struct TempDir {
    pub path: PathBuf,
}

impl TempDir {
    pub(crate) fn new() -> Result<TempDir, BisectError> {
        let base =
            scratch_base().map_err(|e| BisectError::Io { path: PathBuf::from("~/.cache/walj/bisect"), source: e })?;
        let start = crate::procinfo::own_start().unwrap_or(0);
        for i in 0..100u32 {
            let nanos =
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.subsec_nanos());
            let path = base.join(format!("{}-{start}-{nanos:08x}{i}", std::process::id()));
            #[cfg_attr(not(unix), allow(unused_mut))]
            let mut b = std::fs::DirBuilder::new();
            #[cfg(unix)]
            std::os::unix::fs::DirBuilderExt::mode(&mut b, 0o700);
            match b.create(&path) {
                Ok(()) => return Ok(TempDir { path }),
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(BisectError::Io { path, source: e }),
            }
        }
        Err(BisectError::Io { path: base, source: io::Error::other("no free name for a scratch folder") })
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.path);
    }
}

/// Whether the process `pid` still runs (a zombie has ended). Unknown counts as running.
fn pid_alive(pid: u32) -> bool {
    #[cfg(target_os = "linux")]
    {
        match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
            Ok(s) => !s.rfind(')').and_then(|i| s.get(i + 2..i + 3)).is_some_and(|st| st == "Z" || st == "X"),
            Err(e) if e.kind() == io::ErrorKind::NotFound => !Path::new("/proc/self/stat").exists(),
            Err(_) => true,
        }
    }
    #[cfg(all(unix, not(target_os = "linux")))]
    {
        match rustix::process::Pid::from_raw(pid as i32) {
            Some(p) => !matches!(rustix::process::test_kill_process(p), Err(rustix::io::Errno::SRCH)),
            None => true,
        }
    }
    #[cfg(not(unix))]
    {
        let _ = pid;
        true
    }
}

/// Whether the owner of a scratch folder named `name` (`<pid>-<start>-…`) is gone.
fn copy_owner_gone(name: &str) -> bool {
    let mut parts = name.split('-');
    let (Some(pid), Some(start)) = (parts.next().and_then(|p| p.parse::<u32>().ok()), parts.next()) else {
        return false; // not ours: never removed
    };
    match start.parse::<u64>() {
        Ok(start) if start > 0 => {
            crate::procinfo::liveness(crate::procinfo::ProcRef { pid, start }) == crate::procinfo::Liveness::Gone
        }
        _ => !pid_alive(pid),
    }
}

/// Scratch copies whose bisect is gone (killed), oldest name first.
pub(crate) fn copies_left() -> Vec<PathBuf> {
    let Some(base) = existing_base() else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(&base) else { return Vec::new() };
    let mut out: Vec<PathBuf> = rd
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_ok_and(|t| t.is_dir()))
        .filter(|e| copy_owner_gone(&e.file_name().to_string_lossy()))
        .map(|e| e.path())
        .collect();
    out.sort();
    out
}

/// The pid in a walj temp file name (`.NAME.walj-tmp-PID-NANOS-N`).
fn temp_owner(name: &str) -> Option<u32> {
    if !name.starts_with('.') {
        return None;
    }
    let i = name.rfind(".walj-tmp-")?;
    let mut parts = name[i + ".walj-tmp-".len()..].split('-');
    let pid = parts.next()?.parse().ok()?;
    let (Some(a), Some(b), None) = (parts.next(), parts.next(), parts.next()) else { return None };
    let hex = |s: &str| !s.is_empty() && s.bytes().all(|c| c.is_ascii_hexdigit());
    (hex(a) && hex(b)).then_some(pid)
}

/// Removes the walj temp files whose owner is gone from `rel` (a folder of the project,
/// opened beneath the root through no link), each one's bytes stored first. Returns the
/// paths removed.
fn sweep_folder(project: &Project, root: &crate::fsutil::Dir, rel: &Path) -> Vec<PathBuf> {
    let Ok(dir) = root.open_beneath(rel, false) else { return Vec::new() };
    let Ok(rd) = std::fs::read_dir(dir.path()) else { return Vec::new() };
    let store = crate::store::Store::new(project.store_dir());
    let mut out = Vec::new();
    for e in rd.filter_map(Result::ok) {
        let name = e.file_name();
        let Some(pid) = temp_owner(&name.to_string_lossy()) else { continue };
        if pid == std::process::id() || pid_alive(pid) {
            continue;
        }
        match dir.open_regular(&name) {
            Ok(Some((mut f, _))) => {
                let mut b = Vec::new();
                if io::Read::read_to_end(&mut f, &mut b).is_err() || store.put(&b).is_err() {
                    continue; // kept: its bytes could not be stored
                }
            }
            Ok(None) => continue, // not a file: not walj's to remove
            Err(_) => continue,
        }
        if dir.remove(&name, false).is_ok() {
            out.push(dir.join(&name));
        }
    }
    out
}

/// Walj's temp files left by a killed process: in every folder an in-place bisect wrote
/// (its marker names the paths), `.walj/` and `.walj/staging/`. Stored, then removed.
pub(crate) fn sweep_tree(project: &Project) -> Vec<PathBuf> {
    if !project.dir.is_dir() {
        return Vec::new();
    }
    let mut out = Vec::new();
    if let Ok(own) = crate::fsutil::Dir::open(&project.dir) {
        out.extend(sweep_folder(project, &own, Path::new("")));
        out.extend(sweep_folder(project, &own, Path::new("staging")));
    }
    let marker = super::inplace::marker(project);
    let Ok(text) = std::fs::read_to_string(&marker) else { return out };
    let Ok(v) = serde_json::from_str::<serde_json::Value>(&text) else { return out };
    let mut folders: Vec<PathBuf> = v
        .get("paths")
        .and_then(serde_json::Value::as_object)
        .map(|m| {
            m.keys()
                .filter_map(|rel| crate::fsutil::name::split_plain(rel).map(|(parent, _)| parent))
                .collect::<Vec<_>>()
        })
        .unwrap_or_default();
    folders.sort();
    folders.dedup();
    if let Ok(root) = crate::fsutil::Dir::open(&project.root) {
        for f in &folders {
            out.extend(sweep_folder(project, &root, f));
        }
    }
    out
}

/// What the next walj command (never the hook) cleans up after a killed bisect: scratch
/// copies whose owner is gone, and walj's temp files in the project. One line per thing
/// removed, for stderr.
pub fn sweep(project: Option<&Project>) -> Vec<String> {
    let mut out = Vec::new();
    for p in copies_left() {
        match std::fs::remove_dir_all(&p) {
            Ok(()) => out.push(format!("removed the scratch copy of a killed `walj bisect`: {}", p.display())),
            Err(e) => {
                out.push(format!("could not remove the scratch copy of a killed `walj bisect` {}: {e}", p.display()))
            }
        }
    }
    if let Some(project) = project {
        for t in sweep_tree(project) {
            out.push(format!(
                "removed a temp file left by a killed walj (its bytes are in the store): {}",
                t.display()
            ));
        }
    }
    out
}

/// The hidden argument that makes `walj` a bisect's guard ([`guard_main`]).
pub const GUARD_ARG: &str = "__bisect-guard";

/// The guard of one bisect: told the scratch folder and the command's process group over a
/// pipe; see the module's doc.
pub(crate) struct Guard {
    pipe: Mutex<Option<std::process::ChildStdin>>,
    child: Mutex<Option<std::process::Child>>,
}

impl Guard {
    /// Starts the guard (the running `walj` binary, in a process group of its own so that a
    /// Ctrl-C meant for the bisect does not end it). Without one (not the `walj` binary, or
    /// it cannot start) the bisect goes on and the next walj command sweeps.
    pub(crate) fn start() -> Guard {
        let none = Guard { pipe: Mutex::new(None), child: Mutex::new(None) };
        let Ok(exe) = std::env::current_exe() else { return none };
        if exe.file_stem().is_none_or(|s| s != "walj") {
            return none;
        }
        let mut cmd = std::process::Command::new(exe);
        cmd.arg(GUARD_ARG)
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null());
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        match cmd.spawn() {
            Ok(mut child) => {
                let pipe = child.stdin.take();
                Guard { pipe: Mutex::new(pipe), child: Mutex::new(Some(child)) }
            }
            Err(_) => none,
        }
    }

    fn tell(&self, line: &str) {
        if let Ok(mut p) = self.pipe.lock()
            && let Some(pipe) = p.as_mut()
            && (writeln!(pipe, "{line}").is_err() || pipe.flush().is_err())
        {
            *p = None;
        }
    }

    /// The folder to remove should the bisect die.
    pub(crate) fn folder(&self, path: &Path) {
        self.tell(&format!("dir {}", path.display()));
    }

    /// The command's process group now running (`None`: none).
    pub(crate) fn group(&self, pgid: Option<u32>) {
        self.tell(&format!("group {}", pgid.unwrap_or(0)));
    }

    /// The bisect ends normally: the guard leaves everything to it.
    pub(crate) fn finish(&self) {
        self.tell("end");
        if let Ok(mut p) = self.pipe.lock() {
            *p = None;
        }
        if let Ok(mut c) = self.child.lock()
            && let Some(mut child) = c.take()
        {
            let _ = child.wait();
        }
    }
}

impl Drop for Guard {
    fn drop(&mut self) {
        self.finish();
    }
}

/// The guard's process: reads its bisect's lines until the pipe closes; without "end" (the
/// bisect died) it kills the command's process group and removes the scratch folder.
pub fn guard_main() -> u8 {
    let mut dir: Option<PathBuf> = None;
    // The command's process group (killed below on Unix; no process groups elsewhere).
    let mut group: u32 = 0;
    let mut ended = false;
    for line in io::stdin().lines() {
        let Ok(line) = line else { break };
        if line == "end" {
            ended = true;
        } else if let Some(g) = line.strip_prefix("group ") {
            group = g.parse().unwrap_or(0);
        } else if let Some(d) = line.strip_prefix("dir ") {
            dir = Some(PathBuf::from(d));
        }
    }
    if ended {
        return 0;
    }
    #[cfg(not(unix))]
    let _ = group;
    #[cfg(unix)]
    if let Some(pid) = i32::try_from(group).ok().filter(|g| *g > 1).and_then(rustix::process::Pid::from_raw) {
        let _ = rustix::process::kill_process_group(pid, rustix::process::Signal::KILL);
    }
    if let Some(d) = dir {
        // Only a folder of the per-user scratch folder, whatever the pipe said.
        if existing_base().is_some_and(|base| d.parent() == Some(base.as_path())) {
            // The command may take a moment to die after SIGKILL: retry a removal that races it.
            for _ in 0..20 {
                if std::fs::remove_dir_all(&d).is_ok() || !d.exists() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(50));
            }
        }
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    // The sweep knows walj's temp names by the form `fsutil::temp_name` gives them, and
    // nothing else.
    #[test]
    fn temp_owner_reads_the_names_walj_gives_its_temp_files() {
        let name = crate::fsutil::temp_name(Path::new("dir/lib.txt"));
        assert_eq!(temp_owner(&name), Some(std::process::id()));
        let long = crate::fsutil::temp_name(Path::new(&"x".repeat(300)));
        assert_eq!(temp_owner(&long), Some(std::process::id()));
        for other in [
            "lib.txt",
            ".lib.txt",
            ".lib.walj-tmp-12",
            ".a.walj-tmp-12-zz-1",
            "a.walj-tmp-12-1a-0",
            ".a.walj-tmp-x-1a-0",
        ] {
            assert_eq!(temp_owner(other), None, "{other}");
        }
    }

    #[test]
    fn a_copy_is_only_ever_removed_when_named_after_a_process_that_is_gone() {
        assert!(!copy_owner_gone(&format!("{}-0-abc", std::process::id())));
        assert!(!copy_owner_gone("not-ours"));
        assert!(!copy_owner_gone("notes"));
        let mut dead = std::process::Command::new("true").spawn().unwrap();
        let pid = dead.id();
        dead.wait().unwrap();
        assert!(copy_owner_gone(&format!("{pid}-0-abc")));
    }
}
