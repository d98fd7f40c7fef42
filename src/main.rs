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
    myrecode::cli::main()
}
