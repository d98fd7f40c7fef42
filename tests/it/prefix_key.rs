//! Tables whose primary key indexes a prefix of a text column (SMF's `smf_themes` and
//! `smf_settings`): `plan` pages over the key's full values, and the run copies them in
//! batches under a concurrent writer and swaps them with every value right, on MyISAM (as SMF
//! creates them) and InnoDB; in place, batches page over such a key on a `TINYTEXT` too.

use crate::common;
use common::legacy::*;
use common::{exec_script, myrecode, texts};
use myrecode::codec::Encoding::*;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use myrecode::job::load::load_str;
use myrecode::job::model::Strategy;
use sqlx::MySqlConnection;
use std::collections::BTreeMap;

use std::time::{Duration, Instant};

/// Themes' key: (id_theme, id_member, variable).
type ThemeKey = (i64, i64, String);

/// Members per theme and settings per member: 2 × 250 × 8 = 4,000 theme rows.
const MEMBERS: i64 = 250;
const VARIABLES: i64 = 8;

/// A setting's name: longer than the key's 30-character prefix, unique within it.
fn variable(k: i64) -> String {
    format!("option_{k:03}_of_the_theme_with_a_long_name_past_the_prefix")
}

/// The Russian text of a theme row.
fn theme_text(key: &ThemeKey) -> String {
    let (t, m, _) = key;
    format!(
        "{} #{t}/{m}",
        RUSSIAN[((t * 7 + m) as usize) % RUSSIAN.len()]
    )
}

/// SMF's two tables (`engine`), seeded with cp1251 bytes through latin1 columns; returns the
/// themes' rows as they should read after the run.
async fn seed(cfg: &ConnectionConfig, engine: &str) -> BTreeMap<ThemeKey, String> {
    exec_script(
        cfg,
        &[
            &format!(
                "CREATE TABLE smf_themes (id_member MEDIUMINT NOT NULL DEFAULT 0, \
                 id_theme TINYINT UNSIGNED NOT NULL DEFAULT 1, \
                 variable VARCHAR(255) CHARACTER SET latin1 NOT NULL DEFAULT '', \
                 value TEXT CHARACTER SET latin1 NOT NULL, \
                 PRIMARY KEY (id_theme, id_member, variable(30)), KEY id_member (id_member)) \
                 ENGINE={engine} DEFAULT CHARSET=latin1"
            ),
            &format!(
                "CREATE TABLE smf_settings (variable TINYTEXT CHARACTER SET latin1 NOT NULL, \
                 value TEXT CHARACTER SET latin1 NOT NULL, PRIMARY KEY (variable(30))) \
                 ENGINE={engine} DEFAULT CHARSET=latin1"
            ),
        ],
    )
    .await;
    let mut c = cfg.connect_one().await.unwrap();
    let mut want = BTreeMap::new();
    for t in 1..=2i64 {
        for m in 0..MEMBERS {
            let sql = format!(
                "INSERT INTO smf_themes (id_theme, id_member, variable, value) VALUES {}",
                vec!["(?, ?, ?, ?)"; VARIABLES as usize].join(", ")
            );
            let mut q = sqlx::query(&sql);
            for k in 0..VARIABLES {
                let key = (t, m, variable(k));
                let text = theme_text(&key);
                q = q
                    .bind(t)
                    .bind(m)
                    .bind(key.2.clone())
                    .bind(bytes(Windows1251, &text));
                want.insert(key, text);
            }
            q.execute(&mut c).await.unwrap();
        }
    }
    for k in 0..300i64 {
        sqlx::query("INSERT INTO smf_settings (variable, value) VALUES (?, ?)")
            .bind(variable(k))
            .bind(bytes(Windows1251, settings_text(k)))
            .execute(&mut c)
            .await
            .unwrap();
    }
    want
}

/// The Russian text of setting `k`.
fn settings_text(k: i64) -> &'static str {
    RUSSIAN[(k as usize) % RUSSIAN.len()]
}

/// The application's writes to the themes, by full key: updates, deletes and new rows, cp1251
/// bytes until the cut-over makes the column utf8mb4, UTF-8 text after.
struct Writer {
    want: BTreeMap<ThemeKey, String>,
    x: u64,
    utf8: bool,
    writes: u64,
}

impl Writer {
    async fn step(&mut self, c: &mut MySqlConnection) {
        self.x ^= self.x << 13;
        self.x ^= self.x >> 7;
        self.x ^= self.x << 17;
        let key = (
            1 + (self.x % 2) as i64,
            ((self.x >> 8) % (MEMBERS as u64 + 40)) as i64,
            variable(((self.x >> 20) % (VARIABLES as u64 + 2)) as i64),
        );
        let since = Instant::now();
        if self.x.is_multiple_of(6) {
            let sql =
                "DELETE FROM smf_themes WHERE id_theme = ? AND id_member = ? AND variable = ?";
            while let Err(e) = sqlx::query(sql)
                .bind(key.0)
                .bind(key.1)
                .bind(&key.2)
                .execute(&mut *c)
                .await
            {
                self.retry(e, since, c).await;
            }
            self.want.remove(&key);
        } else {
            let text = format!(
                "{} (правка {})",
                RUSSIAN[(self.x >> 32) as usize % RUSSIAN.len()],
                self.writes
            );
            let sql = "INSERT INTO smf_themes (id_theme, id_member, variable, value) VALUES (?, ?, ?, ?) \
                       ON DUPLICATE KEY UPDATE value = VALUES(value)";
            loop {
                let value = if self.utf8 {
                    text.as_bytes().to_vec()
                } else {
                    bytes(Windows1251, &text)
                };
                let r = sqlx::query(sql)
                    .bind(key.0)
                    .bind(key.1)
                    .bind(&key.2)
                    .bind(value)
                    .execute(&mut *c)
                    .await;
                match r {
                    Ok(_) => break,
                    // The column is utf8mb4 now: the application switches to UTF-8.
                    Err(e) if !self.utf8 && e.to_string().contains("Incorrect string value") => {
                        self.utf8 = true
                    }
                    Err(e) => self.retry(e, since, c).await,
                }
            }
            self.want.insert(key, text);
        }
        self.writes += 1;
    }

    /// A statement the application retries (a lock wait, or one prepared before the copy's
    /// triggers existed: prepared afresh).
    async fn retry(&self, e: sqlx::Error, since: Instant, c: &mut MySqlConnection) {
        assert!(common::retried(&e, &[], since), "writer: {e}");
        sqlx::Connection::clear_cached_statements(c).await.unwrap();
    }
}

async fn prefix_keyed_tables_are_copied_in_batches_and_swapped(engine: &str) {
    let db = test_database(&format!("prefix_key_{}", engine.to_lowercase()));
    let want = seed(&db.config, engine).await;
    let url = db.config.url_with_secret();
    let run = |args: &[&str]| common::cli(&url, args);
    let dir = tempfile::tempdir().unwrap();
    let (report, _, text) = common::scan_and_plan(&url, dir.path());

    // plan: both tables copied in batches over their prefix primary keys' full values.
    let job = load_str(&text).unwrap().job;
    let keys: Vec<(&str, Strategy, Option<Vec<String>>)> = job
        .tables
        .iter()
        .map(|t| (t.name.as_str(), t.strategy, t.key.clone()))
        .collect();
    let strings = |v: &[&str]| Some(v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    assert_eq!(
        keys,
        [
            ("smf_settings", Strategy::Copy, strings(&["variable"])),
            (
                "smf_themes",
                Strategy::Copy,
                strings(&["id_theme", "id_member", "variable"])
            ),
        ],
        "{text}"
    );
    assert!(!text.contains("no primary key"), "{text}");
    let jobp = dir.path().join("job.yaml");
    let job_text = text
        .replace("cutover: manual", "cutover: auto")
        .replace("batch_size: 1000", "batch_size: 200");
    std::fs::write(&jobp, &job_text).unwrap();
    let jobp = jobp.to_str().unwrap();
    let (code, stdout, stderr) = run(&[
        "plan",
        "--check",
        jobp,
        "--report",
        report.to_str().unwrap(),
    ]);
    assert_eq!(code, 0, "{stdout}\n{stderr}");

    // run: batches under a writer, then the swap.
    let mut c = db.config.connect_one().await.unwrap();
    let mut child = common::spawn_myrecode(&url, &["run", jobp, "--execute"], &[]);
    let mut w = Writer {
        want,
        x: 0x9E37_79B9_7F4A_7C15,
        utf8: false,
        writes: 0,
    };
    let started = Instant::now();
    while child.try_wait().unwrap().is_none() {
        assert!(
            started.elapsed() < Duration::from_secs(300),
            "the run hangs"
        );
        w.step(&mut c).await;
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    for _ in 0..30 {
        w.step(&mut c).await;
    }
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = texts(&out);
    assert!(out.status.code().unwrap() <= 1, "{stdout}\n{stderr}");
    assert!(
        w.writes > 50,
        "the writer ran alongside ({} writes)",
        w.writes
    );
    assert!(!stdout.contains("keyless:"), "{stdout}");
    assert_eq!(
        stdout
            .matches("cut-over: smf_settings, smf_themes now have")
            .count(),
        1,
        "{stdout}"
    );
    for t in ["smf_themes", "smf_settings"] {
        assert!(
            stdout.contains(&format!("check: {t}: every row compared with its copy")),
            "{stdout}"
        );
    }
    // Batches, not one read: the check names how many it trailed.
    let line = stdout
        .lines()
        .find(|l| l.starts_with("check: smf_themes:"))
        .unwrap();
    let batches: u32 = line
        .split(" batches")
        .next()
        .and_then(|s| s.rsplit(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no batch count in {line}"));
    assert!(batches >= 3, "{line}");
    println!("{engine}: {} writes beside the run", w.writes);

    // Every value right, in utf8mb4.
    let charsets: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS \
         WHERE TABLE_SCHEMA = ? AND COLUMN_NAME = 'value' AND TABLE_NAME LIKE 'smf\\_%' \
         AND TABLE_NAME NOT LIKE '%myrecode%' ORDER BY TABLE_NAME",
    )
    .bind(&db.name)
    .fetch_all(&mut c)
    .await
    .unwrap();
    assert_eq!(charsets, ["utf8mb4", "utf8mb4"]);
    let got: BTreeMap<ThemeKey, String> = sqlx::query_as::<_, (i64, i64, String, String)>(
        "SELECT CAST(id_theme AS SIGNED), CAST(id_member AS SIGNED), variable, value FROM smf_themes",
    )
    .fetch_all(&mut c)
    .await
    .unwrap()
    .into_iter()
    .map(|(t, m, v, value)| ((t, m, v), value))
    .collect();
    let differ: Vec<_> = w
        .want
        .iter()
        .filter(|(k, v)| got.get(*k) != Some(*v))
        .map(|(k, _)| k)
        .chain(got.keys().filter(|k| !w.want.contains_key(*k)))
        .take(5)
        .collect();
    assert!(differ.is_empty(), "rows differ, e.g. {differ:?}");
    assert_eq!(got.len(), w.want.len());
    let settings: Vec<(String, String)> =
        sqlx::query_as("SELECT variable, value FROM smf_settings ORDER BY variable")
            .fetch_all(&mut c)
            .await
            .unwrap();
    assert_eq!(settings.len(), 300);
    for (k, (name, value)) in settings.iter().enumerate() {
        assert_eq!(name, &variable(k as i64));
        assert_eq!(value, settings_text(k as i64), "setting {name}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_primary_keys_page_a_myisam_copy() {
    prefix_keyed_tables_are_copied_in_batches_and_swapped("MyISAM").await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn prefix_primary_keys_page_an_innodb_copy() {
    prefix_keyed_tables_are_copied_in_batches_and_swapped("InnoDB").await;
}

/// In place over a prefix primary key on a `TINYTEXT` (SMF's settings, already utf8mb4 and
/// holding mojibake): batches page over the full values, and the staging table indexes the
/// key by a prefix (a `TINYTEXT` key part needs one: 1170).
#[tokio::test]
async fn in_place_batches_page_over_a_prefix_key_on_a_text_column() {
    let db = test_database("prefix_key_inplace");
    exec_script(
        &db.config,
        &[
            "CREATE TABLE smf_settings (variable TINYTEXT CHARACTER SET utf8mb4 NOT NULL, \
           value TEXT CHARACTER SET utf8mb4 NOT NULL, PRIMARY KEY (variable(30))) ENGINE=InnoDB",
        ],
    )
    .await;
    let mut c = db.config.connect_one().await.unwrap();
    let n = 900i64;
    for start in (0..n).step_by(300) {
        let sql = format!(
            "INSERT INTO smf_settings (variable, value) VALUES {}",
            vec!["(?, ?)"; 300].join(", ")
        );
        let mut q = sqlx::query(&sql);
        for k in start..start + 300 {
            q = q
                .bind(variable(k))
                .bind(mojibake(Windows1251, Latin1, settings_text(k)));
        }
        q.execute(&mut c).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let jobp = dir.path().join("job.yaml");
    std::fs::write(
        &jobp,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  batch_size: 100\n  pause_between_batches: 0ms\ntables:\n  \
             - name: smf_settings\n    strategy: in-place\n    columns:\n      - name: value\n        \
             source: cp1251>latin1\n        target: TEXT CHARACTER SET utf8mb4 NOT NULL\n",
            db.name
        ),
    )
    .unwrap();
    let url = db.config.url_with_secret();
    let out = myrecode(Some(&url), &["run", jobp.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    let got: Vec<(String, String)> =
        sqlx::query_as("SELECT variable, value FROM smf_settings ORDER BY variable")
            .fetch_all(&mut c)
            .await
            .unwrap();
    assert_eq!(got.len(), n as usize);
    for (k, (name, value)) in got.iter().enumerate() {
        assert_eq!(name, &variable(k as i64));
        assert_eq!(value, settings_text(k as i64), "setting {name}");
    }
    let backups: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM _myrecode_backup")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(backups, n, "one backup per rewritten value");
}
