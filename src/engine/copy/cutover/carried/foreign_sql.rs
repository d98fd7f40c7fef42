//! Foreign keys across a cut-over (each group's, see [`crate::engine::copy::cutover::group`]), pure: which
//! constraints move and where, and the statements that move them and put them back. (The
//! triggers that log the rows cascading actions change are [`crate::engine::copy::cutover::carried::cascade::sql`]'s.)
//!
//! A shadow is created `LIKE` its table, which copies no foreign key. Under the cut-over lock
//! every constraint that touches a table of the cut-over is moved: one whose child is in the
//! cut-over goes from the child to the child's shadow; one whose child stays (outside the
//! job, in another group, or recoded in place) is redefined on that child. Either way it references the shadow of a parent in the
//! cut-over (the rename carries the reference over to the table's name: InnoDB updates the
//! children of a renamed parent) or the parent itself when that stays. Names, columns and
//! actions are kept. `foreign_key_checks` is off for the move, so no row is checked again:
//! the rows are those the constraints already held, recoded.

use crate::bookkeeping::names::Names;
use crate::db::quote;

/// Every foreign key whose child is in schema `?` (bound twice), one row per column pair in
/// order (a constraint across schemas is refused before, by the rules): name, child schema, child, column, parent schema, parent, referenced
/// column, `ON UPDATE`, `ON DELETE`.
pub const FOREIGN_KEYS_SQL: &str = "SELECT CAST(k.CONSTRAINT_NAME AS CHAR), CAST(k.TABLE_SCHEMA AS CHAR), \
CAST(k.TABLE_NAME AS CHAR), CAST(k.COLUMN_NAME AS CHAR), CAST(k.REFERENCED_TABLE_SCHEMA AS CHAR), \
CAST(k.REFERENCED_TABLE_NAME AS CHAR), CAST(k.REFERENCED_COLUMN_NAME AS CHAR), \
CAST(r.UPDATE_RULE AS CHAR), CAST(r.DELETE_RULE AS CHAR) \
FROM information_schema.KEY_COLUMN_USAGE k JOIN information_schema.REFERENTIAL_CONSTRAINTS r \
ON r.CONSTRAINT_SCHEMA = k.CONSTRAINT_SCHEMA AND r.CONSTRAINT_NAME = k.CONSTRAINT_NAME AND r.TABLE_NAME = k.TABLE_NAME \
WHERE k.TABLE_SCHEMA = ? AND r.CONSTRAINT_SCHEMA = ? AND k.REFERENCED_TABLE_NAME IS NOT NULL \
ORDER BY k.TABLE_SCHEMA, k.TABLE_NAME, k.CONSTRAINT_NAME, k.ORDINAL_POSITION";

/// Turns the session's foreign-key checks off (for the move) or on.
pub fn foreign_key_checks_sql(on: bool) -> String {
    format!("SET SESSION foreign_key_checks = {}", u8::from(on))
}

/// One foreign key as the catalog defines it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ForeignKey {
    /// Constraint name (unique in its schema).
    pub name: String,
    /// Schema of the referencing (child) table.
    pub child_schema: String,
    /// The referencing table.
    pub child: String,
    /// Its columns, in order.
    pub columns: Vec<String>,
    /// Schema of the referenced (parent) table.
    pub parent_schema: String,
    /// The referenced table.
    pub parent: String,
    /// The referenced columns, in order.
    pub referenced: Vec<String>,
    /// `ON UPDATE` action (`CASCADE`, `SET NULL`, `RESTRICT`, `NO ACTION`, `SET DEFAULT`).
    pub on_update: String,
    /// `ON DELETE` action.
    pub on_delete: String,
}

/// One catalog row of [`FOREIGN_KEYS_SQL`], in its column order.
pub type ForeignKeyRow = (
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
    String,
);

/// Groups the catalog's column-pair rows into constraints.
pub fn collect(rows: Vec<ForeignKeyRow>) -> Vec<ForeignKey> {
    let mut out: Vec<ForeignKey> = Vec::new();
    for (name, cs, child, col, ps, parent, refc, upd, del) in rows {
        match out
            .iter_mut()
            .find(|f| f.name == name && f.child_schema == cs && f.child == child)
        {
            Some(f) => {
                f.columns.push(col);
                f.referenced.push(refc);
            }
            None => out.push(ForeignKey {
                name,
                child_schema: cs,
                child,
                columns: vec![col],
                parent_schema: ps,
                parent,
                referenced: vec![refc],
                on_update: upd,
                on_delete: del,
            }),
        }
    }
    out
}

/// The `CONSTRAINT … FOREIGN KEY … REFERENCES …` clause of `fk`, referencing `parent` (in the
/// parent's schema) instead of the parent's own name.
pub fn clause(fk: &ForeignKey, parent: &str) -> String {
    let cols: Vec<String> = fk.columns.iter().map(|c| quote::ident(c)).collect();
    let refs: Vec<String> = fk.referenced.iter().map(|c| quote::ident(c)).collect();
    format!(
        "CONSTRAINT {} FOREIGN KEY ({}) REFERENCES {} ({}){}{}",
        quote::ident(&fk.name),
        cols.join(", "),
        quote::table(&fk.parent_schema, parent),
        refs.join(", "),
        action("DELETE", &fk.on_delete),
        action("UPDATE", &fk.on_update)
    )
}

/// ` ON <event> <rule>` for the catalog's rule; nothing for `RESTRICT` (and anything unknown),
/// the server's default: MariaDB stores an explicit `RESTRICT` added with
/// `foreign_key_checks` off (as the cut-over adds them) as `NO ACTION`, and left unsaid it
/// stays `RESTRICT`.
fn action(event: &str, rule: &str) -> String {
    let sql = match rule.to_ascii_uppercase().as_str() {
        "CASCADE" => "CASCADE",
        "SET NULL" => "SET NULL",
        "SET DEFAULT" => "SET DEFAULT",
        "NO ACTION" => "NO ACTION",
        _ => return String::new(),
    };
    format!(" ON {event} {sql}")
}

/// One constraint across the cut-over. Its original never leaves its table before the
/// rename: a copy of it under a stand-in name (`tmp`) is added to the child's shadow under
/// the cut-over lock, referencing the parent's shadow when the parent is swapped too, so the
/// rename carries both to the live names; after the rename the original name replaces the
/// stand-in in one statement (the table is never without one, and never has two: two
/// cascading constraints on the same columns fail every update of the parent's key). A child
/// outside the cut-over swaps its constraint for the stand-in in one statement, the last
/// before the rename.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Move {
    /// Constraint name.
    pub name: String,
    /// The stand-in's name while the cut-over runs.
    pub tmp: String,
    /// Schema of the child table.
    pub schema: String,
    /// The child table (its live name, before and after).
    pub child: String,
    /// Where the stand-in goes: the child's shadow, or the child itself when it stays.
    pub to: String,
    /// Its clause as it is (and, by the parent's name, as it must be after the rename).
    pub original: String,
    /// The stand-in's clause.
    pub moved: String,
}

impl Move {
    /// Whether the child stays (outside the cut-over): its constraint is redefined in place.
    pub fn outside(&self) -> bool {
        self.to == self.child
    }
}

/// The stand-in name of constraint `name` (at most 64 characters, distinct per name).
pub fn stand_in(name: &str) -> String {
    let full = format!("{name}_myrecode");
    if full.chars().count() <= 64 {
        return full;
    }
    let hash = &crate::bookkeeping::checkpoint::fingerprint(name)[..8];
    let head: String = name.chars().take(64 - 18).collect();
    format!("{head}~{hash}_myrecode")
}

/// The moves for a cut-over of `tables` (each with its side tables' names) in `schema`.
pub fn moves(fks: &[ForeignKey], schema: &str, tables: &[(&str, &Names)]) -> Vec<Move> {
    let shadow_of = |s: &str, t: &str| {
        (s == schema)
            .then(|| tables.iter().find(|(x, _)| *x == t))
            .flatten()
            .map(|(_, n)| n.shadow.clone())
    };
    fks.iter()
        .filter_map(|fk| {
            let child_shadow = shadow_of(&fk.child_schema, &fk.child);
            let parent_shadow = shadow_of(&fk.parent_schema, &fk.parent);
            if child_shadow.is_none() && parent_shadow.is_none() {
                return None;
            }
            let tmp = stand_in(&fk.name);
            let stand_in = ForeignKey {
                name: tmp.clone(),
                ..fk.clone()
            };
            Some(Move {
                name: fk.name.clone(),
                tmp,
                schema: fk.child_schema.clone(),
                child: fk.child.clone(),
                to: child_shadow.unwrap_or_else(|| fk.child.clone()),
                original: clause(fk, &fk.parent),
                moved: clause(&stand_in, parent_shadow.as_deref().unwrap_or(&fk.parent)),
            })
        })
        .collect()
}

/// `ALTER TABLE … DROP FOREIGN KEY old, ADD clause`: a constraint swapped for another (of
/// another name) in one statement.
pub fn swap_sql(schema: &str, table: &str, old: &str, clause: &str) -> String {
    format!(
        "ALTER TABLE {} DROP FOREIGN KEY {}, ADD {clause}",
        quote::table(schema, table),
        quote::ident(old)
    )
}

/// `ALTER TABLE … DROP FOREIGN KEY`.
pub fn drop_sql(schema: &str, table: &str, name: &str) -> String {
    format!(
        "ALTER TABLE {} DROP FOREIGN KEY {}",
        quote::table(schema, table),
        quote::ident(name)
    )
}

/// `ALTER TABLE … ADD` a constraint clause.
pub fn add_sql(schema: &str, table: &str, clause: &str) -> String {
    format!("ALTER TABLE {} ADD {clause}", quote::table(schema, table))
}

/// Name of the table recording a cut-over's moves until its rename ran, so a cut-over killed
/// between a drop and its add puts every constraint back.
pub const MOVES: &str = "_myrecode_moves";

/// DDL of [`MOVES`].
pub fn moves_ddl(schema: &str) -> String {
    format!(
        "CREATE TABLE IF NOT EXISTS {} (job VARCHAR(64) NOT NULL, name VARCHAR(64) NOT NULL, tmp VARCHAR(64) NOT NULL, \
         child_schema VARCHAR(64) NOT NULL, child VARCHAR(64) NOT NULL, to_table VARCHAR(64) NOT NULL, \
         original TEXT NOT NULL, moved TEXT NOT NULL, PRIMARY KEY (job, child_schema, name)) \
         ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COLLATE=utf8mb4_bin",
        quote::table(schema, MOVES)
    )
}

/// Records one move (`?` job, name, tmp, child schema, child, to, original, moved).
pub fn record_sql(schema: &str) -> String {
    format!(
        "REPLACE INTO {} (job, name, tmp, child_schema, child, to_table, original, moved) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        quote::table(schema, MOVES)
    )
}

/// A job's recorded moves (`?` job).
pub fn recorded_sql(schema: &str) -> String {
    format!(
        "SELECT CAST(name AS CHAR), CAST(tmp AS CHAR), CAST(child_schema AS CHAR), CAST(child AS CHAR), \
         CAST(to_table AS CHAR), CAST(original AS CHAR), CAST(moved AS CHAR) FROM {} WHERE job = ? ORDER BY child_schema, name",
        quote::table(schema, MOVES)
    )
}

/// Forgets a job's recorded moves (`?` job).
pub fn forget_sql(schema: &str) -> String {
    format!("DELETE FROM {} WHERE job = ?", quote::table(schema, MOVES))
}

/// Whether constraint `?` name is on table `?` (schema `?`): one row if so.
pub const CONSTRAINT_ON_SQL: &str = "SELECT 1 FROM information_schema.REFERENTIAL_CONSTRAINTS WHERE CONSTRAINT_SCHEMA = ? AND TABLE_NAME = ? AND CONSTRAINT_NAME = ?";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bookkeeping::names::names;

    fn fk(name: &str, child: &str, parent: &str, upd: &str, del: &str) -> ForeignKey {
        ForeignKey {
            name: name.into(),
            child_schema: "s".into(),
            child: child.into(),
            columns: vec!["p id".into()],
            parent_schema: "s".into(),
            parent: parent.into(),
            referenced: vec!["id".into()],
            on_update: upd.into(),
            on_delete: del.into(),
        }
    }

    #[test]
    fn catalog_rows_group_into_constraints() {
        let row = |c: &str, r: &str| {
            (
                "fk".to_string(),
                "s".to_string(),
                "c".to_string(),
                c.to_string(),
                "s".to_string(),
                "p".to_string(),
                r.to_string(),
                "CASCADE".to_string(),
                "SET NULL".to_string(),
            )
        };
        let fks = collect(vec![row("a", "x"), row("b", "y")]);
        assert_eq!(fks.len(), 1);
        assert_eq!(fks[0].columns, ["a", "b"]);
        assert_eq!(fks[0].referenced, ["x", "y"]);
    }

    #[test]
    fn constraints_move_to_the_shadows_and_reference_the_parents_shadow() {
        let (c, p) = (names("c`"), names("p"));
        let tables = [("c`", &c), ("p", &p)];
        let fks = [
            fk("in", "c`", "p", "CASCADE", "SET NULL"),
            fk("up", "c`", "outside", "RESTRICT", "NO ACTION"),
            fk("down", "outside", "p", "no action", "CASCADE"),
            fk("none", "x", "y", "CASCADE", "CASCADE"),
        ];
        let m = moves(&fks, "s", &tables);
        assert_eq!(m.len(), 3);
        assert_eq!(
            (m[0].child.as_str(), m[0].to.as_str()),
            ("c`", "c`_myrecode_new")
        );
        assert!(!m[0].outside() && m[2].outside());
        assert_eq!(
            m[0].moved,
            "CONSTRAINT `in_myrecode` FOREIGN KEY (`p id`) REFERENCES `s`.`p_myrecode_new` (`id`) ON DELETE SET NULL ON UPDATE CASCADE"
        );
        assert_eq!(
            m[0].original,
            "CONSTRAINT `in` FOREIGN KEY (`p id`) REFERENCES `s`.`p` (`id`) ON DELETE SET NULL ON UPDATE CASCADE"
        );
        assert_eq!(m[1].to, "c`_myrecode_new");
        assert!(m[1]
            .moved
            .ends_with("REFERENCES `s`.`outside` (`id`) ON DELETE NO ACTION"));
        assert!(
            clause(&fk("r", "c", "p", "restrict", "RESTRICT"), "p")
                .ends_with("REFERENCES `s`.`p` (`id`)"),
            "RESTRICT, the default, is left unsaid"
        );
        assert_eq!(
            (m[2].child.as_str(), m[2].to.as_str()),
            ("outside", "outside")
        );
        assert!(m[2].moved.contains("REFERENCES `s`.`p_myrecode_new`"));
        assert_eq!(
            swap_sql("s", "outside", "down", &m[2].moved),
            format!(
                "ALTER TABLE `s`.`outside` DROP FOREIGN KEY `down`, ADD {}",
                m[2].moved
            )
        );
        let long = "f".repeat(64);
        assert!(stand_in(&long).chars().count() <= 64);
        assert_ne!(stand_in(&long), stand_in(&"f".repeat(63)));
        assert_eq!(
            drop_sql("s", "c`", "in"),
            "ALTER TABLE `s`.`c``` DROP FOREIGN KEY `in`"
        );
        assert_eq!(
            add_sql("s", "c`_myrecode_new", &m[0].moved),
            format!("ALTER TABLE `s`.`c``_myrecode_new` ADD {}", m[0].moved)
        );
        assert_eq!(
            foreign_key_checks_sql(false),
            "SET SESSION foreign_key_checks = 0"
        );
    }
}
