//! `myrecode demo`: the whole flow on a sample legacy database.

use super::common::{block_on, ConnectArgs};
use super::EXIT_OK;

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run in a scratch schema on this server (created and dropped) instead of a throwaway server.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
    /// With --url: read connection settings from this option file only, instead of ~/.my.cnf.
    #[arg(long, value_name = "FILE", requires = "url")]
    defaults_file: Option<std::path::PathBuf>,
    /// With --url: type the password at a prompt.
    #[arg(long, requires = "url")]
    ask_pass: bool,
}

/// Runs `demo`.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cfg = match args.url {
        Some(url) => Some(
            ConnectArgs {
                url: Some(url),
                defaults_file: args.defaults_file,
                ask_pass: args.ask_pass,
            }
            .resolve()?,
        ),
        None => None,
    };
    block_on(crate::demo::run(cfg))?;
    Ok(EXIT_OK)
}
