//! A copy's undecided values: what its shadow holds for a value no reading decided is the
//! server's reading of the stored bytes, never the recoded text, so the copy holds its
//! cut-over while any is listed. Here they are counted, and decided: by the DBA's decision
//! file (`run --decisions`) or the column's fallback (`undecidable: use <label>`), each
//! written into the shadow compare-and-set on the original (the row must still hold the
//! listed bytes) and remembered ([`crate::bookkeeping::decided`]) so a replay that copies
//! the row again writes the same. An entry whose row no longer holds its bytes is taken off
//! the list: the row's change is in the change log, and its replay decides (or lists) the
//! new bytes. A copy an earlier version swapped in with such values is decided from its kept
//! original ([`settle_swapped`]).

use crate::bookkeeping::decided;
use crate::bookkeeping::keycodec;
use crate::bookkeeping::names::Names;
use crate::bookkeeping::quarantine::{self, quarantined};
use crate::db::{keyset, quote};
use crate::engine::columns::columns_of;
use crate::engine::copy::catalog::table_exists;
use crate::engine::copy::table::context::{recoded_key, Ctx};
use crate::engine::error::EngineError;
use crate::engine::table_plan::TablePlan;
use crate::recode::value as recode;
use crate::review::decisions::{show_key, Applied};
use anyhow::{Context, Result};
use sqlx::{Connection, MySqlConnection};

/// How to decide what a copy's cut-over waits for (kept with the events, which say it).
pub use crate::engine::events::UNDECIDED_FIX as FIX;

/// What applying the decisions did to one table.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct DecisionOutcome {
    /// Values rewritten as decided.
    pub rewritten: u64,
    /// Values the DBA chose to keep as stored (no longer listed).
    pub kept: u64,
    /// Quarantined values no decision covers (still listed).
    pub undecided: u64,
    /// Decisions refused, one sentence each naming the value, why and the fix.
    pub refused: Vec<String>,
}

/// How a listed value is decided: by its table, column, key and stored bytes.
pub type Resolve<'a> = &'a dyn Fn(&str, &str, &[Vec<u8>], &[u8]) -> Applied;

/// The column's fallback alone: what the job names for a value no reading decided.
pub fn by_fallback(plan: &TablePlan) -> impl Fn(&str, &str, &[Vec<u8>], &[u8]) -> Applied + '_ {
    move |_, col, _, stored| {
        let fallback = plan
            .columns
            .iter()
            .find(|c| c.name == col)
            .and_then(|c| c.fallback);
        match fallback.and_then(|l| recode::rewrite(l, stored).map(|new| (l, new))) {
            Some((label, new)) => Applied::Rewrite(new, label),
            None => Applied::None,
        }
    }
}

/// The original row's bytes of one column, `?`s the key's parts; with `lock`, held until the
/// transaction ends (the decision is written while the row cannot change).
pub fn original_value_sql(
    schema: &str,
    table: &str,
    key: &[keyset::KeyColumn],
    column: &str,
    lock: bool,
) -> String {
    format!(
        "SELECT {} FROM {} WHERE {}{}",
        keyset::raw(column),
        quote::table(schema, table),
        keyset::equals(key),
        if lock { " FOR UPDATE" } else { "" }
    )
}

/// The decided text into the shadow's row, `?` the value then the key's parts.
pub fn shadow_update_sql(
    schema: &str,
    shadow: &str,
    key: &[keyset::KeyColumn],
    column: &str,
) -> String {
    format!(
        "UPDATE {} SET {} = ? WHERE {}",
        quote::table(schema, shadow),
        quote::ident(column),
        keyset::equals(key)
    )
}

/// After the swap: the decided text into the live row (`l`) of a listed value, `?` the value,
/// the key's parts, the stored bytes; only while the kept original (`o`) holds the stored
/// bytes and the live row still holds what the copy wrote for them (the server's conversion
/// of those bytes from the original column's charset), so an application write since is
/// never overwritten.
pub fn swapped_update_sql(
    schema: &str,
    (live, old): (&str, &str),
    key: &[keyset::KeyColumn],
    column: &str,
) -> String {
    let join: Vec<String> = key
        .iter()
        .map(|k| format!("l.{c} = o.{c}", c = quote::ident(&k.name)))
        .collect();
    let at: Vec<String> = key
        .iter()
        .map(|k| format!("l.{} = {}", quote::ident(&k.name), k.placeholder()))
        .collect();
    let c = quote::ident(column);
    format!(
        "UPDATE {} AS l JOIN {} AS o ON {} SET l.{c} = ? WHERE {} \
         AND CAST(o.{c} AS BINARY) = ? AND CAST(l.{c} AS BINARY) = CAST(CONVERT(o.{c} USING utf8mb4) AS BINARY)",
        quote::table(schema, live),
        quote::table(schema, old),
        join.join(" AND "),
        at.join(" AND ")
    )
}

/// Decides the listed values of a copy swapped in before they were decided (by an earlier
/// version, which swapped them in as the server's reading) from its kept original: each
/// written into the live row compare-and-set ([`swapped_update_sql`]); `keep` accepts the
/// reading it holds. `None`: the kept original is gone (`cleanup`), and with it the stored
/// bytes, or the table has no key to find a row by.
pub async fn settle_swapped(
    conn: &mut MySqlConnection,
    (plan, names, job): (&TablePlan, &Names, &str),
    resolve: Resolve<'_>,
    execute: bool,
) -> Result<Option<DecisionOutcome>> {
    let schema = plan.schema.as_str();
    if plan.key.is_empty() || !table_exists(conn, schema, &names.old).await? {
        return Ok(None);
    }
    let mut out = DecisionOutcome::default();
    for (id, col, packed, stored) in quarantined(conn, schema, job, &plan.table).await? {
        let Some(key) = keycodec::unpack(&packed) else {
            out.refused.push(format!(
                "{}.{col}: quarantine row {id} holds no key myrecode wrote; left as it is",
                plan.table
            ));
            continue;
        };
        let mut tx = conn.begin().await.context("starting a decision")?;
        match resolve(&plan.table, &col, &key, &stored) {
            Applied::None => out.undecided += 1,
            Applied::Refused(why) => {
                out.undecided += 1;
                out.refused.push(why);
            }
            Applied::Keep => {
                out.kept += 1;
                if execute {
                    drop_entry(&mut tx, schema, id).await?;
                }
            }
            Applied::Rewrite(..) if !execute => out.rewritten += 1,
            Applied::Rewrite(new, _) => {
                let binary = plan.columns.iter().any(|c| c.name == col && c.binary);
                let sql = swapped_update_sql(schema, (&plan.table, &names.old), &plan.key, &col);
                let q = sqlx::query(&sql);
                let mut q = if binary {
                    q.bind(new)
                } else {
                    q.bind(String::from_utf8(new).context("a decided value is UTF-8")?)
                };
                for k in &key {
                    q = q.bind(k.clone());
                }
                let affected = match q.bind(&stored).execute(&mut *tx).await {
                    Ok(r) => r.rows_affected(),
                    Err(e) => match too_long(&plan.table, &col, &key, &e) {
                        Some(why) => {
                            out.undecided += 1;
                            out.refused.push(why);
                            continue;
                        }
                        None => {
                            return Err(anyhow::Error::new(e)
                                .context("writing a decision into a swapped table"))
                        }
                    },
                };
                if affected == 1 {
                    out.rewritten += 1;
                    drop_entry(&mut tx, schema, id).await?;
                } else {
                    out.refused.push(format!(
                        "{}.{col} key {}: the row changed since its table was swapped in (or its kept \
                         original no longer holds the listed bytes); decision not applied. Fix: decide \
                         it by hand from {}",
                        plan.table,
                        show_key(&key),
                        names.old
                    ));
                }
            }
        }
        tx.commit().await.context("committing a decision")?;
    }
    Ok(Some(out))
}

/// Decides the listed values of a copy not yet swapped by `resolve` (writes only when
/// `execute`; without it nothing is written or taken off the list, and `undecided` counts
/// what still waits). `None`: the table was swapped already (or its copy is not begun).
pub async fn settle(
    conn: &mut MySqlConnection,
    (plan, names, job): (&TablePlan, &Names, &str),
    resolve: Resolve<'_>,
    execute: bool,
) -> Result<Option<DecisionOutcome>> {
    let schema = plan.schema.as_str();
    if !table_exists(conn, schema, &names.shadow).await? {
        return Ok(None);
    }
    let mut out = DecisionOutcome::default();
    for (id, col, packed, stored) in quarantined(conn, schema, job, &plan.table).await? {
        let Some(key) = keycodec::unpack(&packed) else {
            out.refused.push(format!(
                "{}.{col}: quarantine row {id} holds no key myrecode wrote; left as it is",
                plan.table
            ));
            continue;
        };
        let mut tx = conn.begin().await.context("starting a decision")?;
        // Without a key a value is listed by itself, and the rebuild under the cut-over's
        // lock decides it by what was remembered.
        if !plan.key.is_empty() {
            let sql = original_value_sql(schema, &plan.table, &plan.key, &col, execute);
            let mut q = sqlx::query_scalar::<_, Vec<u8>>(&sql);
            for k in &key {
                q = q.bind(k.clone());
            }
            let now = q
                .fetch_optional(&mut *tx)
                .await
                .context("reading a listed value's row")?;
            if now.as_deref() != Some(stored.as_slice()) {
                if execute {
                    drop_entry(&mut tx, schema, id).await?;
                    tx.commit().await?;
                }
                continue;
            }
        }
        match resolve(&plan.table, &col, &key, &stored) {
            Applied::None => out.undecided += 1,
            Applied::Refused(why) => {
                out.undecided += 1;
                out.refused.push(why);
            }
            Applied::Keep => {
                out.kept += 1;
                if execute {
                    decided::remember(&mut tx, schema, (job, &plan.table, &col), &stored, None)
                        .await?;
                    drop_entry(&mut tx, schema, id).await?;
                }
            }
            Applied::Rewrite(new, label) => {
                if execute && !plan.key.is_empty() {
                    if let Some(why) = write_shadow(&mut tx, (plan, names), &col, &key, new).await?
                    {
                        // Nothing of this entry was written: it stays listed.
                        out.undecided += 1;
                        out.refused.push(why);
                        continue;
                    }
                }
                out.rewritten += 1;
                if execute {
                    let at = (job, plan.table.as_str(), col.as_str());
                    decided::remember(&mut tx, schema, at, &stored, Some(label)).await?;
                    drop_entry(&mut tx, schema, id).await?;
                }
            }
        }
        tx.commit().await.context("committing a decision")?;
    }
    Ok(Some(out))
}

/// Each copy of a cut-over still holding undecided values once the columns' fallbacks are
/// applied (and entries whose rows changed taken off), with how many.
pub(crate) async fn held(
    conn: &mut MySqlConnection,
    job: &str,
    ctxs: &[Ctx<'_>],
) -> Result<Vec<(String, u64)>> {
    let mut out = Vec::new();
    for ctx in ctxs {
        let fallback = by_fallback(ctx.plan);
        let at = (ctx.plan, &ctx.names, job);
        let left = settle(conn, at, &fallback, true).await?;
        if let Some(n) = left.map(|o| o.undecided).filter(|n| *n > 0) {
            out.push((ctx.plan.table.clone(), n));
        }
    }
    Ok(out)
}

/// Stops a cut-over whose copies hold undecided values, read only ([`held`] writes).
pub(crate) async fn refuse_held(
    conn: &mut MySqlConnection,
    job: &str,
    ctxs: &[Ctx<'_>],
) -> Result<()> {
    let mut count = 0;
    let mut tables = Vec::new();
    for ctx in ctxs {
        let fallback = by_fallback(ctx.plan);
        let at = (ctx.plan, &ctx.names, job);
        if let Some(n) = (settle(conn, at, &fallback, false).await?)
            .map(|o| o.undecided)
            .filter(|n| *n > 0)
        {
            count += n;
            tables.push(ctx.plan.table.clone());
        }
    }
    if count == 0 {
        return Ok(());
    }
    Err(EngineError::Undecided {
        tables: tables.join(", "),
        count,
        fix: FIX,
    }
    .into())
}

/// Writes a decided value into the shadow's row of `key`.
async fn write_shadow(
    tx: &mut MySqlConnection,
    (plan, names): (&TablePlan, &Names),
    col: &str,
    key: &[Vec<u8>],
    new: Vec<u8>,
) -> Result<Option<String>> {
    let binary = plan.columns.iter().any(|c| c.name == col && c.binary);
    // A key part the job recodes is held recoded by the shadow: found by its legacy bytes.
    let shadow_key = if plan.recoded_key.is_empty() || plan.key.is_empty() {
        plan.key.clone()
    } else {
        recoded_key(
            plan,
            &columns_of(&mut *tx, &plan.schema, &names.shadow).await?,
        )?
    };
    let sql = shadow_update_sql(&plan.schema, &names.shadow, &shadow_key, col);
    let q = sqlx::query(&sql);
    let mut q = if binary {
        q.bind(new)
    } else {
        q.bind(String::from_utf8(new).context("a decided value is UTF-8")?)
    };
    for k in key {
        q = q.bind(k.clone());
    }
    match q.execute(&mut *tx).await {
        Ok(_) => Ok(None),
        Err(e) => match too_long(&plan.table, col, key, &e) {
            Some(why) => Ok(Some(why)),
            None => Err(anyhow::Error::new(e).context(format!(
                "writing the decision on {}.{col} key {} into the shadow",
                plan.table,
                show_key(key)
            ))),
        },
    }
}

/// Why a decided value was not written, when the server refused it as longer than its
/// column holds (1406: the tool's sessions are strict, so it is never cut short); `None` for
/// any other error.
pub(crate) fn too_long(table: &str, col: &str, key: &[Vec<u8>], e: &sqlx::Error) -> Option<String> {
    (crate::db::errno::of(e) == Some(crate::db::errno::DATA_TOO_LONG)).then(|| {
        format!(
            "{table}.{col} key {}: the decided value is longer than the column holds ({e}); decision not applied. \
             Fix: widen the column (its `target:` for a copy, ALTER TABLE … MODIFY for an in-place table), then apply the decisions again",
            show_key(key)
        )
    })
}

/// Takes one entry off the quarantine list.
async fn drop_entry(tx: &mut MySqlConnection, schema: &str, id: i64) -> Result<()> {
    sqlx::query(&quarantine::delete_sql(schema))
        .bind(id)
        .execute(&mut *tx)
        .await
        .context("taking a decided value off the quarantine list")?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::db::keyset::KeyColumn;

    #[test]
    fn the_original_is_read_by_key_and_the_shadow_written_by_key_all_quoted() {
        let key = [KeyColumn::plain("i`d"), KeyColumn::plain("n")];
        assert_eq!(
            original_value_sql("s`", "t", &key, "c`", true),
            "SELECT CAST(`c``` AS BINARY) FROM `s```.`t` WHERE `i``d` = ? AND `n` = ? FOR UPDATE"
        );
        assert_eq!(
            original_value_sql("s", "t", &key[1..], "c", false),
            "SELECT CAST(`c` AS BINARY) FROM `s`.`t` WHERE `n` = ?"
        );
        assert_eq!(
            swapped_update_sql("s", ("t", "t_myrecode_old"), &key, "c"),
            "UPDATE `s`.`t` AS l JOIN `s`.`t_myrecode_old` AS o ON l.`i``d` = o.`i``d` AND l.`n` = o.`n` \
             SET l.`c` = ? WHERE l.`i``d` = ? AND l.`n` = ? AND CAST(o.`c` AS BINARY) = ? \
             AND CAST(l.`c` AS BINARY) = CAST(CONVERT(o.`c` USING utf8mb4) AS BINARY)"
        );
        assert_eq!(
            shadow_update_sql("s", "t_myrecode_new", &key, "c`"),
            "UPDATE `s`.`t_myrecode_new` SET `c``` = ? WHERE `i``d` = ? AND `n` = ?"
        );
    }
}
