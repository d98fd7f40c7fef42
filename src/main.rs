//! Entry point: parse arguments, run, map the outcome to a documented exit code.

/// mimalloc: the copy decides values on one thread and frees them on another, millions of
/// small buffers, where glibc's allocator spent more time than the detection itself.
#[global_allocator]
static ALLOC: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// `mi_option_purge_delay` in mimalloc's `mi_option_e` (the same place in its v2 and v3
/// headers; libmimalloc-sys names no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> std::process::ExitCode {
    // A copy frees each batch's buffers, megabytes, and allocates the next batch's a moment
    // later; purged after mimalloc's default 10 ms (or even after a second), every batch
    // faulted its pages back in, zeroed by the kernel: a tenth of the tool's CPU in a copy
    // (38,000 page faults per million rows; 450 unpurged). Unpurged, the heap stays at its
    // peak, which the first batches reach anyway (110 MB for a 1M-row copy, against 87).
    // SAFETY: sets an allocator option before any thread but this one runs.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, -1) };
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
