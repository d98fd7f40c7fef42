//! The control table: one row per job holding the operator's last command (pause, abort,
//! cutover) and why the running job waits. Its statements are built beside the commands
//! (`engine`); its name and definition live here with the other bookkeeping tables.

use crate::db::quote;

/// Control table name: one row per job holding the operator's last command.
pub const CONTROL: &str = "_myrecode_control";

/// Columns the control table gained after its first release, with their definitions (added
/// by [`super::checkpoint::ensure`] where missing): why the running job waits now, and since when.
pub const CONTROL_ADDED: &[(&str, &str)] = &[
    ("waiting", "VARCHAR(255) NULL"),
    ("waiting_since", "TIMESTAMP(6) NULL"),
    ("argument", "VARCHAR(255) NULL"),
];

/// DDL of the control table. `argument`: what the command names (`cutover`: the group).
pub fn ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL PRIMARY KEY, command VARCHAR(16) NOT NULL, \
         at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), waiting VARCHAR(255) NULL, waiting_since TIMESTAMP(6) NULL, \
         argument VARCHAR(255) NULL) ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, CONTROL)
    )
}
