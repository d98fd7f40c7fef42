//! Command-line interface: argument definitions and dispatch to one function per command.
//!
//! Exit codes (documented in README): 0 done, nothing needs attention;
//! 1 something needs attention (findings, risks, bad bytes); 2 error.

pub mod argv;
pub mod common;
pub mod control;
pub mod convert;
pub mod decide;
pub mod demo;
pub mod detect;
pub mod fleet;
pub mod generate;
pub mod guard;
pub mod inventory;
pub mod plan;
pub mod rehearse;
pub mod revert;
pub mod review;
pub mod run;
pub mod scan;
pub mod status;

use clap::{CommandFactory, Parser, Subcommand};
use std::process::ExitCode;

/// Exit code: the command finished and nothing needs attention.
pub const EXIT_OK: u8 = 0;
/// Exit code: the command finished and found something that needs attention.
pub const EXIT_ATTENTION: u8 = 1;
/// Exit code: the command could not do its job.
pub const EXIT_ERROR: u8 = 2;

/// The version `--version` prints: the package's, and the commit it was built from
/// (`build.rs`), so a report or a bug names the exact code.
pub const VERSION: &str = concat!(
    env!("CARGO_PKG_VERSION"),
    " (commit ",
    env!("MYRECODE_COMMIT"),
    ")"
);

/// Top-level arguments.
#[derive(Debug, Parser)]
#[command(
    name = "myrecode",
    version = VERSION,
    about = "Find legacy-encoded text (cp1251, KOI8-R, CP866, ISO-8859-5, TCVN3, mojibake) \
             in MySQL/MariaDB and recode it to UTF-8 (utf8mb4) online.",
    long_about = None,
    after_help = "Exit codes: 0 done, 1 something needs attention, 2 error (rehearse: see its --help).\n\
                  Connection settings, highest precedence first: the --ask-pass prompt (only when \
                  asked); what --url/MYSQL_URL spells out; the option file (--defaults-file FILE \
                  alone, else ~/.my.cnf: groups [client] and [myrecode], the last occurrence of an option in \
                  the file winning, as in the mysql client); MYSQL_PWD (password); the \
                  defaults root@localhost:3306, ssl-mode=PREFERRED. TLS: ssl-mode=DISABLED|PREFERRED|\
                  REQUIRED|VERIFY_CA|VERIFY_IDENTITY, ssl-ca, ssl-cert, ssl-key on the URL (?ssl-mode=..) \
                  or in the option file. --verbose says which source supplied each setting. \
                  Passwords are never printed, and a --url password is hidden from ps once \
                  the arguments are read."
)]
pub struct Cli {
    /// Say what happens on the way (which source supplied each connection setting; never a secret).
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands, one per step of the flow.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List every text and binary column, its keys, and what utf8mb4 would do to its indexes.
    Inventory(inventory::Args),
    /// Dry run: read raw bytes, detect each value's encoding, report per column what recoding would do.
    Scan(scan::Args),
    /// Write a commented YAML job from a scan report, or check a job against the live schema (--check).
    Plan(plan::Args),
    /// Execute a job in resumable batches (rehearses unless --execute is given).
    Run(run::RunArgs),
    /// List the values a run left undecided, every reading side by side, and write a decision file.
    Review(review::Args),
    /// Prove a run: every changed value decodes from and re-encodes to its backed-up original.
    Verify(run::VerifyArgs),
    /// Undo a run: put the original bytes back where the application has not changed them since.
    Rollback(run::JobArgs),
    /// Pause a running job after its current batch (a copy's triggers keep logging writes).
    Pause(run::JobArgs),
    /// Let a paused job go on.
    Resume(run::JobArgs),
    /// Let the copies waiting under `cutover: manual` swap in (--group: the cut-over group to swap now).
    Cutover(control::CutoverArgs),
    /// Show where a job stands, per table: phase, rows, pace, ETA, change-log backlog, why it
    /// waits, whether it waits for `cutover` (reads only; from any terminal).
    Status(status::Args),
    /// Stop a job; copies not yet swapped lose their shadow, triggers and log (the tables were never changed).
    Abort(run::JobArgs),
    /// After a finished copy: drop the original tables kept for rollback, and the change logs.
    Cleanup(run::JobArgs),
    /// After a cut-over, until cleanup: swap the copied tables back, with every write made
    /// since in their legacy bytes (--execute; otherwise say what would be done).
    Revert(revert::Args),
    /// Recode a byte stream from stdin to stdout (offline; no server needed).
    Convert(convert::Args),
    /// Detect the encoding of each line of stdin (offline; no server needed).
    Detect(detect::Args),
    /// Show the whole flow on sample legacy databases (a throwaway server unless --url is given).
    Demo(demo::Args),
    /// For CI: load a dump into a throwaway server, run the job (or scan → plan → run) with
    /// verify; exit code and JUnit XML say how it went, table by table.
    Rehearse(rehearse::Args),
    /// Many servers and schemas from one fleet file: `fleet scan` (one roll-up, unused tables
    /// included), `fleet plan` (one job per schema), `fleet run` (the jobs in waves) and
    /// `fleet status`.
    Fleet(fleet::Args),
    /// For packagers: write the man pages, or print a shell's completion script.
    #[command(hide = true)]
    Generate(generate::Args),
    /// A run's cut-over guard: settles the cut-over if the run dies inside it (started by
    /// the run itself).
    #[command(hide = true, name = "cutover-guard")]
    CutoverGuard,
}

/// Parses arguments, runs the command, and maps the outcome to an exit code.
pub fn main() -> ExitCode {
    let cli = Cli::parse();
    if let Ok(me) = std::env::current_exe() {
        // A cut-over this process runs starts its guard from this very binary.
        crate::engine::copy::cutover::guard::use_program(me);
    }
    // Parsed: the arguments live on as owned strings, so the password can leave `ps`.
    argv::hide_url_passwords();
    if cli.verbose {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new("myrecode=info"))
            .with_writer(std::io::stderr)
            .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
            .with_target(false)
            .without_time()
            .init();
    }
    let result = match cli.command {
        Command::Inventory(args) => inventory::run(args),
        Command::Scan(args) => scan::run(args),
        Command::Plan(args) => plan::run(args),
        Command::Run(args) => run::run(args),
        Command::Review(args) => review::run(args),
        Command::Verify(args) => run::verify(args),
        Command::Rollback(args) => run::rollback(args),
        Command::Pause(args) => control::steer(args, control::Steer::Pause),
        Command::Resume(args) => control::steer(args, control::Steer::Resume),
        Command::Cutover(args) => control::cutover(args),
        Command::Status(args) => status::run(args),
        Command::Abort(args) => control::steer(args, control::Steer::Abort),
        Command::Cleanup(args) => control::cleanup(args),
        Command::Revert(args) => revert::run(args),
        Command::Convert(args) => convert::run(args),
        Command::Detect(args) => detect::run(args),
        Command::Demo(args) => demo::run(args),
        Command::Rehearse(args) => rehearse::run(args),
        Command::Fleet(args) => fleet::run(args),
        Command::Generate(args) => generate::run(args, Cli::command()),
        Command::CutoverGuard => guard::run(),
    };
    match result {
        Ok(code) => ExitCode::from(code),
        Err(err) => {
            eprintln!("myrecode: error: {}", crate::db::redact::redact_error(&err));
            ExitCode::from(EXIT_ERROR)
        }
    }
}
