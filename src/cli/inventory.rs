//! `myrecode inventory`: every text/binary column and what utf8mb4 would do to it.

/// Arguments of `inventory`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `inventory`.
pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("inventory is not implemented yet")
}
