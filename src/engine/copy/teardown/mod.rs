//! A copy removed (abandoned before its cut-over, or its kept original after one) and
//! verified (see `README.md` here).

pub mod remove;
pub mod verify;
