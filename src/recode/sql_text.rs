//! Legacy text inside SQL text, recoded: a string literal, a DEFAULT, a COMMENT, ENUM/SET
//! members, a view's or routine's body, as the server shows them through a latin1 reading.
//! Pure; shared by the job's target definitions, the copy's shadow and its objects, and `scan`.

use super::value as recode;
use crate::codec::{self, Encoding};
use crate::db::charset::normalize_charset;
use crate::db::quote;
use crate::db::sqltext::{self, Mode};
use crate::detect::{self, Context, Label};

/// The bytes a text the catalog shows stood for, in a column or object of `charset`.
pub fn stored_bytes(shown: &str, charset: Option<&str>) -> Option<Vec<u8>> {
    match charset.map(normalize_charset).as_deref() {
        None | Some("utf8mb4" | "utf8mb3" | "binary") => Some(shown.as_bytes().to_vec()),
        Some(cs) => codec::encode(Encoding::from_label(cs)?, shown).ok(),
    }
}

/// The text a catalog text really is: its stored bytes read with the first of `labels`
/// whose round trip is lossless, else as UTF-8 if they are, else by detection; an error
/// names the text no reading decides. Text of a UTF-8 charset is what it says: it holds no
/// legacy bytes (mojibake there is the in-place strategy's, value by value).
pub fn recode_text(shown: &str, charset: Option<&str>, labels: &[Label]) -> Result<String, String> {
    if charset.is_some_and(|c| matches!(normalize_charset(c).as_str(), "utf8mb4" | "utf8mb3")) {
        return Ok(shown.to_string());
    }
    let bytes = stored_bytes(shown, charset)
        .ok_or_else(|| format!("'{shown}' cannot be stored in {}", charset.unwrap_or("?")))?;
    if bytes.is_ascii() {
        return Ok(shown.to_string());
    }
    let text = |b: Vec<u8>| String::from_utf8(b).map_err(|_| format!("'{shown}'"));
    for l in labels.iter().filter(|l| l.needs_recode()) {
        if let Some(new) = recode::rewrite(*l, &bytes) {
            return text(new);
        }
    }
    if let Ok(s) = std::str::from_utf8(&bytes) {
        return Ok(s.to_string());
    }
    let v = detect::detect(&bytes, &Context::default());
    if v.label.needs_recode() {
        if let Some(new) = recode::rewrite(v.label, &bytes) {
            return text(new);
        }
    }
    Err(format!(
        "no reading of '{shown}' is sure (best: {} at {:.2})",
        v.label, v.confidence
    ))
}

/// Each string literal of `sql` that [`recode_sql`] changes, as `'before' → 'after'`.
pub fn literal_changes(
    sql: &str,
    charset: Option<&str>,
    labels: &[Label],
    mode: Mode,
) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let toks = sqltext::tokens(sql, mode).map_err(|e| format!("cannot read the SQL text: {e}"))?;
    for lit in toks.iter().filter_map(|t| t.literal()) {
        if lit.introducer.as_deref() == Some("binary") {
            continue;
        }
        if let Some(new) = recoded_literal(lit, charset, labels)? {
            out.push(format!(
                "{} → {}",
                quote::literal(&lit.value),
                quote::literal(&new)
            ));
        }
    }
    Ok(out)
}

/// What one string literal of SQL text becomes, or `None` when it stays: ASCII, national
/// (`N'…'`, UTF-8 already) and text the charset cannot hold (never bytes of it, so no
/// legacy text) stay; its bytes are in its introducer's charset, else in `charset`.
fn recoded_literal(
    lit: &sqltext::Literal,
    charset: Option<&str>,
    labels: &[Label],
) -> Result<Option<String>, String> {
    if lit.value.is_ascii() || lit.national {
        return Ok(None);
    }
    let cs = lit.introducer.as_deref().or(charset);
    if stored_bytes(&lit.value, cs).is_none() {
        return Ok(None);
    }
    let new = recode_text(&lit.value, cs, labels)?;
    Ok((new != lit.value).then_some(new))
}

/// A DEFAULT value as SQL, its strings recoded: a quoted literal, or an expression.
pub fn recode_value(sql: &str, charset: Option<&str>, labels: &[Label]) -> Result<String, String> {
    if sql.is_ascii() {
        return Ok(sql.to_string());
    }
    match quote::unquote_prefix(sql) {
        Some((value, used)) if used == sql.len() => {
            Ok(quote::literal(&recode_text(&value, charset, labels)?))
        }
        _ => recode_sql(sql, charset, labels, Mode::default()),
    }
}

/// SQL text (an expression, a view's query, a routine's body) with every string literal's
/// text recoded: its bytes are in `charset` (the object's client charset), or in its
/// introducer's (`_cp1251'…'`); identifiers, comments and `_binary` strings as they are.
pub fn recode_sql(
    sql: &str,
    charset: Option<&str>,
    labels: &[Label],
    mode: Mode,
) -> Result<String, String> {
    if sql.is_ascii() {
        return Ok(sql.to_string());
    }
    let mut failed = None;
    let out = sqltext::rewrite_literals(sql, mode, |lit| {
        recoded_literal(lit, charset, labels).unwrap_or_else(|e| {
            failed.get_or_insert(e);
            None
        })
    })
    .map_err(|e| format!("cannot read the SQL text: {e}"))?;
    match failed {
        Some(e) => Err(e),
        None => Ok(out),
    }
}

/// A column type with its ENUM/SET members recoded (`enum('новый','оплачен')`); others as they are.
pub fn recode_type(
    column_type: &str,
    charset: Option<&str>,
    labels: &[Label],
) -> Result<String, String> {
    let Some((kind, list)) = member_list(column_type) else {
        return Ok(column_type.to_string());
    };
    let members = quote::members(list).ok_or_else(|| format!("cannot read {column_type}"))?;
    let recoded = members
        .iter()
        .map(|m| recode_text(m, charset, labels).map(|t| quote::literal(&t)))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(format!("{kind}({})", recoded.join(",")))
}

/// `("enum", "'a','b'")` of an ENUM or SET type.
pub fn member_list(column_type: &str) -> Option<(&str, &str)> {
    let open = column_type.find('(')?;
    let kind = &column_type[..open];
    (kind.eq_ignore_ascii_case("enum") || kind.eq_ignore_ascii_case("set"))
        .then(|| (kind, column_type[open + 1..].strip_suffix(')')))
        .and_then(|(k, l)| Some((k, l?)))
}
