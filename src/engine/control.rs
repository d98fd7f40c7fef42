//! The operator's commands to a running job (`pause`, `resume`, `abort`, `cutover`), and the
//! control row's note of why the job waits, for `myrecode status`.
//!
//! Commands travel through a row of `_myrecode_control` in the job's schema, so `myrecode pause`
//! works from any terminal or host that can reach the server, and survives a restart of the run.
//! The run reads them between batches ([`super::throttle::Pacer`]).

use crate::bookkeeping::control_table::CONTROL;
use crate::db::quote;
use anyhow::{Context, Result};
use sqlx::{MySqlConnection, Row};

/// An operator's command to a running job.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    /// Stop after the current batch and wait (triggers keep logging) until `resume`.
    Pause,
    /// Stop; a copy removes its shadow, triggers and change log; the original is untouched.
    Abort,
    /// A copy waiting under `cutover: manual` may swap the tables now.
    Cutover,
}

impl Command {
    /// The word stored in the control table and typed on the command line.
    pub fn as_str(self) -> &'static str {
        match self {
            Command::Pause => "pause",
            Command::Abort => "abort",
            Command::Cutover => "cutover",
        }
    }

    fn parse(s: &str) -> Option<Command> {
        match s {
            "pause" => Some(Command::Pause),
            "abort" => Some(Command::Abort),
            "cutover" => Some(Command::Cutover),
            _ => None,
        }
    }
}

/// Notes why `?` job waits, `?` the reason: in the job's control row, made with no command
/// (`''`, which no reader takes for one) when the row is missing; `waiting_since` keeps
/// when the wait began while its reason only changes its figures.
pub fn note_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, command, waiting, waiting_since) VALUES (?, '', ?, NOW(6)) \
         ON DUPLICATE KEY UPDATE waiting_since = IF(waiting IS NULL, NOW(6), waiting_since), waiting = VALUES(waiting)",
        quote::table(schema, CONTROL)
    )
}

/// Clears the note of `?` job: it goes on (a missing row has nothing to clear).
pub fn unnote_sql(schema: &str) -> String {
    format!(
        "UPDATE {} SET waiting = NULL, waiting_since = NULL WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// Records a command, `?` job, `?` command word and `?` its argument (or `NULL`), replacing
/// the one waiting.
pub fn send_sql(schema: &str) -> String {
    format!(
        "INSERT INTO {} (job, command, argument) VALUES (?, ?, ?) ON DUPLICATE KEY UPDATE command = VALUES(command), \
         argument = VALUES(argument), at = CURRENT_TIMESTAMP(6)",
        quote::table(schema, CONTROL)
    )
}

/// Clears the command waiting for `?` job (that is `resume`).
pub fn clear_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// Clears the `cutover` waiting for `?` job if it names group `?` (`NULL`: the job names
/// none), leaving any other command, or a `cutover` for another group, in place.
pub fn clear_cutover_sql(schema: &str) -> String {
    format!(
        "DELETE FROM {} WHERE job = ? AND command = 'cutover' AND argument <=> ?",
        quote::table(schema, CONTROL)
    )
}

/// The command waiting for `?` job.
pub fn read_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(command AS CHAR) FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// The command waiting for `?` job and its argument.
pub fn read_argument_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(command AS CHAR), CAST(argument AS CHAR) FROM {} WHERE job = ?",
        quote::table(schema, CONTROL)
    )
}

/// Records `command` for `job` (`None` clears it: that is `resume`).
pub async fn send(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    command: Option<Command>,
) -> Result<()> {
    send_with(conn, schema, job, command, None).await
}

/// Records `cutover` for `job`, naming the cut-over group it allows (`None`: the job names
/// no groups).
pub async fn send_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    group: Option<&str>,
) -> Result<()> {
    send_with(conn, schema, job, Some(Command::Cutover), group).await
}

async fn send_with(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    command: Option<Command>,
    argument: Option<&str>,
) -> Result<()> {
    let t = quote::table(schema, CONTROL);
    match command {
        Some(c) => {
            sqlx::query(&send_sql(schema))
                .bind(job)
                .bind(c.as_str())
                .bind(argument)
                .execute(conn)
                .await
        }
        None => {
            sqlx::query(&clear_sql(schema))
                .bind(job)
                .execute(conn)
                .await
        }
    }
    .with_context(|| format!("writing the command for job '{job}' into {t}"))?;
    Ok(())
}

/// Clears the `cutover` that allowed `group` (`None`: the job names no groups) once it is
/// swapped; a command sent since for anything else stays.
pub async fn clear_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
    group: Option<&str>,
) -> Result<()> {
    sqlx::query(&clear_cutover_sql(schema))
        .bind(job)
        .bind(group)
        .execute(conn)
        .await
        .with_context(|| format!("clearing the cut-over command of job '{job}'"))?;
    Ok(())
}

/// The command waiting for `job`, if any.
pub async fn read(conn: &mut MySqlConnection, schema: &str, job: &str) -> Result<Option<Command>> {
    let row = sqlx::query(&read_sql(schema))
        .bind(job)
        .fetch_optional(conn)
        .await
        .context("reading the job's control row")?;
    Ok(row.and_then(|r| Command::parse(&r.get::<String, _>(0))))
}

/// `Some(group)` when `cutover` waits for `job`, with the group it names (`None`: every
/// group, as a job without groups or an older myrecode says it); `None` without it.
pub async fn read_cutover(
    conn: &mut MySqlConnection,
    schema: &str,
    job: &str,
) -> Result<Option<Option<String>>> {
    let row = sqlx::query(&read_argument_sql(schema))
        .bind(job)
        .fetch_optional(conn)
        .await
        .context("reading the job's control row")?;
    Ok(row.and_then(|r| {
        (Command::parse(&r.get::<String, _>(0)) == Some(Command::Cutover))
            .then(|| r.get::<Option<String>, _>(1).filter(|a| !a.is_empty()))
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::control_table::{ddl, CONTROL_ADDED};

    #[test]
    fn control_statements_quote_the_schema() {
        assert_eq!(
            ddl("a`b"),
            "CREATE TABLE IF NOT EXISTS `a``b`.`_myrecode_control` (job VARCHAR(64) NOT NULL PRIMARY KEY, \
             command VARCHAR(16) NOT NULL, at TIMESTAMP(6) NOT NULL DEFAULT CURRENT_TIMESTAMP(6), \
             waiting VARCHAR(255) NULL, waiting_since TIMESTAMP(6) NULL, argument VARCHAR(255) NULL) \
             ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin"
        );
        for (name, def) in CONTROL_ADDED {
            assert!(ddl("s").contains(&format!("{name} {def}")), "{name}");
        }
        assert_eq!(
            clear_cutover_sql("a`b"),
            "DELETE FROM `a``b`.`_myrecode_control` WHERE job = ? AND command = 'cutover' AND argument <=> ?"
        );
        assert_eq!(
            note_sql("a`b"),
            "INSERT INTO `a``b`.`_myrecode_control` (job, command, waiting, waiting_since) VALUES (?, '', ?, NOW(6)) \
             ON DUPLICATE KEY UPDATE waiting_since = IF(waiting IS NULL, NOW(6), waiting_since), waiting = VALUES(waiting)"
        );
        assert_eq!(
            unnote_sql("s"),
            "UPDATE `s`.`_myrecode_control` SET waiting = NULL, waiting_since = NULL WHERE job = ?"
        );
        assert_eq!(
            send_sql("база данных"),
            "INSERT INTO `база данных`.`_myrecode_control` (job, command, argument) VALUES (?, ?, ?) \
             ON DUPLICATE KEY UPDATE command = VALUES(command), argument = VALUES(argument), at = CURRENT_TIMESTAMP(6)"
        );
        assert_eq!(
            clear_sql("order"),
            "DELETE FROM `order`.`_myrecode_control` WHERE job = ?"
        );
        assert_eq!(
            read_sql("s"),
            "SELECT CAST(command AS CHAR) FROM `s`.`_myrecode_control` WHERE job = ?"
        );
        assert_eq!(
            read_argument_sql("s"),
            "SELECT CAST(command AS CHAR), CAST(argument AS CHAR) FROM `s`.`_myrecode_control` WHERE job = ?"
        );
    }

    #[test]
    fn a_command_reads_back_as_written() {
        assert_eq!(
            Command::parse(Command::Cutover.as_str()),
            Some(Command::Cutover)
        );
    }
}
