//! The watcher process (`walj watch`, hidden; started detached by a hook): follows one
//! checkout's work tree and answers [`super::sync`] requests (the protocol is in the parent
//! module).
//!
//! Contract:
//! - **What it watches.** Every folder of the work tree that git does not ignore, one
//!   non-recursive watch each (inotify is not recursive), `.git/` never, and each `.walj/`
//!   folder by itself (for cookies only: nothing else in it is a change). A folder that
//!   appears (made, moved in) is watched first and then crawled, so a file made before its
//!   watch existed is reported as changed too. Files git ignores are not reported, unless git
//!   tracks them: a folder git ignores that holds tracked files is watched too (git's index is
//!   read again whenever it changed). A `.walj` folder that is not walj's own (`docs/.walj/`)
//!   is an ordinary folder; a name that is not UTF-8 is reported mapped (`fsutil::name`).
//! - **What it names besides changes.** Every file with more than one hard link, in every
//!   answer: a write through a name outside the checkout is no event here.
//! - **Ignore rules.** A `.gitignore` event, or a changed `info/exclude`, git configuration or
//!   `core.excludesFile` (their stamps, compared before each answer), raises the floor and
//!   crawls the tree again, so folders the rules no longer ignore get their watches and files
//!   they no longer ignore with more than one name are named in every answer.
//! - **What it keeps.** A sequence number per event and, per changed path, the number of its
//!   last change. A *floor* is raised when it cannot vouch for what came before (the queue
//!   overflowed, ignore rules changed, too many paths kept): a request from a clock below the
//!   floor gets a doubt, never a partial list. Over the watch limit (a real `ENOSPC`, or
//!   `WALJ_WATCH_MAX_DIRS` folders in a test) it keeps running and answers every request with
//!   that doubt, so hooks do not start it again and again.
//! - **The observer file.** Changes are coalesced: one line per path and kind (content, or
//!   attribute only: mode, times, a close after opening for writing) per batch, with its
//!   first and last time; a batch is written before any other line (a session's end, a
//!   doubt), so no change line spans one.
//! - **Live observer.** Each session a request names (its Claude Code pid and start time), or
//!   the hook that started it named (`--session`), is watched through its pidfd (polled every
//!   second where there is none); when its process is gone the time is written, with every change's
//!   time, to the observer file (JSON lines, docs/architecture.md "The watcher's observer
//!   file"), never to the journal.
//! - **Lifetime.** One per checkout (the claim file). It exits once no named session has been
//!   alive and no request has come for `linger`, when its socket is removed or replaced, or
//!   when the work tree is gone; it removes its socket and claim on the way out.

use std::collections::{HashMap, HashSet};
use std::fs;
use std::io::{self, Write};
use std::os::unix::net::{UnixListener, UnixStream};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use notify::event::{AccessKind, AccessMode, EventKind, ModifyKind, RenameMode};
use notify::{RecursiveMode, Watcher};

use super::{Answer, Clock, Places, Request, SessionRef, doubt};

/// Paths kept at most before the floor is raised instead.
const MAX_KEPT: usize = 200_000;
/// Hard-linked files vouched for at most (each is named in every answer, so the snapshot
/// looks at it again: a write through another name is no event in the folder watched).
const MAX_LINKED: usize = 20_000;
/// The observer file is moved aside (`.1`) past this size.
const MAX_OBSERVED: u64 = 8 << 20;

/// How one watcher runs.
#[derive(Debug, Clone)]
pub(crate) struct Options {
    /// The checkout's work tree.
    pub root: PathBuf,
    /// The observer file (JSON lines), if any.
    pub observed: Option<PathBuf>,
    /// How long it stays after the last live session and the last request.
    pub linger: Duration,
    /// Folders it watches at most (the watch limit; `usize::MAX`: the system's).
    pub max_dirs: usize,
    /// Sessions observed from the start (named by the hook that started it), before any
    /// request: a session whose first requests found no watcher listening yet still has its
    /// end noted.
    pub sessions: Vec<SessionRef>,
    /// Outside git: no folder is watched (a tree of any size costs nothing and takes none of
    /// the user's inotify watches); only the named sessions' processes are observed, so a
    /// killed command's changes can be dated against its Claude Code's end. Every request is
    /// answered with a doubt ([`doubt::PROCESSES_ONLY`]); it leaves when the folder becomes a
    /// checkout (`.git` appears), so a full watcher can take its place.
    pub processes_only: bool,
}

enum Msg {
    Fs(notify::Result<notify::Event>),
    Req(UnixStream, Request),
    /// A session's Claude Code process ended (its pidfd became readable) at this time.
    End(String, crate::procinfo::ProcRef, i64),
    /// A request was dropped unanswered (why, how many so far): noted in the observer file.
    Dropped(&'static str, u64),
}

/// Longest request line read (a request is a few hundred bytes: a cookie, a clock, a session).
/// A longer one is dropped having held at most this much.
pub(crate) const MAX_REQUEST: usize = 8 * 1024;
/// How long one request may take to arrive whole: a client that trickles it is dropped, so
/// one slow peer cannot hold the listener.
const REQUEST_WAIT: Duration = Duration::from_secs(2);

/// Why a request was dropped (the observer file's `dropped` lines).
const DROP_PEER: &str = "another user's process";
const DROP_OVERSIZED: &str = "oversized";
const DROP_MALFORMED: &str = "malformed";
const DROP_SLOW: &str = "slow or unreadable";

/// Reads one request line from `stream`: at most [`MAX_REQUEST`] bytes, within
/// [`REQUEST_WAIT`]. Nothing past its line is read (the answer goes back on the same stream).
/// `None`: the client closed without sending anything (a probe of whether a watcher runs).
fn read_request(stream: &UnixStream) -> Result<Option<Request>, &'static str> {
    use std::io::Read;
    let deadline = Instant::now() + REQUEST_WAIT;
    let mut line: Vec<u8> = Vec::with_capacity(512);
    let mut chunk = [0u8; 1024];
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        if left.is_zero() || stream.set_read_timeout(Some(left)).is_err() {
            return Err(DROP_SLOW);
        }
        let n = match (&*stream).read(&mut chunk) {
            Ok(0) => break, // the client closed: its request is what came
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => return Err(DROP_SLOW),
        };
        let end = memchr::memchr(b'\n', &chunk[..n]);
        line.extend_from_slice(&chunk[..end.unwrap_or(n)]);
        if line.len() > MAX_REQUEST {
            return Err(DROP_OVERSIZED);
        }
        if end.is_some() {
            break;
        }
    }
    if line.is_empty() {
        return Ok(None);
    }
    let text = std::str::from_utf8(&line).map_err(|_| DROP_MALFORMED)?;
    serde_json::from_str::<Request>(text.trim_end()).map(Some).map_err(|_| DROP_MALFORMED)
}

fn now_ns() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as i64)
}

/// Runs the watcher until its lifetime ends. `Ok(false)` when another watcher holds the claim.
pub(crate) fn run(opts: &Options) -> io::Result<bool> {
    let places = Places::of(&opts.root).map_err(|e| io::Error::other(e.to_string()))?;
    let Some(_claim) = super::claim(&places.claim)? else { return Ok(false) };
    // We hold the claim: a socket file left there is a dead watcher's.
    let _ = fs::remove_file(&places.socket);
    let listener = UnixListener::bind(&places.socket)?;
    {
        use std::os::unix::fs::PermissionsExt;
        let _ = fs::set_permissions(&places.socket, fs::Permissions::from_mode(0o600));
    }
    let sock_ino = socket_ino(&places.socket);
    let (tx, rx) = mpsc::channel::<Msg>();
    let fs_tx = tx.clone();
    let end_tx = tx.clone();
    let watcher = notify::recommended_watcher(move |ev| {
        let _ = fs_tx.send(Msg::Fs(ev));
    })
    .map_err(|e| io::Error::other(e.to_string()))?;
    let own = super::own_uid();
    std::thread::spawn(move || {
        // Requests dropped so far (oversized, malformed, slow, another user's).
        let mut dropped = 0u64;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let read =
                if super::peer_uid(&stream).is_some_and(|u| u != own) { Err(DROP_PEER) } else { read_request(&stream) };
            let msg = match read {
                Ok(Some(req)) => Msg::Req(stream, req),
                // A probe (connected, closed without a word): whether a watcher runs.
                Ok(None) => continue,
                Err(why) => {
                    dropped += 1;
                    Msg::Dropped(why, dropped)
                }
            };
            if tx.send(msg).is_err() {
                break;
            }
        }
    });
    let mut st = State::new(&places, opts, watcher);
    st.end_tx = Some(end_tx);
    for s in &opts.sessions {
        st.session(s);
    }
    st.observe(&serde_json::json!({"ev": "start", "epoch": st.epoch, "pid": std::process::id()}));
    let root = places.root.clone();
    if opts.processes_only {
        st.degraded = Some(doubt::PROCESSES_ONLY);
    } else {
        // Git's index and the rule files first: the crawl watches ignored folders that hold
        // tracked files.
        st.refresh_rules();
        st.crawl(&root, false);
    }
    st.observe(&serde_json::json!({"ev": "ready", "dirs": st.watched.len(), "doubt": st.degraded}));
    // Written at once: a watcher killed before its first tick still leaves its start, so a
    // reader can say it ran and ended without leaving (`super::absence`).
    st.flush();
    let mut last_tick = Instant::now();
    loop {
        match rx.recv_timeout(Duration::from_millis(250)) {
            Ok(Msg::Fs(ev)) => st.event(ev),
            Ok(Msg::Req(stream, req)) => st.request(stream, req),
            Ok(Msg::End(id, proc, ns)) => st.ended(&id, proc, ns, 0),
            Ok(Msg::Dropped(why, count)) => {
                st.observe(&serde_json::json!({"ev": "dropped", "why": why, "count": count}))
            }
            Err(mpsc::RecvTimeoutError::Timeout) => {}
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
        if last_tick.elapsed() >= Duration::from_secs(1) {
            last_tick = Instant::now();
            let became_checkout = opts.processes_only && fs::symlink_metadata(places.root.join(".git")).is_ok();
            if !st.tick() || socket_ino(&places.socket) != sock_ino || !places.root.is_dir() || became_checkout {
                break;
            }
        }
    }
    st.observe(&serde_json::json!({"ev": "exit"}));
    st.flush();
    if socket_ino(&places.socket) == sock_ino {
        let _ = fs::remove_file(&places.socket);
    }
    Ok(true)
}

fn stamp(m: &fs::Metadata) -> (i64, u64, u64) {
    use std::os::unix::fs::MetadataExt;
    (m.mtime().saturating_mul(1_000_000_000).saturating_add(m.mtime_nsec()), m.len(), m.ino())
}

/// The stamps of the files outside the work tree that decide what git ignores: the
/// repository's `info/exclude` and configuration, the user's configuration files, and
/// `core.excludesFile` (or its default), as one string.
/// `known`: the configuration files' stamps and the `core.excludesFile` they named last time
/// (the configuration is parsed again only when one of them changed: a few stats per answer).
fn rules_fingerprint(repo: &git2::Repository, known: &mut (String, Option<PathBuf>)) -> String {
    let mut files: Vec<PathBuf> = vec![repo.commondir().join("config"), repo.path().join("config.worktree")];
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let xdg =
        std::env::var_os("XDG_CONFIG_HOME").map(PathBuf::from).or_else(|| home.as_ref().map(|h| h.join(".config")));
    if let Some(h) = &home {
        files.push(h.join(".gitconfig"));
    }
    if let Some(x) = &xdg {
        files.push(x.join("git").join("config"));
        files.push(x.join("git").join("ignore"));
    }
    if let Some(g) = std::env::var_os("GIT_CONFIG_GLOBAL") {
        files.push(PathBuf::from(g));
    }
    let print = |files: &[PathBuf]| {
        let mut fp = String::from("v1");
        for f in files {
            let st = fs::metadata(f).ok().map(|m| stamp(&m));
            fp.push_str(&format!("|{}={st:?}", f.display()));
        }
        fp
    };
    let config = print(&files);
    if config != known.0 {
        // Read fresh (not the repository's cached configuration): the key may have just changed.
        known.1 = git2::Config::open(&repo.commondir().join("config"))
            .ok()
            .and_then(|c| c.get_path("core.excludesfile").ok())
            .or_else(|| git2::Config::open_default().ok().and_then(|c| c.get_path("core.excludesfile").ok()));
        known.0 = config.clone();
    }
    let mut rules = vec![repo.commondir().join("info").join("exclude")];
    rules.extend(known.1.clone());
    config + &print(&rules)
}

fn socket_ino(path: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    fs::symlink_metadata(path).ok().map(|m| m.ino())
}

struct Session {
    proc: crate::procinfo::ProcRef,
    ended: bool,
    /// Its end is reported by a thread waiting on its pidfd (the exact moment), not by the
    /// once-a-second poll.
    exact: bool,
}

/// What an event changed: the bytes (or the name: made, removed, renamed), or only the
/// attributes (mode, times, owner: `chmod`, `touch -r`; a close after opening for writing),
/// which never re-date content.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum Kind {
    Content,
    Attribute,
}

impl Kind {
    fn of(kind: &EventKind) -> Kind {
        match kind {
            EventKind::Modify(ModifyKind::Metadata(_)) => Kind::Attribute,
            // A close after opening for writing: `touch` opens the file so; a write through
            // `write(2)` or a truncation is a `Modify(Data)` event of its own (only a write
            // through a mapping has none, and is dated by its ctime then).
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => Kind::Attribute,
            _ => Kind::Content,
        }
    }
    fn name(self) -> &'static str {
        match self {
            Kind::Content => "content",
            Kind::Attribute => "attribute",
        }
    }
}

/// One coalesced line of the observer file: a path's changes of one kind in one batch, from
/// the first event's time to the last's.
struct Pending {
    path: String,
    kind: Kind,
    first: i64,
    last: i64,
}

/// Paths a batch coalesces at most before it is written out.
const MAX_BATCH: usize = 50_000;

/// A client waiting for its cookie: its stream, its clock, since when it waits, and whether
/// the observer file's pending lines go out before its answer ([`super::Request::flush`]).
type Waiting = (UnixStream, Option<Clock>, Instant, bool);

struct State {
    root: PathBuf,
    epoch: String,
    seq: u64,
    floor: u64,
    floor_why: &'static str,
    degraded: Option<&'static str>,
    changed: HashMap<String, u64>,
    watched: HashSet<PathBuf>,
    watcher: notify::RecommendedWatcher,
    repo: Option<git2::Repository>,
    /// Git's index as last read ([`State::refresh_rules`]): a tracked file is reported even
    /// where an ignore rule matches it, and an ignored folder holding tracked files is watched.
    index: Option<git2::Index>,
    /// The stamp of the index file `index` was read from.
    index_st: Option<(i64, u64, u64)>,
    /// The stamps of every file that decides what git ignores besides `.gitignore` files
    /// (`info/exclude`, `core.excludesFile`, the git configuration).
    rules_fp: String,
    /// The configuration files' stamps, and the `core.excludesFile` they name.
    config_known: (String, Option<PathBuf>),
    /// Files with more than one name (relative paths): named in every answer.
    linked: HashSet<String>,
    /// Nested repositories whose `.git` appeared while this watcher ran (relative paths): this
    /// repository's ignore rules do not reach into them. Older ones stay as the rules say (the
    /// full scan does not walk them), so an ignored `node_modules/` in one costs no watches.
    made_nested: HashSet<String>,
    max_dirs: usize,
    /// Cookies seen (name → when), for a request that arrives after its cookie's event.
    seen: HashMap<String, Instant>,
    /// Requests waiting for their cookie.
    pending: HashMap<String, Vec<Waiting>>,
    sessions: HashMap<String, Session>,
    last_alive: Instant,
    linger: Duration,
    observed: Option<PathBuf>,
    out: Vec<u8>,
    /// Changes not written yet, coalesced: one line per path and kind per batch
    /// ([`State::drain`]), in the order of their first event.
    batch: Vec<Pending>,
    /// Where each (path, kind) of `batch` is.
    batch_at: HashMap<(String, Kind), usize>,
    /// Where the pidfd threads report a session's end.
    end_tx: Option<mpsc::Sender<Msg>>,
}

impl State {
    fn new(places: &Places, opts: &Options, watcher: notify::RecommendedWatcher) -> State {
        State {
            root: places.root.clone(),
            epoch: format!("{:x}-{:x}", std::process::id(), now_ns()),
            seq: 0,
            floor: 0,
            floor_why: doubt::NO_CLOCK,
            degraded: None,
            changed: HashMap::new(),
            watched: HashSet::new(),
            watcher,
            repo: git2::Repository::open(&places.root).ok(),
            index: None,
            index_st: None,
            rules_fp: String::new(),
            config_known: (String::new(), None),
            linked: HashSet::new(),
            made_nested: HashSet::new(),
            max_dirs: opts.max_dirs,
            seen: HashMap::new(),
            pending: HashMap::new(),
            sessions: HashMap::new(),
            last_alive: Instant::now(),
            linger: opts.linger,
            observed: opts.observed.clone(),
            out: Vec::new(),
            batch: Vec::new(),
            batch_at: HashMap::new(),
            end_tx: None,
        }
    }

    /// `path` relative to the work tree, as record text: a name that is not UTF-8 is kept
    /// mapped (`fsutil::name`), as the full scan lists it.
    fn rel(&self, path: &Path) -> Option<String> {
        let rel = path.strip_prefix(&self.root).ok()?;
        Some(crate::fsutil::name::encode_os(rel.as_os_str()).replace('\\', "/"))
    }

    fn ignored(&self, rel: &str) -> bool {
        self.repo.as_ref().is_some_and(|r| r.is_path_ignored(crate::fsutil::name::to_path(rel)).unwrap_or(false))
    }

    /// Git tracks the file `rel`.
    fn tracked(&self, rel: &str) -> bool {
        self.index.as_ref().is_some_and(|i| i.get_path(&crate::fsutil::name::to_path(rel), 0).is_some())
    }

    /// A file the full scan does not list: ignored and not tracked (inside a nested repository
    /// this one's rules do not reach: the snapshot decides by the nested repository's age).
    fn hidden(&self, rel: &str) -> bool {
        self.ignored(rel) && !self.tracked(rel) && !self.in_nested(rel)
    }

    /// `rel` is below a folder (under the root, above `rel`) whose `.git` appeared while this
    /// watcher ran ([`State::made_nested`]), and this repository's rules do not ignore that
    /// folder itself (then git lists it, whole).
    fn in_nested(&self, rel: &str) -> bool {
        if self.made_nested.is_empty() {
            return false;
        }
        let mut at = rel.rfind('/').map(|i| &rel[..i]);
        while let Some(dir) = at {
            if self.made_nested.contains(dir)
                && fs::symlink_metadata(self.root.join(crate::fsutil::name::to_path(dir)).join(".git")).is_ok()
            {
                return !self.ignored(&format!("{dir}/"));
            }
            at = dir.rfind('/').map(|i| &dir[..i]);
        }
        false
    }

    /// A folder whose files the full scan does not list: ignored, and no tracked file below.
    fn dir_hidden(&self, rel: &str) -> bool {
        if !self.ignored(&format!("{rel}/")) || self.in_nested(rel) {
            return false;
        }
        let prefix = format!("{rel}/");
        self.index.as_ref().is_none_or(|i| i.find_prefix(crate::fsutil::name::to_path(&prefix).as_ref()).is_err())
    }

    /// A `.walj` folder that is walj's own (a project's: only cookies there are events), not
    /// a user's folder of that name (`docs/.walj/`), whose files the full scan lists.
    fn walj_own(&self, dir: &Path) -> bool {
        dir.parent() == Some(self.root.as_path())
            || fs::symlink_metadata(dir.join("journal.jsonl")).is_ok()
            || fs::symlink_metadata(dir.join("bash")).is_ok_and(|m| m.is_dir())
    }

    /// Notes whether the file `rel` has other names (hard links): those are named in every
    /// answer.
    fn note_links(&mut self, rel: &str, meta: Option<&fs::Metadata>) {
        use std::os::unix::fs::MetadataExt;
        if meta.is_some_and(|m| m.is_file() && m.nlink() > 1) {
            if self.linked.len() >= MAX_LINKED && !self.linked.contains(rel) {
                self.degrade_with(doubt::TOO_MANY_LINKED);
                return;
            }
            self.linked.insert(rel.to_string());
        } else {
            self.linked.remove(rel);
        }
    }

    /// Re-reads what decides which files the full scan lists when it changed: git's index
    /// (then ignored folders that now hold tracked files are watched) and the ignore rules
    /// outside the work tree (then nothing before is vouched for, and newly un-ignored
    /// folders are watched). Called before each answer: a snapshot after either change is a
    /// full scan anyway (the index changed, or the floor was raised), and the watches made here
    /// exist before the answer that starts the next command's clock.
    fn refresh_rules(&mut self) {
        let mut known = std::mem::take(&mut self.config_known);
        let fp = self.repo.as_ref().map(|r| rules_fingerprint(r, &mut known)).unwrap_or_default();
        self.config_known = known;
        let rules_changed = fp != self.rules_fp;
        let first = self.rules_fp.is_empty();
        self.rules_fp = fp;
        let index_path = self.repo.as_ref().map(|r| r.path().join("index"));
        let st = index_path.as_ref().and_then(|p| fs::metadata(p).ok()).map(|m| stamp(&m));
        let index_changed = st != self.index_st;
        if index_changed {
            self.index_st = st;
            self.index = index_path.and_then(|p| git2::Index::open(&p).ok());
        }
        if first {
            return;
        }
        if rules_changed {
            // A fresh repository: no configuration or rule file cached from before.
            self.repo = git2::Repository::open(&self.root).ok();
            self.raise_floor(doubt::EXCLUDES);
            self.recrawl();
        } else if index_changed {
            self.watch_tracked();
        }
    }

    /// Watches every folder holding a tracked file that is not watched yet (one git ignores),
    /// and the folders between it and the nearest watched one.
    fn watch_tracked(&mut self) {
        let Some(index) = self.index.as_ref() else { return };
        let mut dirs: Vec<PathBuf> = Vec::new();
        let mut last: Vec<u8> = Vec::new();
        for e in index.iter() {
            let path = &e.path;
            let Some(cut) = memchr::memrchr(b'/', path) else { continue };
            let dir = &path[..cut];
            if dir == last.as_slice() {
                continue;
            }
            last = dir.to_vec();
            let abs = self.root.join(crate::fsutil::name::to_path(&crate::fsutil::name::encode(dir)));
            if !self.watched.contains(&abs) {
                dirs.push(abs);
            }
        }
        for d in dirs {
            let mut chain = Vec::new();
            let mut at = d.as_path();
            while !self.watched.contains(at) && at.starts_with(&self.root) && at != self.root {
                chain.push(at.to_path_buf());
                match at.parent() {
                    Some(p) => at = p,
                    None => break,
                }
            }
            for c in chain.into_iter().rev() {
                if c.is_dir() {
                    self.crawl(&c, false);
                }
            }
        }
    }

    /// Stats every file in the watched folders and notes those with several names.
    fn sweep_links(&mut self) {
        let dirs: Vec<PathBuf> = self.watched.iter().cloned().collect();
        for d in dirs {
            if d.file_name().is_some_and(|n| n == ".walj") && self.walj_own(&d) {
                continue;
            }
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for ent in rd.flatten() {
                if !ent.file_type().is_ok_and(|t| t.is_file()) {
                    continue;
                }
                let Some(rel) = self.rel(&ent.path()) else { continue };
                if !self.hidden(&rel) {
                    let meta = ent.metadata().ok();
                    self.note_links(&rel, meta.as_ref());
                }
            }
        }
    }

    /// A `.git` appeared in `dir` (a nested repository made): this repository's ignore rules no
    /// longer reach into it, so every file below is named (the snapshot decides by the nested
    /// repository's age), and folders the rules hid get their watches.
    fn nested_made(&mut self, dir: &Path) {
        let Some(rel) = self.rel(dir).filter(|r| !self.dir_hidden(r)) else { return };
        self.made_nested.insert(rel);
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if !self.watched.contains(&d) {
                self.crawl(&d, true);
                continue;
            }
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for ent in rd.flatten() {
                let Ok(ft) = ent.file_type() else { continue };
                // Git's own folder stays out; a gitlink `.git` file is named like the rest.
                if ent.file_name() == ".git" && !ft.is_file() {
                    continue;
                }
                let Some(rel) = self.rel(&ent.path()) else { continue };
                if ft.is_dir() {
                    stack.push(ent.path());
                } else if !self.hidden(&rel) {
                    self.mark(rel, Kind::Content);
                }
            }
        }
    }

    /// Crawls the whole work tree again (folders already watched are read, not watched again):
    /// after the ignore rules changed, a folder they no longer ignore gets its watch, and a file
    /// they no longer ignore with more than one name is noted (`linked`).
    fn recrawl(&mut self) {
        let root = self.root.clone();
        let mut stack = vec![root];
        while let Some(d) = stack.pop() {
            if !self.watched.contains(&d) {
                self.crawl(&d, false);
                continue;
            }
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for ent in rd.flatten() {
                if ent.file_type().is_ok_and(|t| t.is_file()) {
                    // A file the old rules hid was never noted: one with another name (a hard
                    // link from outside) is named in every answer from now on.
                    if let Some(rel) = self.rel(&ent.path())
                        && !self.hidden(&rel)
                    {
                        let meta = ent.metadata().ok();
                        self.note_links(&rel, meta.as_ref());
                    }
                    continue;
                }
                if !ent.file_type().is_ok_and(|t| t.is_dir()) || ent.file_name() == ".git" {
                    continue;
                }
                let path = ent.path();
                let Some(rel) = self.rel(&path) else { continue };
                if ent.file_name() == ".walj" && self.walj_own(&path) {
                    continue;
                }
                if !self.dir_hidden(&rel) {
                    stack.push(path);
                }
            }
        }
    }

    fn raise_floor(&mut self, why: &'static str) {
        self.seq += 1;
        self.floor = self.seq;
        self.floor_why = why;
        self.changed.clear();
        self.observe(&serde_json::json!({"ev": "doubt", "why": why}));
    }

    fn mark(&mut self, rel: String, kind: Kind) {
        self.seq += 1;
        if self.changed.len() >= MAX_KEPT {
            self.raise_floor(doubt::TOO_MANY);
        }
        self.note_change(&rel, kind);
        self.changed.insert(rel, self.seq);
    }

    /// Notes a change for the observer file, coalesced with the batch's earlier ones on the path
    /// of the same kind (a 20 MB file rewritten is thousands of write events, one line).
    fn note_change(&mut self, rel: &str, kind: Kind) {
        if self.observed.is_none() {
            return;
        }
        let ns = now_ns();
        if let Some(&i) = self.batch_at.get(&(rel.to_string(), kind)) {
            self.batch[i].last = ns;
            return;
        }
        if self.batch.len() >= MAX_BATCH {
            self.drain();
        }
        self.batch_at.insert((rel.to_string(), kind), self.batch.len());
        self.batch.push(Pending { path: rel.to_string(), kind, first: ns, last: ns });
    }

    /// Writes the batch's coalesced changes into the pending lines: before any other line (a
    /// session's end, a doubt…), so no change line spans one, and at each flush.
    fn drain(&mut self) {
        self.batch_at.clear();
        for p in std::mem::take(&mut self.batch) {
            let v = serde_json::json!({"ev": "change", "path": p.path, "kind": p.kind.name(), "first": p.first, "ns": p.last});
            if let Ok(mut line) = serde_json::to_vec(&v) {
                line.push(b'\n');
                self.out.extend_from_slice(&line);
            }
        }
    }

    /// Watches `dir` and every folder below it git does not ignore; with `report`, every
    /// file found is a change (it may have been made before the watch existed).
    fn crawl(&mut self, dir: &Path, report: bool) {
        let mut stack = vec![dir.to_path_buf()];
        while let Some(d) = stack.pop() {
            if self.watched.contains(&d) {
                continue;
            }
            if self.watched.len() >= self.max_dirs {
                self.degrade();
                return;
            }
            match self.watcher.watch(&d, RecursiveMode::NonRecursive) {
                Ok(()) => {
                    self.watched.insert(d.clone());
                }
                Err(e) if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) => {
                    self.degrade();
                    return;
                }
                Err(_) => continue,
            }
            // A new folder that holds a `.git` already (made before its watch existed, so no
            // event of it comes): a nested repository made while this watcher ran, as
            // `nested_made` notes it, so this repository's rules do not hide its files.
            if report
                && d != self.root
                && fs::symlink_metadata(d.join(".git")).is_ok()
                && let Some(rel) = self.rel(&d).filter(|r| !self.dir_hidden(r))
            {
                self.made_nested.insert(rel);
            }
            let Ok(rd) = fs::read_dir(&d) else { continue };
            for ent in rd.flatten() {
                let Ok(ft) = ent.file_type() else { continue };
                let path = ent.path();
                let Some(rel) = self.rel(&path) else { continue };
                let name = ent.file_name();
                if ft.is_dir() {
                    if name == ".git" {
                        continue;
                    }
                    if name == ".walj" && self.walj_own(&path) {
                        // Cookies only: watched, never crawled.
                        if self.watcher.watch(&path, RecursiveMode::NonRecursive).is_ok() {
                            self.watched.insert(path);
                        }
                        continue;
                    }
                    if !self.dir_hidden(&rel) {
                        stack.push(path);
                    }
                } else if !self.hidden(&rel) {
                    if ft.is_file() {
                        let meta = ent.metadata().ok();
                        self.note_links(&rel, meta.as_ref());
                    }
                    if report {
                        self.mark(rel, Kind::Content);
                    }
                }
            }
        }
    }

    fn degrade(&mut self) {
        self.degrade_with(doubt::WATCH_LIMIT);
    }

    fn degrade_with(&mut self, why: &'static str) {
        if self.degraded.is_none() {
            self.degraded = Some(why);
            self.observe(&serde_json::json!({"ev": "doubt", "why": why}));
        }
    }

    fn event(&mut self, ev: notify::Result<notify::Event>) {
        let ev = match ev {
            Ok(ev) => ev,
            Err(e) => {
                if matches!(e.kind, notify::ErrorKind::MaxFilesWatch) {
                    self.degrade();
                } else {
                    self.raise_floor(doubt::OVERFLOW);
                }
                return;
            }
        };
        if ev.need_rescan() {
            self.raise_floor(doubt::OVERFLOW);
            return;
        }
        let counts = match ev.kind {
            EventKind::Access(AccessKind::Close(AccessMode::Write)) => true,
            EventKind::Access(_) => false,
            _ => true,
        };
        if !counts {
            return;
        }
        let create = matches!(ev.kind, EventKind::Create(_));
        // The event says the name went away (removed, or renamed from): whatever stands there
        // by the time the event is read is another file or folder.
        let gone_event = |i: usize| match ev.kind {
            EventKind::Remove(_) => true,
            EventKind::Modify(ModifyKind::Name(RenameMode::From)) => true,
            EventKind::Modify(ModifyKind::Name(RenameMode::Both)) => i == 0,
            _ => false,
        };
        for (i, path) in ev.paths.iter().enumerate() {
            let Some(rel) = self.rel(path) else { continue };
            // A `.git` made in a folder below the root: a nested repository, which this
            // repository's rules no longer reach into.
            if create
                && rel != ".git"
                && !rel.starts_with(".git/")
                && !rel.contains("/.git/")
                && path.file_name().is_some_and(|n| n == ".git")
                && let Some(dir) = path.parent()
            {
                self.nested_made(dir);
            }
            // Git's own stays out; a gitlink `.git` file below the top goes on as any file.
            if rel.is_empty() || crate::fsutil::git_own(&rel, path) {
                continue;
            }
            let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
            let parent_is_walj = path.parent().and_then(Path::file_name).is_some_and(|n| n == ".walj");
            if parent_is_walj && create && name.starts_with(super::COOKIE_PREFIX) {
                self.cookie(name.to_string());
                continue;
            }
            // Inside walj's own `.walj/` nothing is a change; a user's folder of that name
            // (`docs/.walj/`) is listed by the full scan like any other.
            if let Some(i) = rel.split('/').position(|c| c == ".walj") {
                let wdir: String = rel.split('/').take(i + 1).collect::<Vec<_>>().join("/");
                let wabs = self.root.join(crate::fsutil::name::to_path(&wdir));
                if self.walj_own(&wabs) {
                    if rel == wdir && path.is_dir() && self.watcher.watch(path, RecursiveMode::NonRecursive).is_ok() {
                        self.watched.insert(path.clone());
                    }
                    continue;
                }
            }
            if name == ".gitignore" {
                self.raise_floor(doubt::IGNORE_RULES);
                // A fresh repository (no rule cached from before), and the folders the new rules
                // no longer ignore get their watches.
                self.repo = git2::Repository::open(&self.root).ok();
                self.recrawl();
                continue;
            }
            let meta = fs::symlink_metadata(path).ok();
            let is_dir = meta.as_ref().is_some_and(fs::Metadata::is_dir);
            if (!is_dir || gone_event(i)) && self.watched.contains(path) {
                // A watched folder moved away or removed: its watches go (a moved folder's
                // would keep reporting under its old name). Also when a new folder already
                // stands at its name (made right after the move): it is crawled as new below.
                let gone: Vec<PathBuf> = self.watched.iter().filter(|w| w.starts_with(path)).cloned().collect();
                for w in gone {
                    let _ = self.watcher.unwatch(&w);
                    self.watched.remove(&w);
                }
            }
            if is_dir {
                if self.dir_hidden(&rel) {
                    continue;
                }
                self.mark(rel, Kind::Content);
                if !self.watched.contains(path) {
                    self.crawl(path, true);
                }
                continue;
            }
            if meta.is_some() && self.hidden(&rel) {
                continue;
            }
            self.note_links(&rel, meta.as_ref());
            if create && self.linked.contains(&rel) {
                // A new name of a file the tree already has (`ln a b`): its other names are
                // found by their inode (a link's count changing is no event in a folder).
                self.sweep_links();
            }
            self.mark(rel, Kind::of(&ev.kind));
        }
    }

    fn answer(&self, since: Option<&Clock>) -> Answer {
        let mut a = Answer {
            root: self.root.to_string_lossy().into_owned(),
            epoch: self.epoch.clone(),
            seq: self.seq,
            ..Answer::default()
        };
        let why = match since {
            _ if self.degraded.is_some() => self.degraded,
            None => Some(doubt::NO_CLOCK),
            Some(c) if c.epoch != self.epoch => Some(doubt::RESTARTED),
            Some(c) if c.seq < self.floor => Some(self.floor_why),
            Some(_) => None,
        };
        match (why, since) {
            (Some(w), _) => a.doubt = Some(w.to_string()),
            (None, Some(c)) => {
                let mut paths: Vec<String> =
                    self.changed.iter().filter(|(_, s)| **s > c.seq).map(|(p, _)| p.clone()).collect();
                // A file with another name may have been written through it, out of sight.
                paths.extend(self.linked.iter().cloned());
                paths.sort();
                paths.dedup();
                a.paths = Some(paths);
            }
            (None, None) => a.doubt = Some(doubt::NO_CLOCK.to_string()),
        }
        a
    }

    fn reply(&self, mut stream: UnixStream, since: Option<&Clock>) {
        let mut line = serde_json::to_vec(&self.answer(since)).unwrap_or_default();
        line.push(b'\n');
        let _ = stream.set_write_timeout(Some(Duration::from_millis(50)));
        let _ = stream.write_all(&line);
    }

    fn cookie(&mut self, name: String) {
        match self.pending.remove(&name) {
            Some(waiting) => {
                if waiting.iter().any(|w| w.3) {
                    // Every event before the cookie's is in `out`: to the file, then the answer.
                    self.flush();
                }
                for (stream, since, _, _) in waiting {
                    self.reply(stream, since.as_ref());
                }
            }
            None => {
                self.seen.insert(name, Instant::now());
            }
        }
    }

    fn request(&mut self, stream: UnixStream, req: Request) {
        if let Some(s) = &req.session {
            self.session(s);
        }
        if self.degraded != Some(doubt::PROCESSES_ONLY) {
            self.refresh_rules();
        }
        self.last_alive = Instant::now();
        if req.root.as_deref().is_some_and(|r| Path::new(r) != self.root) {
            // Another checkout's client (a socket reached under another name): our root tells it.
            self.reply(stream, None);
            return;
        }
        match (req.op.as_str(), req.cookie) {
            // Nothing is watched: no cookie will come; the answer is the doubt at once.
            ("sync", Some(_)) if self.degraded == Some(doubt::PROCESSES_ONLY) => self.reply(stream, None),
            ("sync", Some(cookie)) => {
                if self.seen.remove(&cookie).is_some() {
                    if req.flush {
                        self.flush();
                    }
                    self.reply(stream, req.since.as_ref());
                } else {
                    self.pending.entry(cookie).or_default().push((stream, req.since, Instant::now(), req.flush));
                }
            }
            _ => self.reply(stream, req.since.as_ref()),
        }
    }

    fn session(&mut self, s: &SessionRef) {
        let proc = crate::procinfo::ProcRef { pid: s.pid, start: s.start };
        if self.sessions.get(&s.id).is_some_and(|k| k.proc == proc) {
            return;
        }
        self.observe(&serde_json::json!({"ev": "session", "session": s.id, "pid": s.pid, "start": s.start}));
        let exact = self.end_tx.clone().is_some_and(|tx| wait_for_end(tx, s.id.clone(), proc));
        self.sessions.insert(s.id.clone(), Session { proc, ended: false, exact });
    }

    /// A session's process is gone, at `ns`, within `within_ms` before it. Written at once:
    /// a reader deriving a killed command's changes looks for it right after the death.
    fn ended(&mut self, id: &str, proc: crate::procinfo::ProcRef, ns: i64, within_ms: u64) {
        let Some(s) = self.sessions.get_mut(id).filter(|s| s.proc == proc && !s.ended) else { return };
        s.ended = true;
        // The changes before the end are written before it: no line spans it.
        self.drain();
        let mut v = serde_json::json!({"ev": "end", "session": id, "pid": proc.pid, "start": proc.start, "within_ms": within_ms});
        if self.observed.is_some() {
            v["ns"] = serde_json::json!(ns);
            if let Ok(mut line) = serde_json::to_vec(&v) {
                line.push(b'\n');
                self.out.extend_from_slice(&line);
            }
        }
        self.flush();
    }

    /// Once a second: sessions' processes, stale cookies, the observer file. False: time to go.
    fn tick(&mut self) -> bool {
        let mut ended = Vec::new();
        let mut alive = false;
        for (id, s) in &mut self.sessions {
            if s.ended || s.exact {
                alive |= !s.ended;
                continue;
            }
            match crate::procinfo::liveness(s.proc) {
                crate::procinfo::Liveness::Gone => ended.push((id.clone(), s.proc)),
                _ => alive = true,
            }
        }
        for (id, p) in ended {
            // Polled each second: it ended within the second before this time.
            self.ended(&id, p, now_ns(), 1000);
        }
        if alive {
            self.last_alive = Instant::now();
        }
        self.seen.retain(|_, t| t.elapsed() < Duration::from_secs(10));
        self.pending.retain(|_, w| {
            w.retain(|(_, _, t, _)| t.elapsed() < Duration::from_secs(10));
            !w.is_empty()
        });
        self.flush();
        self.last_alive.elapsed() < self.linger
    }

    fn observe(&mut self, v: &serde_json::Value) {
        if self.observed.is_none() {
            return;
        }
        self.drain();
        let mut v = v.clone();
        v["ns"] = serde_json::json!(now_ns());
        if let Ok(mut line) = serde_json::to_vec(&v) {
            line.push(b'\n');
            self.out.extend_from_slice(&line);
        }
        if self.out.len() > 1 << 20 {
            self.flush();
        }
    }

    fn flush(&mut self) {
        self.drain();
        let Some(path) = &self.observed else { return };
        if self.out.is_empty() {
            return;
        }
        if fs::symlink_metadata(path).is_ok_and(|m| m.is_file() && m.len() > MAX_OBSERVED) {
            let _ = fs::rename(path, path.with_extension("jsonl.1"));
        }
        // Never through a link planted at its name (`open_private`: `O_NOFOLLOW`); then the
        // lines are lost, and `walj doctor` names the link.
        if let Ok(mut f) = crate::fsutil::open_private(path, fs::OpenOptions::new().append(true).create(true))
            && f.metadata().is_ok_and(|m| m.is_file())
        {
            let _ = f.write_all(&self.out);
        }
        self.out.clear();
    }
}

/// Waits on `proc`'s pidfd in a thread and sends [`Msg::End`] the moment it exits (Linux).
/// False where that cannot be done (another platform, no pidfd, the process already
/// replaced): the once-a-second poll reports the end then.
fn wait_for_end(tx: mpsc::Sender<Msg>, id: String, proc: crate::procinfo::ProcRef) -> bool {
    #[cfg(target_os = "linux")]
    {
        use rustix::event::{PollFd, PollFlags, poll};
        use rustix::process::{Pid, PidfdFlags, pidfd_open};
        let Some(pid) = i32::try_from(proc.pid).ok().and_then(Pid::from_raw) else { return false };
        let Ok(fd) = pidfd_open(pid, PidfdFlags::empty()) else { return false };
        // The pid must still be the session's process (not reused): checked after the fd
        // holds it, so it cannot be replaced in between.
        if crate::procinfo::liveness(proc) != crate::procinfo::Liveness::Running {
            return false;
        }
        std::thread::spawn(move || {
            let mut fds = [PollFd::new(&fd, PollFlags::IN)];
            loop {
                match poll(&mut fds, None) {
                    Ok(_) => break,
                    Err(rustix::io::Errno::INTR) => continue,
                    Err(_) => return,
                }
            }
            let _ = tx.send(Msg::End(id, proc, now_ns()));
        });
        true
    }
    #[cfg(not(target_os = "linux"))]
    {
        let _ = (tx, id, proc);
        false
    }
}
