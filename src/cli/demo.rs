//! `myrecode demo`: the whole flow on a sample legacy database.

use super::common::block_on;
use super::EXIT_OK;
use crate::db::connect::{ConnectionConfig, PasswordSource};

/// Arguments of `demo`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Run in a scratch schema on this server (created and dropped) instead of a throwaway server.
    #[arg(long, value_name = "URL")]
    url: Option<String>,
}

/// Runs `demo`.
pub fn run(args: Args) -> anyhow::Result<u8> {
    let cfg = match args.url {
        Some(u) => {
            Some(ConnectionConfig::from_url(&u)?.resolve_password(PasswordSource::PromptIfTty)?)
        }
        None => None,
    };
    block_on(crate::demo::run(cfg))?;
    Ok(EXIT_OK)
}
