//! The one way a value can reach us cut: longer than the server's `max_allowed_packet`, it
//! comes back from `CAST(… AS BINARY)` as NULL with warning 1301. Checked after each read of
//! the scan, the copy and the in-place run, so it is named instead of passed over.

use anyhow::Result;
use sqlx::{MySqlConnection, Row};

/// After a read: a value bigger than the server's `max_allowed_packet` comes back from
/// `CAST(… AS BINARY)` as NULL with warning 1301, and read as NULL it would be left as it is
/// without a word. Any such warning stops the run (definitively: a retry would read the same),
/// naming the setting and the fix.
pub async fn no_value_cut(conn: &mut MySqlConnection, table: &str) -> Result<()> {
    let warnings: i64 = sqlx::query_scalar("SELECT CAST(@@warning_count AS SIGNED)")
        .fetch_one(&mut *conn)
        .await?;
    if warnings == 0 {
        return Ok(());
    }
    let rows = sqlx::query("SHOW WARNINGS").fetch_all(&mut *conn).await?;
    let cut = rows
        .iter()
        .any(|r| r.try_get::<u32, _>(1).is_ok_and(|code| code == 1301));
    if cut {
        let max: i64 = sqlx::query_scalar("SELECT CAST(@@max_allowed_packet AS SIGNED)")
            .fetch_one(&mut *conn)
            .await?;
        anyhow::bail!(
            "a value of table {table} is longer than the server's max_allowed_packet ({max} bytes), so the server sends it as NULL: it can be neither read nor recoded, and nothing of it was written. \
             Fix: SET GLOBAL max_allowed_packet = 1073741824 (and max_allowed_packet in the server's option file), then run again"
        );
    }
    Ok(())
}
