//! `walj man`: manual pages generated from the command line's definition by clap_mangen, so
//! they never drift from `--help`.

use std::io::Write;
use std::path::PathBuf;

use anyhow::Context;

/// The arguments of `walj man`.
#[derive(Debug, clap::Args)]
pub struct ManArgs {
    /// Write walj.1 and one page per subcommand (walj-recover.1, …) into this folder instead
    /// of printing walj.1.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
}

/// Prints walj(1) in roff, or writes every page into `--out`.
/// `cmd` is walj's command line (`cli::Cli::command()`, handed down).
pub(crate) fn man(args: &ManArgs, cmd: clap::Command) -> anyhow::Result<i32> {
    let Some(dir) = &args.out else {
        let mut page = Vec::new();
        clap_mangen::Man::new(cmd).render(&mut page)?;
        let mut out = std::io::stdout().lock();
        out.write_all(&page)?;
        out.flush()?;
        return Ok(0);
    };
    std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    clap_mangen::generate_to(cmd, dir).with_context(|| format!("writing manual pages into {}", dir.display()))?;
    Ok(0)
}
