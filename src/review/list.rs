//! Reads what a job left undecided: its quarantined values and the column priors it decided
//! them with, from the job's own tables on the server.

use super::readings::{review, Review};
use crate::bookkeeping::checkpoint::CHECKPOINT;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::quarantine::quarantined;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::MySqlConnection;

/// One undecided value, ready to show.
#[derive(Debug, Clone, PartialEq)]
pub struct Undecided {
    /// Table.
    pub table: String,
    /// Column.
    pub column: String,
    /// The row's key parts.
    pub key: Vec<Vec<u8>>,
    /// The stored bytes, left as they are.
    pub stored: Vec<u8>,
    /// Its readings and the column's verdict.
    pub review: Review,
}

/// The undecided values of `tables` under job `job`, in quarantine order.
pub async fn undecided(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    tables: &[String],
) -> Result<Vec<Undecided>> {
    let mut out = Vec::new();
    for table in tables {
        let rows = quarantined(conn, schema, job, table).await?;
        if rows.is_empty() {
            continue;
        }
        let sql = format!(
            "SELECT CAST(priors AS CHAR) FROM {} WHERE job = ? AND tbl = ?",
            quote::table(schema, CHECKPOINT)
        );
        let json: Option<String> = sqlx::query_scalar(&sql)
            .bind(job)
            .bind(table)
            .fetch_optional(&mut *conn)
            .await
            .context("reading the job's column priors")?;
        let priors = crate::bookkeeping::priors::parse(json.as_deref().unwrap_or("{}"));
        for (_, column, packed, stored) in rows {
            let review = review(&stored, priors.get(&column));
            out.push(Undecided {
                table: table.clone(),
                key: keycodec::unpack(&packed).unwrap_or_default(),
                column,
                stored,
                review,
            });
        }
    }
    Ok(out)
}
