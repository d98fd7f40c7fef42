//! A copied column keeps its whole definition but the charset: the target `plan` writes
//! (type, utf8mb4, NOT NULL, DEFAULT, ON UPDATE, COMMENT, INVISIBLE, ENUM/SET members, the
//! texts recoded with the column's reading), and what a job's `target:` changes beyond the
//! charset, collation and TEXT-family widening. Pure.
//!
//! The catalog shows a latin1 column's cp1251 DEFAULT `'Москва'` as `'Ìîñêâà'`: the text of
//! its stored bytes read as latin1. The bytes are found again by encoding that text in the
//! column's charset, then read as the column's values are ([`recode_text`]). A target's text
//! is accepted when it is a lossless reading of those bytes, whichever label gives it.

use super::target::TargetDef;
use crate::db::quote;
use crate::detect::Label;
use crate::inventory::model::Definition;
use crate::recode::sql_text::{member_list, recode_text, recode_type, recode_value, stored_bytes};
use crate::recode::value as recode;

/// The column as it stands: what [`target_sql`] and [`differences`] read.
#[derive(Debug, Clone, Copy)]
pub struct Live<'a> {
    /// `COLUMN_TYPE`, e.g. `varchar(50)` or `enum('Ð½Ð¾Ð²Ñ\u{8b}Ð¹')`.
    pub column_type: &'a str,
    /// Its charset; `None` for binary.
    pub charset: Option<&'a str>,
    /// Whether NULL is allowed.
    pub nullable: bool,
    /// DEFAULT, COMMENT and the rest.
    pub definition: &'a Definition,
}

/// The full target definition: `base_type` (the column's type, or a wider TEXT) in
/// `charset`/`collation`, with everything else the column has, its texts recoded.
pub fn target_sql(
    live: Live<'_>,
    base_type: &str,
    charset: Option<&str>,
    collation: Option<&str>,
    labels: &[Label],
) -> Result<String, String> {
    let ty = recode_type(base_type, live.charset, labels)?;
    let mut s = match ty.find('(') {
        Some(i) => format!("{}{}", ty[..i].to_ascii_uppercase(), &ty[i..]),
        None => ty.to_ascii_uppercase(),
    };
    if let Some(cs) = charset {
        s.push_str(&format!(" CHARACTER SET {cs}"));
    }
    if let Some(co) = collation {
        s.push_str(&format!(" COLLATE {co}"));
    }
    if !live.nullable {
        s.push_str(" NOT NULL");
    }
    let d = live.definition;
    if let Some(v) = &d.default {
        s.push_str(&format!(
            " DEFAULT {}",
            recode_value(v, live.charset, labels)?
        ));
    }
    if let Some(u) = &d.on_update {
        s.push_str(&format!(" ON UPDATE {u}"));
    }
    if !d.comment.is_empty() {
        let c = recode_text(&d.comment, live.charset, labels)?;
        s.push_str(&format!(" COMMENT {}", quote::literal(&c)));
    }
    if d.invisible {
        s.push_str(" INVISIBLE");
    }
    Ok(s)
}

/// Whether `text` is a lossless reading of the bytes `shown` stands for in `charset`.
fn reads(shown: &str, charset: Option<&str>, text: &str) -> bool {
    shown == text
        || stored_bytes(shown, charset).is_some_and(|b| recode::is_lossless_reading(&b, text))
}

const TEXT_FAMILY: [&str; 4] = ["tinytext", "text", "mediumtext", "longtext"];

/// Same type, or a wider member of the TEXT family (a CHAR/VARCHAR may become any TEXT). A
/// length is not compared: whether the values fit is `plan --check`'s length rule's to say.
fn same_or_wider(live_type: &str, t: &TargetDef) -> bool {
    let live = live_type.to_ascii_lowercase();
    let base = live.split(['(', ' ']).next().unwrap_or_default();
    if matches!(base, "char" | "varchar") && TEXT_FAMILY.contains(&t.data_type.as_str()) {
        return true;
    }
    if let (Some(a), Some(b)) = (
        TEXT_FAMILY.iter().position(|x| *x == base),
        TEXT_FAMILY.iter().position(|x| *x == t.data_type),
    ) {
        return b >= a;
    }
    base == t.data_type
}

/// Normalised for comparing ON UPDATE / DEFAULT expressions: lower case, no spaces, `()` dropped.
fn norm(expr: &str) -> String {
    let s: String = expr
        .chars()
        .filter(|c| !c.is_whitespace())
        .flat_map(char::to_lowercase)
        .collect();
    s.strip_suffix("()").map(str::to_string).unwrap_or(s)
}

/// What `target` changes in the column beyond charset, collation and widening, one phrase
/// each (empty: it keeps everything): a dropped or different DEFAULT, ON UPDATE, COMMENT,
/// INVISIBLE or ENUM/SET member, a narrower or other type.
pub fn differences(live: Live<'_>, target: &TargetDef) -> Vec<String> {
    let mut out = Vec::new();
    let d = live.definition;
    let a = &target.attrs;
    if !same_or_wider(live.column_type, target) {
        out.push(format!(
            "changes the type {} to {}",
            live.column_type,
            target.data_type.to_ascii_uppercase()
        ));
    }
    if let Some((_, list)) = member_list(live.column_type) {
        let now = quote::members(list).unwrap_or_default();
        if now.len() != a.members.len()
            || now
                .iter()
                .zip(&a.members)
                .any(|(m, t)| !reads(m, live.charset, t))
        {
            out.push(format!(
                "changes the members of {} (each must be a reading of the member in its place)",
                live.column_type
            ));
        }
    }
    let default_ok = match (&d.default, &a.default) {
        (None, None) => true,
        (None, Some(t)) => t.eq_ignore_ascii_case("NULL"),
        (Some(now), Some(t)) => match (
            quote::unquote_prefix(now).filter(|(_, u)| *u == now.len()),
            quote::unquote_prefix(t).filter(|(_, u)| *u == t.len()),
        ) {
            (Some((n, _)), Some((t, _))) => reads(&n, live.charset, &t),
            (None, None) => norm(now) == norm(t),
            _ => false,
        },
        (Some(_), None) => false,
    };
    if !default_ok {
        out.push(match (&d.default, &a.default) {
            (Some(now), None) => format!("drops the column's DEFAULT {now}"),
            (None, Some(t)) => format!("adds a DEFAULT {t} the column does not have"),
            (Some(now), Some(t)) => format!("gives DEFAULT {t} where the column has {now}"),
            (None, None) => unreachable!("equal"),
        });
    }
    if d.on_update.as_deref().map(norm) != a.on_update.as_deref().map(norm) {
        out.push(match &d.on_update {
            Some(u) => format!("drops or changes the column's ON UPDATE {u}"),
            None => "adds an ON UPDATE the column does not have".to_string(),
        });
    }
    let comment = a.comment.as_deref().unwrap_or_default();
    if !reads(&d.comment, live.charset, comment) {
        out.push(if comment.is_empty() {
            format!("drops the column's COMMENT {}", quote::literal(&d.comment))
        } else {
            format!(
                "gives COMMENT {} where the column has {}",
                quote::literal(comment),
                quote::literal(&d.comment)
            )
        });
    }
    if d.invisible != a.invisible {
        out.push(if d.invisible {
            "drops INVISIBLE".to_string()
        } else {
            "adds INVISIBLE".to_string()
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::codec::{self, Encoding};
    use crate::job::target;

    fn cp1251() -> Vec<Label> {
        vec![Label::Legacy(Encoding::Windows1251)]
    }

    /// What the catalog shows for cp1251 text stored in a latin1 column.
    fn shown(text: &str) -> String {
        let b = codec::encode(Encoding::Windows1251, text).unwrap();
        codec::decode(Encoding::Latin1, &b).unwrap()
    }

    fn city(def: &Definition) -> Live<'_> {
        Live {
            column_type: "varchar(50)",
            charset: Some("latin1"),
            nullable: false,
            definition: def,
        }
    }

    #[test]
    fn the_target_keeps_default_comment_and_on_update_recoded() {
        let def = Definition {
            default: Some(quote::literal(&shown("Москва"))),
            comment: shown("Город доставки"),
            ..Definition::default()
        };
        assert_eq!(
            target_sql(city(&def), "varchar(50)", Some("utf8mb4"), Some("utf8mb4_unicode_ci"), &cp1251()).unwrap(),
            "VARCHAR(50) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL DEFAULT 'Москва' COMMENT 'Город доставки'"
        );
        let plain = Definition {
            default: Some("''".into()),
            on_update: Some("current_timestamp()".into()),
            invisible: true,
            ..Definition::default()
        };
        assert_eq!(
            target_sql(city(&plain), "varchar(50)", Some("utf8mb4"), None, &[]).unwrap(),
            "VARCHAR(50) CHARACTER SET utf8mb4 NOT NULL DEFAULT '' ON UPDATE current_timestamp() INVISIBLE"
        );
    }

    #[test]
    fn enum_members_are_recoded_in_place_and_in_order() {
        let ty = format!(
            "enum({},{})",
            quote::literal(&shown("новый")),
            quote::literal(&shown("отменён"))
        );
        assert_eq!(
            recode_type(&ty, Some("latin1"), &cp1251()).unwrap(),
            "enum('новый','отменён')"
        );
        let def = Definition::default();
        let live = Live {
            column_type: &ty,
            ..city(&def)
        };
        let ok = target::parse("ENUM('новый','отменён') CHARACTER SET utf8mb4 NOT NULL").unwrap();
        assert_eq!(differences(live, &ok), Vec::<String>::new());
        let swapped =
            target::parse("ENUM('отменён','новый') CHARACTER SET utf8mb4 NOT NULL").unwrap();
        assert_eq!(differences(live, &swapped).len(), 1);
    }

    #[test]
    fn a_target_that_drops_or_changes_the_definition_is_named() {
        let def = Definition {
            default: Some(quote::literal(&shown("Москва"))),
            comment: shown("Город"),
            ..Definition::default()
        };
        let bare = target::parse("VARCHAR(50) CHARACTER SET utf8mb4 NOT NULL").unwrap();
        let found = differences(city(&def), &bare);
        assert_eq!(found.len(), 2, "{found:?}");
        assert!(found[0].starts_with("drops the column's DEFAULT 'Ìîñêâà'"));
        assert!(found[1].starts_with("drops the column's COMMENT"));
        let kept = target::parse(
            "VARCHAR(60) CHARACTER SET utf8mb4 NOT NULL DEFAULT 'Москва' COMMENT 'Город'",
        )
        .unwrap();
        assert_eq!(differences(city(&def), &kept), Vec::<String>::new());
        // KOI8-R would read the same bytes as other letters: also lossless, so accepted;
        // an unrelated text is not.
        let other = target::parse(
            "VARCHAR(50) CHARACTER SET utf8mb4 NOT NULL DEFAULT 'Киев' COMMENT 'Город'",
        )
        .unwrap();
        assert_eq!(differences(city(&def), &other).len(), 1);
        let other_type = target::parse(
            "CHAR(50) CHARACTER SET utf8mb4 NOT NULL DEFAULT 'Москва' COMMENT 'Город'",
        )
        .unwrap();
        assert_eq!(differences(city(&def), &other_type).len(), 1);
        let text = Definition::default();
        let live = Live {
            column_type: "text",
            nullable: true,
            ..city(&text)
        };
        let wider = target::parse("MEDIUMTEXT CHARACTER SET utf8mb4").unwrap();
        assert!(differences(live, &wider).is_empty());
    }

    #[test]
    fn texts_without_a_sure_reading_are_errors_not_guesses() {
        assert_eq!(recode_text("abc", Some("latin1"), &[]).unwrap(), "abc");
        assert_eq!(
            recode_text(&shown("Москва"), Some("latin1"), &cp1251()).unwrap(),
            "Москва"
        );
        assert_eq!(
            recode_text("Москва", Some("cp1251"), &cp1251()).unwrap(),
            "Москва"
        );
        // A UTF-8 table's COMMENT is its text, whatever the job's columns hold.
        assert_eq!(
            recode_text("Заказы", Some("utf8mb4"), &cp1251()).unwrap(),
            "Заказы"
        );
        assert_eq!(
            recode_value("(concat('Ìîñêâà', `a`))", Some("latin1"), &cp1251()).unwrap(),
            "(concat('Москва', `a`))"
        );
        // 0x98 is no cp1251 letter, and three of them are no UTF-8.
        assert!(recode_text("˜˜˜", Some("latin1"), &cp1251()).is_err());
    }
}
