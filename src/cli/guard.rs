//! `myrecode cutover-guard`: the cut-over's guard, started by a run for each cut-over
//! (`engine::copy::cutover::guard`). Hidden: nobody runs it by hand.

/// Serves as the guard on this process's stdin; returns its exit code.
pub fn run() -> anyhow::Result<u8> {
    let stdin = std::io::stdin();
    Ok(crate::engine::copy::cutover::guard::serve(
        &mut stdin.lock(),
    ))
}
