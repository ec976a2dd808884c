//! `walj completions SHELL`: the shell completion script, generated from the command line's
//! definition by clap_complete (every command, flag and fixed value; paths where a flag takes
//! one).

use std::io::Write;

use clap::CommandFactory;

/// The arguments of `walj completions`.
#[derive(Debug, clap::Args)]
pub struct CompletionsArgs {
    /// The shell to write the script for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

/// Prints the completion script on stdout.
pub fn completions(args: &CompletionsArgs) -> anyhow::Result<i32> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut crate::cli::Cli::command(), "walj", &mut script);
    let mut out = std::io::stdout().lock();
    out.write_all(&script)?;
    out.flush()?;
    Ok(0)
}
