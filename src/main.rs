//! The `walj` command line: parses arguments and calls the library.
//!
//! On Linux the binary has its own C `main` ([`main`]): `walj hook` runs twice per tool call,
//! and std's start-up before a Rust `main` (a stack guard found by reading
//! `/proc/self/maps`, an alternate signal stack and its handlers, a poll of the standard
//! descriptors: about 20 system calls, 0.2 ms of a 1 ms process) buys the hook nothing. What
//! of it walj needs is done here: SIGPIPE ignored (a closed pipe is an error, never a death by
//! signal), panics caught (exit 101, 0 for the hook), stdout flushed at exit
//! (`std::process::exit`). Elsewhere `main` is the usual Rust one.
#![cfg_attr(all(target_os = "linux", not(test)), no_main)]

use std::io::Read;
use std::path::PathBuf;

use clap::Parser;
use walj::cli::{Cli, Command};
use walj::cmd::Global;

/// The process's entry on Linux (see the module's doc): std's runtime start is skipped.
#[cfg(all(target_os = "linux", not(test)))]
#[unsafe(no_mangle)]
extern "C" fn main(_argc: std::ffi::c_int, _argv: *const *const std::ffi::c_char) -> std::ffi::c_int {
    // SAFETY: setting a signal's disposition to "ignore" has no handler to run and touches
    // no memory of ours; std does the same in its own start-up.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_IGN);
    }
    // `exit` runs std's clean-up (stdout flushed) as returning from a Rust `main` does.
    match std::panic::catch_unwind(walj_main) {
        Ok(code) => std::process::exit(code.into()),
        // The panic hook has printed it; a hook's panic is caught inside `hook_with`.
        Err(_) => std::process::exit(101),
    }
}

#[cfg(not(all(target_os = "linux", not(test))))]
fn main() -> std::process::ExitCode {
    std::process::ExitCode::from(walj_main())
}

/// The exit status.
fn walj_main() -> u8 {
    // The hook runs on every tool call: building clap's whole command tree costs more than
    // the hook's own work, so `walj hook [--project DIR] [--journal FILE]` skips it.
    if let Some((global, agent)) = hook_fast_args() {
        return hook(&global, agent.as_deref());
    }
    // A bisect's guard (a process of walj's own, never typed by a user).
    if std::env::args_os().nth(1).is_some_and(|a| a == walj::bisect::leftovers::GUARD_ARG) {
        return walj::bisect::leftovers::guard_main();
    }
    if std::env::args_os().len() == 1
        && let Some(code) = no_arguments()
    {
        return code;
    }
    if let Some(when) = walj::style::color_arg(std::env::args_os().skip(1)) {
        walj::style::set_color(when);
    }
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // A hook must never exit 2: Claude Code reads that as "block this tool call".
        Err(e) if std::env::args_os().any(|a| a == "hook") && e.use_stderr() => {
            walj::hook::warn(&e.to_string());
            return 0;
        }
        Err(e) => e.exit(),
    };
    walj::style::set_color(cli.color);
    let global = Global { project: cli.project, journal: cli.journal, no_pager: cli.no_pager };
    if let Command::Hook { agent } = &cli.command {
        return hook(&global, agent.as_deref());
    }
    quiet_on_closed_stdout();
    // What a killed `walj bisect` left (a scratch copy, temp files): every command but the
    // hook removes it, and says so.
    // Not `walj mcp`: its start-up reads nothing and changes nothing (docs/plugin.md).
    if !matches!(cli.command, Command::Mcp) {
        for line in walj::bisect::leftovers::sweep(global.project().ok().as_ref()) {
            eprintln!("walj: {}", walj::present::text::safe(&line));
        }
    }
    match walj::cli::run(cli.command, &global) {
        Ok(code) => code.clamp(0, 255) as u8,
        Err(e) if walj::cmd::is_broken_pipe(&e) => 0,
        Err(e) => {
            walj::cmd::print_error(&e);
            walj::cmd::EXIT_ERROR as u8
        }
    }
}

/// Output piped into a reader that stopped (`walj log --all | head -1`) ends the command
/// quietly with status 0, as in cargo and git. Commands that write with `writeln!` return the
/// error (see `main`); this covers `println!`, which panics on it.
fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let msg = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or_default();
        if msg.starts_with("failed printing to stdout") && msg.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Parses exactly `hook` with optional `--project DIR` / `--journal FILE` / `--agent NAME`
/// (also `--x=V`); anything else (help, typos, other commands) goes through clap.
fn hook_fast_args() -> Option<(Global, Option<String>)> {
    let mut args = std::env::args_os().skip(1);
    let mut global = Global {
        no_pager: true,
        project: None,
        journal: std::env::var_os("WALJ_JOURNAL").filter(|v| !v.is_empty()).map(PathBuf::from),
    };
    let mut saw_hook = false;
    let mut agent = None;
    while let Some(a) = args.next() {
        let a = a.to_str()?.to_string();
        match a.as_str() {
            "hook" if !saw_hook => saw_hook = true,
            "--project" => global.project = Some(PathBuf::from(args.next()?)),
            "--journal" => global.journal = Some(PathBuf::from(args.next()?)),
            "--agent" => agent = Some(args.next()?.to_str()?.to_string()),
            _ => {
                if let Some(v) = a.strip_prefix("--project=") {
                    global.project = Some(PathBuf::from(v));
                } else if let Some(v) = a.strip_prefix("--journal=") {
                    global.journal = Some(PathBuf::from(v));
                } else if let Some(v) = a.strip_prefix("--agent=") {
                    agent = Some(v.to_string());
                } else {
                    return None;
                }
            }
        }
    }
    saw_hook.then_some((global, agent))
}

/// `walj` without arguments. A Claude Code older than 2.1.139 ignores an exec-form hook's `args`
/// (`"command": "walj", "args": ["hook"]`) and runs `walj` alone through its shell, with the hook
/// payload on stdin: when stdin is not a terminal and starts (after white space) with `{`, this
/// is the hook, and it does the hook's job (exit 0, as every hook). `None` otherwise (a terminal,
/// an empty or other input): clap prints the usage as before. Only the first read is looked at
/// before deciding, so an endless pipe of something else is not read to its end.
fn no_arguments() -> Option<u8> {
    use std::io::IsTerminal;
    let mut stdin = std::io::stdin().lock();
    if stdin.is_terminal() {
        return None;
    }
    let mut input = Vec::with_capacity(64 * 1024);
    loop {
        let mut chunk = [0u8; 8192];
        let n = match stdin.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(_) => return None,
        };
        input.extend_from_slice(&chunk[..n]);
        match input.iter().find(|b| !b.is_ascii_whitespace()) {
            Some(b'{') => break,
            Some(_) => return None,
            None if n == 0 => return None,
            None => {}
        }
    }
    drop(stdin);
    let global = Global {
        project: None,
        journal: std::env::var_os("WALJ_JOURNAL").filter(|v| !v.is_empty()).map(PathBuf::from),
        no_pager: true,
    };
    Some(hook_with(&global, None, input))
}

/// The hook path: exit 0 whatever happens, print only what SessionStart asks for. An unknown
/// `--agent` is reported and the payload recognised as if the flag were absent.
fn hook(global: &Global, agent: Option<&str>) -> u8 {
    // Room for most payloads at once (an Edit's PostToolUse carries the whole original file):
    // an empty buffer is filled by reads of 32, 64, 128… bytes.
    hook_with(global, agent, Vec::with_capacity(64 * 1024))
}

/// [`hook`] with the first bytes of stdin already read into `input`.
fn hook_with(global: &Global, agent: Option<&str>, mut input: Vec<u8>) -> u8 {
    if let Err(e) = std::io::stdin().read_to_end(&mut input) {
        walj::hook::warn(&format!("reading stdin: {e}"));
        return 0;
    }
    let agent = agent.and_then(|name| {
        let a = walj::agents::Agent::parse(name);
        if a.is_none() {
            walj::hook::warn(&format!(
                "unknown --agent {name:?} (claude, codex, gemini, copilot); recognising the payload"
            ));
        }
        a
    });
    let opts = walj::hook::HookOptions { project: global.project.clone(), journal: global.journal.clone(), agent };
    // A bug must not turn into a failed tool call either: a panic is reported, exit stays 0.
    let outcome = match std::panic::catch_unwind(|| walj::hook::run(&input, &opts)) {
        Ok(o) => o,
        Err(_) => return 0,
    };
    if let Some(s) = outcome.stdout {
        // Not `println!`: it panics (exit 101) when Claude Code has closed the pipe.
        use std::io::Write;
        if let Err(e) = writeln!(std::io::stdout().lock(), "{s}") {
            walj::hook::warn(&format!("writing the SessionStart answer: {e}"));
        }
    }
    0
}
