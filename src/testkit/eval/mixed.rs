//! Columns that mix cp1251 and KOI8 rows of one language (issue 42's mixed columns): each
//! language's rows half and half, and each table with a tenth of the other's.

use super::Row;

/// `major`'s rows with one of `minor`'s after every ninth.
fn tenth<'a>(major: &[&'a Row], minor: &[&'a Row]) -> Vec<&'a Row> {
    let mut col = Vec::new();
    let mut m = minor.iter();
    for (i, r) in major.iter().enumerate() {
        col.push(*r);
        if i % 9 == 8 {
            col.extend(m.next().copied());
        }
    }
    col
}

/// Every language of `rows` with both cp1251 and KOI8-R/U rows, as three mixed columns:
/// (`lang: how (n values)`, the column's rows).
pub fn cp1251_koi8_columns(rows: &[Row]) -> Vec<(String, Vec<&Row>)> {
    let mut langs: Vec<&str> = rows.iter().map(|r| r.lang.as_str()).collect();
    langs.sort_unstable();
    langs.dedup();
    let mut out = Vec::new();
    for lang in langs {
        let of = |want: &[&str]| -> Vec<&Row> {
            (rows.iter())
                .filter(|r| r.lang == lang && want.contains(&r.expected.as_str()))
                .collect()
        };
        let (a, b) = (of(&["cp1251"]), of(&["koi8-r", "koi8-u"]));
        if a.is_empty() || b.is_empty() {
            continue;
        }
        let half: Vec<&Row> = a.iter().zip(&b).flat_map(|(x, y)| [*x, *y]).collect();
        for (name, col) in [
            ("half and half", half),
            ("cp1251 + 10% KOI8", tenth(&a, &b)),
            ("KOI8 + 10% cp1251", tenth(&b, &a)),
        ] {
            out.push((format!("{lang}: {name} ({} values)", col.len()), col));
        }
    }
    out
}
