//! Per-value encoding detection: pure, no I/O; abstains rather than corrupts.
