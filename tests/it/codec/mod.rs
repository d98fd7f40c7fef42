//! The codec: conversions through the binary, every byte and character against the oracles,
//! property tests, and the generated tables kept in step with their generator.

mod convert;
mod oracles;
mod props;
mod tables;
