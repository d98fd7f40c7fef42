//! Recoding, shared by every phase that reads or writes legacy text: one stored value
//! ([`value`]: keep, rewrite or quarantine), PHP-serialized values ([`serialized`]), the
//! decisions remembered for a column's repeating short values ([`short_values`]), legacy
//! text inside SQL text ([`sql_text`]) and inside the schema's views, routines and events
//! ([`objects`]). Pure: no I/O. Below `scan`, `job`, `review` and `engine`, which all use it.

pub mod objects;
pub mod serialized;
pub mod short_values;
pub mod sql_text;
pub mod value;
