//! The review step end to end on a real server: a run leaves values undecided, `review`
//! lists them with every reading and writes a decision file, the DBA fills it in, the next
//! `run --decisions` applies it (refusing what does not round-trip), and `verify` proves it.

use crate::common;
use common::legacy::bytes;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::{self, *};
use myrecode::db::throwaway::test_database;
use sqlx::{MySqlConnection, Row};
use std::collections::HashMap;
use std::path::Path;

/// Region names and short words of the held-out Ukrainian text (nobody here wrote them).
fn heldout_uk() -> (Vec<String>, Vec<String>) {
    let text = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/data/heldout/uk.txt"
    ))
    .unwrap();
    let names: Vec<String> = text
        .lines()
        .filter_map(|l| l.strip_prefix("iso_3166-2\t"))
        .filter(|n| myrecode::codec::encode(Windows1251, n).is_ok())
        .take(300)
        .map(str::to_owned)
        .collect();
    // Short words with a letter KOI8-U has and KOI8-R lacks: stored as KOI8-U in a cp1251
    // column, they are the rows detection must not guess.
    let mut words: Vec<String> = Vec::new();
    for w in text.split(|c: char| !c.is_alphabetic()) {
        let len = w.chars().count();
        if (3..=6).contains(&len)
            && w.chars().any(|c| "іїєґ".contains(c))
            && myrecode::codec::encode(Koi8U, w).is_ok()
            && !words.iter().any(|x| x == w)
        {
            words.push(w.to_owned());
        }
        if words.len() == 4 {
            break;
        }
    }
    (names, words)
}

/// A seeded row: id, stored bytes, and the encoding and text it really is (`None`: foreign
/// text no reading of ours is right for).
type Seeded = (i64, Vec<u8>, Option<(Encoding, String)>);

#[tokio::test]
async fn undecided_values_are_reviewed_decided_applied_and_verified() {
    let db = test_database("review_e2e");
    exec_script(
        &db.config,
        &["CREATE TABLE places (id INT NOT NULL PRIMARY KEY, name BLOB) ENGINE=InnoDB"],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    let rows = places_hold_ukrainian_text_in_two_encodings_and_german_in_cp1252(&mut c).await;
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("places.yaml");
    std::fs::write(
        &job,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  batch_size: 100\n  pause_between_batches: 0ms\n\
             tables:\n  - name: places\n    strategy: in-place\n    columns:\n      - name: name\n        \
             source: auto\n        target: BLOB\n",
            db.name
        ),
    )
    .unwrap();
    let url = db.config.url_with_secret();
    let jobp = job.to_str().unwrap();

    let out = myrecode(Some(&url), &["run", jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "undecided values need attention\n{stdout}{stderr}"
    );
    let decisions = dir.path().join("decisions.yaml");
    review_lists_every_undecided_value_and_the_dba_decides_each(&url, jobp, &decisions, &rows);
    a_decision_file_naming_a_column_the_job_lacks_stops_the_run(&url, jobp, dir.path());
    the_decisions_are_applied_but_a_lossy_one_and_verify_proves_them(
        &mut c, &url, jobp, &decisions, &rows,
    )
    .await;
}

/// `places` seeded with region names of the held-out Ukrainian text in cp1251, short words
/// in KOI8-U that detection must not guess, and two German values in cp1252 no reading of
/// ours is right for (the DBA keeps one, and asks for a lossy reading of the other, which
/// must be refused). Returns the rows with their truth.
async fn places_hold_ukrainian_text_in_two_encodings_and_german_in_cp1252(
    c: &mut MySqlConnection,
) -> Vec<Seeded> {
    let (names, words) = heldout_uk();
    assert!(names.len() >= 200 && words.len() == 4, "{words:?}");
    let mut rows: Vec<Seeded> = Vec::new();
    for (i, n) in names.iter().enumerate() {
        rows.push((
            i as i64,
            bytes(Windows1251, n),
            Some((Windows1251, n.clone())),
        ));
    }
    for (i, w) in words.iter().enumerate() {
        rows.push((1000 + i as i64, bytes(Koi8U, w), Some((Koi8U, w.clone()))));
    }
    // German in cp1252: no reading of ours is right; the DBA keeps one, and asks for a
    // lossy reading of the other, which must be refused.
    rows.push((2000, b"M\xfcller".to_vec(), None));
    rows.push((2001, b"Gr\xfc\xdfe".to_vec(), None));
    for (id, stored, _) in &rows {
        sqlx::query("INSERT INTO places (id, name) VALUES (?, ?)")
            .bind(id)
            .bind(stored)
            .execute(&mut *c)
            .await
            .unwrap();
    }
    rows
}

/// Review: every undecided value listed, its readings side by side, and a file to fill in;
/// the DBA fills in the true reading of each listed value, keeps Müller, and asks for a
/// lossy reading (not UTF-8, so no utf-8>latin1) for Grüße.
fn review_lists_every_undecided_value_and_the_dba_decides_each(
    url: &str,
    jobp: &str,
    decisions: &Path,
    rows: &[Seeded],
) {
    // Review: every undecided value listed, its readings side by side, and a file to fill in.
    let out = myrecode(
        Some(url),
        &["review", jobp, "--out", decisions.to_str().unwrap()],
    );
    let (listing, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{listing}{stderr}");
    assert!(listing.contains("column verdict"), "{listing}");
    assert!(listing.contains("places.name key [2000]"), "{listing}");
    let file = std::fs::read_to_string(decisions).unwrap();
    let truth: HashMap<String, &Option<(Encoding, String)>> =
        rows.iter().map(|(_, s, t)| (hex::encode(s), t)).collect();
    // The DBA's decisions: the true reading of each listed value; keep Müller; a lossy
    // reading (not UTF-8, so no utf-8>latin1) for Grüße.
    let mut listed = 0;
    let filled: String = file
        .lines()
        .map(|l| {
            let Some(hexed) = l.split("stored: ").nth(1).and_then(|r| r.split(',').next()) else {
                return l.to_owned();
            };
            listed += 1;
            let choice = match truth[hexed] {
                Some((Windows1251, _)) => "cp1251",
                Some((_, _)) => "koi8-u",
                None if hexed == hex::encode(b"M\xfcller") => "keep",
                None => "utf-8>latin1",
            };
            l.replace("use: '?'", &format!("use: {choice}"))
        })
        .collect::<Vec<_>>()
        .join("\n");
    assert!(listed >= 2, "{file}");
    assert_eq!(
        listed,
        listing.matches("places.name key [").count(),
        "{file}"
    );
    std::fs::write(decisions, filled).unwrap();
}

/// A decision file naming a column the job does not recode stops the run before it writes.
fn a_decision_file_naming_a_column_the_job_lacks_stops_the_run(url: &str, jobp: &str, dir: &Path) {
    // A decision file naming a column the job does not recode stops the run before it writes.
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "columns: [{table: places, column: nope, use: cp1251}]\n",
    )
    .unwrap();
    let out = myrecode(
        Some(url),
        &[
            "run",
            jobp,
            "--execute",
            "--decisions",
            bad.to_str().unwrap(),
        ],
    );
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("places.nope") && stderr.contains("Fix:"),
        "{stderr}"
    );
}

/// `run --decisions` applies the filled-in file, refusing the reading that does not
/// round-trip; every text value is its real text, the foreign ones as stored, `verify`
/// proves it, and only the refused value is still listed.
async fn the_decisions_are_applied_but_a_lossy_one_and_verify_proves_them(
    c: &mut MySqlConnection,
    url: &str,
    jobp: &str,
    decisions: &Path,
    rows: &[Seeded],
) {
    let out = myrecode(
        Some(url),
        &[
            "run",
            jobp,
            "--execute",
            "--decisions",
            decisions.to_str().unwrap(),
        ],
    );
    let (stdout, stderr) = texts(&out);
    assert_eq!(
        out.status.code(),
        Some(1),
        "the refused decision needs attention\n{stdout}{stderr}"
    );
    assert!(stdout.contains("decisions applied"), "{stdout}");
    assert!(
        stdout.contains("refused: places.name key [2001]") && stdout.contains("losslessly"),
        "{stdout}"
    );

    // Every text value is now its real text; the foreign ones are as stored.
    let now: HashMap<i64, Vec<u8>> = sqlx::query("SELECT id, name FROM places")
        .fetch_all(&mut *c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect();
    for (id, stored, t) in rows {
        match t {
            Some((_, text)) => assert_eq!(now[id], text.as_bytes(), "row {id}"),
            None => assert_eq!(&now[id], stored, "row {id}"),
        }
    }
    let out = myrecode(Some(url), &["verify", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}{stderr}");

    // Only the refused value is still listed.
    let out = myrecode(Some(url), &["review", jobp]);
    let (listing, _) = texts(&out);
    assert_eq!(listing.matches("places.name key [").count(), 1, "{listing}");
    assert!(listing.contains("key [2001]"), "{listing}");
}
