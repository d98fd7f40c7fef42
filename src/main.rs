//! Entry point: parse arguments, run, map the outcome to a documented exit code.

/// mimalloc: the copy decides values on one thread and frees them on another, millions of
/// small buffers, where glibc's allocator spent more time than the detection itself.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same place in its v2 and v3
/// headers; libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;
/// Milliseconds after which mimalloc hands freed pages back (see `main`).
const PURGE_AFTER_MS: std::os::raw::c_long = 1000;

fn main() -> std::process::ExitCode {
    // Freed pages go back to the system after a second (mimalloc v3's default, set here so a
    // change of the library's default does not change it silently). Kept for good, as until
    // 2026-11-27, a two-stream copy's heap grew with the table (lock mode 2: peak RSS 85 MiB
    // at 100k rows, 119 at 300k, 154 at 1M, 179 at 3M): freed pages of one size class never
    // served another. After a second, 108-126 MiB at 1M. After 10 ms it stayed flat (71 MiB
    // at 100k, 80-85 at 1M), but the kernel then zeroed each batch's pages again as the next
    // batch touched them: 0.5 s of system CPU per million rows, and bench_copy's ratio to
    // pt-osc under its writer fell from 0.79-0.83 to 0.75-0.79 (docs/benchmarks.md).
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
