//! Single-byte text columns with no legacy text at scan time (empty, ASCII, or nothing
//! decided): copied into utf8mb4 all the same, so what the application writes into them after
//! its switch to UTF-8 is kept, unless every value is a machine-made token in an index, which
//! would grow fourfold for nothing (the seed migration kept its hex indexes). Pure.

use super::accumulate::ColumnTally;
use super::collation::{is_utf8_charset, utf8mb4_collation};
use super::model::Target;
use crate::inventory::model::{Column, ColumnKind};

/// Whether the column is text (or ENUM/SET) in a single-byte charset: one the application's
/// writes after its switch to UTF-8 could not hold, whatever it holds today.
pub(crate) fn single_byte_text(col: &Column) -> bool {
    matches!(
        col.kind,
        ColumnKind::Text | ColumnKind::Enum | ColumnKind::Set
    ) && col
        .charset
        .as_deref()
        .is_some_and(|cs| !is_utf8_charset(Some(cs)) && cs != "binary")
}

/// Why an all-ASCII column stays single-byte, if it does: every value a machine-made token
/// ([`crate::scan::accumulate::Tokens::machine_made`]) and the column in an index, which
/// would grow fourfold for nothing (the seed migration kept its hex indexes).
pub(crate) fn token_index(col: &Column, tally: &ColumnTally) -> Option<String> {
    let t = tally.tokens.filter(|t| t.machine_made())?;
    let index = col.indexes.first()?;
    let shape = match (t.hex, t.min_len == t.max_len) {
        (true, true) => format!("hex of {} digits", t.min_len),
        (true, false) => format!("hex of {}-{} digits", t.min_len, t.max_len),
        (false, _) => format!("ids of {} characters", t.min_len),
    };
    Some(format!(
        "ASCII tokens only ({shape}) in index `{index}`: stays {} so the index does not grow",
        col.charset.as_deref().unwrap_or("as is")
    ))
}

/// The warning for a column kept single-byte whose name says people write text into it.
pub(crate) fn free_text_kept(col: &Column) -> Option<String> {
    const WORDS: &[&str] = &[
        "name", "title", "text", "desc", "comment", "subject", "body", "message", "note", "url",
        "mail", "address", "city", "street", "word", "tag", "label", "caption", "content",
    ];
    let lower = col.name.to_lowercase();
    WORDS.iter().any(|w| lower.contains(w)).then(|| {
        format!(
            "kept {} as ASCII tokens, but its name suggests text people write: anything but ASCII the application writes into it after its switch is stored as `?`. \
             Fix: put it in the job (copied into utf8mb4)",
            col.charset.as_deref().unwrap_or("single-byte")
        )
    })
}

/// The utf8mb4 target of a single-byte column with no legacy text at scan time (empty, or
/// ASCII that is not a token index): left single-byte, the application's first write of
/// anything but ASCII after its switch to UTF-8 would store `?`.
pub(crate) fn no_text_yet_target(col: &Column, tally: &ColumnTally, mysql: bool) -> Target {
    let non_empty = tally.rows - tally.nulls - tally.empty;
    let held = match (non_empty, tally.undecided_total) {
        (0, _) => "no values".to_string(),
        (_, 0) => format!("ASCII only ({non_empty} values)"),
        (_, u) => format!(
            "no value decided ({} ASCII, {u} undecided)",
            tally.count("ascii")
        ),
    };
    Target {
        column_type: col.column_type.clone(),
        charset: Some("utf8mb4".into()),
        collation: Some(utf8mb4_collation(col.collation.as_deref(), mysql).into()),
        why: format!(
            "{held} in a {} column: copied into utf8mb4 all the same, so what the application writes after its switch is UTF-8",
            col.charset.as_deref().unwrap_or("?")
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A latin1 `varchar(64)` column named `name`, in `indexes`.
    fn column(name: &str, indexes: &[&str]) -> Column {
        Column {
            name: name.into(),
            position: 2,
            kind: ColumnKind::Text,
            data_type: "varchar".into(),
            column_type: "varchar(64)".into(),
            charset: Some("latin1".into()),
            collation: Some("latin1_swedish_ci".into()),
            max_chars: Some(64),
            max_bytes: Some(64),
            max_bytes_utf8mb4: Some(256),
            nullable: false,
            definition: Default::default(),
            in_primary_key: false,
            indexes: indexes.iter().map(|s| s.to_string()).collect(),
        }
    }

    /// The tally of ASCII `values`, as the scan counts them.
    fn tally(values: &[&str]) -> ColumnTally {
        let mut t = ColumnTally::default();
        let v = crate::detect::Verdict {
            label: crate::detect::Label::Ascii,
            confidence: 1.0,
            decoded: None,
            runner_up: None,
            reasons: Default::default(),
        };
        for s in values {
            t.add(&[b"1".to_vec()], s.as_bytes(), &v);
        }
        t
    }

    #[test]
    fn only_indexed_machine_made_tokens_stay_single_byte() {
        let md5 = [
            "0cc175b9c0f1b6a831c399e269772661",
            "92eb5ffee6ae2fec3ad71c777531578f",
        ];
        let kept = token_index(&column("hash", &["u_hash"]), &tally(&md5)).unwrap();
        assert_eq!(
            kept,
            "ASCII tokens only (hex of 32 digits) in index `u_hash`: stays latin1 so the index does not grow"
        );
        let uuids = [
            "0f8fad5b-d9cb-469f-a165-70867728950e",
            "7c9e6679-7425-40de-944b-e07fc1f90ae7",
        ];
        assert!(token_index(&column("uid", &["k"]), &tally(&uuids))
            .unwrap()
            .contains("ids of 36 characters"));
        // Words of one length are words; short codes grow little.
        assert!(token_index(&column("scope", &["k"]), &tally(&["backend", "website"])).is_none());
        assert!(token_index(&column("iso", &["k"]), &tally(&["RU", "UA", "BY"])).is_none());
        // Not indexed: nothing grows, so it is converted.
        assert!(token_index(&column("hash", &[]), &tally(&md5)).is_none());
        // Logins, slugs, words, URLs and addresses are what people write: converted.
        for values in [
            &["ivan", "petr_1980", "admin"][..],
            &["Hello world", "Hi"],
            &["http://example.com/a", "http://example.com/b"],
            &["a@example.com", "b@example.com"],
        ] {
            assert!(
                token_index(&column("x", &["k"]), &tally(values)).is_none(),
                "{values:?}"
            );
        }
        // No values at all: nothing says tokens.
        assert!(token_index(&column("x", &["k"]), &tally(&[])).is_none());
    }

    #[test]
    fn a_kept_column_named_for_free_text_is_warned_about() {
        assert!(free_text_kept(&column("website_url", &[]))
            .unwrap()
            .contains("stored as `?`"));
        assert!(free_text_kept(&column("session_id", &[])).is_none());
    }

    #[test]
    fn an_empty_or_ascii_single_byte_column_gets_a_utf8mb4_target_saying_why() {
        let c = column("name", &[]);
        assert!(single_byte_text(&c));
        let t = no_text_yet_target(&c, &tally(&[]), false);
        assert_eq!(
            (
                t.column_type.as_str(),
                t.charset.as_deref(),
                t.collation.as_deref()
            ),
            ("varchar(64)", Some("utf8mb4"), Some("utf8mb4_general_ci"))
        );
        assert!(
            t.why.starts_with("no values in a latin1 column"),
            "{}",
            t.why
        );
        let t = no_text_yet_target(&c, &tally(&["Ivan"]), false);
        assert!(t.why.starts_with("ASCII only (1 values)"), "{}", t.why);
        for cs in ["utf8mb4", "utf8mb3", "binary"] {
            let mut c = column("name", &[]);
            c.charset = Some(cs.into());
            assert!(!single_byte_text(&c), "{cs}");
        }
    }
}
