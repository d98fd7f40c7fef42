//! The shadow's definition: the table's own, as `CREATE TABLE … LIKE` gives it, changed by one
//! `ALTER TABLE` into what the table is once in UTF-8, and nothing else. Pure.
//!
//! * the job's columns get their targets (which keep DEFAULT, COMMENT and the rest, see
//!   [`crate::job::definition`]); a job column's own `CHECK` (MariaDB's column-level
//!   constraint, which `MODIFY` drops) is said again after it, its text recoded;
//! * a generated column is the server's to compute: one whose expression holds legacy text
//!   or reads a job column gets that expression recoded and, when it is text, utf8mb4;
//! * a table `CHECK` with legacy text is dropped and added again, recoded;
//! * the table's COMMENT is recoded and its default charset becomes utf8mb4 (columns added
//!   later are UTF-8). Both servers refuse a Cyrillic expression while the table's default
//!   is latin1 (1918), so this is one statement.
//!
//! The texts (comments, string literals) are read as the job's columns are: their bytes in
//! the table's charset, read with the columns' labels ([`definition::recode_text`]).

use crate::db::charset::normalize_charset;
use crate::db::quote;
use crate::db::sqltext::Mode;
use crate::detect::Label;

/// A generated column as the catalog shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedColumn {
    /// Column name.
    pub name: String,
    /// `COLUMN_TYPE`.
    pub column_type: String,
    /// Its charset; `None` for a non-text column.
    pub charset: Option<String>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// The expression, without its parentheses.
    pub expression: String,
    /// `STORED`/`PERSISTENT` rather than `VIRTUAL`.
    pub stored: bool,
    /// Its COMMENT.
    pub comment: String,
    /// `INVISIBLE`.
    pub invisible: bool,
}

/// A CHECK constraint of the table.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// Constraint name (a column-level one is named after its column on MariaDB).
    pub name: String,
    /// The condition, without its parentheses.
    pub clause: String,
    /// MariaDB's column-level constraint: part of the column's definition.
    pub column_level: bool,
}

/// What the shadow's `ALTER` needs to know of the table besides the job.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TableFacts {
    /// The table's COMMENT.
    pub comment: String,
    /// The table's default charset, in which its expressions' texts were stored.
    pub charset: Option<String>,
    /// Its generated columns.
    pub generated: Vec<GeneratedColumn>,
    /// Its CHECK constraints.
    pub checks: Vec<Check>,
}

/// A job column: its name and target definition.
#[derive(Debug, Clone, Copy)]
pub struct JobColumn<'a> {
    /// Column name.
    pub name: &'a str,
    /// The job's `target:`.
    pub target: &'a str,
}

/// The shadow's one `ALTER TABLE`; `collation` is the utf8mb4 collation the table's default
/// and its recoded generated columns take. An error names the text no reading decides.
pub fn shadow_alter_sql(
    schema: &str,
    shadow: &str,
    facts: &TableFacts,
    columns: &[JobColumn<'_>],
    collation: &str,
    labels: &[Label],
) -> Result<String, String> {
    let cs = facts.charset.as_deref();
    let read = |what: &str, sql: &str| {
        crate::recode::sql_text::recode_sql(sql, cs, labels, Mode::default())
            .map_err(|e| format!("{what}: {e}"))
    };
    let mut clauses = Vec::new();
    for c in columns {
        // Rebuilt from its parsed parts: nothing of the job file reaches the server as written.
        let target = crate::job::target::canonical(c.target)
            .map_err(|e| format!("the target of column {}: {e}", c.name))?;
        let mut m = format!("MODIFY {} {target}", quote::ident(c.name));
        for k in facts
            .checks
            .iter()
            .filter(|k| k.column_level && k.name == c.name)
        {
            let clause = read(&format!("CHECK of column {}", c.name), &k.clause)?;
            m.push_str(&format!(" CHECK ({clause})"));
        }
        clauses.push(m);
    }
    for g in &facts.generated {
        let reads_job = columns
            .iter()
            .any(|c| g.expression.contains(&quote::ident(c.name)));
        if g.expression.is_ascii() && !reads_job {
            continue;
        }
        let expr = read(&format!("generated column {}", g.name), &g.expression)?;
        let mut m = format!(
            "MODIFY {} {}",
            quote::ident(g.name.as_str()),
            upper_type(&g.column_type)
        );
        if g.charset.is_some() {
            m.push_str(&format!(" CHARACTER SET utf8mb4 COLLATE {collation}"));
        }
        m.push_str(&format!(
            " GENERATED ALWAYS AS ({expr}) {}",
            if g.stored { "STORED" } else { "VIRTUAL" }
        ));
        // MySQL 8 allows NOT NULL on a generated column (MariaDB never reports one).
        if !g.nullable {
            m.push_str(" NOT NULL");
        }
        if !g.comment.is_empty() {
            let c = crate::recode::sql_text::recode_text(&g.comment, cs, labels)?;
            m.push_str(&format!(" COMMENT {}", quote::literal(&c)));
        }
        if g.invisible {
            m.push_str(" INVISIBLE");
        }
        clauses.push(m);
    }
    for k in facts.checks.iter().filter(|k| !k.column_level) {
        if k.clause.is_ascii() {
            continue;
        }
        let clause = read(&format!("CHECK {}", k.name), &k.clause)?;
        let name = quote::ident(&k.name);
        clauses.push(format!(
            "DROP CONSTRAINT {name}, ADD CONSTRAINT {name} CHECK ({clause})"
        ));
    }
    let comment = crate::recode::sql_text::recode_text(&facts.comment, cs, labels)
        .map_err(|e| format!("the table's COMMENT: {e}"))?;
    clauses.push(format!("COMMENT = {}", quote::literal(&comment)));
    clauses.push(format!("DEFAULT CHARACTER SET utf8mb4 COLLATE {collation}"));
    Ok(format!(
        "ALTER TABLE {} {}",
        quote::table(schema, shadow),
        clauses.join(", ")
    ))
}

/// Each generated column's name and expression.
pub type Expressions = Vec<(String, String)>;

/// Each generated column's expression (by name) and each CHECK constraint, as `SHOW CREATE
/// TABLE` prints them: the server's own text on both servers, where MySQL's
/// `information_schema` escapes the quotes of a generation expression and reads its
/// non-ASCII text wrong. A CHECK inside a column's definition (MariaDB's column-level
/// constraint) is named after its column.
pub fn expressions_of(create: &str) -> Result<(Expressions, Vec<Check>), String> {
    use crate::db::sqltext::{tokens, TokenKind};
    let all = tokens(create, Mode::default()).map_err(|e| e.to_string())?;
    let sig: Vec<&crate::db::sqltext::Token> = all
        .iter()
        .filter(|t| !matches!(t.kind, TokenKind::Whitespace | TokenKind::Comment))
        .collect();
    let text = |i: usize| &create[sig[i].span.clone()];
    let word = |i: usize, w: &str| {
        i < sig.len() && sig[i].kind == TokenKind::Word && text(i).eq_ignore_ascii_case(w)
    };
    let punct =
        |i: usize, p: &str| i < sig.len() && sig[i].kind == TokenKind::Punct && text(i) == p;
    // The byte range inside the parentheses opening at `i`, and the index after the closing one.
    let group = |i: usize| -> Option<(std::ops::Range<usize>, usize)> {
        let mut depth = 0;
        for j in i..sig.len() {
            if punct(j, "(") {
                depth += 1;
            } else if punct(j, ")") {
                depth -= 1;
                if depth == 0 {
                    return Some((sig[i].span.end..sig[j].span.start, j + 1));
                }
            }
        }
        None
    };
    let Some(open) = (0..sig.len()).find(|&i| punct(i, "(")) else {
        return Err("not a CREATE TABLE statement".into());
    };
    let (mut generated, mut checks) = (Vec::new(), Vec::new());
    let mut i = open + 1;
    let mut column: Option<String> = None;
    let mut constraint: Option<String> = None;
    let mut start = true;
    while i < sig.len() && !punct(i, ")") {
        if start {
            column = match &sig[i].kind {
                TokenKind::QuotedIdent(n) => Some(n.clone()),
                _ => None,
            };
            constraint = None;
            start = false;
        }
        if word(i, "CONSTRAINT") {
            if let Some(TokenKind::QuotedIdent(n)) = sig.get(i + 1).map(|t| &t.kind) {
                constraint = Some(n.clone());
            }
        }
        if word(i, "AS") && punct(i + 1, "(") {
            let (inner, next) = group(i + 1).ok_or("unbalanced parentheses")?;
            if let Some(c) = &column {
                generated.push((c.clone(), create[inner].trim().to_string()));
            }
            i = next;
            continue;
        }
        if word(i, "CHECK") && punct(i + 1, "(") {
            let (inner, next) = group(i + 1).ok_or("unbalanced parentheses")?;
            let (name, column_level) = match (&constraint, &column) {
                (Some(n), _) => (n.clone(), false),
                (None, Some(c)) => (c.clone(), true),
                (None, None) => return Err("a CHECK without a name".into()),
            };
            checks.push(Check {
                name,
                clause: create[inner].trim().to_string(),
                column_level,
            });
            i = next;
            continue;
        }
        if punct(i, "(") {
            i = group(i).ok_or("unbalanced parentheses")?.1;
            continue;
        }
        if punct(i, ",") {
            start = true;
        }
        i += 1;
    }
    Ok((generated, checks))
}

/// `varchar(64)` as `VARCHAR(64)`, the members' case kept.
fn upper_type(ty: &str) -> String {
    match ty.find('(') {
        Some(i) => format!("{}{}", ty[..i].to_ascii_uppercase(), &ty[i..]),
        None => ty.to_ascii_uppercase(),
    }
}

/// The utf8mb4 collation the table takes: that of the job's first utf8mb4 target, else
/// `fallback`.
pub fn table_collation(targets: &[&str], fallback: &str) -> String {
    targets
        .iter()
        .filter_map(|t| crate::job::target::parse(t).ok())
        .find(|t| t.charset.as_deref().map(normalize_charset).as_deref() == Some("utf8mb4"))
        .and_then(|t| t.collation)
        .unwrap_or_else(|| fallback.to_string())
}

/// The utf8mb4 collation recreated texts of `plans` take (triggers' and objects' strings, the
/// schema's default): their targets', else the server's general one.
pub fn plans_collation<'a>(
    plans: impl IntoIterator<Item = &'a crate::engine::table_plan::TablePlan>,
) -> String {
    let targets: Vec<&str> = plans
        .into_iter()
        .flat_map(|p| p.columns.iter().map(|c| c.target.as_str()))
        .collect();
    table_collation(&targets, "utf8mb4_general_ci")
}

/// The table's generated columns, from `?` schema and `?` table: name, type, charset,
/// nullable, expression, `EXTRA`, comment.
pub const GENERATED_SQL: &str = "SELECT CAST(COLUMN_NAME AS CHAR), CAST(COLUMN_TYPE AS CHAR), CAST(CHARACTER_SET_NAME AS CHAR), \
     CAST(IS_NULLABLE = 'YES' AS SIGNED), CAST(GENERATION_EXPRESSION AS CHAR), CAST(EXTRA AS CHAR), CAST(COLUMN_COMMENT AS CHAR) \
     FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? \
     AND EXTRA LIKE '%GENERATED%' AND EXTRA NOT LIKE '%DEFAULT_GENERATED%' ORDER BY ORDINAL_POSITION";

/// The table's COMMENT and default charset, from `?` schema and `?` table.
pub const TABLE_SQL: &str = "SELECT CAST(t.TABLE_COMMENT AS CHAR), CAST(c.CHARACTER_SET_NAME AS CHAR) \
     FROM information_schema.TABLES t LEFT JOIN information_schema.COLLATIONS c ON c.COLLATION_NAME = t.TABLE_COLLATION \
     WHERE t.TABLE_SCHEMA = ? AND t.TABLE_NAME = ?";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{self, Encoding};

    /// What the catalog shows for cp1251 text stored as latin1.
    fn shown(text: &str) -> String {
        let b = codec::encode(Encoding::Windows1251, text).unwrap();
        codec::decode(Encoding::Latin1, &b).unwrap()
    }

    fn orders() -> TableFacts {
        TableFacts {
            comment: shown("Заказы"),
            charset: Some("latin1".into()),
            generated: vec![
                GeneratedColumn {
                    name: "price_label".into(),
                    column_type: "varchar(64)".into(),
                    charset: Some("latin1".into()),
                    nullable: true,
                    expression: format!("concat(`amount`,'{}')", shown(" руб.")),
                    stored: false,
                    comment: String::new(),
                    invisible: false,
                },
                GeneratedColumn {
                    name: "total".into(),
                    column_type: "decimal(10,2)".into(),
                    charset: None,
                    nullable: false,
                    expression: "`amount` * 2".into(),
                    stored: true,
                    comment: String::new(),
                    invisible: false,
                },
            ],
            checks: vec![
                Check {
                    name: "chk_city".into(),
                    clause: format!("`city` <> '{}'", shown("Неизвестно")),
                    column_level: false,
                },
                Check {
                    name: "note".into(),
                    clause: format!("`note` <> '{}'", shown("плохо")),
                    column_level: true,
                },
                Check {
                    name: "chk_amount".into(),
                    clause: "`amount` >= 0".into(),
                    column_level: false,
                },
            ],
        }
    }

    #[test]
    fn one_alter_gives_the_shadow_everything_in_utf8() {
        let sql = shadow_alter_sql(
            "shop",
            "orders_myrecode_new",
            &orders(),
            &[
                JobColumn { name: "city", target: "VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT 'Москва'" },
                JobColumn { name: "note", target: "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci" },
            ],
            "utf8mb4_unicode_ci",
            &[Label::Legacy(Encoding::Windows1251)],
        )
        .unwrap();
        assert_eq!(
            sql,
            "ALTER TABLE `shop`.`orders_myrecode_new` \
             MODIFY `city` VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT 'Москва', \
             MODIFY `note` VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci CHECK (`note` <> 'плохо'), \
             MODIFY `price_label` VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci GENERATED ALWAYS AS (concat(`amount`,' руб.')) VIRTUAL, \
             DROP CONSTRAINT `chk_city`, ADD CONSTRAINT `chk_city` CHECK (`city` <> 'Неизвестно'), \
             COMMENT = 'Заказы', DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci"
        );
    }

    #[test]
    fn a_generated_column_keeps_its_not_null() {
        let facts = TableFacts {
            charset: Some("latin1".into()),
            generated: vec![GeneratedColumn {
                name: "slug".into(),
                column_type: "varchar(60)".into(),
                charset: Some("latin1".into()),
                nullable: false,
                expression: "lower(`city`)".into(),
                stored: true,
                comment: String::new(),
                invisible: false,
            }],
            ..TableFacts::default()
        };
        let sql = shadow_alter_sql(
            "s",
            "t_myrecode_new",
            &facts,
            &[JobColumn {
                name: "city",
                target: "VARCHAR(50) CHARACTER SET utf8mb4",
            }],
            "utf8mb4_bin",
            &[],
        )
        .unwrap();
        assert!(
            sql.contains("MODIFY `slug` VARCHAR(60) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin GENERATED ALWAYS AS (lower(`city`)) STORED NOT NULL,"),
            "{sql}"
        );
    }

    #[test]
    fn a_text_no_reading_decides_stops_with_its_place() {
        let mut f = orders();
        // 0x98 three times: no cp1251 text, no UTF-8.
        f.comment = "˜˜˜".into();
        let cp1251 = [Label::Legacy(Encoding::Windows1251)];
        let e =
            shadow_alter_sql("s", "t_myrecode_new", &f, &[], "utf8mb4_bin", &cp1251).unwrap_err();
        assert!(e.starts_with("the table's COMMENT"), "{e}");
    }

    #[test]
    fn generated_expressions_and_checks_are_read_from_show_create_table() {
        let mariadb = "CREATE TABLE `orders` (\n  `id` int(11) NOT NULL AUTO_INCREMENT,\n  `city` varchar(50) NOT NULL DEFAULT 'a,b(' COMMENT 'x)',\n  `price_label` varchar(64) GENERATED ALWAYS AS (concat(`amount`,' ðóá.')) VIRTUAL,\n  `note` varchar(20) DEFAULT '' CHECK (`note` <> 'ïëîõî'),\n  `s` enum('a','b') DEFAULT 'a',\n  PRIMARY KEY (`id`),\n  KEY `k` (`city`(10),`note`),\n  CONSTRAINT `chk_city` CHECK (`city` <> 'Íåèçâåñòíî')\n) ENGINE=InnoDB DEFAULT CHARSET=latin1 COMMENT='Çàêàçû'";
        let (generated, checks) = expressions_of(mariadb).unwrap();
        assert_eq!(
            generated,
            vec![(
                "price_label".to_string(),
                "concat(`amount`,' ðóá.')".to_string()
            )]
        );
        assert_eq!(
            checks,
            vec![
                Check {
                    name: "note".into(),
                    clause: "`note` <> 'ïëîõî'".into(),
                    column_level: true
                },
                Check {
                    name: "chk_city".into(),
                    clause: "`city` <> 'Íåèçâåñòíî'".into(),
                    column_level: false
                },
            ]
        );
        // MySQL 8: introducers, doubled parentheses, a version comment.
        let mysql = "CREATE TABLE `t` (\n  `g` varchar(9) GENERATED ALWAYS AS (concat(`a`,_latin1' ðóá.')) STORED,\n  CONSTRAINT `t_chk_1` CHECK ((`a` <> _latin1'x')) /*!80016 NOT ENFORCED */\n) ENGINE=InnoDB";
        let (generated, checks) = expressions_of(mysql).unwrap();
        assert_eq!(generated[0].1, "concat(`a`,_latin1' ðóá.')");
        assert_eq!(checks[0].clause, "(`a` <> _latin1'x')");
        assert!(!checks[0].column_level);
    }

    #[test]
    fn the_table_collation_follows_the_targets() {
        assert_eq!(
            table_collation(&["TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"], "x"),
            "utf8mb4_bin"
        );
        assert_eq!(
            table_collation(&["VARBINARY(3)"], "utf8mb4_unicode_ci"),
            "utf8mb4_unicode_ci"
        );
    }
}
