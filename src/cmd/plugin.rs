//! `walj plugin --out DIR`: write walj as a Claude Code plugin.

use std::path::{Path, PathBuf};

use crate::plugin::{self, Bin};

/// `walj plugin`'s arguments.
#[derive(clap::Args)]
pub struct PluginArgs {
    /// The plugin folder (created; an earlier walj plugin there is updated).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Put the sh launcher (runs an installed walj) in bin/ instead of this binary.
    #[arg(long)]
    pub launcher: bool,
}

/// Writes the plugin into `out`: with a copy of this binary, or (`launcher`) with the sh
/// launcher of the marketplace plugin (how `plugin/` in the repository is regenerated).
pub(crate) fn plugin_cmd(out: &Path, launcher: bool) -> anyhow::Result<i32> {
    let bin = if launcher { Bin::Launcher } else { Bin::Copy(std::env::current_exe()?) };
    let rep = plugin::write(out, &bin)?;
    let root = rep.root.display();
    for f in &rep.written {
        println!("wrote {root}/{f}");
    }
    if launcher {
        println!("bin/walj is the launcher: it runs the walj installed on this machine (PATH, ~/.cargo/bin).");
    } else {
        println!("bin/walj is a copy of this walj ({}).", env!("CARGO_PKG_VERSION"));
    }
    println!("Use it with `claude --plugin-dir {root}`; check it with `claude plugin validate --strict {root}`.");
    println!("Do not also `walj install` in the same project: the hooks would run twice.");
    Ok(0)
}
