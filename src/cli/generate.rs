//! `myrecode generate`: the man pages and shell completions a package installs, made from the
//! command-line definitions themselves, so they never drift from `--help`. Hidden from the
//! help: packagers call it (scripts/build-deb.sh), users read what it wrote.

use anyhow::{Context, Result};
use std::path::{Path, PathBuf};

/// What to generate.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Man pages or a completion script.
    #[command(subcommand)]
    pub what: What,
}

/// The two kinds of output.
#[derive(Debug, clap::Subcommand)]
pub enum What {
    /// Write a man page per command into DIR: myrecode.1, myrecode-scan.1, myrecode-run.1, …
    Man {
        /// Folder to write the pages into (created if missing).
        dir: PathBuf,
    },
    /// Print the completion script for SHELL (bash, zsh, fish, elvish, powershell) on stdout.
    Completions {
        /// The shell to complete for.
        shell: clap_complete::Shell,
    },
}

/// Runs `generate` for the command-line definition `cli` (the whole `myrecode` command).
pub fn run(args: Args, cli: clap::Command) -> Result<u8> {
    match args.what {
        What::Man { dir } => {
            for (name, page) in man_pages(&cli)? {
                let path = dir.join(format!("{name}.1"));
                write(&path, &page)?;
            }
        }
        What::Completions { shell } => {
            let mut cli = cli;
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut cli, "myrecode", &mut script);
            // A reader that stops early (`| head`) is no error of ours.
            match std::io::Write::write_all(&mut std::io::stdout(), &script) {
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other.context("writing the completion script")?,
            }
        }
    }
    Ok(super::EXIT_OK)
}

/// The man pages of `cli`: `myrecode` itself, then `myrecode-<command>` for each visible
/// command (the name `man myrecode-scan` finds), each rendered in roff.
pub fn man_pages(cli: &clap::Command) -> Result<Vec<(String, Vec<u8>)>> {
    let mut out = Vec::new();
    let mut root = Vec::new();
    clap_mangen::Man::new(cli.clone()).render(&mut root)?;
    out.push(("myrecode".to_string(), root));
    for sub in cli.get_subcommands().filter(|s| !s.is_hide_set()) {
        let name = format!("myrecode-{}", sub.get_name());
        let mut page = Vec::new();
        let cmd = sub
            .clone()
            .name(name.clone())
            .version(cli.get_version().unwrap_or_default().to_string());
        clap_mangen::Man::new(cmd).render(&mut page)?;
        out.push((name, page));
    }
    Ok(out)
}

fn write(path: &Path, bytes: &[u8]) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| {
            format!(
                "cannot create {}. Fix: name a folder you can write to",
                dir.display()
            )
        })?;
    }
    std::fs::write(path, bytes).with_context(|| {
        format!(
            "cannot write {}. Fix: name a folder you can write to",
            path.display()
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_page_per_visible_command_named_as_man_finds_it() {
        let cli = clap::Command::new("myrecode")
            .version("1.2.3")
            .about("Recodes")
            .subcommand(clap::Command::new("scan").about("Dry run"))
            .subcommand(clap::Command::new("generate").hide(true));
        let pages = man_pages(&cli).unwrap();
        let names: Vec<&str> = pages.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["myrecode", "myrecode-scan"]);
        let scan = String::from_utf8(pages[1].1.clone()).unwrap();
        assert!(scan.contains(".TH myrecode-scan 1"), "{scan}");
        assert!(scan.contains("Dry run"), "{scan}");
    }
}
