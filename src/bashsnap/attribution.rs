//! Who made a change a command's snapshot saw: the one rule, for finished and killed commands
//! alike (docs/architecture.md, "Who made a change").
//!
//! A Bash command's side effects are found by comparing snapshots, and a comparison cannot
//! say who wrote. What walj knows is when things could write: every command (any session,
//! any subagent) has a **window** from its intent to its outcome — or, when it never
//! finished, until walj saw its processes gone (its own derivation is bounded by its session's
//! last sign of life) — and a change has a **time**, its ctime (never the mtime: `touch -d`,
//! `cp -p`, `tar` and `rsync -a` set that freely; a metadata change after a crash may only make
//! a change uncertain, never move it out of the command). Changes a
//! journaled call explains (its `after` blob or intended content) were taken out before this
//! rule runs. For the rest:
//!
//! - made after the session's last sign of life (beyond the clock margin): [`Verdict::AfterStop`]
//!   — the orphaned command's, or someone's after Claude Code stopped; walj cannot tell which
//!   without its watcher;
//! - made while another window was open, or while another writer was known active (another
//!   session's records): [`Verdict::Uncertain`], naming the other windows as candidates;
//! - otherwise the command's, [`Verdict::Certain`].
//!
//! A deletion has no ctime of its own: its parent folder's ctime bounds it from above
//! ([`At::NoLaterThan`]), which can only prove "before" — a later folder time means "maybe
//! later". Within the clock margin of any boundary the verdict is never certain.
//!
//! When several commands' windows were open at a change, its time cannot say whose it is;
//! their command lines can ([`evidence`]): a command whose text names the changed file, a
//! pattern matching it (`out/o$i.txt` for `out/o2.txt`) or — weaker — its folder is the
//! likelier writer (the main thread's loop beside an async subagent's `echo s > sub.txt;
//! sleep 90`). The hint chooses under which command the change is listed, never makes it
//! certain; without it the change is undecided ([`Owner::Undecided`]: "uncertain: A or B",
//! counted in neither command's changes). When several killed commands saw one change,
//! [`owner`] names the one that keeps it: a change is listed once. A killed command's window
//! closes when walj sees its processes gone, so a dead session's command is no suspect for
//! what is made after that. Claude Code's own temporary files ([`claude_temp_of`]) are never
//! changes.
//!
//! Pure: times are milliseconds since the epoch, no I/O (the property test below drives it
//! over random interleavings of windows, deaths and changes).

/// One command's (or subagent's) window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Window<'a> {
    pub id: &'a str,
    /// Its intent.
    pub open: i64,
    /// Its outcome; `None`: it never finished (open until its session's last sign of life).
    pub close: Option<i64>,
}

impl Window<'_> {
    /// Whether the window may have been open at `t`, give or take `margin`.
    fn open_at(&self, t: i64, margin: i64) -> bool {
        self.open <= t + margin && self.close.is_none_or(|c| t <= c + margin)
    }
    /// Whether it may have been open at any time in `[from, to]`.
    fn overlaps(&self, from: i64, to: i64, margin: i64) -> bool {
        self.open <= to + margin && self.close.is_none_or(|c| from <= c + margin)
    }
}

/// When a change was made, as far as the disk says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum At {
    /// Its ctime.
    Exact(i64),
    /// At or before this (a deletion: its parent folder's ctime).
    NoLaterThan(i64),
    /// No time at all (the parent folder is gone too).
    Unknown,
}

/// What walj can say of one change.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Verdict<'a> {
    /// The command's: only its window was open and no other writer was known.
    Certain,
    /// May be the command's or the candidates' (other windows open at its time; empty: an
    /// other writer, another session or the user, was active).
    Uncertain(Vec<&'a str>),
    /// Made after the session's last sign of life: the orphaned command's, or made after
    /// Claude Code stopped; walj cannot tell without its watcher.
    AfterStop,
}

/// What else went on while the command ran.
#[derive(Debug, Clone, Default)]
pub(crate) struct Scene<'a> {
    /// The other windows in this checkout (any session, any subagent).
    pub others: Vec<Window<'a>>,
    /// From when another writer was known active beside the command (another session's
    /// records in its window).
    pub writer_from: Option<i64>,
    /// The command never finished: its session's last sign of life (the latest of its last
    /// journal record, its transcript's mtime, the last time walj saw its processes).
    pub last_life: Option<i64>,
    /// The clock margin: the file system's ctime granularity and offset from the clock the
    /// journal's times come from (probed, [`super::killed::ctime_margin`]).
    pub margin: i64,
}

/// The verdict on a change at `at` seen by the command whose window is `own`.
pub(crate) fn judge<'a>(own: &Window<'a>, scene: &Scene<'a>, at: At) -> Verdict<'a> {
    let m = scene.margin;
    // The latest moment the change can have been made, and the earliest.
    let (early, late) = match at {
        At::Exact(t) => (t, Some(t)),
        At::NoLaterThan(t) => (own.open, Some(t)),
        At::Unknown => (own.open, None),
    };
    let end = own.close.or(scene.last_life);
    if let Some(life) = scene.last_life {
        match late {
            Some(t) if t > life + m => return Verdict::AfterStop,
            None => return Verdict::AfterStop,
            _ => {}
        }
    }
    let candidates: Vec<&'a str> = scene
        .others
        .iter()
        .filter(|w| w.id != own.id)
        .filter(|w| match (at, late) {
            (At::Exact(t), _) => w.open_at(t, m),
            (_, Some(t)) => w.overlaps(early, t, m),
            (_, None) => w.overlaps(early, end.unwrap_or(i64::MAX - m), m),
        })
        .map(|w| w.id)
        .collect();
    let crowded = scene.writer_from.is_some_and(|f| late.is_none_or(|t| t + m >= f));
    // Within the margin of the session's last sign of life: the change may be after it.
    let near_death = scene.last_life.is_some_and(|life| late.is_some_and(|t| t + m > life && t <= life + m));
    if candidates.is_empty() && !crowded && !near_death { Verdict::Certain } else { Verdict::Uncertain(candidates) }
}

/// A change its ctime `c_at` puts after the session's last sign of life ([`Verdict::AfterStop`]),
/// judged again by the content's own clocks: metadata never re-dates content (a `chmod` or a
/// `touch -r` after the crash moves the ctime, not the bytes). The watcher's last content change
/// on the path (`content`; attribute-only events are logged apart) bounds when the content took
/// its state. Without it (no watcher, or an older one that logged a `chmod` as content), an
/// mtime at or before the last sign of life can make the change uncertain, "redated", never
/// move it out of the command nor make it certain. Returns the verdict, the time the change is
/// dated by, and whether it was redated.
pub(crate) fn redate<'a>(
    own: &Window<'a>,
    scene: &Scene<'a>,
    c_at: i64,
    content: Option<i64>,
    mtime: impl FnOnce() -> Option<i64>,
) -> (Verdict<'a>, At, bool) {
    let mut at = At::Exact(c_at);
    let mut verdict = Verdict::AfterStop;
    if let Some(t) = content
        && t < c_at
    {
        at = At::NoLaterThan(t);
        verdict = judge(own, scene, at);
    }
    let life = scene.last_life.unwrap_or(i64::MAX);
    if verdict == Verdict::AfterStop && mtime().is_some_and(|m| m <= life.saturating_add(scene.margin)) {
        return (Verdict::Uncertain(Vec::new()), at, true);
    }
    (verdict, at, false)
}

/// Who keeps a change several killed commands' snapshots saw ([`owner`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Owner {
    /// The only command open at its time, or the one whose text alone points at the file
    /// (its folder, its name, a pattern matching it): listed under it, in its count.
    Decided(usize),
    /// Several were open and no text singles one out: listed once, under this one (the first
    /// opened), as `undecided` — "uncertain: A or B", counted in neither's changes.
    Undecided(usize),
}

impl Owner {
    /// The index of the command the change is listed under.
    pub(crate) fn index(self) -> usize {
        match self {
            Owner::Decided(i) | Owner::Undecided(i) => i,
        }
    }
}

/// Of the killed commands in `windows` whose snapshots saw a change (`saw`: their indexes),
/// the one that keeps it ([`Owner`]): of those open at its time (all that saw it when its time
/// is not exact), the only one, else the one whose command alone points at the file most
/// strongly (`names[i]`, see [`evidence`]), else none: undecided, listed under the first opened.
/// Every change has exactly one owner.
pub(crate) fn owner(windows: &[Window<'_>], saw: &[usize], names: &[Evidence], at: At, margin: i64) -> Option<Owner> {
    let first = |it: &mut dyn Iterator<Item = usize>| it.min_by_key(|&i| (windows[i].open, windows[i].id));
    let mut open_then: Vec<usize> = match at {
        At::Exact(t) => saw.iter().copied().filter(|&i| windows[i].open_at(t, margin)).collect(),
        _ => saw.to_vec(),
    };
    if open_then.is_empty() {
        open_then = saw.to_vec();
    }
    open_then.sort_unstable();
    open_then.dedup();
    match open_then.as_slice() {
        [] => None,
        [only] => Some(Owner::Decided(*only)),
        _ => {
            let levels: Vec<Evidence> =
                open_then.iter().map(|&i| names.get(i).copied().unwrap_or(Evidence::None)).collect();
            match likelier(&levels) {
                Some(k) => Some(Owner::Decided(open_then[k])),
                None => first(&mut open_then.iter().copied()).map(Owner::Undecided),
            }
        }
    }
}

/// How strongly a command's text points at a changed file: a hint for choosing among windows
/// open at the change, never proof (commands write files they never name — `make`, a script —
/// and name files they only read). Ordered: the file beats its folder beats nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Evidence {
    /// The text says nothing of the file.
    None,
    /// It names the file's folder (`mkdir -p out`, `cd out`, `ls out/`).
    Folder,
    /// It names the file ([`names_path`]) or a pattern that matches it ([`names_pattern`]:
    /// `out/o$i.txt`, `out/*.txt`).
    File,
}

/// What `command`'s text says of the file `rel` ([`Evidence`]).
pub(crate) fn evidence(command: &str, rel: &str) -> Evidence {
    if names_path(command, rel) || names_pattern(command, rel) {
        Evidence::File
    } else if names_folder(command, rel) {
        Evidence::Folder
    } else {
        Evidence::None
    }
}

/// Of the commands open at a change (their [`Evidence`] for it), the one whose text alone
/// points at it most strongly; `None` when none names it or the strongest are several.
pub(crate) fn likelier(levels: &[Evidence]) -> Option<usize> {
    let best = levels.iter().copied().max()?;
    if best == Evidence::None {
        return None;
    }
    let mut at = levels.iter().enumerate().filter(|(_, l)| **l == best).map(|(i, _)| i);
    let one = at.next()?;
    at.next().is_none().then_some(one)
}

/// The file a Claude Code file tool's temporary file stands for: an Edit or Write writes
/// `<file>.tmp.<pid>.<hex>` and renames it over `<file>` within its call, so such a file is
/// part of that call, never a change of its own (one is left behind when Claude Code is killed
/// between the two). `None`: not such a name.
pub(crate) fn claude_temp_of(rel: &str) -> Option<&str> {
    let (rest, tag) = rel.rsplit_once('.')?;
    let (rest, pid) = rest.rsplit_once('.')?;
    let base = rest.strip_suffix(".tmp")?;
    let ok = !tag.is_empty()
        && tag.bytes().all(|b| b.is_ascii_alphanumeric())
        && !pid.is_empty()
        && pid.bytes().all(|b| b.is_ascii_digit())
        && !base.is_empty()
        && !base.ends_with('/');
    ok.then_some(base)
}

/// A command line as a candidate is named by (`candidate_commands`): blanks and line breaks
/// folded to one space, cut to `max` characters with `…`.
pub(crate) fn shortened(command: &str, max: usize) -> String {
    let folded = command.split_whitespace().collect::<Vec<_>>().join(" ");
    if folded.chars().count() <= max {
        return folded;
    }
    let mut out: String = folded.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// The words of a command line, split at blanks, quotes and shell operators.
fn words(command: &str) -> impl Iterator<Item = &str> {
    command
        .split(|c: char| {
            c.is_whitespace() || matches!(c, ';' | '|' | '&' | '<' | '>' | '(' | ')' | '\'' | '"' | '`' | '=')
        })
        .filter(|w| !w.is_empty())
}

/// A word's path components, without `.` and empty ones (`./out//x` → `out`, `x`).
fn components(word: &str) -> Vec<&str> {
    word.split('/').filter(|c| !c.is_empty() && *c != ".").collect()
}

/// Whether the command line names the folder `rel` is in: a word of it holds the folder's
/// path as whole components (`out` for `out/o1.txt` in `mkdir -p out`, `> out/o$i.txt`,
/// `cd ./out`; not in `layout`). A file at the top names no folder.
pub(crate) fn names_folder(command: &str, rel: &str) -> bool {
    let folder: Vec<&str> = components(rel);
    let Some((_, folder)) = folder.split_last() else { return false };
    if folder.is_empty() {
        return false;
    }
    words(command).any(|w| components(w).windows(folder.len()).any(|win| win == folder))
}

/// Whether a word of the command line is a shell pattern that matches `rel`: variables
/// (`$i`, `${n}`, `$(…)`), globs (`*`, `?`, `[…]`) and braces (`{a,b}`) read as wildcards
/// within one component, aligned with `rel` from its end (`out/o$i.txt` and `o*.txt` match
/// `out/o1.txt`). A pattern whose file part is all wildcard (`$f`, `*`) names nothing.
pub(crate) fn names_pattern(command: &str, rel: &str) -> bool {
    let target = components(rel);
    if target.is_empty() {
        return false;
    }
    words(command).filter(|w| w.contains(['$', '*', '?', '[', '{'])).any(|w| {
        let glob = to_glob(w);
        let parts = components(&glob);
        let Some(last) = parts.last() else { return false };
        if !last.chars().any(|c| c != '*' && c != '?') {
            return false;
        }
        let n = parts.len().min(target.len());
        parts[parts.len() - n..].iter().zip(&target[target.len() - n..]).all(|(p, t)| glob_match(p, t))
    })
}

/// A shell word as a glob of `*` and `?`: variables, braces and classes become wildcards.
fn to_glob(word: &str) -> String {
    let mut out = String::with_capacity(word.len());
    let mut it = word.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '$' => {
                match it.peek() {
                    Some('{') => {
                        for d in it.by_ref() {
                            if d == '}' {
                                break;
                            }
                        }
                    }
                    _ => {
                        while it.peek().is_some_and(|d| d.is_alphanumeric() || *d == '_') {
                            it.next();
                        }
                    }
                }
                out.push('*');
            }
            '{' => {
                for d in it.by_ref() {
                    if d == '}' {
                        break;
                    }
                }
                out.push('*');
            }
            '[' => {
                for d in it.by_ref() {
                    if d == ']' {
                        break;
                    }
                }
                out.push('?');
            }
            _ => out.push(c),
        }
    }
    out
}

/// Whether `name` matches the glob `pat` (`*`: any run of characters, `?`: one).
fn glob_match(pat: &str, name: &str) -> bool {
    let (p, n): (Vec<char>, Vec<char>) = (pat.chars().collect(), name.chars().collect());
    let (mut i, mut j) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while j < n.len() {
        if i < p.len() && (p[i] == '?' || p[i] == n[j]) {
            i += 1;
            j += 1;
        } else if i < p.len() && p[i] == '*' {
            star = Some((i, j));
            i += 1;
        } else if let Some((si, sj)) = star {
            i = si + 1;
            j = sj + 1;
            star = Some((si, sj + 1));
        } else {
            return false;
        }
    }
    p[i..].iter().all(|c| *c == '*')
}

/// Whether the command line `command` names the file `rel` (a path relative to the project,
/// `/`-separated): its file name appears as a word of its own — not inside a longer name
/// (`sub.log` is named by `echo s > sub.log`, `>./logs/sub.log` and `cat "sub.log"`, not by
/// `echo x > mysub.log` or `sub.log.bak`). A hint for choosing among open windows, not proof:
/// commands can write files they never name (`make`, a script), and name files they only read.
pub(crate) fn names_path(command: &str, rel: &str) -> bool {
    let name = rel.rsplit('/').next().unwrap_or(rel);
    if name.is_empty() {
        return false;
    }
    // Characters that continue a file name: a match must not be flanked by them.
    let part = |c: char| c.is_alphanumeric() || matches!(c, '.' | '_' | '-' | '+' | '@' | '%' | '~');
    let mut from = 0;
    while let Some(i) = command[from..].find(name) {
        let start = from + i;
        let end = start + name.len();
        let before = command[..start].chars().next_back();
        let after = command[end..].chars().next();
        if before.is_none_or(|c| !part(c)) && after.is_none_or(|c| !part(c) && c != '/') {
            return true;
        }
        from = start + command[start..].chars().next().map_or(1, char::len_utf8);
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn w(id: &str, open: i64, close: Option<i64>) -> Window<'_> {
        Window { id, open, close }
    }

    #[test]
    fn the_cases_by_hand() {
        let own = w("a", 100, Some(200));
        let alone = Scene { margin: 5, ..Default::default() };
        assert_eq!(judge(&own, &alone, At::Exact(150)), Verdict::Certain);
        let beside = Scene { others: vec![w("b", 140, Some(300))], margin: 5, ..Default::default() };
        assert_eq!(judge(&own, &beside, At::Exact(120)), Verdict::Certain);
        assert_eq!(judge(&own, &beside, At::Exact(150)), Verdict::Uncertain(vec!["b"]));
        // A deletion whose folder changed after b opened: maybe b's.
        assert_eq!(judge(&own, &beside, At::NoLaterThan(160)), Verdict::Uncertain(vec!["b"]));
        assert_eq!(judge(&own, &beside, At::NoLaterThan(120)), Verdict::Certain);
        let killed = w("k", 100, None);
        let dead = Scene { last_life: Some(150), margin: 5, ..Default::default() };
        assert_eq!(judge(&killed, &dead, At::Exact(120)), Verdict::Certain);
        assert_eq!(judge(&killed, &dead, At::Exact(152)), Verdict::Uncertain(vec![]));
        assert_eq!(judge(&killed, &dead, At::Exact(400)), Verdict::AfterStop);
        assert_eq!(judge(&killed, &dead, At::NoLaterThan(400)), Verdict::AfterStop);
        assert_eq!(judge(&killed, &dead, At::Unknown), Verdict::AfterStop);
        // A command killed in an earlier crash, its processes seen gone at 130 (its window's
        // end): no suspect for a later session's change at 150, still one for one at 120.
        let dead = Scene { others: vec![w("dead", 50, Some(130))], margin: 5, ..Default::default() };
        assert_eq!(judge(&w("new", 110, Some(200)), &dead, At::Exact(150)), Verdict::Certain);
        assert_eq!(judge(&w("new", 110, Some(200)), &dead, At::Exact(120)), Verdict::Uncertain(vec!["dead"]));
        let crowd = Scene { writer_from: Some(130), margin: 5, ..Default::default() };
        assert_eq!(judge(&own, &crowd, At::Exact(110)), Verdict::Certain);
        assert_eq!(judge(&own, &crowd, At::Exact(131)), Verdict::Uncertain(vec![]));
        let ws = [w("x", 100, None), w("y", 140, None)];
        let (no, folder, file) = (Evidence::None, Evidence::Folder, Evidence::File);
        // Both open, neither names the file: undecided, listed under the first opened.
        assert_eq!(owner(&ws, &[0, 1], &[no, no], At::Exact(150), 5), Some(Owner::Undecided(0)));
        assert_eq!(owner(&ws, &[1], &[no, no], At::Exact(150), 5), Some(Owner::Decided(1)));
        // Both open: the one whose command names the file keeps it.
        assert_eq!(owner(&ws, &[0, 1], &[no, file], At::Exact(150), 5), Some(Owner::Decided(1)));
        // The file beats its folder; two that name it alike decide nothing.
        assert_eq!(owner(&ws, &[0, 1], &[folder, file], At::Exact(150), 5), Some(Owner::Decided(1)));
        assert_eq!(owner(&ws, &[0, 1], &[folder, no], At::Exact(150), 5), Some(Owner::Decided(0)));
        assert_eq!(owner(&ws, &[0, 1], &[file, file], At::Exact(150), 5), Some(Owner::Undecided(0)));
        // Only x was open then: the name of a command not yet started does not count.
        assert_eq!(owner(&ws, &[0, 1], &[no, file], At::Exact(120), 5), Some(Owner::Decided(0)));
    }

    /// The async-subagent case (seen with the real CLI): the main thread's loop wrote
    /// `out/o1.txt`…`out/o3.txt` while a subagent's `echo s > sub.txt; sleep 90` ran, opened
    /// first. The loop's text names the folder and a pattern matching the files.
    #[test]
    fn the_loop_that_names_the_pattern_keeps_its_files_beside_a_subagents_sleep() {
        let sub = "echo s > sub.txt; sleep 90";
        let main = "mkdir -p out; for i in 1 2 3; do echo $i > out/o$i.txt; done; sleep 60";
        for f in ["out/o1.txt", "out/o2.txt", "out/o3.txt"] {
            assert_eq!(evidence(main, f), Evidence::File, "{f}");
            assert_eq!(evidence(sub, f), Evidence::None, "{f}");
        }
        assert_eq!(evidence(sub, "sub.txt"), Evidence::File);
        assert_eq!(evidence(main, "sub.txt"), Evidence::None);
        let ws = [w("sub", 100, None), w("main", 140, None)];
        let names = [evidence(sub, "out/o2.txt"), evidence(main, "out/o2.txt")];
        assert_eq!(owner(&ws, &[0, 1], &names, At::Exact(150), 5), Some(Owner::Decided(1)));
    }

    #[test]
    fn a_command_names_a_folder_or_a_pattern() {
        assert!(names_folder("mkdir -p out && make", "out/a.o"));
        assert!(names_folder("cd ./out; ls", "out/a.o"));
        assert!(names_folder("cp x /tmp/p/src/sub/", "src/sub/y.rs"));
        assert!(!names_folder("cp x layout/", "out/a.o"));
        assert!(!names_folder("cd sub", "src/sub/y.rs"), "the folder's whole path, not its last part");
        assert!(!names_folder("echo > top.txt", "top.txt"), "a file at the top names no folder");
        assert!(names_pattern("for i in 1 2; do echo > out/o$i.txt; done", "out/o1.txt"));
        assert!(names_pattern("echo > \"out/o${i}.txt\"", "out/o1.txt"));
        assert!(names_pattern("rm -f out/*.txt", "out/o1.txt"));
        assert!(names_pattern("touch o{1,2}.txt", "out/o1.txt"), "aligned from the end");
        assert!(names_pattern("touch log[0-9].txt", "log7.txt"));
        assert!(!names_pattern("rm -f out/*.txt", "out/o1.rs"));
        assert!(!names_pattern("rm -f src/*.txt", "out/o1.txt"));
        assert!(!names_pattern("for f in $(ls); do cat $f; done", "a.txt"), "an all-wildcard name names nothing");
        assert!(!names_pattern("rm *", "a.txt"));
        assert!(!names_pattern("echo ok", "a.txt"));
    }

    #[test]
    fn claude_codes_temporary_files_are_known_by_name() {
        assert_eq!(claude_temp_of("src/m0_1.py.tmp.4242.1a2b3c"), Some("src/m0_1.py"));
        assert_eq!(claude_temp_of("a.txt.tmp.1.ff"), Some("a.txt"));
        assert_eq!(claude_temp_of("a.txt.tmp.x1.ff"), None);
        assert_eq!(claude_temp_of("a.txt.tmp.12."), None);
        assert_eq!(claude_temp_of("a.tmp"), None);
        assert_eq!(claude_temp_of(".tmp.12.ab"), None);
        assert_eq!(claude_temp_of("dir/.tmp.12.ab"), None);
    }

    #[test]
    fn a_command_names_a_file_by_its_whole_name() {
        assert!(names_path("echo s > sub.log; sleep 60", "sub.log"));
        assert!(names_path("echo s >sub.log", "sub.log"));
        assert!(names_path("echo s > ./logs/sub.log", "logs/sub.log"));
        assert!(names_path("cat \"sub.log\" && true", "sub.log"));
        assert!(names_path("sed -i s/a/b/ src/main.rs", "src/main.rs"));
        assert!(names_path("sub.log", "sub.log"));
        assert!(!names_path("echo s > mysub.log", "sub.log"));
        assert!(!names_path("echo s > sub.log.bak", "sub.log"));
        assert!(!names_path("echo s > sub.log/x", "sub.log"));
        assert!(!names_path("echo waiting; sleep 2", "sub.log"));
        assert!(!names_path("make", "target/out.o"));
        assert!(!names_path("anything", ""));
        // Multi-byte text around a near miss does not trip the scan.
        assert!(names_path("écho ésub.log; echo > sub.log", "sub.log"));
    }

    /// Windows (open, close), the last sign of life, a writer's start, the change's time,
    /// how its time is known (0 exact, 1 a bound, 2 none), the margin, and what each window's
    /// command text says of the changed file (0 nothing, 1 its folder, 2 the file).
    type Case = (Vec<(i64, Option<i64>)>, Option<i64>, Option<i64>, i64, u8, i64, Vec<u8>);

    /// A random scene: up to 4 windows (some never finished), a death, a writer, a change.
    fn scene() -> impl Strategy<Value = Case> {
        (
            prop::collection::vec((0i64..1000, prop::option::of(0i64..500)), 1..5),
            prop::option::of(0i64..1500),
            prop::option::of(0i64..1500),
            0i64..1600,
            0u8..3,
            0i64..20,
            prop::collection::vec(0u8..3, 5),
        )
            .prop_map(|(ws, life, writer, t, kind, margin, ev)| {
                let ws = ws.into_iter().map(|(o, d)| (o, d.map(|d| o + d))).collect();
                (ws, life, writer, t, kind, margin, ev)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Metadata never re-dates content: a change whose ctime is after the last sign of life
        /// but whose content the watcher saw change while the session lived is never after-stop;
        /// one whose content changed after it stays after-stop; one redated by its mtime alone
        /// is uncertain, never certain; with no other clock it stays after-stop.
        #[test]
        fn metadata_after_the_death_never_moves_content_made_before_it(
            open in 0i64..1_000, life_after in 0i64..1_000, margin in 0i64..5,
            c_after in 1i64..1_000, content in prop::option::of(0i64..3_000),
            mtime in prop::option::of(0i64..3_000), other in prop::option::of((0i64..3_000, prop::option::of(0i64..500))),
        ) {
            let life = open + life_after;
            let c_at = life + margin + c_after;
            let own = w("own", open, None);
            let others: Vec<Window> = other.into_iter().map(|(o, d)| w("other", o, d.map(|d| o + d))).collect();
            let scene = Scene { others, writer_from: None, last_life: Some(life), margin };
            let (v, _, redated) = redate(&own, &scene, c_at, content, || mtime);
            if let Some(t) = content && t >= open && t <= life {
                prop_assert!(v != Verdict::AfterStop, "content made at {} (life {}) judged after-stop", t, life);
            }
            let content_after = content.is_none_or(|t| t > life + margin || t >= c_at);
            let mtime_after = mtime.is_none_or(|m| m > life + margin);
            if content_after && mtime_after {
                prop_assert_eq!(&v, &Verdict::AfterStop);
            }
            if redated {
                prop_assert_eq!(&v, &Verdict::Uncertain(Vec::new()));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Both directions: never certain when another window was open at the change (or a
        /// writer was active, or the session may have stopped), and certain whenever the
        /// command alone could have made it; after the last sign of life, never Claude's. Of
        /// several commands that saw a change, one keeps it: the only one open then, or the
        /// one whose text alone names the file (or its folder); else it is undecided.
        #[test]
        fn no_change_is_certain_when_another_window_was_open_and_every_lone_change_is(
            (ws, life, writer, t, kind, margin, ev) in scene()
        ) {
            let ids = ["w0", "w1", "w2", "w3", "w4"];
            let windows: Vec<Window> = ws.iter().enumerate().map(|(i, (o, c))| w(ids[i], *o, *c)).collect();
            let own = &windows[0];
            // A killed command's window ends at its death; a finished one's at its outcome.
            let life = if own.close.is_none() { life.map(|l| l.max(own.open)) } else { None };
            let at = match kind { 0 => At::Exact(t), 1 => At::NoLaterThan(t), _ => At::Unknown };
            let scene = Scene { others: windows[1..].to_vec(), writer_from: writer, last_life: life, margin };
            let v = judge(own, &scene, at);
            let others_open = windows[1..].iter().filter(|o| match at {
                At::Exact(t) => o.open_at(t, margin),
                _ => false,
            }).count();
            if let At::Exact(t) = at {
                if let Some(l) = life && t > l + margin {
                    prop_assert_eq!(&v, &Verdict::AfterStop);
                }
                if others_open > 0 {
                    prop_assert!(v != Verdict::Certain, "certain though {} others were open: {:?}", others_open, v);
                }
                if let Verdict::Uncertain(c) = &v {
                    for id in c {
                        let o = windows.iter().find(|o| o.id == *id).unwrap();
                        prop_assert!(o.open_at(t, margin), "candidate {} was not open", id);
                    }
                }
                let lone = others_open == 0
                    && windows[1..].iter().all(|o| !o.open_at(t, margin))
                    && writer.is_none_or(|f| t + margin < f)
                    && life.is_none_or(|l| t + margin <= l);
                if lone {
                    prop_assert_eq!(&v, &Verdict::Certain, "alone, yet not certain");
                }
            } else if v == Verdict::Certain {
                // A change without an exact time is certain only when nothing else could write
                // in the whole span it may have been made in.
                prop_assert!(writer.is_none() || matches!(at, At::NoLaterThan(b) if b + margin < writer.unwrap_or(0)));
            }
            // One change, one owner, among those that saw it.
            let saw: Vec<usize> = (0..windows.len()).filter(|&i| windows[i].open <= t).collect();
            let names: Vec<Evidence> = ev
                .iter()
                .map(|e| [Evidence::None, Evidence::Folder, Evidence::File][usize::from(*e)])
                .collect();
            let got = owner(&windows, &saw, &names, at, margin);
            prop_assert_eq!(got.is_none(), saw.is_empty());
            if let Some(o) = got {
                let k = o.index();
                prop_assert!(saw.contains(&k), "the owner did not see the change");
                // Those that may have made it: open at its time (all that saw it otherwise).
                let mut open: Vec<usize> = match at {
                    At::Exact(t) => saw.iter().copied().filter(|&i| windows[i].open_at(t, margin)).collect(),
                    _ => saw.clone(),
                };
                if open.is_empty() {
                    open = saw.clone();
                }
                prop_assert!(open.contains(&k), "a command not open at the change keeps it");
                let stronger = |i: usize| open.iter().all(|&j| j == i || names[j] < names[i]);
                match o {
                    // Decided: alone, or the text singles it out.
                    Owner::Decided(_) => prop_assert!(
                        open.len() == 1 || (names[k] > Evidence::None && stronger(k)),
                        "decided without evidence: {:?} among {:?}", names, open
                    ),
                    // Undecided: several open and none singled out; counted in no command.
                    Owner::Undecided(_) => {
                        prop_assert!(open.len() > 1);
                        prop_assert!(open.iter().all(|&i| names[i] == Evidence::None || !stronger(i)));
                    }
                }
            }
        }
    }
}
