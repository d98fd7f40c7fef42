//! Online copy of one table into a shadow table with the job's target column definitions,
//! recoding on the way, and the atomic cut-over of each group of the job's tables
//! (pt-online-schema-change's flow, gh-ost's cut-over).
//!
//! Laid out by phase: [`setup`], [`table`], [`cutover`], [`myisam`], [`teardown`]; see
//! `README.md` here for the phases in order, their locks and what a kill in each leaves, and
//! `docs/copy-and-cutover.md` for what a user sees of it.

pub mod catalog;
pub mod cutover;
pub mod myisam;
pub mod phase;
mod prepare;
pub mod setup;
pub mod table;
pub mod teardown;
mod trial;
pub mod undecided;

pub(crate) use cutover::carried::schema_default::after_in_place;
/// The runner's cut-overs (`cut_over_group`, `prepare`, `settle_interrupted`, `abandon`).
pub use cutover::group;
pub use cutover::swapped::swapped;
pub use myisam::index_repair::{after_failure, after_restart};
pub use phase::{Phase, DRAIN_BEFORE_CUTOVER, STEP_ROWS};
pub use prepare::prepare_table;
pub use setup::change_log::refuse_kept_originals;
pub use table::parallel::rehearsal_lines;
pub use table::read_sql::count_sql;
pub use teardown::remove::{abort_table, cleanup_table};
pub use teardown::verify::{verify_table, CopyFindings};
pub use trial::trial_job;
