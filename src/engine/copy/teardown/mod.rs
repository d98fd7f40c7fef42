//! A copy removed: abandoned before its cut-over, or its kept original after one; and verified.

pub mod remove;
pub mod verify;
