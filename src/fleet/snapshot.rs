//! Reads a server's usage counters before anything of ours reads its tables: the I/O half
//! of [`super::usage`].

use super::usage::{self, Counters, SchemaUsage, ServerUsage, TableUsage};
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};
use std::collections::BTreeMap;

/// Takes the snapshot of `schemas` on a server of `flavor` (`MariaDB` or `MySQL`).
pub async fn take(
    conn: &mut MySqlConnection,
    flavor: &str,
    schemas: &[String],
) -> Result<ServerUsage> {
    let mysql = flavor == "MySQL";
    let counters = which_counters(conn, mysql).await;
    let uptime: String = sqlx::query(usage::UPTIME_SQL)
        .fetch_one(&mut *conn)
        .await
        .context("reading the server's uptime")?
        .try_get(1)
        .context("reading the server's uptime")?;
    let uptime_secs = uptime
        .trim()
        .parse()
        .with_context(|| format!("the server's Uptime is not a number: {uptime:?}"))?;
    let taken_at: String = sqlx::query_scalar(usage::NOW_SQL)
        .fetch_one(&mut *conn)
        .await
        .context("reading the server's clock")?;
    let mut out = Vec::new();
    for schema in schemas {
        out.push(schema_usage(conn, &counters, schema).await?);
    }
    Ok(ServerUsage {
        counters,
        uptime_secs,
        taken_at,
        schemas: out,
    })
}

/// Which counters the server keeps; a failing probe means none (said, not guessed).
async fn which_counters(conn: &mut MySqlConnection, mysql: bool) -> Counters {
    let (sql, off) = if mysql {
        (usage::PERFORMANCE_SCHEMA_SQL, "performance_schema is off")
    } else {
        (usage::USERSTAT_SQL, "userstat is off")
    };
    match sqlx::query_scalar::<_, i64>(sql)
        .fetch_one(&mut *conn)
        .await
    {
        Ok(1) if mysql => Counters::PerformanceSchema,
        Ok(1) => Counters::TableStatistics,
        Ok(_) => Counters::None { why: off.into() },
        Err(e) => Counters::None {
            why: format!("the server does not say ({e})"),
        },
    }
}

async fn schema_usage(
    conn: &mut MySqlConnection,
    counters: &Counters,
    schema: &str,
) -> Result<SchemaUsage> {
    let rows = sqlx::query(usage::TABLES_SQL)
        .bind(schema)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| format!("reading the tables of schema '{schema}'"))?;
    let sql = match counters {
        Counters::TableStatistics => Some(usage::TABLE_STATISTICS_SQL),
        Counters::PerformanceSchema => Some(usage::PERFORMANCE_SCHEMA_TABLES_SQL),
        Counters::None { .. } => None,
    };
    let mut counted: BTreeMap<String, (u64, u64)> = BTreeMap::new();
    if let Some(sql) = sql {
        for r in sqlx::query(sql)
            .bind(schema)
            .fetch_all(&mut *conn)
            .await
            .with_context(|| format!("reading the table counters of schema '{schema}'"))?
        {
            counted.insert(r.get(0), (r.get(1), r.get(2)));
        }
    }
    let tables = rows
        .iter()
        .map(|r| {
            let name: String = r.get(0);
            // A table with counters but no row was not touched since they started: zero.
            let (read, changed) = match sql {
                Some(_) => {
                    let (a, b) = counted.get(&name).copied().unwrap_or((0, 0));
                    (Some(a), Some(b))
                }
                None => (None, None),
            };
            TableUsage {
                table: name,
                rows: r.get(1),
                bytes: r.get(2),
                update_time: r.get(3),
                rows_read: read,
                rows_changed: changed,
            }
        })
        .collect();
    Ok(SchemaUsage {
        schema: schema.to_string(),
        tables,
    })
}
