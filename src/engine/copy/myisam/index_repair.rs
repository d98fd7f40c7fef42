//! A table without transactions (MyISAM, Aria) whose index is out of step with its rows
//! after a server crash, checked and repaired by the run itself, and said in its output.
//!
//! A server killed mid-write leaves a MyISAM table's index and data files out of step. When
//! the server marks the table crashed it repairs it on the next open
//! (`myisam_recover_options`); but a table only "not closed properly" is opened after the
//! default recovery's QUICK check, which reads the index and not the rows, so an index entry
//! naming a row that is not there, or a row no entry names, survives it unmarked (seen in one
//! run in four of `tests/it/faults.rs` with the binary log on: every replay that read the
//! original by key failed with 1032, rerun after rerun).
//!
//! The run repairs such a table rather than stopping and asking an operator to: `REPAIR TABLE`
//! rebuilds the index from the rows the data file holds, which is what the server itself does
//! to a table it marks crashed, and loses no row the crash left whole. It is done only when
//! `CHECK TABLE` finds the index out of step (an error, or a status other than OK), and it is
//! printed (`restart:` or `repair:` naming the table, what the check said and what the repair
//! said). A repair changes the table unlogged by our triggers, so the table is compared row by
//! row with its copy again before its cut-over: the copy equals the original as repaired.
//!
//! Three places check. Before each step of a run, once per server start: every copied table
//! without transactions the server started under since it was last compared with its copy
//! (or that has no copy yet) is checked `MEDIUM` (every row read, its keys' checksum compared
//! with the index's), since the application's statements fail on such an index too (1032)
//! and a copy reading by key ranges would miss the rows it lost ([`after_restart`]). At the
//! cut-over, every table without transactions the server restarted under is checked `MEDIUM`
//! again before its rows are compared again (`nontx::recheck_if_restarted`). And a step that
//! failed with an error saying a table of the job (original or shadow) needs a repair (1032,
//! 1034, 126 "Index for table … is corrupt", 1194 marked crashed: `errno::NEEDS_REPAIR`, 126
//! seen on a write after a restart) checks it `EXTENDED` and, if the check finds it out of
//! step, repairs it and runs the step again ([`after_out_of_step`]); when the check finds
//! nothing the step's error stands.
//!
//! The alternative, reading the original by a full scan when its index fails, was not taken:
//! an index that misses rows fails nothing, the key-range reads of the copy and the check
//! would skip those rows in silence, and the application's own statements go on failing.

use crate::bookkeeping::names::names;
use crate::db::errno::{self, NEEDS_REPAIR};
use crate::db::quote;
use crate::engine::copy::catalog::ENGINE_SQL;
use crate::engine::copy::myisam::engines::is_transactional;
use crate::engine::copy::myisam::restarts::{
    record_checked_sql, recorded_start, restarted_since, server_started,
};
use crate::engine::error::EngineError;
use crate::engine::events::{Event, Events};
use crate::engine::table_plan::TablePlan;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// How thoroughly `CHECK TABLE` reads a table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Thoroughness {
    /// Every row read, its keys' checksum compared with the index's: finds an index entry
    /// without its row, or a row without its entry, in one pass over each file.
    Medium,
    /// Every key of every row looked up in the index: slower, for a table already seen failing.
    Extended,
}

/// `CHECK TABLE` of one table at `how`.
pub fn check_sql(schema: &str, table: &str, how: Thoroughness) -> String {
    let level = match how {
        Thoroughness::Medium => "MEDIUM",
        Thoroughness::Extended => "EXTENDED",
    };
    format!("CHECK TABLE {} {level}", quote::table(schema, table))
}

/// `REPAIR NO_WRITE_TO_BINLOG TABLE` of one table: the crash was this server's, and a
/// replica's copy of the table is whole (a repair there would hold its replication behind
/// the table's lock for nothing).
pub fn repair_sql(schema: &str, table: &str) -> String {
    format!(
        "REPAIR NO_WRITE_TO_BINLOG TABLE {}",
        quote::table(schema, table)
    )
}

/// Whether what `CHECK TABLE` said (message type, text) calls for a repair: an error, or a
/// status other than OK. Warnings alone ("1 client is using or hasn't closed the table
/// properly", after any crash) do not.
pub fn needs_repair(said: &[(String, String)]) -> bool {
    said.iter().any(|(kind, text)| {
        kind.eq_ignore_ascii_case("error")
            || (kind.eq_ignore_ascii_case("status")
                && text != "OK"
                && text != "Table is already up to date")
    })
}

/// The table a server's 1032, 1034, 126 or 1194 names: "Can't find record in 'film_text'", "Index for
/// table './shop/film_text.MYI' is corrupt…": its last path part, without the index's suffix.
pub fn named_table(message: &str) -> Option<String> {
    // The name's opening quote follows a space ("Can't" has an apostrophe of its own).
    let rest = &message[message.find(" '")? + 2..];
    let quoted = &rest[..rest.find('\'')?];
    let last = quoted.rsplit('/').next().unwrap_or(quoted);
    let name = last
        .strip_suffix(".MYI")
        .or_else(|| last.strip_suffix(".MAI"))
        .unwrap_or(last);
    (!name.is_empty()).then(|| name.to_string())
}

/// The table and the server's words in `err` when it says a table needs a repair
/// ([`errno::NEEDS_REPAIR`], raw or as [`EngineError::IndexOutOfStep`]).
pub fn out_of_step(err: &anyhow::Error) -> Option<(String, String)> {
    if let Some(EngineError::IndexOutOfStep { table, detail, .. }) = crate::engine::error::find(err)
    {
        return Some((table.clone(), detail.clone()));
    }
    err.chain()
        .filter_map(|c| c.downcast_ref::<sqlx::Error>())
        .find_map(|e| {
            let number = errno::of(e).filter(|n| NEEDS_REPAIR.contains(n))?;
            let message = e.as_database_error()?.message();
            Some((named_table(message)?, format!("{number}: {message}")))
        })
}

/// What a check and, when it called for one, a repair said.
pub struct Verdict {
    /// What `CHECK TABLE` said ("OK", or its warnings and errors).
    pub check: String,
    /// What `REPAIR TABLE` said, when the check called for it.
    pub repair: Option<String>,
}

/// Checks a table without transactions at `how` and repairs it when the check finds its index
/// out of step; a repair that does not end in OK stops the run ([`EngineError::IndexOutOfStep`]).
pub async fn check_and_repair(
    conn: &mut MySqlConnection,
    schema: &str,
    table: &str,
    how: Thoroughness,
) -> Result<Verdict> {
    let sql = check_sql(schema, table, how);
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| sql.clone())?;
    let said = messages(&rows);
    let check = check_said(&said);
    if !needs_repair(&said) {
        return Ok(Verdict {
            check,
            repair: None,
        });
    }
    let sql = repair_sql(schema, table);
    let rows = sqlx::query(&sql)
        .fetch_all(&mut *conn)
        .await
        .with_context(|| sql.clone())?;
    let repaired = messages(&rows);
    let repair = check_said(&repaired);
    tracing::warn!(table, check = %check, repair = %repair, "index out of step with its rows: repaired");
    if needs_repair(&repaired) {
        return Err(EngineError::IndexOutOfStep {
            table: table.to_string(),
            quoted: quote::table(schema, table),
            detail: format!("CHECK TABLE said {check}; REPAIR TABLE said {repair}"),
        }
        .into());
    }
    Ok(Verdict {
        check,
        repair: Some(repair),
    })
}

/// Repairs `table` (of `plan`: its original or its shadow) if it has no transactions and
/// `CHECK TABLE` at `how` finds its index out of step, says so (`found`: how it came to be
/// checked), and has the table compared with its copy again before its cut-over (its
/// recorded server start forgotten). Returns whether it repaired.
async fn repair_if_out_of_step(
    conn: &mut MySqlConnection,
    job: &str,
    plan: &TablePlan,
    table: &str,
    how: Thoroughness,
    found: &str,
    events: &dyn Events,
) -> Result<bool> {
    let engine: Option<String> = sqlx::query_scalar(ENGINE_SQL)
        .bind(&plan.schema)
        .bind(table)
        .fetch_optional(&mut *conn)
        .await?;
    let Some(engine) = engine.filter(|e| !is_transactional(e)) else {
        return Ok(false);
    };
    let verdict = check_and_repair(conn, &plan.schema, table, how).await?;
    let Some(repair) = verdict.repair else {
        tracing::info!(table, check = %verdict.check, found, "CHECK TABLE finds nothing to repair");
        return Ok(false);
    };
    // Compared again at the cut-over: no start recorded is a restart (`nontx::restarted_since`).
    sqlx::query(&record_checked_sql(&plan.schema))
        .bind(None::<i64>)
        .bind(job)
        .bind(&plan.table)
        .execute(&mut *conn)
        .await
        .context("asking for the repaired table to be compared again")?;
    events.event(&Event::Repaired {
        table,
        engine: &engine,
        found,
        check: &verdict.check,
        repair: &repair,
    });
    Ok(true)
}

/// After a step failed with `err`: when it is an index out of step of a table of `plans`
/// (an original or its shadow) without transactions, checks that table `EXTENDED` and
/// repairs it if the check finds it out of step ([`repair_if_out_of_step`]). Returns whether
/// it repaired, so the step runs again; otherwise the step's error stands.
pub async fn after_out_of_step(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[&TablePlan],
    err: &anyhow::Error,
    events: &dyn Events,
) -> Result<bool> {
    let Some((named, error)) = out_of_step(err) else {
        return Ok(false);
    };
    let Some(plan) = plans
        .iter()
        .find(|p| p.table == named || names(&p.table).shadow == named)
    else {
        return Ok(false);
    };
    let found = format!("{error}; CHECK TABLE … EXTENDED");
    repair_if_out_of_step(
        conn,
        job,
        plan,
        &named,
        Thoroughness::Extended,
        &found,
        events,
    )
    .await
}

/// After a server restart, before a step: every copied table of the job without transactions
/// that the server started under since it was last compared with its copy (or that has no
/// copy yet) is checked `MEDIUM`, and repaired if its index is out of step
/// ([`repair_if_out_of_step`]), once per server start per run (`checked_under`). The
/// application's statements fail on such an index too (1032) until it is repaired, and a copy
/// or a comparison reading by key ranges would miss the rows its index lost.
pub async fn after_restart(
    conn: &mut MySqlConnection,
    job: &str,
    copies: &[TablePlan],
    checked_under: &mut Option<i64>,
    events: &dyn Events,
) -> Result<()> {
    let started = server_started(conn).await?;
    if checked_under.is_some_and(|s| !restarted_since(Some(s), started)) {
        return Ok(());
    }
    for plan in copies {
        let recorded = recorded_start(conn, job, plan).await?;
        if !restarted_since(recorded, started) {
            continue;
        }
        let found = match recorded {
            Some(_) => {
                "the server restarted since it was compared with its copy; CHECK TABLE … MEDIUM"
            }
            None => "not compared with a copy on this server yet; CHECK TABLE … MEDIUM",
        };
        repair_if_out_of_step(
            conn,
            job,
            plan,
            &plan.table,
            Thoroughness::Medium,
            found,
            events,
        )
        .await?;
    }
    *checked_under = Some(started);
    Ok(())
}

/// The most repairs one step runs again after: a repair that keeps being called for is not
/// the crash's, and the step's error then stands.
const REPAIRS_PER_STEP: u32 = 5;

/// A step's failure `err` seen by [`after_out_of_step`]: `None` when it repaired the table and
/// the step runs again (at most [`REPAIRS_PER_STEP`] times, counted in `repairs`), otherwise
/// the error to retry or stop on (the repair's own failure, if it failed).
pub async fn after_failure(
    conn: &mut MySqlConnection,
    job: &str,
    plans: &[&TablePlan],
    err: anyhow::Error,
    repairs: &mut u32,
    events: &dyn Events,
) -> Option<anyhow::Error> {
    if *repairs >= REPAIRS_PER_STEP {
        return Some(err);
    }
    match after_out_of_step(conn, job, plans, &err, events).await {
        Ok(true) => {
            *repairs += 1;
            None
        }
        Ok(false) => Some(err),
        Err(failed) => Some(failed),
    }
}

/// Each row's message type and text, of a `CHECK TABLE` or `REPAIR TABLE`.
pub(crate) fn messages(rows: &[sqlx::mysql::MySqlRow]) -> Vec<(String, String)> {
    rows.iter()
        .map(|r| {
            let text = |i| {
                r.try_get::<String, _>(i)
                    .or_else(|_| {
                        r.try_get::<Vec<u8>, _>(i)
                            .map(|b| String::from_utf8_lossy(&b).into_owned())
                    })
                    .unwrap_or_default()
            };
            (text(2), text(3))
        })
        .collect()
}

/// What `CHECK TABLE` said beyond "OK", joined; "OK" when nothing more.
pub fn check_said(rows: &[(String, String)]) -> String {
    let said: Vec<String> = rows
        .iter()
        .filter(|(kind, text)| !(kind.eq_ignore_ascii_case("status") && text == "OK"))
        .map(|(kind, text)| format!("{kind}: {text}"))
        .collect();
    if said.is_empty() {
        "OK".to_string()
    } else {
        said.join("; ")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_check_table_said_beyond_ok() {
        let ok = [("status".to_string(), "OK".to_string())];
        assert_eq!(check_said(&ok), "OK");
        let repaired = [
            (
                "warning".to_string(),
                "1 client is using or hasn't closed the table properly".to_string(),
            ),
            ("status".to_string(), "OK".to_string()),
        ];
        assert_eq!(
            check_said(&repaired),
            "warning: 1 client is using or hasn't closed the table properly"
        );
    }

    fn said(rows: &[(&str, &str)]) -> Vec<(String, String)> {
        rows.iter()
            .map(|(k, t)| (k.to_string(), t.to_string()))
            .collect()
    }

    #[test]
    fn statements_quote_the_table() {
        assert_eq!(
            check_sql("a`b", "film text", Thoroughness::Medium),
            "CHECK TABLE `a``b`.`film text` MEDIUM"
        );
        assert_eq!(
            check_sql("s", "t", Thoroughness::Extended),
            "CHECK TABLE `s`.`t` EXTENDED"
        );
        assert_eq!(
            repair_sql("s", "t_myrecode_new"),
            "REPAIR NO_WRITE_TO_BINLOG TABLE `s`.`t_myrecode_new`"
        );
    }

    #[test]
    fn only_errors_or_a_status_not_ok_call_for_a_repair() {
        assert!(!needs_repair(&said(&[("status", "OK")])));
        assert!(!needs_repair(&said(&[(
            "status",
            "Table is already up to date"
        )])));
        assert!(!needs_repair(&said(&[
            (
                "warning",
                "1 client is using or hasn't closed the table properly"
            ),
            ("status", "OK"),
        ])));
        assert!(needs_repair(&said(&[
            ("error", "Key 1 doesn't point at all records"),
            ("error", "Corrupt"),
        ])));
        assert!(needs_repair(&said(&[("status", "Operation failed")])));
    }

    #[test]
    fn the_table_named_by_the_servers_words() {
        assert_eq!(
            named_table("Can't find record in 'film_text'").as_deref(),
            Some("film_text")
        );
        assert_eq!(
            named_table("Index for table './shop/film_text.MYI' is corrupt; try to repair it")
                .as_deref(),
            Some("film_text")
        );
        assert_eq!(
            named_table("Incorrect key file for table 'film_text_myrecode_new'; try to repair it")
                .as_deref(),
            Some("film_text_myrecode_new")
        );
        assert_eq!(
            named_table("Table './shop/film_text' is marked as crashed and should be repaired")
                .as_deref(),
            Some("film_text")
        );
        assert_eq!(named_table("no table here"), None);
    }

    #[test]
    fn an_index_out_of_step_is_found_through_the_engine_error() {
        let e = anyhow::Error::new(EngineError::IndexOutOfStep {
            table: "film_text".into(),
            quoted: "`s`.`film_text`".into(),
            detail: "Can't find record in 'film_text'".into(),
        })
        .context("replaying");
        assert_eq!(
            out_of_step(&e),
            Some((
                "film_text".to_string(),
                "Can't find record in 'film_text'".to_string()
            ))
        );
        assert_eq!(out_of_step(&anyhow::anyhow!("connection reset")), None);
    }
}
