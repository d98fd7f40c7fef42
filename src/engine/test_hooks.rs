//! Test hooks: pauses the integration tests ask for through the environment, to land a kill,
//! a write or a fault inside a window too short to hit by chance. Every hook the engine
//! honours is read here, one function each, called where the pause belongs; a variable left
//! unset (as in every real run) is no pause.

use std::time::Duration;

/// `MYRECODE_TEST_WRITE_HOLD_MS`: a copy step holds its write back this long after its rows
/// were read ahead and decided (`copy/table/write.rs`), widening the window in which the
/// application rewrites a row read ahead. `tests/it/copy.rs`
/// (`a_row_rewritten_after_its_read_ahead`): a writer rewrites rows in UTF-8 meanwhile, and
/// the step must read them again and write them afresh.
pub fn write_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_WRITE_HOLD_MS")
}

/// `MYRECODE_TEST_CUTOVER_HOLD_MS`: the cut-over holds its lock this long once the change
/// logs are drained, before the moves and the rename (`copy/cutover/swap.rs`), so that kills and
/// faults land inside the locked window. `tests/it/copy.rs`
/// (`sigkill_at_random_instants_then_rerun_loses_nothing`), `tests/it/schema.rs`,
/// `tests/it/groups/kill.rs` (through `tests/it/groups/run.rs`) and `tests/it/faults.rs`.
pub fn cutover_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_CUTOVER_HOLD_MS")
}

/// `MYRECODE_TEST_CLOSED_HOLD_MS`: a cut-over whose moves the application would see holds
/// this long with its tables closed and the moves made, before the rename
/// (`copy/cutover/swap.rs`). `tests/it/torn_cutover.rs`: a run killed there leaves writes failing
/// until the next run settles the half-moved cut-over.
pub fn closed_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_CLOSED_HOLD_MS")
}

/// `MYRECODE_TEST_AFTER_RENAME_HOLD_MS`: a group's cut-over waits this long after its rename,
/// before the finish and the schema's views, routines and events are recreated
/// (`copy/cutover/group.rs`). `tests/it/legacy_app/` kills runs there (the next run must finish the
/// swap from its record); `tests/it/faults.rs` lands faults there.
pub fn after_rename_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_AFTER_RENAME_HOLD_MS")
}

/// The pause a hook's variable `name` asks for, in milliseconds (unset or not a number: none).
/// `MYRECODE_TEST_BEFORE_LOCK_HOLD_MS`: a cut-over holds this long once its sentries are
/// placed and what it carries recorded, before its lock (`copy/cutover/swap.rs`).
/// `tests/it/cutover_guard.rs` kills runs there.
pub fn before_lock_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_BEFORE_LOCK_HOLD_MS")
}

/// `MYRECODE_TEST_NO_GUARD=1`: no cut-over starts its guard, as when the run's host is lost
/// with it (`copy/cutover/guard/`). `tests/it/torn_cutover.rs`: the tables then stay closed
/// until the next run settles them.
pub fn no_guard() -> bool {
    std::env::var_os("MYRECODE_TEST_NO_GUARD").is_some()
}

/// `MYRECODE_TEST_REVERT_HOLD_MS`: `revert` holds its swap back's lock this long once the
/// back logs are drained, before the rename (`revert/swap_back.rs`); and this long after
/// each chunk it brings back before the lock. `tests/it/revert.rs` kills it there.
pub fn revert_hold() -> Option<Duration> {
    millis("MYRECODE_TEST_REVERT_HOLD_MS")
}

fn millis(name: &str) -> Option<Duration> {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse::<u64>().ok())
        .map(Duration::from_millis)
}
