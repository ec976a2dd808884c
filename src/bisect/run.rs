//! Running the user's command on one state, with `git bisect run`'s exit codes: 0 good,
//! 1–127 except 125 bad, 125 skip (this state cannot be tested), 128 and above (a signal,
//! a crash) or a timeout aborts the bisect. Its output goes to a file (no pipe to fill)
//! and is kept, cut to its last [`KEEP`] bytes, for the report.
//!
//! On Unix the command runs in a process group of its own: a timeout kills the whole group
//! (a `cargo test` and the test binaries it started), Ctrl-C is passed on to it, and whatever
//! it left running when it exited is killed, so nothing of one state's run goes on writing
//! while the next state is put in place.

use std::ffi::OsString;
use std::fs::File;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use super::BisectError;
use super::search::Verdict;

/// The last bytes of a run's output kept for the report.
pub(crate) const KEEP: usize = 64 * 1024;

/// The command and how to run it.
pub(crate) struct Runner {
    pub argv: Vec<OsString>,
    pub timeout: Option<Duration>,
    /// Runs per state (`--runs`): the majority decides; a disagreement is reported.
    pub runs: usize,
    /// Runs made so far.
    pub invocations: usize,
    /// Where the output goes while it runs.
    out: PathBuf,
    interrupted: Arc<AtomicBool>,
    /// Told each command's process group, to kill it should walj be killed.
    pub guard: Option<Arc<super::leftovers::Guard>>,
}

/// One state tested.
#[derive(Debug, Clone)]
pub(crate) struct Tested {
    pub verdict: Verdict,
    /// Exit codes of the runs, in order.
    pub codes: Vec<i32>,
    /// The last run's output (its last [`KEEP`] bytes).
    pub output: Vec<u8>,
    /// The runs disagreed.
    pub flaky: bool,
}

impl Runner {
    pub(crate) fn new(argv: Vec<OsString>, timeout: Option<Duration>, runs: usize, out: PathBuf) -> Runner {
        let interrupted = Arc::new(AtomicBool::new(false));
        #[cfg(unix)]
        {
            // Ctrl-C reaches the command too (same process group): it ends, and the bisect
            // aborts and puts the tree back rather than dying in the middle of a state.
            let _ = signal_hook::flag::register(signal_hook::consts::SIGINT, Arc::clone(&interrupted));
            let _ = signal_hook::flag::register(signal_hook::consts::SIGTERM, Arc::clone(&interrupted));
        }
        Runner { argv, timeout, runs: runs.max(1), invocations: 0, out, interrupted, guard: None }
    }

    pub(crate) fn interrupted(&self) -> bool {
        self.interrupted.load(Ordering::SeqCst)
    }

    /// Runs the command `runs` times in `dir` on state `state`.
    pub(crate) fn test(&mut self, dir: &Path, state: usize) -> Result<Tested, BisectError> {
        self.test_labeled(dir, &state.to_string())
    }

    /// [`Runner::test`] of a state named `state` (`WALJ_BISECT_STATE`): a number, or "disk".
    pub(crate) fn test_labeled(&mut self, dir: &Path, state: &str) -> Result<Tested, BisectError> {
        let mut codes = Vec::new();
        let mut verdicts = Vec::new();
        let mut output = Vec::new();
        for _ in 0..self.runs {
            let (code, out) = self.run_once(dir, state)?;
            let v = match code {
                0 => Verdict::Good,
                125 => Verdict::Skip,
                1..=127 => Verdict::Bad,
                _ => {
                    return Err(BisectError::Aborted(format!(
                        "the command exited with {code} at state {state} (128 and above abort, as in `git bisect run`)"
                    )));
                }
            };
            codes.push(code);
            verdicts.push(v);
            output = out;
        }
        let count = |v: Verdict| verdicts.iter().filter(|x| **x == v).count();
        let flaky = verdicts.iter().any(|v| *v != verdicts[0]);
        let (good, bad) = (count(Verdict::Good), count(Verdict::Bad));
        let verdict = if good > bad && good > count(Verdict::Skip) {
            Verdict::Good
        } else if bad > good && bad > count(Verdict::Skip) {
            Verdict::Bad
        } else if flaky {
            Verdict::Skip
        } else {
            verdicts[0]
        };
        Ok(Tested { verdict, codes, output, flaky })
    }

    fn run_once(&mut self, dir: &Path, state: &str) -> Result<(i32, Vec<u8>), BisectError> {
        if self.interrupted() {
            return Err(BisectError::Aborted("interrupted".to_string()));
        }
        let io = |e: std::io::Error| BisectError::Io { path: self.out.clone(), source: e };
        let file = File::create(&self.out).map_err(io)?;
        let err = file.try_clone().map_err(io)?;
        let Some((prog, args)) = self.argv.split_first() else {
            return Err(BisectError::Usage("no command given after `--`".to_string()));
        };
        self.invocations += 1;
        let mut cmd = Command::new(prog);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
        let mut child = cmd
            .args(args)
            .current_dir(dir)
            .env("WALJ_BISECT_STATE", state)
            .stdin(Stdio::null())
            .stdout(file)
            .stderr(err)
            .spawn()
            .map_err(|e| BisectError::Spawn { command: prog.to_string_lossy().into_owned(), source: e })?;
        if let Some(g) = &self.guard {
            g.group(Some(child.id()));
        }
        let start = Instant::now();
        let status = loop {
            match child.try_wait() {
                Ok(Some(s)) => break s,
                Ok(None) => {}
                Err(e) => return Err(io(e)),
            }
            let timed_out = self.timeout.is_some_and(|t| start.elapsed() > t);
            if timed_out || self.interrupted() {
                stop_group(&mut child, !timed_out);
                return Err(BisectError::Aborted(if timed_out {
                    format!("the command ran longer than the timeout at state {state}")
                } else {
                    "interrupted".to_string()
                }));
            }
            std::thread::sleep(Duration::from_millis(10));
        };
        // What the command left running in its group goes too.
        kill_group(child.id(), false);
        if let Some(g) = &self.guard {
            g.group(None);
        }
        let code = match status.code() {
            Some(c) => c,
            None => {
                #[cfg(unix)]
                {
                    use std::os::unix::process::ExitStatusExt;
                    128 + status.signal().unwrap_or(0)
                }
                #[cfg(not(unix))]
                {
                    255
                }
            }
        };
        let mut out = std::fs::read(&self.out).map_err(io)?;
        if out.len() > KEEP {
            out.drain(..out.len() - KEEP);
        }
        Ok((code, out))
    }
}

/// Signals the process group `pgid` (the command's): SIGINT when `gently`, else SIGKILL.
fn kill_group(pgid: u32, gently: bool) {
    #[cfg(unix)]
    {
        use rustix::process::{Pid, Signal, kill_process_group};
        if let Some(pid) = i32::try_from(pgid).ok().and_then(Pid::from_raw) {
            let _ = kill_process_group(pid, if gently { Signal::INT } else { Signal::KILL });
        }
    }
    #[cfg(not(unix))]
    let _ = (pgid, gently);
}

/// Ends a running command and its group: on Ctrl-C it gets SIGINT and two seconds to stop
/// (as in a terminal); then, or on a timeout at once, SIGKILL.
fn stop_group(child: &mut std::process::Child, interrupted: bool) {
    if interrupted {
        kill_group(child.id(), true);
        let until = Instant::now() + Duration::from_secs(2);
        while Instant::now() < until {
            if matches!(child.try_wait(), Ok(Some(_))) {
                break;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    kill_group(child.id(), false);
    let _ = child.kill();
    let _ = child.wait();
}
