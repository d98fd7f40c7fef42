//! Read-only inventory of text and binary columns, keys, triggers and foreign keys.
//!
//! `read` fetches catalog rows (the only I/O); `assemble` turns them into an
//! [`Inventory`] with key-length math, purely, so it is tested without a server.

pub mod definition;
pub mod keylen;
pub mod mentions;
pub mod model;
pub mod objects;
pub mod read;

use anyhow::{bail, Result};
use keylen::{column_kind, key_limits, mbmaxlen_utf8mb4, part_bytes, row_bytes, ColumnFacts};
use model::*;
use read::RawCatalog;
use sqlx::MySqlConnection;

/// The 65,535-byte limit on a row's declared size (BLOB/TEXT count only their pointer).
pub const ROW_SIZE_LIMIT: u64 = 65_535;

/// Which schemas and tables to look at.
#[derive(Debug, Clone, Default)]
pub struct Scope {
    /// Schemas; empty means every user schema.
    pub schemas: Vec<String>,
    /// Table names; empty means all tables of those schemas.
    pub tables: Vec<String>,
}

/// Takes the inventory of `scope` over one connection.
pub async fn take(conn: &mut MySqlConnection, scope: &Scope) -> Result<Inventory> {
    let existing = read::list_schemas(conn).await?;
    let schemas = if scope.schemas.is_empty() {
        existing
    } else {
        for s in &scope.schemas {
            if read::is_system_schema(s) {
                bail!(
                    "'{s}' is a system schema of the server, which myrecode never reads or recodes. Fix: name the application's schema with --schema (or in --url); the server has: {}",
                    existing.join(", ")
                );
            }
            if !existing.iter().any(|e| e == s) {
                bail!(
                    "schema '{s}' does not exist on this server. Fix: check --schema (or the database in --url); the server has: {}",
                    existing.join(", ")
                );
            }
        }
        scope.schemas.clone()
    };
    if schemas.is_empty() {
        bail!(
            "the server has no user schemas to inventory. Fix: name one with --schema or in --url"
        );
    }
    let raw = read::read_catalog(conn, &schemas).await?;
    for t in &scope.tables {
        if !raw.tables.iter().any(|r| &r.name == t) {
            bail!(
                "table '{t}' not found in schema(s) {}. Fix: check --tables (names are case-sensitive on most servers)",
                schemas.join(", ")
            );
        }
    }
    Ok(assemble(raw, schemas, &scope.tables))
}

/// At most `limit + 1` rows of a table counted: enough to tell whether it is over `limit`,
/// reading no more than that.
pub fn bounded_count_sql(schema: &str, table: &str, limit: u64) -> String {
    format!(
        "SELECT COUNT(*) FROM (SELECT 1 FROM {} LIMIT {}) AS n",
        crate::db::quote::table(schema, table),
        limit.saturating_add(1)
    )
}

/// Replaces the server's row estimate of every table without a usable key, or whose key
/// holds a text column (a job may recode it), by a count (up to ten times `limit`): whether
/// such a table is small enough to rebuild under the cut-over's lock must not hang on an
/// estimate InnoDB may have wrong by half, and a refusal names the rows. Past the bound, the
/// larger of the count and the estimate.
pub async fn count_keyless(
    conn: &mut MySqlConnection,
    tables: &mut [Table],
    limit: u64,
) -> Result<()> {
    let bound = limit.saturating_mul(10);
    for t in tables.iter_mut().filter(|t| may_be_rebuilt(t)) {
        let n: i64 = sqlx::query_scalar(&bounded_count_sql(&t.schema, &t.name, bound))
            .fetch_one(&mut *conn)
            .await
            .map_err(|e| {
                anyhow::anyhow!(
                    "counting the rows of {}: {e}",
                    crate::db::quote::table(&t.schema, &t.name)
                )
            })?;
        let n = n as u64;
        t.estimated_rows = if n > bound {
            n.max(t.estimated_rows)
        } else {
            n
        };
    }
    Ok(())
}

/// Whether a copy may rebuild the table under the cut-over's lock: it has no usable key, or
/// its key holds a text column (recoded by a job, it cannot be paged over).
fn may_be_rebuilt(t: &Table) -> bool {
    t.recode_key.as_ref().is_none_or(|k| {
        k.columns.iter().any(|c| {
            t.columns
                .iter()
                .any(|col| &col.name == c && col.kind == ColumnKind::Text)
        })
    })
}

/// Whether `name` is one of myrecode's own tables: bookkeeping (`_myrecode_…`) or a copy's
/// shadow, kept original, change log, its spare or back log (`…_myrecode_new|old|log|log2|back`). They are left out of
/// inventories and scans (a kept original still holds the legacy bytes and must not be
/// planned again), unless named explicitly.
pub fn is_own_table(name: &str) -> bool {
    name.starts_with("_myrecode_")
        || [
            "_myrecode_new",
            "_myrecode_old",
            "_myrecode_log",
            "_myrecode_log2",
            "_myrecode_back",
        ]
        .iter()
        .any(|s| name.ends_with(s))
}

/// Builds the inventory from catalog rows; `tables` filters by name when non-empty.
pub fn assemble(raw: RawCatalog, schemas: Vec<String>, tables: &[String]) -> Inventory {
    let server = raw.server.clone().unwrap_or(ServerInfo {
        version: String::new(),
        flavor: String::new(),
        innodb_page_size: 16384,
        default_row_format: "dynamic".into(),
    });
    let mut out = Vec::new();
    for t in &raw.tables {
        if !tables.is_empty() && !tables.contains(&t.name) {
            continue;
        }
        if tables.is_empty() && is_own_table(&t.name) {
            continue;
        }
        let facts: Vec<&ColumnFacts> = raw
            .columns
            .iter()
            .filter(|(s, n, _)| s == &t.schema && n == &t.name)
            .map(|(_, _, f)| f)
            .collect();
        if !facts.iter().any(|f| column_kind(&f.data_type).is_some()) {
            continue;
        }
        out.push(assemble_table(&raw, t, &facts, &server));
    }
    Inventory {
        schema_version: SCHEMA_VERSION,
        server,
        schemas,
        tables: out,
    }
}

/// One table's inventory entry from the catalog rows.
fn assemble_table(
    raw: &RawCatalog,
    t: &read::RawTable,
    facts: &[&ColumnFacts],
    server: &ServerInfo,
) -> Table {
    let (part_limit, key_limit) =
        key_limits(&t.engine, &t.row_format, server.innodb_page_size as u64);
    let (mut indexes, key_facts) = indexes_of(raw, t, facts);
    size_indexes(&mut indexes, part_limit, key_limit);
    let primary_key = indexes
        .iter()
        .find(|i| i.name == "PRIMARY")
        .map(|i| i.parts.iter().map(|p| p.column.clone()).collect::<Vec<_>>());
    let recode_key = recode_key(&indexes, &key_facts);
    let columns = columns_of(facts, &indexes, primary_key.as_deref());
    let row_size = row_size(facts);
    let triggers = triggers_of(raw, t);
    let foreign_keys = foreign_keys_of(raw, &t.schema, &t.name);
    let risks = table_risks(
        t,
        recode_key.is_some(),
        &indexes,
        &row_size,
        (part_limit, key_limit),
    );
    Table {
        schema: t.schema.clone(),
        name: t.name.clone(),
        engine: t.engine.clone(),
        row_format: t.row_format.clone(),
        estimated_rows: t.rows,
        collation: t.collation.clone(),
        key_part_limit: part_limit,
        key_limit,
        primary_key,
        recode_key,
        columns,
        indexes,
        triggers,
        foreign_keys,
        row_size,
        risks,
    }
}

/// What an index's parts say of it as a recode key, beyond what [`Index`] keeps.
#[derive(Debug, Clone, Copy)]
struct KeyFacts {
    /// Every part is a NOT NULL column (a functional part counts as nullable).
    all_not_null: bool,
    /// Some part indexes only a prefix of its column.
    has_prefix: bool,
}

/// The table's indexes with their parts' bytes, and each one's [`KeyFacts`] in order.
fn indexes_of(
    raw: &RawCatalog,
    t: &read::RawTable,
    facts: &[&ColumnFacts],
) -> (Vec<Index>, Vec<KeyFacts>) {
    let find = |name: &str| facts.iter().find(|f| f.name == name).copied();
    // Index parts arrive ordered by index then position; group consecutive runs.
    let mut indexes: Vec<Index> = Vec::new();
    let mut key_facts: Vec<KeyFacts> = Vec::new();
    for p in raw
        .index_parts
        .iter()
        .filter(|p| p.schema == t.schema && p.table == t.name)
    {
        if indexes.last().map(|i| i.name != p.index).unwrap_or(true) {
            indexes.push(Index {
                name: p.index.clone(),
                unique: !p.non_unique,
                index_type: p.index_type.clone(),
                parts: Vec::new(),
                bytes: 0,
                bytes_utf8mb4: 0,
                overflows_now: false,
                overflows_utf8mb4: false,
            });
            key_facts.push(KeyFacts {
                all_not_null: true,
                has_prefix: false,
            });
        }
        let idx = indexes.last_mut().expect("pushed above");
        let kf = key_facts.last_mut().expect("pushed above");
        let column = p.column.clone().unwrap_or_else(|| "(expression)".into());
        let (bytes, bytes_utf8mb4) = match p.column.as_deref().and_then(find) {
            Some(f) => {
                kf.all_not_null &= !f.nullable;
                (
                    part_bytes(f, p.sub_part, f.mbmaxlen),
                    part_bytes(f, p.sub_part, mbmaxlen_utf8mb4(f)),
                )
            }
            None => {
                kf.all_not_null = false;
                (0, 0)
            }
        };
        kf.has_prefix |= p.sub_part.is_some();
        idx.parts.push(IndexPart {
            column,
            prefix: p.sub_part,
            bytes,
            bytes_utf8mb4,
        });
    }
    (indexes, key_facts)
}

/// Whether the key length limits apply to an index (not FULLTEXT, SPATIAL or HASH).
fn checks_length(i: &Index) -> bool {
    !matches!(i.index_type.as_str(), "FULLTEXT" | "SPATIAL" | "HASH")
}

/// Fills in each index's key length now and under utf8mb4, and whether it overflows.
fn size_indexes(indexes: &mut [Index], part_limit: u64, key_limit: u64) {
    for i in indexes {
        i.bytes = i.parts.iter().map(|p| p.bytes).sum();
        i.bytes_utf8mb4 = i.parts.iter().map(|p| p.bytes_utf8mb4).sum();
        if checks_length(i) {
            i.overflows_now = i.bytes > key_limit || i.parts.iter().any(|p| p.bytes > part_limit);
            i.overflows_utf8mb4 =
                i.bytes_utf8mb4 > key_limit || i.parts.iter().any(|p| p.bytes_utf8mb4 > part_limit);
        }
    }
}

/// The unique key over NOT NULL columns that batches walk: PRIMARY, else the shortest; one
/// over whole columns before one with a prefix part.
///
/// A prefix key (`PRIMARY KEY (variable(30))`) serves as well: its prefix is unique, so the
/// columns' full values are too, and paging over them (`ORDER BY variable`) is a total order,
/// and a row is found by its full values. The server sorts such a batch instead of reading
/// the index in order, so a key over whole columns, where there is one, goes first.
fn recode_key(indexes: &[Index], key_facts: &[KeyFacts]) -> Option<RecodeKey> {
    indexes
        .iter()
        .zip(key_facts)
        .filter(|(i, kf)| i.unique && kf.all_not_null && checks_length(i))
        .min_by_key(|(i, kf)| (kf.has_prefix, i.name != "PRIMARY", i.bytes, i.parts.len()))
        .map(|(i, _)| RecodeKey {
            index: i.name.clone(),
            columns: i.parts.iter().map(|p| p.column.clone()).collect(),
        })
}

/// The table's text and binary columns, each with its position and the indexes it is in.
fn columns_of(
    facts: &[&ColumnFacts],
    indexes: &[Index],
    primary_key: Option<&[String]>,
) -> Vec<Column> {
    facts
        .iter()
        .enumerate()
        .filter_map(|(pos, f)| {
            let kind = column_kind(&f.data_type)?;
            let in_index = |i: &&Index| i.parts.iter().any(|p| p.column == f.name);
            Some(Column {
                name: f.name.clone(),
                position: pos as u32 + 1,
                kind,
                data_type: f.data_type.clone(),
                column_type: f.column_type.clone(),
                charset: f.charset.clone(),
                collation: f.collation.clone(),
                max_chars: f.max_chars,
                max_bytes: f.max_bytes,
                max_bytes_utf8mb4: keylen::max_bytes_utf8mb4(f),
                nullable: f.nullable,
                in_primary_key: primary_key.is_some_and(|pk| pk.contains(&f.name)),
                indexes: indexes
                    .iter()
                    .filter(in_index)
                    .map(|i| i.name.clone())
                    .collect(),
                definition: f.definition.clone(),
            })
        })
        .collect()
}

/// The declared row size of all the table's columns, now and under utf8mb4.
fn row_size(facts: &[&ColumnFacts]) -> RowSize {
    let null_bitmap = facts.iter().filter(|f| f.nullable).count().div_ceil(8) as u64;
    RowSize {
        bytes: facts.iter().map(|f| row_bytes(f, f.mbmaxlen)).sum::<u64>() + null_bitmap,
        bytes_utf8mb4: facts
            .iter()
            .map(|f| row_bytes(f, mbmaxlen_utf8mb4(f)))
            .sum::<u64>()
            + null_bitmap,
        limit: ROW_SIZE_LIMIT,
    }
}

/// Suffixes of the back log's triggers, which a cut-over leaves on the table until `cleanup`
/// (for `revert`): the tool's, not the application's, so no inventory lists them.
const BACK_LOG_TRIGGERS: [&str; 3] = ["_myrecode_rvi", "_myrecode_rvu", "_myrecode_rvd"];

/// The table's triggers (but the back log's), each naming the other tables of its schema its
/// body mentions.
fn triggers_of(raw: &RawCatalog, t: &read::RawTable) -> Vec<Trigger> {
    raw.triggers
        .iter()
        .filter(|(s, n, _)| s == &t.schema && n == &t.name)
        .filter(|(_, _, tr)| !BACK_LOG_TRIGGERS.iter().any(|x| tr.name.ends_with(x)))
        .map(|(_, _, tr)| {
            let mut tr = tr.clone();
            let schema_tables: Vec<&str> = raw
                .tables
                .iter()
                .filter(|x| x.schema == t.schema && x.name != t.name && !is_own_table(&x.name))
                .map(|x| x.name.as_str())
                .collect();
            tr.tables = mentions::among(&tr.tables, &schema_tables)
                .into_iter()
                .map(str::to_string)
                .collect();
            tr
        })
        .collect()
}

/// What stands in the way of recoding the table: no key, an index or row over its limit.
fn table_risks(
    t: &read::RawTable,
    has_recode_key: bool,
    indexes: &[Index],
    row_size: &RowSize,
    (part_limit, key_limit): (u64, u64),
) -> Vec<String> {
    let mut risks = Vec::new();
    if !has_recode_key {
        risks.push(
            "no primary key and no NOT NULL unique key: it cannot be recoded online in batches. \
             Fix: add a primary key (or a unique key over NOT NULL columns)"
                .to_string(),
        );
    }
    for i in indexes.iter().filter(|i| i.overflows_utf8mb4) {
        risks.push(format!(
            "index `{}` would need {} bytes under utf8mb4 (limit {} per column, {} per key, row format {}): \
             converting would fail. Fix: index a prefix, use ROW_FORMAT=DYNAMIC, or keep this column single-byte",
            i.name, i.bytes_utf8mb4, part_limit, key_limit, t.row_format
        ));
    }
    if row_size.bytes_utf8mb4 > ROW_SIZE_LIMIT {
        risks.push(format!(
            "declared row size would be {} bytes under utf8mb4, over the {ROW_SIZE_LIMIT}-byte limit. \
             Fix: turn the longest VARCHAR columns into TEXT, or keep some columns single-byte",
            row_size.bytes_utf8mb4
        ));
    }
    risks
}

/// The foreign keys that reference the table or that it holds, their column pairs grouped.
fn foreign_keys_of(raw: &RawCatalog, schema: &str, table: &str) -> Vec<ForeignKey> {
    let mut out: Vec<ForeignKey> = Vec::new();
    for fk in &raw.foreign_keys {
        let outgoing = fk.schema == schema && fk.table == table;
        let incoming = fk.ref_schema == schema && fk.ref_table == table;
        if !outgoing && !incoming {
            continue;
        }
        let direction = if outgoing { "outgoing" } else { "incoming" };
        let same = |f: &ForeignKey| {
            f.name == fk.name && f.from_schema == fk.schema && f.from_table == fk.table
        };
        match out.iter_mut().find(|f| same(f)) {
            Some(f) => {
                f.from_columns.push(fk.column.clone());
                f.to_columns.push(fk.ref_column.clone());
            }
            None => out.push(ForeignKey {
                name: fk.name.clone(),
                direction: direction.to_string(),
                from_schema: fk.schema.clone(),
                from_table: fk.table.clone(),
                from_columns: vec![fk.column.clone()],
                to_schema: fk.ref_schema.clone(),
                to_table: fk.ref_table.clone(),
                to_columns: vec![fk.ref_column.clone()],
            }),
        }
    }
    out
}

#[cfg(test)]
mod key_tests {
    use super::*;

    fn index(name: &str, unique: bool, parts: &[(&str, Option<u64>)]) -> Index {
        Index {
            name: name.into(),
            unique,
            index_type: "BTREE".into(),
            parts: parts
                .iter()
                .map(|(c, prefix)| IndexPart {
                    column: c.to_string(),
                    prefix: *prefix,
                    bytes: 4,
                    bytes_utf8mb4: 4,
                })
                .collect(),
            bytes: 4 * parts.len() as u64,
            bytes_utf8mb4: 4 * parts.len() as u64,
            overflows_now: false,
            overflows_utf8mb4: false,
        }
    }

    fn facts(all_not_null: bool, has_prefix: bool) -> KeyFacts {
        KeyFacts {
            all_not_null,
            has_prefix,
        }
    }

    #[test]
    fn a_prefix_primary_key_is_a_recode_key() {
        // SMF's themes table: PRIMARY KEY (id_theme, id_member, variable(30)).
        let pk = index(
            "PRIMARY",
            true,
            &[
                ("id_theme", None),
                ("id_member", None),
                ("variable", Some(30)),
            ],
        );
        let other = index("id_member", false, &[("id_member", None)]);
        let key = recode_key(&[pk, other], &[facts(true, true), facts(true, false)]).unwrap();
        assert_eq!(key.index, "PRIMARY");
        assert_eq!(key.columns, ["id_theme", "id_member", "variable"]);
    }

    #[test]
    fn a_key_over_whole_columns_goes_before_a_prefix_one_and_nullable_ones_never_count() {
        let pk = index("PRIMARY", true, &[("variable", Some(30))]);
        let whole = index("u_code", true, &[("code", None)]);
        let nullable = index("u_note", true, &[("note", Some(10))]);
        let kf = [facts(true, true), facts(true, false), facts(false, true)];
        let key = recode_key(&[pk.clone(), whole, nullable.clone()], &kf).unwrap();
        assert_eq!(key.index, "u_code");
        assert!(
            recode_key(std::slice::from_ref(&nullable), &[facts(false, true)]).is_none(),
            "a unique prefix key over a NULL-able column is no key"
        );
        let unique_prefix = index("u_name", true, &[("name", Some(20))]);
        let key = recode_key(
            &[nullable, unique_prefix],
            &[facts(false, true), facts(true, true)],
        );
        assert_eq!(key.map(|k| k.index), Some("u_name".to_string()));
    }
}

#[cfg(test)]
mod count_tests {
    use super::*;

    #[test]
    fn a_bounded_count_reads_one_row_past_the_limit() {
        assert_eq!(
            bounded_count_sql("s", "t", 10),
            "SELECT COUNT(*) FROM (SELECT 1 FROM `s`.`t` LIMIT 11) AS n"
        );
    }
}
