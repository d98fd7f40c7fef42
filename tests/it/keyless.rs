//! A table without a usable key through the copy strategy: `plan` puts a small one in the job
//! and says the pause, the rehearsal says it is rebuilt under the cut-over's lock, and the run
//! rebuilds it there (duplicate rows, NULLs, two encodings, `engine: InnoDB` from MyISAM);
//! `verify` compares it with the kept original as a multiset of rows.

use crate::common;
use common::exec_script;
use common::legacy::*;
use myrecode::codec::Encoding::*;
use myrecode::db::throwaway::test_database;
use myrecode::job::load::load_str;
use myrecode::job::model::Strategy;

/// `(label, note, n)` rows: labels cp1251 (twelve texts over 60 rows, so they repeat), notes
/// KOI8-R or NULL; the last row twice.
fn rows() -> Vec<(Vec<u8>, Option<Vec<u8>>, i64)> {
    let mut out: Vec<(Vec<u8>, Option<Vec<u8>>, i64)> = (0..60)
        .map(|i| {
            let label: String = RUSSIAN[i % 12].chars().take(40).collect();
            let note = (i % 7 != 0).then(|| bytes(Koi8R, RUSSIAN[(i + 3) % 12]));
            (bytes(Windows1251, &label), note, i as i64)
        })
        .collect();
    out.push(out[59].clone());
    out
}

/// What the rows should read after the run, sorted.
fn expected() -> Vec<(String, Option<String>, i64)> {
    let mut want: Vec<(String, Option<String>, i64)> = (0..60)
        .map(|i| {
            let label: String = RUSSIAN[i % 12].chars().take(40).collect();
            let note = (i % 7 != 0).then(|| RUSSIAN[(i + 3) % 12].to_string());
            (label, note, i as i64)
        })
        .collect();
    want.push(want[59].clone());
    want.sort();
    want
}

#[tokio::test]
async fn a_small_keyless_table_is_rebuilt_under_the_cut_over_lock() {
    let db = test_database("keyless");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE tags (label VARCHAR(100) CHARACTER SET latin1 NULL, \
           note TEXT CHARACTER SET latin1 NULL, n INT NOT NULL, KEY k_label (label)) ENGINE=MyISAM",
        ],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    for (label, note, n) in rows() {
        sqlx::query("INSERT INTO tags (label, note, n) VALUES (?, ?, ?)")
            .bind(label)
            .bind(note)
            .bind(n)
            .execute(&mut c)
            .await
            .unwrap();
    }
    let url = db.config.url_with_secret();
    let run = |args: &[&str]| common::cli(&url, args);
    let dir = tempfile::tempdir().unwrap();
    let (report, planned, text) = common::scan_and_plan(&url, dir.path());

    // plan: in the job, copied, with the pause its rebuild costs.
    let job = load_str(&text).unwrap().job;
    assert_eq!(job.tables.len(), 1, "{text}");
    assert_eq!(job.tables[0].strategy, Strategy::Copy, "{text}");
    assert!(
        text.contains("no primary key and no NOT NULL unique key: its 61 row(s) are rebuilt under the cut-over's lock (about 2 ms of pause"),
        "{text}"
    );

    // The DBA's job: the same, converted to InnoDB while it is rebuilt.
    let job = dir.path().join("job.yaml");
    let job_text: String = std::fs::read_to_string(&planned)
        .unwrap()
        .replace("cutover: manual", "cutover: auto")
        .lines()
        .flat_map(|l| {
            let engine = l
                .starts_with("    strategy: copy")
                .then_some("    engine: InnoDB");
            [Some(l), engine]
        })
        .flatten()
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(job_text.contains("engine: InnoDB"), "{job_text}");
    std::fs::write(&job, &job_text).unwrap();
    let jobp = job.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "plan",
        "--check",
        jobp,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    let (code, stdout, stderr) = run(&["run", jobp]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("tags: no key: rebuilt whole into tags_myrecode_new under the cut-over's lock (61 rows, about 2 ms of pause"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&["run", jobp, "--execute"]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert!(stdout.contains("keyless: tags:"), "{stdout}");
    assert_eq!(stdout.matches("cut-over: tags").count(), 1, "{stdout}");

    let (charset, engine): (String, String) = sqlx::query_as(
        "SELECT CAST(c.CHARACTER_SET_NAME AS CHAR), CAST(t.ENGINE AS CHAR) FROM information_schema.COLUMNS c \
         JOIN information_schema.TABLES t USING (TABLE_SCHEMA, TABLE_NAME) \
         WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME = 'tags' AND c.COLUMN_NAME = 'label'",
    )
    .bind(&db.name)
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!((charset.as_str(), engine.as_str()), ("utf8mb4", "InnoDB"));
    let mut got: Vec<(String, Option<String>, i64)> =
        sqlx::query_as("SELECT label, note, n FROM tags")
            .fetch_all(&mut c)
            .await
            .unwrap();
    got.sort();
    assert_eq!(got, expected());
    let (code, stdout, stderr) = run(&["verify", jobp]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    // verify sees a row changed since: the multiset comparison names the count.
    sqlx::query("UPDATE tags SET n = n + 1000 WHERE n = 3")
        .execute(&mut c)
        .await
        .unwrap();
    let (code, stdout, stderr) = run(&["verify", jobp]);
    assert_ne!(code, 0, "{stdout}\n{stderr}");
    assert!(
        stdout.contains("2 row(s) without an equal row"),
        "{stdout}\n{stderr}"
    );
}
