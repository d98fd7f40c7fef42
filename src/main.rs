//! Entry point: parse arguments, run, map the outcome to a documented exit code.

/// mimalloc: the copy decides values on one thread and frees them on another, millions of
/// small buffers, where glibc's allocator spent more time than the detection itself.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> std::process::ExitCode {
    // mimalloc's own purge (freed pages handed back after 10 ms) stays on. Kept instead, the
    // heap grew with the table on a two-stream copy (lock mode 2: peak RSS 85 MiB at 100k
    // rows, 119 at 300k, 154 at 1M, 179 at 3M), freed pages of one size class never serving
    // another; purged, 72 / 83 / 85 MiB. It costs page faults, the kernel zeroing what the
    // next batch touches again: 0.5 s of system CPU per million rows, beside the server's
    // work on the other core (bench_copy's ratio to pt-osc did not move).
    // mimalloc asks for transparent huge pages: each first touch of a 2 MiB region then
    // zeroes all of it, and the heap's partly used regions count whole. Without them, a
    // 1M-row copy's peak RSS was 83-85 MiB against 127-129, its system CPU 0.12 s against
    // 0.30 (the same wall and user time). Linux only; elsewhere nothing to turn off.
    #[cfg(target_os = "linux")]
    // SAFETY: prctl with PR_SET_THP_DISABLE takes plain integers and changes only this
    // process's paging; its failure (an old kernel) leaves things as they were.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    myrecode::cli::main()
}
