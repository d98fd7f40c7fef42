//! A job column as the copy writes it, and the staging flags by which a staged value is
//! taken: shared by the deciding, the copy's statements and the keyless rebuild's. Pure.

use crate::db::quote;
use crate::engine::servercodec::ServerCodec;

/// A job column as the copy writes it.
#[derive(Debug, Clone)]
pub struct JobColumn {
    /// Column name.
    pub name: String,
    /// Whether its target is binary (staged bytes go in as they are, else as UTF-8 text).
    pub binary: bool,
    /// The server's charset whose conversion of the stored bytes is what the copy writes
    /// for every value not staged (see [`crate::engine::servercodec`]); `None`: the server's
    /// conversion from the declared charset.
    pub server: Option<ServerCodec>,
}

impl JobColumn {
    /// What the server writes for this column of row `row` when nothing is staged for it.
    pub fn default_expr(&self, row: &str) -> String {
        let own = format!("{row}.{}", quote::ident(&self.name));
        match &self.server {
            Some(sc) => sc.expr(&own),
            None => own,
        }
    }
}

/// Staging flag: take the staged value.
pub const STAGED_VALUE: i8 = 1;

/// Staging flag: take the server's conversion from the declared charset (the latin1 reading).
pub const STAGED_DECLARED: i8 = 2;

/// Job column `jc` of source `src` as the copy writes it: by the staging flag `flag`, the
/// staged `value`, the declared charset's conversion, or [`JobColumn::default_expr`].
pub fn staged_expr(jc: &JobColumn, src: &str, flag: &str, value: &str) -> String {
    let own = format!("{src}.{}", quote::ident(&jc.name));
    let value = if jc.binary {
        value.to_string()
    } else {
        format!("CONVERT({value} USING utf8mb4)")
    };
    format!(
        "CASE {flag} WHEN {STAGED_VALUE} THEN {value} WHEN {STAGED_DECLARED} THEN {own} ELSE {} END",
        jc.default_expr(src)
    )
}
