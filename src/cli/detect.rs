//! `myrecode detect`: per-line encoding detection of stdin.

/// Arguments of `detect`.
#[derive(Debug, clap::Args)]
pub struct Args {}

/// Runs `detect`.
pub fn run(_args: Args) -> anyhow::Result<u8> {
    anyhow::bail!("detect is not implemented yet")
}
