//! Placeholder until the benchmark lands.
fn main() {}
