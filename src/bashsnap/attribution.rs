//! Who made a change a command's snapshot saw: the one rule, for finished and killed commands
//! alike (docs/architecture.md, "Who made a change").
//!
//! A Bash command's side effects are found by comparing snapshots, and a comparison cannot
//! say who wrote. What walj knows is when things could write: every command (any session,
//! any subagent) has a **window** from its intent to its outcome — or, when it never
//! finished, to its session's last sign of life — and a change has a **time**, its ctime
//! (never the mtime: `touch -d`, `cp -p`, `tar` and `rsync -a` set that freely). Changes a
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
//! their command lines can hint: a command whose text names the changed file
//! ([`names_path`]) is the likelier writer (`echo s > sub.log` beside `sleep 2`). The hint
//! only chooses under which command the change is listed, never makes it certain. When several
//! killed commands saw one change, [`owner`] names the one that keeps it (of those open at its
//! time, one that names the file, else the first opened): a change is listed once.
//!
//! Pure: times are milliseconds since the epoch, no I/O (the property test below drives it
//! over random interleavings of windows, deaths and changes).

/// One command's (or subagent's) window.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Window<'a> {
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
pub enum At {
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
pub struct Scene<'a> {
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
pub fn judge<'a>(own: &Window<'a>, scene: &Scene<'a>, at: At) -> Verdict<'a> {
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

/// Of the killed commands in `windows` whose snapshots saw a change (`saw`: their indexes),
/// the one that keeps it: of those open at its time, the first opened whose command names the
/// file (`names[i]`, see [`names_path`]), else the first opened of those open then, else the
/// first opened. Every change has exactly one owner.
pub fn owner(windows: &[Window<'_>], saw: &[usize], names: &[bool], at: At, margin: i64) -> Option<usize> {
    let first = |it: &mut dyn Iterator<Item = usize>| it.min_by_key(|&i| (windows[i].open, windows[i].id));
    let open_then: Vec<usize> = match at {
        At::Exact(t) => saw.iter().copied().filter(|&i| windows[i].open_at(t, margin)).collect(),
        _ => Vec::new(),
    };
    first(&mut open_then.iter().copied().filter(|&i| names.get(i).copied().unwrap_or(false)))
        .or_else(|| first(&mut open_then.iter().copied()))
        .or_else(|| first(&mut saw.iter().copied()))
}

/// Whether the command line `command` names the file `rel` (a path relative to the project,
/// `/`-separated): its file name appears as a word of its own — not inside a longer name
/// (`sub.log` is named by `echo s > sub.log`, `>./logs/sub.log` and `cat "sub.log"`, not by
/// `echo x > mysub.log` or `sub.log.bak`). A hint for choosing among open windows, not proof:
/// commands can write files they never name (`make`, a script), and name files they only read.
pub fn names_path(command: &str, rel: &str) -> bool {
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
        let crowd = Scene { writer_from: Some(130), margin: 5, ..Default::default() };
        assert_eq!(judge(&own, &crowd, At::Exact(110)), Verdict::Certain);
        assert_eq!(judge(&own, &crowd, At::Exact(131)), Verdict::Uncertain(vec![]));
        let ws = [w("x", 100, None), w("y", 140, None)];
        assert_eq!(owner(&ws, &[0, 1], &[false, false], At::Exact(150), 5), Some(0));
        assert_eq!(owner(&ws, &[1], &[false, false], At::Exact(150), 5), Some(1));
        // Both open: the one whose command names the file keeps it.
        assert_eq!(owner(&ws, &[0, 1], &[false, true], At::Exact(150), 5), Some(1));
        // Only x was open then: the name of a command not yet started does not count.
        assert_eq!(owner(&ws, &[0, 1], &[false, true], At::Exact(120), 5), Some(0));
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
    /// how its time is known (0 exact, 1 a bound, 2 none), the margin.
    type Case = (Vec<(i64, Option<i64>)>, Option<i64>, Option<i64>, i64, u8, i64);

    /// A random scene: up to 4 windows (some never finished), a death, a writer, a change.
    fn scene() -> impl Strategy<Value = Case> {
        (
            prop::collection::vec((0i64..1000, prop::option::of(0i64..500)), 1..5),
            prop::option::of(0i64..1500),
            prop::option::of(0i64..1500),
            0i64..1600,
            0u8..3,
            0i64..20,
        )
            .prop_map(|(ws, life, writer, t, kind, margin)| {
                let ws = ws.into_iter().map(|(o, d)| (o, d.map(|d| o + d))).collect();
                (ws, life, writer, t, kind, margin)
            })
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

        /// Both directions: never certain when another window was open at the change (or a
        /// writer was active, or the session may have stopped), and certain whenever the
        /// command alone could have made it; after the last sign of life, never Claude's.
        #[test]
        fn no_change_is_certain_when_another_window_was_open_and_every_lone_change_is(
            (ws, life, writer, t, kind, margin) in scene()
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
            let names: Vec<bool> = (0..windows.len()).map(|i| (t + i as i64) % 3 == 0).collect();
            let owners: Vec<usize> = owner(&windows, &saw, &names, at, margin).into_iter().collect();
            prop_assert!(owners.len() <= 1);
            prop_assert_eq!(owners.is_empty(), saw.is_empty());
            if let Some(&o) = owners.first() {
                prop_assert!(saw.contains(&o), "the owner did not see the change");
            }
        }
    }
}
