//! Hostile input. A job file written to attack: a `target:` carrying a second statement, a
//! comment, a name that is not one, and settings no run can follow. Every command that reads
//! the job (`plan --check`, the rehearsal, `run --execute`) refuses it before anything is
//! sent, naming the field and the fix; a canary table survives them all and nothing of the
//! tool's is created. And a value its column cannot hold is listed, not a table-wide stop.

use crate::common;
use myrecode::db::throwaway::test_database;
use sqlx::Executor;

/// A job copying `t.name` into `target`, with `defaults` (YAML lines under `defaults:`).
fn job(schema: &str, target: &str, defaults: &str) -> String {
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  cutover: auto\n{defaults}tables:\n  - name: t\n    strategy: copy\n    columns:\n      \
         - name: name\n        source: cp1251\n        target: {}\n",
        serde_json::to_string(target).unwrap()
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_job_is_refused_by_every_command_before_anything_is_sent() {
    let db = test_database("hostile_job");
    let mut c = db.config.connect_one().await.unwrap();
    for s in [
        "CREATE TABLE canary (id INT PRIMARY KEY) ENGINE=InnoDB",
        "INSERT INTO canary VALUES (1), (2), (3)",
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(100) NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=latin1",
        "INSERT INTO t VALUES (1, 'abc')",
    ] {
        c.execute(s).await.unwrap();
    }
    let url = db.config.url_with_secret();
    let dir = tempfile::tempdir().unwrap();
    let base = "VARCHAR(100) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci";
    let target = "tables[0].columns[0].target: target";
    let cases: Vec<(String, &str, &str)> = vec![
        (format!("{base}; DROP TABLE canary; --"), "", target),
        (
            format!("{base} NOT NULL COMMENT 'x'; DELETE FROM canary; -- '"),
            "",
            target,
        ),
        (format!("{base} NOT NULL; DROP TABLE canary"), "", target),
        (
            format!("{base} NOT NULL DEFAULT ((1); DROP TABLE canary; SELECT (1))"),
            "",
            target,
        ),
        (
            "VARCHAR(100) CHARACTER SET 'utf8mb4; DROP TABLE canary'".to_string(),
            "",
            target,
        ),
        (
            format!("{base} NOT NULL"),
            "  batch_size: 0\n",
            "defaults.batch_size: batch_size 0 would never make progress",
        ),
    ];
    let mut jobs: Vec<(String, String, &str)> = cases
        .iter()
        .map(|(target, defaults, what)| (target.clone(), job(&db.name, target, defaults), *what))
        .collect();
    // A version no run can follow, and an in-place target carrying a second statement.
    jobs.push((
        "version: 2".into(),
        job(&db.name, &format!("{base} NOT NULL"), "").replace("version: 1", "version: 2"),
        "version: job layout version 2 is not supported",
    ));
    let in_place = format!("{base} NOT NULL; DROP TABLE canary");
    jobs.push((
        in_place.clone(),
        job(&db.name, &in_place, "").replace("strategy: copy", "strategy: in-place"),
        target,
    ));
    for (i, (target, text, what)) in jobs.iter().enumerate() {
        let path = dir.path().join(format!("job{i}.yaml"));
        std::fs::write(&path, text).unwrap();
        let p = path.to_str().unwrap();
        for args in [
            vec!["plan", "--check", p],
            vec!["run", p],
            vec!["run", p, "--execute"],
        ] {
            let (code, out, err) = common::cli(&url, &args);
            // `plan --check` says 1 (problems found), the runs 2 (cannot start).
            assert!(
                (1..=2).contains(&code),
                "{args:?} on {target:?}: {out}\n{err}"
            );
            let said = format!("{out}{err}");
            assert!(
                said.contains(what) && said.contains("Fix:"),
                "{args:?} on {target:?}: {said}"
            );
        }
    }
    let left: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM canary")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(left, 3, "the canary lost rows");
    let ours: i64 = sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '%myrecode%'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(ours, 0, "nothing of the tool's was created");
    let cs: String = sqlx::query_scalar(
        "SELECT CAST(CHARACTER_SET_NAME AS CHAR) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME = 't' AND COLUMN_NAME = 'name'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert_eq!(cs, "latin1", "the table was not touched");
}

/// A double-encoded emoji in a utf8mb3 column repaired in place: listed with its reason and
/// fix, while the table's other rows are repaired and the run finishes (it stopped the whole
/// table with a raw 1366 at every rerun).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_emoji_a_utf8mb3_column_cannot_hold_is_listed_and_the_table_finishes() {
    let db = test_database("emoji3");
    let mut c = db.config.connect_one().await.unwrap();
    c.execute(
        "CREATE TABLE notes (id INT PRIMARY KEY, body VARCHAR(100) CHARACTER SET utf8mb3 NOT NULL) ENGINE=InnoDB",
    )
    .await
    .unwrap();
    // Each text's UTF-8 bytes sent through a latin1 connection: double-encoded, as the
    // server's latin1 (cp1252) reads them.
    let mut legacy = db.config.connect_one().await.unwrap();
    legacy.execute("SET NAMES latin1").await.unwrap();
    for (id, text) in [(1, "Привет, мир"), (2, "Смайлик 😀 здесь"), (3, "Пока")]
    {
        sqlx::query("INSERT INTO notes VALUES (?, ?)")
            .bind(id)
            .bind(text)
            .execute(&mut legacy)
            .await
            .unwrap();
    }
    let emoji_row: String = sqlx::query_scalar("SELECT body FROM notes WHERE id = 2")
        .fetch_one(&mut c)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nschema: {}\ntables:\n  - name: notes\n    strategy: in-place\n    columns:\n      \
             - name: body\n        source: utf-8>latin1\n        target: VARCHAR(100) CHARACTER SET utf8mb3 COLLATE utf8mb3_general_ci NOT NULL\n",
            db.name
        ),
    )
    .unwrap();
    let url = db.config.url_with_secret();
    let (code, out, err) = common::cli(&url, &["run", path.to_str().unwrap(), "--execute"]);
    assert!(code <= 1, "{out}\n{err}");
    assert!(!format!("{out}{err}").contains("1366"), "{out}\n{err}");
    let rows: Vec<(i32, String)> = sqlx::query_as("SELECT id, body FROM notes ORDER BY id")
        .fetch_all(&mut c)
        .await
        .unwrap();
    assert_eq!(rows[0].1, "Привет, мир");
    assert_eq!(rows[1].1, emoji_row, "left as it is");
    assert_eq!(rows[2].1, "Пока");
    let reason: String = sqlx::query_scalar(
        "SELECT CAST(reason AS CHAR) FROM _myrecode_quarantine WHERE tbl = 'notes'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    assert!(reason.contains("utf8mb3 column cannot hold"), "{reason}");
}

/// A value longer than the server's `max_allowed_packet` comes back from the server as NULL:
/// the scan and the run stop naming the setting and the fix (they passed it over as NULL,
/// leaving it unrecoded without a word), and once the setting is raised the run recodes it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_value_over_max_allowed_packet_is_named_not_passed_over() {
    // Its own server: the setting is global, and the other tests' values must not meet it.
    let server =
        myrecode::db::throwaway::ThrowawayServer::start_local_with(&[]).unwrap_or_else(|e| {
            panic!(
                "this test starts its own server: it needs mariadbd or mysqld on the PATH ({e:#})"
            )
        });
    let db = server.fresh_database("packet").unwrap();
    let mut admin = server.admin().connect_one().await.unwrap();
    admin
        .execute("SET GLOBAL max_allowed_packet = 67108864")
        .await
        .unwrap();
    // A session takes the setting when it connects.
    let mut c = db.config.connect_one().await.unwrap();
    c.execute("CREATE TABLE notes (id INT PRIMARY KEY, body MEDIUMTEXT CHARACTER SET utf8mb4) ENGINE=InnoDB")
        .await
        .unwrap();
    // 1.2 MB of cp1251 read as latin1 and stored as UTF-8: mojibake to repair in place.
    let text = "Привет мир ".repeat(60_000);
    let stored: String = myrecode::codec::encode(myrecode::codec::Encoding::Windows1251, &text)
        .unwrap()
        .iter()
        .map(|b| char::from(*b))
        .collect();
    for (id, v) in [(1, stored.as_str()), (2, "abc")] {
        sqlx::query("INSERT INTO notes VALUES (?, ?)")
            .bind(id)
            .bind(v)
            .execute(&mut c)
            .await
            .unwrap();
    }
    admin
        .execute("SET GLOBAL max_allowed_packet = 1048576")
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    std::fs::write(
        &path,
        format!(
            "version: 1\nschema: {}\ntables:\n  - name: notes\n    strategy: in-place\n    columns:\n      \
             - name: body\n        source: cp1251>latin1\n        target: MEDIUMTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci\n",
            db.name
        ),
    )
    .unwrap();
    let url = db.config.url_with_secret();
    let p = path.to_str().unwrap();
    for args in [
        vec!["scan", "--full"],
        vec!["run", p, "--execute", "--retry-for", "5"],
    ] {
        let (code, out, err) = common::cli(&url, &args);
        assert_eq!(code, 2, "{args:?}: {out}\n{err}");
        assert!(
            err.contains("longer than the server's max_allowed_packet (1048576 bytes)")
                && err.contains("Fix: SET GLOBAL max_allowed_packet"),
            "{args:?}: {err}"
        );
    }
    admin
        .execute("SET GLOBAL max_allowed_packet = 67108864")
        .await
        .unwrap();
    let (code, out, err) = common::cli(&url, &["run", p, "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let mut c = db.config.connect_one().await.unwrap();
    let body: String = sqlx::query_scalar("SELECT body FROM notes WHERE id = 1")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert!(body == text, "recoded once the setting allows it");
}

/// What a column's DEFAULT and COMMENT and its table's COMMENT are, exactly.
async fn definitions(cfg: &myrecode::db::connect::ConnectionConfig, schema: &str) -> Vec<String> {
    let mut c = cfg.connect_one().await.unwrap();
    sqlx::query_scalar(
        "SELECT CAST(CONCAT_WS(' | ', c.TABLE_NAME, c.CHARACTER_SET_NAME, c.COLUMN_DEFAULT, c.COLUMN_COMMENT, t.TABLE_COMMENT) AS CHAR) \
         FROM information_schema.COLUMNS c JOIN information_schema.TABLES t USING (TABLE_SCHEMA, TABLE_NAME) \
         WHERE c.TABLE_SCHEMA = ? AND c.TABLE_NAME IN ('cp', 'ip') AND c.COLUMN_NAME = 'name' ORDER BY c.TABLE_NAME",
    )
    .bind(schema)
    .fetch_all(&mut c)
    .await
    .unwrap()
}

/// A server whose sql_mode is NO_BACKSLASH_ESCAPES and ANSI_QUOTES (issue 44 item 4): a copy
/// and an in-place run keep a DEFAULT, a column COMMENT and a table COMMENT holding
/// backslashes and both quotes exactly (a copy doubled every backslash there).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn quote_modes_of_the_server_leave_defaults_and_comments_exact() {
    let server = myrecode::db::throwaway::ThrowawayServer::start_local_with(&[
        "--sql-mode=NO_BACKSLASH_ESCAPES,ANSI_QUOTES,STRICT_TRANS_TABLES".to_string(),
    ])
    .unwrap_or_else(|e| {
        panic!("this test starts its own server: it needs mariadbd on the PATH ({e:#})")
    });
    let db = server.fresh_database("modes").unwrap();
    let mut c = server.admin().connect_one().await.unwrap();
    let global: String = sqlx::query_scalar("SELECT @@GLOBAL.sql_mode")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert!(
        global.contains("NO_BACKSLASH_ESCAPES") && global.contains("ANSI_QUOTES"),
        "{global}"
    );
    // Written as the application would, under the server's own sql_mode.
    let mut app = db.config.connect_one().await.unwrap();
    app.execute("SET SESSION sql_mode = @@GLOBAL.sql_mode")
        .await
        .unwrap();
    for s in [
        r#"CREATE TABLE cp (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET latin1 NOT NULL DEFAULT 'a\b ''q'' "d"' COMMENT 'col \ ''x'' "y"') ENGINE=InnoDB DEFAULT CHARSET=latin1 COMMENT='tbl \\ ''z'' "w"'"#,
        r#"CREATE TABLE ip (id INT PRIMARY KEY, name VARCHAR(100) CHARACTER SET utf8mb4 NOT NULL DEFAULT 'a\b ''q'' "d"' COMMENT 'col \ ''x'' "y"') ENGINE=InnoDB DEFAULT CHARSET=utf8mb4 COMMENT='tbl \\ ''z'' "w"'"#,
    ] {
        app.execute(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    let comment: String = sqlx::query_scalar(
        "SELECT CAST(TABLE_COMMENT AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'cp'",
    )
    .bind(&db.name)
    .fetch_one(&mut app)
    .await
    .unwrap();
    assert_eq!(comment, r#"tbl \\ 'z' "w""#);
    use crate::common::legacy::{bytes, insert_raw, insert_text, mojibake, RUSSIAN};
    use myrecode::codec::Encoding;
    let raw: Vec<(i64, Vec<u8>)> = (0..RUSSIAN.len())
        .map(|i| (i as i64 + 1, bytes(Encoding::Windows1251, RUSSIAN[i])))
        .collect();
    insert_raw(&db.config, "cp", "name", &raw).await;
    let moji: Vec<(i64, String)> = (0..RUSSIAN.len())
        .map(|i| {
            (
                i as i64 + 1,
                mojibake(Encoding::Windows1251, Encoding::Latin1, RUSSIAN[i]),
            )
        })
        .collect();
    insert_text(&db.config, "ip", "name", &moji).await;
    let before = definitions(&db.config, &db.name).await;
    let dir = tempfile::tempdir().unwrap();
    let url = db.config.url_with_secret();
    let (_, planned, text) = common::scan_and_plan(&url, dir.path());
    assert!(
        text.contains("strategy: copy") && text.contains("strategy: in-place"),
        "{text}"
    );
    // Nobody is here to type `myrecode cutover`.
    std::fs::write(&planned, text.replace("cutover: manual", "cutover: auto")).unwrap();
    let p = planned.to_str().unwrap();
    let (code, out, err) = common::cli(&url, &["plan", "--check", p]);
    assert!(code <= 1, "{out}\n{err}");
    let (code, out, err) = common::cli(&url, &["run", p, "--execute"]);
    assert_eq!(code, 0, "{out}\n{err}");
    let after = definitions(&db.config, &db.name).await;
    let strip = |v: &[String]| -> Vec<String> {
        v.iter()
            .map(|l| l.replacen(" | latin1 | ", " | utf8mb4 | ", 1))
            .collect()
    };
    assert_eq!(strip(&after), strip(&before), "before: {before:#?}");
    assert!(
        after.iter().all(|l| l.contains(" | utf8mb4 | ")),
        "{after:#?}"
    );
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM cp ORDER BY id")
        .fetch_all(&mut app)
        .await
        .unwrap();
    assert_eq!(names, RUSSIAN);
    let names: Vec<String> = sqlx::query_scalar("SELECT name FROM ip ORDER BY id")
        .fetch_all(&mut app)
        .await
        .unwrap();
    assert_eq!(names, RUSSIAN);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_too_short_for_the_data_is_named_with_its_fix_mid_copy() {
    let db = test_database("hostile_short");
    let mut c = db.config.connect_one().await.unwrap();
    c.execute(
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET latin1) ENGINE=InnoDB",
    )
    .await
    .unwrap();
    sqlx::query("INSERT INTO t VALUES (1, ?), (2, ?)")
        .bind(myrecode::codec::encode(myrecode::codec::Encoding::Windows1251, "Мир").unwrap())
        .bind(
            myrecode::codec::encode(myrecode::codec::Encoding::Windows1251, "Привет, мир").unwrap(),
        )
        .execute(&mut c)
        .await
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("job.yaml");
    let target = "VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci";
    std::fs::write(&path, job(&db.name, target, "")).unwrap();
    let url = db.config.url_with_secret();
    let out = common::myrecode(Some(&url), &["run", path.to_str().unwrap(), "--execute"]);
    let (stdout, stderr) = common::texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(
        stderr
            .contains("copying rows of 't': a value is longer than its column's `target:` allows")
            && stderr.contains("Fix: widen that column's `target:` in the job"),
        "{stderr}"
    );
    // Nothing of the original changed.
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t WHERE CHARACTER_LENGTH(name) > 5")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 1);
}

/// A scan whose connection is killed from another session mid-way (issue 44 item 10): one
/// line naming the problem, what was read and the fix with the tables left, never the
/// driver's raw words.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scan_whose_connection_is_killed_says_so_in_one_line_with_the_fix() {
    let db = test_database("scan_killed");
    let mut c = db.config.connect_one().await.unwrap();
    for t in ["a", "b"] {
        c.execute(
            format!("CREATE TABLE {t} (id INT PRIMARY KEY, t VARCHAR(100) CHARACTER SET latin1) ENGINE=InnoDB")
                .as_str(),
        )
        .await
        .unwrap();
        c.execute(
            format!("INSERT INTO {t} SELECT seq, CAST(CONVERT('Привет мир как дела' USING cp1251) AS BINARY) FROM seq_1_to_20000")
                .as_str(),
        )
        .await
        .unwrap();
    }
    let url = db.config.url_with_secret();
    // 200 batches of 200 rows, 50 ms apart: ten seconds of scanning to cut into.
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_myrecode"))
        .args(["scan", "--full", "--batch-size", "200", "--pause-ms", "50"])
        .env("MYSQL_URL", &url)
        .env_remove("MYSQL_PWD")
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let since = std::time::Instant::now();
    let id: i64 = loop {
        let found: Option<i64> = sqlx::query_scalar(
            "SELECT ID FROM information_schema.PROCESSLIST WHERE DB = DATABASE() AND ID <> CONNECTION_ID() LIMIT 1",
        )
        .fetch_optional(&mut c)
        .await
        .unwrap();
        if let Some(id) = found {
            break id;
        }
        assert!(since.elapsed().as_secs() < 20, "the scan never connected");
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    };
    // Past the inventory, into the rows.
    tokio::time::sleep(std::time::Duration::from_millis(1500)).await;
    c.execute(format!("KILL CONNECTION {id}").as_str())
        .await
        .unwrap();
    let out = child.wait_with_output().unwrap();
    let (stdout, stderr) = common::texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    let error: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.starts_with("scan: "))
        .collect();
    assert_eq!(error.len(), 1, "one line: {stderr}");
    let line = error[0];
    assert!(
        line.contains("the scan lost its connection to the server while reading")
            && line.contains("Nothing was written")
            && line.contains("Fix: see the server's error log")
            && line.contains("then run the scan again")
            && line.contains("max_allowed_packet")
            && line.contains(&format!("--schema {}", db.name)),
        "{line}"
    );
    assert!(
        !line.contains("expected to read") && !line.contains("error communicating"),
        "{line}"
    );
}
