//! Everything that talks to a server: connection, quoting, raw-byte reads, throwaway servers.

pub mod charset;
pub mod connect;
pub mod credentials;
pub mod errno;
pub mod keyset;
mod localserver;
pub mod optionfile;
pub mod packet;
pub mod quote;
pub mod redact;
pub mod settings;
pub mod sqlmode;
pub mod sqltext;
pub(crate) mod testuser;
pub mod throwaway;
pub mod tls;
