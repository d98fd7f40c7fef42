//! Everything that talks to a server: connection, quoting, raw-byte reads, throwaway servers.

pub mod redact;
