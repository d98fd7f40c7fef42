//! A column's definition beyond its type, from `information_schema.COLUMNS`, read alike on
//! MariaDB and MySQL (they spell defaults differently). Pure.
//!
//! MariaDB (10.2.7+) shows `COLUMN_DEFAULT` as SQL: a literal quoted (`'Москва'`), `NULL`, or
//! an expression (`current_timestamp()`); MySQL 8 shows a literal's bare value and marks an
//! expression default `DEFAULT_GENERATED` in `EXTRA`. Both become the SQL that follows
//! `DEFAULT` in a column definition, so a copied column gets back exactly what it had.

use super::model::{Definition, Generated};
use crate::db::quote;

/// The definition from one `COLUMNS` row: `COLUMN_DEFAULT`, `EXTRA`, `COLUMN_COMMENT`,
/// `GENERATION_EXPRESSION`.
pub fn from_catalog(
    mariadb: bool,
    column_default: Option<String>,
    extra: &str,
    comment: String,
    generation: Option<String>,
) -> Definition {
    let lower = extra.to_ascii_lowercase();
    let generated = (lower.contains("generated") && !lower.contains("default_generated"))
        .then(|| generation.filter(|g| !g.is_empty()))
        .flatten()
        .map(|expression| Generated {
            expression,
            stored: lower.contains("stored") || lower.contains("persistent"),
        });
    let default = if generated.is_some() {
        None
    } else {
        default_sql(mariadb, column_default, &lower)
    };
    Definition {
        default,
        on_update: on_update(extra),
        comment,
        invisible: lower.split_whitespace().any(|w| w == "invisible"),
        generated,
    }
}

/// The SQL after `DEFAULT`; `None` for no default (a nullable column then defaults to NULL,
/// which both servers also show as a NULL `COLUMN_DEFAULT`).
fn default_sql(mariadb: bool, shown: Option<String>, extra_lower: &str) -> Option<String> {
    let shown = shown?;
    if mariadb {
        return (shown != "NULL").then_some(shown);
    }
    if !extra_lower.contains("default_generated") {
        return Some(quote::literal(&shown));
    }
    let upper = shown.to_ascii_uppercase();
    Some(
        if upper.starts_with("CURRENT_TIMESTAMP") || upper.starts_with("NOW(") {
            shown
        } else {
            format!("({shown})")
        },
    )
}

/// `ON UPDATE …` from `EXTRA` (`on update current_timestamp()`, MySQL's `DEFAULT_GENERATED
/// on update CURRENT_TIMESTAMP(3)`).
fn on_update(extra: &str) -> Option<String> {
    let lower = extra.to_ascii_lowercase();
    let at = lower.find("on update ")?;
    let rest = extra[at + "on update ".len()..].trim();
    let end = rest.find(char::is_whitespace).unwrap_or(rest.len());
    Some(rest[..end].to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mariadb_defaults_are_sql_already() {
        let d = from_catalog(true, Some("'Ìîñêâà'".into()), "", "Ãîðîä".into(), None);
        assert_eq!(d.default.as_deref(), Some("'Ìîñêâà'"));
        assert_eq!(d.comment, "Ãîðîä");
        assert!(from_catalog(true, Some("NULL".into()), "", String::new(), None).is_plain());
        assert!(from_catalog(true, None, "", String::new(), None).is_plain());
        let ts = from_catalog(
            true,
            Some("current_timestamp()".into()),
            "on update current_timestamp()",
            String::new(),
            None,
        );
        assert_eq!(ts.default.as_deref(), Some("current_timestamp()"));
        assert_eq!(ts.on_update.as_deref(), Some("current_timestamp()"));
        let g = from_catalog(
            true,
            None,
            "VIRTUAL GENERATED",
            String::new(),
            Some("concat(`amount`,' ðóá.')".into()),
        );
        assert_eq!(
            g.generated,
            Some(Generated {
                expression: "concat(`amount`,' ðóá.')".into(),
                stored: false
            })
        );
        let s = from_catalog(
            true,
            None,
            "STORED GENERATED",
            String::new(),
            Some("x".into()),
        );
        assert!(s.generated.unwrap().stored);
        assert!(from_catalog(true, None, "INVISIBLE", String::new(), None).invisible);
    }

    #[test]
    fn mysql_defaults_are_quoted_unless_generated() {
        let d = from_catalog(false, Some("it's".into()), "", String::new(), None);
        assert_eq!(d.default.as_deref(), Some("'it''s'"));
        let e = from_catalog(
            false,
            Some("concat(_utf8mb4'a',_utf8mb4'b')".into()),
            "DEFAULT_GENERATED",
            String::new(),
            Some(String::new()),
        );
        assert_eq!(
            e.default.as_deref(),
            Some("(concat(_utf8mb4'a',_utf8mb4'b'))")
        );
        assert!(e.generated.is_none());
        let ts = from_catalog(
            false,
            Some("CURRENT_TIMESTAMP(3)".into()),
            "DEFAULT_GENERATED on update CURRENT_TIMESTAMP(3)",
            String::new(),
            None,
        );
        assert_eq!(ts.default.as_deref(), Some("CURRENT_TIMESTAMP(3)"));
        assert_eq!(ts.on_update.as_deref(), Some("CURRENT_TIMESTAMP(3)"));
        assert_eq!(
            from_catalog(false, Some(String::new()), "", String::new(), None)
                .default
                .as_deref(),
            Some("''")
        );
    }
}
