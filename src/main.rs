//! Entry point: parse arguments, run, map the outcome to a documented exit code.

/// mimalloc: the copy decides values on one thread and frees them on another, millions of
/// small buffers, where glibc's allocator spent more time than the detection itself.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same place in its v2 and v3
/// headers; libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// Milliseconds after which mimalloc hands freed pages back (see `main`).
const PURGE_AFTER_MS: std::os::raw::c_long = 100;

fn main() -> std::process::ExitCode {
    // Freed pages go back to the system after 100 ms. Kept for good, as until 2026-11-27, a
    // two-stream copy's heap grew with the table (lock mode 2: peak RSS 85 MiB at 100k rows,
    // 154 at 1M, 179 at 3M): freed pages of one size class never served another. After a
    // second (mimalloc v3's default), a copy's first second still outgrew a 100k-row run
    // (lock mode 2, quiet: 66-68 MiB at 100k, 78-83 at 1M, bench_copy's worst of three runs
    // 1.40x under its writer). After 100 ms: 60-62 and 65 MiB, for 0.15 s more system CPU per
    // million rows. After 10 ms, before a batch's rows were read and decided row by row, the
    // kernel zeroed each batch's pages again as the next touched them: 0.5 s of system CPU
    // per million rows, and bench_copy's ratio under its writer fell 3-5%
    // (docs/benchmarks.md).
    // SAFETY: sets an allocator option before any thread but this one runs.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, PURGE_AFTER_MS) };
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
