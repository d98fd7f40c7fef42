//! Entry point: parse arguments, run, map the outcome to a documented exit code.

fn main() -> std::process::ExitCode {
    myrecode::cli::main()
}
