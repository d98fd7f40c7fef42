//! The job's bridge at run time (its statements: [`crate::clients::bridge_sql`]): installed
//! before the copy (recorded first in `_myrecode_bridge`, then added to `init_connect`),
//! turned on by the cut-over's rename (the probe column becomes utf8mb4; the triggers,
//! created on the shadows under the lock by `copy/cutover/carried/bridge.rs`, come with the
//! rename), the swap's last session id marked after it, counted by `status`, and removed by
//! `cleanup`. Every step is idempotent: a run after a kill does it again.

use crate::bookkeeping::names::names;
use crate::bookkeeping::tables::BRIDGE;
use crate::clients::bridge_sql::{compose, record_ddl, segment, sessions_sql, without, Bridge};
use crate::db::quote;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::setup::sql::drop_trigger_sql;
use crate::job::model::{Job, Strategy};
use anyhow::{anyhow, bail, Context, Result};
use sqlx::{Executor, MySqlConnection};

/// A named lock serializing every read-modify-write of `init_connect` by myrecode (two jobs
/// installing at once would otherwise lose one's part).
const INIT_CONNECT_LOCK: &str = "myrecode_init_connect";

/// The bridge `job` asks for, if any: its probe is the first job column of its first copied
/// table whose target is utf8mb4.
pub fn of(job: &Job) -> Option<Bridge> {
    let c = job.bridge()?;
    let probe = job
        .tables
        .iter()
        .filter(|t| t.strategy == Strategy::Copy)
        .find_map(|t| {
            t.columns
                .iter()
                .find(|c| c.target.to_ascii_lowercase().contains("utf8mb4"))
                .map(|c| (t.name.clone(), c.name.clone()))
        })?;
    Some(Bridge {
        schema: job.schema.clone(),
        legacy: crate::clients::model::bridge_charset(&c.legacy)?.to_string(),
        users: c.users.clone(),
        probe,
    })
}

/// Runs `f` holding [`INIT_CONNECT_LOCK`] (at most 10 s to get it).
async fn with_init_connect(
    conn: &mut MySqlConnection,
    f: impl FnOnce(&str) -> String,
) -> Result<()> {
    let got: Option<i64> = sqlx::query_scalar("SELECT GET_LOCK(?, 10)")
        .bind(INIT_CONNECT_LOCK)
        .fetch_one(&mut *conn)
        .await?;
    if got != Some(1) {
        bail!("another myrecode run is changing init_connect. Fix: run again once it is done");
    }
    let done = async {
        let now: String = sqlx::query_scalar("SELECT CAST(@@global.init_connect AS CHAR)")
            .fetch_one(&mut *conn)
            .await?;
        let next = f(&now);
        if next != now {
            sqlx::query("SET GLOBAL init_connect = ?")
                .bind(&next)
                .execute(&mut *conn)
                .await
                .map_err(|e| {
                    anyhow!(
                        "setting the bridge's init_connect: {e}. Fix: the job's user needs SUPER (MariaDB) or \
                         SYSTEM_VARIABLES_ADMIN (MySQL), or set clients: bridge: false and switch the application's \
                         connections at the cut-over yourself"
                    )
                })?;
        }
        anyhow::Ok(())
    }
    .await;
    sqlx::query("DO RELEASE_LOCK(?)")
        .bind(INIT_CONNECT_LOCK)
        .execute(&mut *conn)
        .await
        .ok();
    done
}

/// Before the copy: the bridge recorded (a job edited since replaces its earlier part), then
/// added to `init_connect`, keeping what it held. Nothing once `cleanup` removed it.
pub async fn install(conn: &mut MySqlConnection, job: &Job, job_id: &str) -> Result<()> {
    let Some(b) = of(job) else {
        return Ok(());
    };
    let schema = &job.schema;
    conn.execute(record_ddl(schema).as_str()).await?;
    let ours = segment(&b);
    let t = quote::table(schema, BRIDGE);
    let before: Option<(String, i8)> =
        sqlx::query_as(&format!("SELECT segment, removed FROM {t} WHERE job = ?"))
            .bind(job_id)
            .fetch_optional(&mut *conn)
            .await?;
    if matches!(before, Some((_, 1))) {
        return Ok(());
    }
    let earlier = before.map(|(s, _)| s).filter(|s| *s != ours);
    sqlx::query(&format!(
        "INSERT INTO {t} (job, segment, legacy, users) VALUES (?, ?, ?, ?) \
         ON DUPLICATE KEY UPDATE segment = VALUES(segment), legacy = VALUES(legacy), users = VALUES(users)"
    ))
    .bind(job_id)
    .bind(&ours)
    .bind(&b.legacy)
    .bind(b.users.join(","))
    .execute(&mut *conn)
    .await?;
    with_init_connect(conn, |now| {
        let kept = match &earlier {
            Some(e) => without(now, e),
            None => now.to_string(),
        };
        compose(&kept, &ours)
    })
    .await
    .context("installing the bridge")
}

/// What `_myrecode_bridge` holds for a job: its `init_connect` part, legacy charset, users,
/// the swap's last session id, whether `cleanup` removed it.
#[derive(Debug, Clone)]
pub struct Recorded {
    /// The statement it added to `init_connect`.
    pub segment: String,
    /// The legacy charset bridged sessions talk.
    pub legacy: String,
    /// The application's users (empty: every user without SUPER).
    pub users: Vec<String>,
    /// The last session id when the swap was marked (`None`: not swapped yet).
    pub swap_mark: Option<u64>,
    /// Whether `cleanup` removed it.
    pub removed: bool,
}

/// The job's bridge record, if it has one.
pub async fn recorded(
    conn: &mut MySqlConnection,
    schema: &str,
    job_id: &str,
) -> Result<Option<Recorded>> {
    if !table_exists(conn, schema, BRIDGE).await? {
        return Ok(None);
    }
    let row: Option<(String, String, String, Option<u64>, i8)> = sqlx::query_as(&format!(
        "SELECT segment, legacy, users, swap_mark, removed FROM {} WHERE job = ?",
        quote::table(schema, BRIDGE)
    ))
    .bind(job_id)
    .fetch_optional(&mut *conn)
    .await?;
    Ok(
        row.map(|(segment, legacy, users, swap_mark, removed)| Recorded {
            segment,
            legacy,
            users: users
                .split(',')
                .filter(|u| !u.is_empty())
                .map(String::from)
                .collect(),
            swap_mark,
            removed: removed == 1,
        }),
    )
}

/// After the job's rename (or by the run after it): the last session id then, so `status`
/// can tell the sessions opened before the swap (never bridged) from those after.
pub async fn mark_swap(conn: &mut MySqlConnection, schema: &str, job_id: &str) -> Result<()> {
    if !table_exists(conn, schema, BRIDGE).await? {
        return Ok(());
    }
    sqlx::query(&format!(
        "UPDATE {} SET swap_mark = (SELECT MAX(ID) FROM information_schema.PROCESSLIST) WHERE job = ? AND swap_mark IS NULL",
        quote::table(schema, BRIDGE)
    ))
    .bind(job_id)
    .execute(&mut *conn)
    .await?;
    Ok(())
}

/// The application's live sessions on the schema: opened before the swap (all of them
/// before it), and after it.
pub async fn sessions(
    conn: &mut MySqlConnection,
    schema: &str,
    r: &Recorded,
) -> Result<(i64, i64)> {
    let mark = r.swap_mark;
    Ok(sqlx::query_as(&sessions_sql(&r.users))
        .bind(mark)
        .bind(mark)
        .bind(mark)
        .bind(mark)
        .bind(schema)
        .fetch_one(&mut *conn)
        .await?)
}

/// `cleanup`: the bridge's part taken out of `init_connect` (what else it holds kept), its
/// triggers dropped from the job's copied `tables`, the record marked removed. Idempotent.
pub async fn remove(
    conn: &mut MySqlConnection,
    schema: &str,
    job_id: &str,
    tables: &[String],
) -> Result<bool> {
    let Some(r) = recorded(conn, schema, job_id).await? else {
        return Ok(false);
    };
    if r.removed {
        return Ok(false);
    }
    with_init_connect(conn, |now| without(now, &r.segment)).await?;
    for t in tables {
        for name in names(t).bridge {
            conn.execute(drop_trigger_sql(schema, &name).as_str())
                .await?;
        }
    }
    sqlx::query(&format!(
        "UPDATE {} SET removed = 1 WHERE job = ?",
        quote::table(schema, BRIDGE)
    ))
    .bind(job_id)
    .execute(&mut *conn)
    .await?;
    Ok(true)
}
