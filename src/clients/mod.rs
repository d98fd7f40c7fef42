//! The application's clients and the bridge that carries them through the switch.
//!
//! `model.rs` says which clients talk to a schema and how (read by `read.rs` through the
//! statements of `sql.rs`), and what the switch does for each kind (pure); `bridge_sql.rs`
//! builds the bridge's statements (pure): the `init_connect` part that makes a
//! latin1-handshake session of the application talk the legacy charset once the tables are
//! utf8mb4, and the triggers that read the writes of a session opened before the swap as
//! the legacy charset. Described for users in docs/switching-clients.md.

pub mod bridge_sql;
pub mod model;
pub mod read;
pub mod sql;
