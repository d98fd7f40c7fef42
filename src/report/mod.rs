//! Renders results for people (terminal tables) and programs (JSON); rendering only, no queries.

pub mod html;
pub mod inventory;
pub mod junit;
pub mod scan;
