//! Everything that talks to a server: connection, quoting, raw-byte reads, throwaway servers.

pub mod connect;
pub mod errno;
pub mod keyset;
mod localserver;
pub mod quote;
pub mod redact;
mod testuser;
pub mod throwaway;
