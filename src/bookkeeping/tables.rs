//! The names of the run's own bookkeeping tables, apart from what reads and writes them, so
//! the check of whose a table is ([`super::ownership`]) and the tables' code share them.

/// Checkpoint table name.
pub const CHECKPOINT: &str = "_myrecode_checkpoint";
/// Backup table name: original bytes of every changed value.
pub const BACKUP: &str = "_myrecode_backup";
/// Quarantine table name: values left alone because no reading was safe.
pub const QUARANTINE: &str = "_myrecode_quarantine";
/// The bridge's record: what it added to `init_connect`, and the swap's last session id.
pub const BRIDGE: &str = "_myrecode_bridge";
