//! `myrecode convert`: streaming recode of stdin to stdout.

/// Arguments of `convert`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `convert`.
pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("convert is not implemented yet")
}
