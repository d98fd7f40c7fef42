//! Entry point: parse arguments, run, map the outcome to a documented exit code.

/// mimalloc: the copy decides values on one thread and frees them on another, millions of
/// small buffers, where glibc's allocator spent more time than the detection itself.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    myrecode::cli::main()
}
