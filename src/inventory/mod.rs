//! Read-only inventory of text and binary columns, keys, triggers and foreign keys.
