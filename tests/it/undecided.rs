//! No value is converted blind (issue 42): a copy holding values no reading decided holds
//! its cut-over until each is decided (the run says so, `status` shows it, `myrecode
//! cutover` refuses with the count and the fix), by `run --decisions` into the shadow or by
//! the column's fallback (`undecidable: use <label>`), a MyISAM table included; and the run
//! decides a value as the scan and the plan said it would (cp1251 "Ні." is also UTF-8 "ͳ.").

use crate::common;
use common::legacy::{bytes, insert_raw, RUSSIAN};
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::quote;
use myrecode::db::throwaway::test_database;
use myrecode::inventory::{self, Scope};
use myrecode::scan::read::{self as scan, Options, Silent};
use sqlx::{MySqlConnection, Row};
use std::path::Path;
use std::time::Duration;

/// Russian city names, each stored four times over 200 rows.
const CITIES: [&str; 50] = [
    "Москва",
    "Санкт-Петербург",
    "Новосибирск",
    "Екатеринбург",
    "Казань",
    "Нижний Новгород",
    "Челябинск",
    "Самара",
    "Омск",
    "Ростов-на-Дону",
    "Уфа",
    "Красноярск",
    "Воронеж",
    "Пермь",
    "Волгоград",
    "Краснодар",
    "Саратов",
    "Тюмень",
    "Тольятти",
    "Ижевск",
    "Барнаул",
    "Ульяновск",
    "Иркутск",
    "Хабаровск",
    "Ярославль",
    "Владивосток",
    "Махачкала",
    "Томск",
    "Оренбург",
    "Кемерово",
    "Новокузнецк",
    "Рязань",
    "Астрахань",
    "Набережные Челны",
    "Пенза",
    "Липецк",
    "Киров",
    "Чебоксары",
    "Тула",
    "Калининград",
    "Курск",
    "Ставрополь",
    "Сочи",
    "Тверь",
    "Магнитогорск",
    "Иваново",
    "Брянск",
    "Белгород",
    "Сургут",
    "Владимир",
];

/// One column of `table` as text, by id.
async fn column(c: &mut MySqlConnection, table: &str, col: &str) -> Vec<(i64, String)> {
    let sql = format!(
        "SELECT id, {} FROM {} ORDER BY id",
        quote::ident(col),
        quote::ident(table)
    );
    sqlx::query(&sql)
        .fetch_all(c)
        .await
        .unwrap()
        .iter()
        .map(|r| (r.get(0), r.get(1)))
        .collect()
}

/// `SHOW CREATE TABLE` of `table`.
async fn create_of(c: &mut MySqlConnection, table: &str) -> String {
    let sql = format!("SHOW CREATE TABLE {}", quote::ident(table));
    sqlx::query(&sql).fetch_one(c).await.unwrap().get(1)
}

/// `myrecode` with the database's URL; exit code, stdout, stderr.
fn run(url: &str, args: &[&str]) -> (Option<i32>, String, String) {
    let out = myrecode(Some(url), args);
    let (stdout, stderr) = texts(&out);
    (out.status.code(), stdout, stderr)
}

#[tokio::test]
async fn a_fixed_source_is_the_run_s_verdict_too_cp1251_ni_is_recoded_as_the_scan_said() {
    let db = test_database("undecided_cities");
    exec_script(
        &db.config,
        &["CREATE TABLE towns (id INT NOT NULL PRIMARY KEY, city VARCHAR(50) CHARACTER SET latin1) ENGINE=InnoDB"],
    )
    .await;
    let mut rows: Vec<(i64, Vec<u8>)> = (0..200)
        .map(|i| (i as i64 + 1, bytes(Windows1251, CITIES[i % CITIES.len()])))
        .collect();
    // cp1251 "Ні." is CD B3 2E, also valid UTF-8 for "ͳ.".
    let ni = bytes(Windows1251, "Ні.");
    assert_eq!(ni, [0xCD, 0xB3, 0x2E]);
    rows.extend([(201, ni.clone()), (202, ni)]);
    insert_raw(&db.config, "towns", "city", &rows).await;

    // The scan decides all 202 as cp1251, and the plan fixes the column's source.
    let mut c = db.config.connect_one().await.unwrap();
    let scope = Scope {
        schemas: vec![db.name.clone()],
        tables: vec![],
    };
    let inv = inventory::take(&mut c, &scope).await.unwrap();
    let opts = Options {
        sample: None,
        batch_size: 50,
        pause: Duration::ZERO,
    };
    let report = scan::scan(&mut c, &inv, &opts, &Silent).await.unwrap();
    let col = &report.tables[0].columns[0];
    assert_eq!(col.labels.get("cp1251"), Some(&202), "{:?}", col.labels);
    let yaml = myrecode::job::plan::generate(&report, Some(&db.name), "scan.json").unwrap();
    assert!(
        yaml.contains("source: cp1251   # every non-ASCII value is cp1251"),
        "{yaml}"
    );
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("towns.yaml");
    std::fs::write(&job, yaml.replace("cutover: manual", "cutover: auto")).unwrap();

    // The run decides as the scan did: 202 recoded, none kept as its UTF-8 look-alike.
    let url = db.config.url_with_secret();
    let (code, stdout, stderr) = run(&url, &["run", job.to_str().unwrap(), "--execute"]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("towns: 202 rows read, 202 values recoded, 0 quarantined"),
        "{stdout}"
    );
    let got = column(&mut c, "towns", "city").await;
    for (id, city) in &got {
        let want = match id {
            201 | 202 => "Ні.",
            i => CITIES[(*i as usize - 1) % CITIES.len()],
        };
        assert_eq!(city, want, "row {id}");
    }
}

/// `notes`: Russian text in cp1251 (rows 1..=40) and two German values in cp1252 no reading
/// of ours is right for (101, 102), on `engine`.
async fn seed_notes(cfg: &myrecode::db::connect::ConnectionConfig, engine: &str) {
    let ddl = format!(
        "CREATE TABLE notes (id INT NOT NULL PRIMARY KEY, body VARCHAR(200) CHARACTER SET latin1, \
         hits INT NOT NULL DEFAULT 0) ENGINE={engine}"
    );
    exec_script(cfg, &[ddl.as_str()]).await;
    let mut rows: Vec<(i64, Vec<u8>)> = (0..40)
        .map(|i| (i as i64 + 1, bytes(Windows1251, RUSSIAN[i % RUSSIAN.len()])))
        .collect();
    rows.push((101, b"M\xfcller".to_vec()));
    rows.push((102, b"Gr\xfc\xdfe".to_vec()));
    insert_raw(cfg, "notes", "body", &rows).await;
}

/// A job copying `notes.body` (cut over as soon as caught up), `undecidable` as given.
fn notes_job(dir: &Path, schema: &str, undecidable: &str) -> std::path::PathBuf {
    let path = dir.join("notes.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nschema: {schema}\ndefaults:\n  cutover: auto\n  pause_between_batches: 0ms\n  \
             undecidable: {undecidable}\ntables:\n  - name: notes\n    strategy: copy\n    columns:\n      \
             - name: body\n        source: auto\n        target: VARCHAR(200) CHARACTER SET utf8mb4\n"
        ),
    )
    .unwrap();
    path
}

/// Every Russian row of `notes` recoded; 101 and 102 as `want` (103 is the caller's).
async fn notes_read(c: &mut MySqlConnection, want: [&str; 2]) {
    for (id, body) in column(c, "notes", "body").await {
        let expect = match id {
            101 => want[0].to_string(),
            102 => want[1].to_string(),
            i if i <= 40 => RUSSIAN[(i as usize - 1) % RUSSIAN.len()].to_string(),
            _ => continue,
        };
        assert_eq!(body, expect, "row {id}");
    }
}

#[tokio::test]
async fn a_myisam_copy_holds_its_cut_over_until_the_dba_decides_and_the_replay_keeps_it() {
    let db = test_database("undecided_myisam");
    seed_notes(&db.config, "MyISAM").await;
    let dir = tempfile::tempdir().unwrap();
    let job = notes_job(dir.path(), &db.name, "quarantine");
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();

    // The run copies, finds two values no reading decided, and holds: nothing swapped.
    let (code, stdout, stderr) = run(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("held: notes holds 2 value(s) no reading decided: the cut-over waits"),
        "{stdout}"
    );
    assert!(stdout.contains("myrecode review job.yaml --out decisions.yaml"));
    let create = create_of(&mut c, "notes").await;
    assert!(
        create.contains("latin1") && create.contains("MyISAM"),
        "{create}"
    );

    // `status` shows it; `myrecode cutover` refuses with the count and the fix.
    let (code, stdout, stderr) = run(&url, &["status", jobp]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("held: notes holds 2 value(s) no reading decided"),
        "{stdout}"
    );
    let (code, stdout, stderr) = run(&url, &["cutover", jobp]);
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stderr.contains("the cut-over waits for values no reading decided: notes (2)")
            && stderr.contains("--decisions decisions.yaml"),
        "{stderr}"
    );

    // `review` lists both; the DBA keeps one as latin1 reads it and reads the other as cp1251.
    let listed = dir.path().join("listed.yaml");
    let (code, stdout, stderr) = run(&url, &["review", jobp, "--out", listed.to_str().unwrap()]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    let text = std::fs::read_to_string(&listed).unwrap();
    assert!(
        text.contains("key: [\"101\"]") && text.contains("key: [\"102\"]"),
        "{text}"
    );
    // Meanwhile the application changes both rows (another column): logged, replayed later.
    sqlx::query("UPDATE notes SET hits = hits + 1 WHERE id IN (101, 102)")
        .execute(&mut c)
        .await
        .unwrap();
    let decisions = dir.path().join("decisions.yaml");
    std::fs::write(
        &decisions,
        "values:\n  - { table: notes, column: body, key: [\"101\"], stored: 4dfc6c6c6572, use: keep }\n  \
         - { table: notes, column: body, key: [\"102\"], stored: 4772fcdf65, use: cp1251 }\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &url,
        &[
            "run",
            jobp,
            "--execute",
            "--decisions",
            decisions.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("notes: decisions applied: 1 value(s) rewritten, 1 kept as stored, 0 still undecided, 0 refused"),
        "{stdout}"
    );
    assert!(
        stdout.contains("cut-over: notes now has the recoded columns"),
        "{stdout}"
    );
    let create = create_of(&mut c, "notes").await;
    assert!(
        create.contains("utf8mb4") && create.contains("MyISAM"),
        "{create}"
    );
    // Both rows were replayed after the decisions: the replay wrote what was decided.
    notes_read(&mut c, ["Müller", "GrьЯe"]).await;
    let hits: Vec<i64> = sqlx::query_scalar("SELECT hits FROM notes WHERE id IN (101, 102)")
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(hits, [1, 1]);
    let listed: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _myrecode_quarantine")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(listed, 0);
    let (code, stdout, stderr) = run(&url, &["verify", jobp]);
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
}

#[tokio::test]
async fn the_column_s_fallback_decides_what_no_reading_did_and_what_it_cannot_read_still_holds() {
    let db = test_database("undecided_fallback");
    seed_notes(&db.config, "InnoDB").await;
    // 0x98 is no cp1251 letter: the fallback cannot read it either.
    insert_raw(
        &db.config,
        "notes",
        "body",
        &[(103, b"Order \x98\x98".to_vec())],
    )
    .await;
    let dir = tempfile::tempdir().unwrap();
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();

    // Without a fallback: held on three values.
    let job = notes_job(dir.path(), &db.name, "quarantine");
    let jobp = job.to_str().unwrap();
    let (code, stdout, stderr) = run(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("held: notes holds 3 value(s)"), "{stdout}");

    // The job names the column's fallback (the job's fingerprint does not change): the listed
    // values it reads are decided; the one it cannot read still holds the cut-over.
    let job = notes_job(dir.path(), &db.name, "use cp1251");
    let (code, stdout, stderr) = run(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(stdout.contains("held: notes holds 1 value(s)"), "{stdout}");
    assert!(create_of(&mut c, "notes").await.contains("latin1"));

    // The DBA keeps the last one: swapped.
    let decisions = dir.path().join("decisions.yaml");
    std::fs::write(
        &decisions,
        "values:\n  - { table: notes, column: body, key: [\"103\"], use: keep }\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &url,
        &[
            "run",
            job.to_str().unwrap(),
            "--execute",
            "--decisions",
            decisions.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(create_of(&mut c, "notes").await.contains("utf8mb4"));
    notes_read(&mut c, ["Mьller", "GrьЯe"]).await;
    let kept: String = sqlx::query_scalar("SELECT body FROM notes WHERE id = 103")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(
        kept, "Order \u{2dc}\u{2dc}",
        "latin1 (cp1252) reads 0x98 as ˜"
    );
}

#[tokio::test]
async fn a_table_an_earlier_version_swapped_in_blind_is_decided_from_its_kept_original() {
    let db = test_database("undecided_swapped");
    seed_notes(&db.config, "InnoDB").await;
    let dir = tempfile::tempdir().unwrap();
    let job = notes_job(dir.path(), &db.name, "quarantine");
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();
    let (code, stdout, stderr) = run(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    // What an earlier version left: the entries, and the table swapped in with the server's
    // reading of their bytes (here: decided `keep`, which writes just that).
    // Each entry's job, column, packed key and stored bytes.
    let listed: Vec<Vec<Vec<u8>>> =
        sqlx::query("SELECT job, col, key_bytes, value FROM _myrecode_quarantine ORDER BY id")
            .fetch_all(&mut c)
            .await
            .unwrap()
            .iter()
            .map(|r| (0..4).map(|i| r.get(i)).collect())
            .collect();
    assert_eq!(listed.len(), 2);
    let keep = dir.path().join("keep.yaml");
    std::fs::write(
        &keep,
        "columns:\n  - { table: notes, column: body, use: keep }\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &url,
        &[
            "run",
            jobp,
            "--execute",
            "--decisions",
            keep.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(0), "{stdout}\n{stderr}");
    assert!(create_of(&mut c, "notes").await.contains("utf8mb4"));
    for entry in &listed {
        sqlx::query(
            "INSERT INTO _myrecode_quarantine (job, tbl, col, key_bytes, value, reason) \
             VALUES (?, 'notes', ?, ?, ?, 'undecidable')",
        )
        .bind(&entry[0])
        .bind(&entry[1])
        .bind(&entry[2])
        .bind(&entry[3])
        .execute(&mut c)
        .await
        .unwrap();
    }
    // The application rewrote row 101 since the swap: its decision must not overwrite that.
    sqlx::query("UPDATE notes SET body = 'Мюллер' WHERE id = 101")
        .execute(&mut c)
        .await
        .unwrap();
    let decisions = dir.path().join("decisions.yaml");
    std::fs::write(
        &decisions,
        "columns:\n  - { table: notes, column: body, use: cp1251 }\n",
    )
    .unwrap();
    let (code, stdout, stderr) = run(
        &url,
        &[
            "run",
            jobp,
            "--execute",
            "--decisions",
            decisions.to_str().unwrap(),
        ],
    );
    assert_eq!(code, Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("notes: decisions applied: 1 value(s) rewritten, 0 kept as stored, 0 still undecided, 1 refused")
            && stdout.contains("key [101]: the row changed since its table was swapped in"),
        "{stdout}"
    );
    notes_read(&mut c, ["Мюллер", "GrьЯe"]).await;
    // The kept original still holds the stored bytes.
    let old: Vec<u8> =
        sqlx::query_scalar("SELECT CAST(body AS BINARY) FROM notes_myrecode_old WHERE id = 102")
            .fetch_one(&mut c)
            .await
            .unwrap();
    assert_eq!(old, b"Gr\xfc\xdfe");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_the_application_writes_while_the_copy_waits_for_its_cut_over_holds_it() {
    let db = test_database("undecided_late");
    seed_notes(&db.config, "InnoDB").await;
    exec_script(&db.config, &["DELETE FROM notes WHERE id > 100"]).await;
    let dir = tempfile::tempdir().unwrap();
    let job = notes_job(dir.path(), &db.name, "quarantine");
    let text = std::fs::read_to_string(&job).unwrap();
    std::fs::write(&job, text.replace("cutover: auto", "cutover: manual")).unwrap();
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["run", job.to_str().unwrap(), "--execute"])
        .env("MYSQL_URL", &url)
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn myrecode");
    // Copied and caught up: the run waits for `myrecode cutover`.
    let since = std::time::Instant::now();
    loop {
        let phase: Option<String> = sqlx::query_scalar(
            "SELECT CAST(phase AS CHAR) FROM _myrecode_checkpoint WHERE tbl = 'notes'",
        )
        .fetch_optional(&mut c)
        .await
        .ok()
        .flatten();
        if phase.as_deref() == Some("replaying") {
            break;
        }
        assert!(since.elapsed() < Duration::from_secs(60), "{phase:?}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    // The application writes a value no reading decides: replayed, listed, and the run stops
    // held, without anyone typing `myrecode cutover`.
    sqlx::query("UPDATE notes SET body = ? WHERE id = 5")
        .bind(b"M\xfcller".to_vec())
        .execute(&mut c)
        .await
        .unwrap();
    while child.try_wait().unwrap().is_none() {
        if since.elapsed() > Duration::from_secs(90) {
            child.kill().ok();
            panic!(
                "the run did not stop held: {:?}",
                texts(&child.wait_with_output().unwrap())
            );
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    assert!(
        stdout.contains("ready: notes is copied and caught up")
            && stdout.contains("held: notes holds 1 value(s) no reading decided"),
        "{stdout}"
    );
    assert!(create_of(&mut c, "notes").await.contains("latin1"));
    let (code, stdout, stderr) = run(&url, &["cutover", job.to_str().unwrap()]);
    assert_ne!(code, Some(0), "{stdout}\n{stderr}");
    assert!(stderr.contains("notes (1)"), "{stderr}");
}
