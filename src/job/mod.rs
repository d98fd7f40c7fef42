//! The YAML job file: its model, loading with line-precise errors, validation against the live
//! schema, and generation from a scan report.
//!
//! Pure except [`live`], which reads the catalog. Every problem is a [`finding::Finding`] that
//! names the line, the field path (`tables[1].columns[0].source`), what is wrong and the fix.

pub mod check;
pub mod choose;
pub mod clients_check;
pub mod context;
pub mod definition;
pub mod duration;
pub mod finding;
pub mod groups;
pub mod labels;
pub mod live;
pub mod load;
pub mod locate;
pub mod model;
pub mod pause;
pub mod plan;
pub mod plan_clients;
pub mod refusal;
pub mod scan_target;
pub mod settings;
pub mod source;
pub mod suggest;
pub mod target;
pub mod yaml_scalar;
