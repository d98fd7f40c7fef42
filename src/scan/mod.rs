//! Read-only scan: raw bytes by keyset pagination, detection per value, aggregation per column.

pub mod model;
