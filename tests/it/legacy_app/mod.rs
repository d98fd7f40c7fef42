//! A legacy PHP shop migrated whole (`tests/it/legacy_app/app.rs`): afterwards every
//! statement of the application gives the answer it gives on the same shop born utf8mb4:
//! its views, functions, procedure, trigger, event, every DEFAULT an INSERT relies on,
//! ENUM/SET members, the generated column, the CHECKs, and every option still unserializes;
//! `SHOW CREATE` of every table, view and routine equals the control's but for charset and
//! collation names.

mod app;

use crate::common;
// The groups tests' way of driving `myrecode`: runs in the background, SIGKILLs, status.
use crate::groups::run::{kill_after, sentries, spawn_run, wait_status};
use app::*;
use common::texts;
use myrecode::codec::Encoding;
use myrecode::db::throwaway::{test_database, TestDatabase};
use sqlx::{Executor, MySqlConnection, Row};

/// The legacy shop and its control born utf8mb4, loaded, and a folder for the job.
fn shop(hint: &str) -> (TestDatabase, TestDatabase, tempfile::TempDir) {
    let db = test_database(hint);
    let control = test_database(&format!("{hint}_ctl"));
    let dir = tempfile::tempdir().unwrap();
    legacy(&db, dir.path());
    let born = script(
        Encoding::Utf8,
        "utf8mb4",
        "utf8mb4_unicode_ci",
        &control.name,
    );
    load(&control.config, &control.name, &born, dir.path());
    (db, control, dir)
}

/// Loads the legacy shop into `db`.
fn legacy(db: &TestDatabase, dir: &std::path::Path) {
    let old = script(
        Encoding::Windows1251,
        "latin1",
        "latin1_swedish_ci",
        &db.name,
    );
    load(&db.config, &db.name, &old, dir);
}

/// The migrated shop answers as the control: its reads, its objects' definitions, and every
/// option, which still unserializes.
async fn like_the_control(m: &mut MySqlConnection, k: &mut MySqlConnection) {
    assert_eq!(answers(m).await, answers(k).await);
    assert_eq!(definitions(m).await, definitions(k).await);
    let (mo, ko) = (options(m).await, options(k).await);
    assert_eq!(mo.len(), ko.len());
    for ((n, v), (_, want)) in mo.iter().zip(&ko) {
        assert_eq!(
            unserialize(v, 0),
            Some(v.len()),
            "{n} no longer unserializes: {}",
            String::from_utf8_lossy(v)
        );
        assert_eq!(v, want, "{n}");
    }
}

/// `myrecode` with the database's URL; stdout, stderr and exit code.
fn run(url: &str, args: &[&str]) -> (i32, String, String) {
    let out = common::myrecode(Some(url), args);
    let (o, e) = texts(&out);
    (out.status.code().unwrap_or(-1), o, e)
}

/// The application's read statements and their answers.
async fn answers(c: &mut MySqlConnection) -> Vec<String> {
    let mut out = Vec::new();
    for q in [
        "SELECT id, name FROM moscow_customers ORDER BY id",
        "SELECT id, name, price_label FROM paid_orders ORDER BY id",
        "SELECT count_city('Москва'), count_city('Казань'), status_label('оплачен')",
        "SELECT status, COUNT(*) FROM orders GROUP BY status ORDER BY status",
        "SELECT COUNT(*) FROM orders WHERE FIND_IN_SET('подарок', tags)",
        "SELECT id, price_label, status + 0, tags + 0 FROM orders ORDER BY id LIMIT 5",
    ] {
        let rows = sqlx::query(q)
            .fetch_all(&mut *c)
            .await
            .unwrap_or_else(|e| panic!("{q}: {e}"));
        for r in rows {
            let cells: Vec<String> = (0..r.len())
                .map(|i| {
                    r.try_get::<Option<String>, _>(i)
                        .map(|v| v.unwrap_or_else(|| "NULL".into()))
                        .or_else(|_| r.try_get::<i64, _>(i).map(|v| v.to_string()))
                        .or_else(|_| r.try_get::<u64, _>(i).map(|v| v.to_string()))
                        .unwrap_or_else(|e| format!("?{e}"))
                })
                .collect();
            out.push(format!("{q} -> {}", cells.join(" | ")));
        }
    }
    out
}

/// The application's writes relying on DEFAULTs, the trigger, the procedure and the CHECKs,
/// and what they left.
async fn writes(c: &mut MySqlConnection) -> Vec<String> {
    let mut out = Vec::new();
    for s in [
        "INSERT INTO customers (name) VALUES ('Новый Покупатель')",
        "CALL add_order(1, '')",
        "INSERT INTO orders (customer_id, amount) VALUES (2, 12.5)",
        "INSERT INTO customers (name, city) VALUES ('X', 'Неизвестно')",
        "INSERT INTO orders (customer_id, comment) VALUES (3, 'спам')",
        "INSERT INTO orders (customer_id, status) VALUES (3, 'оплачен')",
    ] {
        let r = c.execute(s).await;
        out.push(format!(
            "{s} -> {}",
            match r {
                Ok(d) => format!("ok {}", d.rows_affected()),
                Err(e) => format!(
                    "error {}",
                    e.as_database_error()
                        .and_then(|d| d.code())
                        .unwrap_or_default()
                ),
            }
        ));
    }
    for q in [
        "SELECT name, city, phone, note FROM customers ORDER BY id DESC LIMIT 2",
        "SELECT customer_id, status, tags, amount, price_label, comment FROM orders ORDER BY id DESC LIMIT 3",
    ] {
        for r in sqlx::query(q).fetch_all(&mut *c).await.unwrap() {
            let cells: Vec<String> = (0..r.len())
                .map(|i| {
                    r.try_get::<Option<String>, _>(i)
                        .ok()
                        .flatten()
                        .unwrap_or_else(|| "NULL".into())
                })
                .collect();
            out.push(format!("{q} -> {}", cells.join(" | ")));
        }
    }
    out
}

/// `SHOW CREATE` of each table, view and routine, without charset and collation names.
async fn definitions(c: &mut MySqlConnection) -> Vec<String> {
    let mut out = Vec::new();
    for (kind, name, col) in [
        ("TABLE", "customers", 1),
        ("TABLE", "orders", 1),
        ("TABLE", "options", 1),
        ("VIEW", "moscow_customers", 1),
        ("VIEW", "paid_orders", 1),
        ("FUNCTION", "count_city", 2),
        ("FUNCTION", "status_label", 2),
        ("PROCEDURE", "add_order", 2),
    ] {
        let r = sqlx::query(&format!("SHOW CREATE {kind} `{name}`"))
            .fetch_one(&mut *c)
            .await
            .unwrap();
        let text: String = r.get(col);
        out.push(without_charsets(&text));
    }
    // A trigger's SHOW CREATE repeats the statement as sent (names quoted or not): its body.
    let t: (String, String, String) = sqlx::query_as(
        "SELECT CAST(ACTION_TIMING AS CHAR), CAST(EVENT_MANIPULATION AS CHAR), CAST(ACTION_STATEMENT AS CHAR) \
         FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE()",
    )
    .fetch_one(&mut *c)
    .await
    .unwrap();
    out.push(format!("trigger {} {} {}", t.0, t.1, t.2));
    let e: (String, String) = sqlx::query_as(
        "SELECT CAST(EVENT_DEFINITION AS CHAR), CAST(EVENT_COMMENT AS CHAR) FROM information_schema.EVENTS WHERE EVENT_SCHEMA = DATABASE()",
    )
    .fetch_one(&mut *c)
    .await
    .unwrap();
    out.push(format!("event {} / {}", e.0, e.1));
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_legacy_php_shop_works_after_its_migration_as_the_one_born_utf8() {
    let (db, control, dir) = shop("legacy_app");
    let (url, job) = planned(&db, dir.path(), |j| {
        j.replace("cutover: manual", "cutover: auto")
    })
    .await;
    let report = std::path::Path::new(&job).with_file_name("scan.json");
    let planned = std::fs::read_to_string(&job).unwrap();
    assert!(planned.contains("cutover: auto"), "{planned}");
    for kept in [
        "DEFAULT 'Москва' COMMENT 'Город доставки'",
        "ENUM('новый','оплачен','отменён') CHARACTER SET utf8mb4",
        "DEFAULT 'новый'",
        "DEFAULT 'без комментария'",
        "#   view moscow_customers: 'Ìîñêâà' → 'Москва'",
        "#   function count_city: string parameters, return type and variables declared utf8mb4",
        "#   event purge_spam: 'ñïàì' → 'спам'; COMMENT '×èñòêà ñïàìà' → 'Чистка спама'",
        "40 PHP-serialized (recoded string by string, byte counts rewritten)",
    ] {
        assert!(planned.contains(kept), "{kept} not in the plan:\n{planned}");
    }
    assert!(
        !planned.contains("\n      - name: price_label"),
        "the generated column is the server's:\n{planned}"
    );
    let jobp = job.as_str();
    let (code, out, err) = run(
        &url,
        &[
            "plan",
            "--check",
            jobp,
            "--report",
            report.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "plan --check: {out}\n{err}");
    let (code, out, err) = run(&url, &["run", jobp]);
    assert_eq!(code, 0, "rehearsal: {out}\n{err}");
    let (code, out, err) = run(&url, &["run", jobp, "--execute"]);
    assert_eq!(code, 0, "run: {out}\n{err}");
    let (code, out, err) = run(&url, &["verify", jobp]);
    assert_eq!(code, 0, "verify: {out}\n{err}");

    let mut m = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    assert_eq!(options(&mut m).await.len(), 40);
    like_the_control(&mut m, &mut k).await;
    assert_eq!(writes(&mut m).await, writes(&mut k).await);
    let dbcs: String = sqlx::query_scalar("SELECT CAST(DEFAULT_CHARACTER_SET_NAME AS CHAR) FROM information_schema.SCHEMATA WHERE SCHEMA_NAME = DATABASE()")
        .fetch_one(&mut m)
        .await
        .unwrap();
    assert_eq!(dbcs, "utf8mb4", "the schema's default follows its tables");
}

/// The planned job of a freshly loaded legacy shop, with `edit` applied, and its path.
async fn planned(
    db: &TestDatabase,
    dir: &std::path::Path,
    edit: impl Fn(String) -> String,
) -> (String, String) {
    let url = db.config.url_with_secret();
    let dir = dir.join(&db.name);
    std::fs::create_dir_all(&dir).unwrap();
    let (report, job) = (dir.join("scan.json"), dir.join("job.yaml"));
    let (code, out, err) = run(
        &url,
        &["scan", "--full", "--json", report.to_str().unwrap()],
    );
    assert!(code <= 1, "scan: {out}\n{err}");
    let (code, out, err) = run(
        &url,
        &[
            "plan",
            "--report",
            report.to_str().unwrap(),
            "-o",
            job.to_str().unwrap(),
        ],
    );
    assert_eq!(code, 0, "plan: {out}\n{err}");
    let text = edit(std::fs::read_to_string(&job).unwrap());
    std::fs::write(&job, text).unwrap();
    (url, job.to_str().unwrap().to_string())
}

/// Myrecode's tables in the schema (none: nothing was written).
async fn ours(db: &TestDatabase) -> i64 {
    let mut c = db.config.connect_one().await.unwrap();
    sqlx::query_scalar(
        "SELECT COUNT(*) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() AND TABLE_NAME LIKE '%myrecode%'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap()
}

/// `plan --check` fails naming `what`, and the rehearsal stops on it (exit 2), neither
/// leaving anything behind; `rules`: a refusal of the rules, which `run --execute` also
/// stops on before any write (a server's refusal or an undecided text it meets at that
/// table's set-up or at the cut-over, naming the same fix).
async fn refused_before_any_write(
    db: &TestDatabase,
    url: &str,
    job: &str,
    what: &str,
    rules: bool,
) {
    let report = std::path::Path::new(job).with_file_name("scan.json");
    let (code, out, err) = run(
        url,
        &["plan", "--check", job, "--report", report.to_str().unwrap()],
    );
    assert_eq!(code, 1, "plan --check: {out}\n{err}");
    assert!(
        out.contains(what) && out.contains("Fix:"),
        "plan --check: {out}\n{err}"
    );
    let (code, out, err) = run(url, &["run", job]);
    assert!(
        format!("{out}{err}").contains(what) && (code == 2 || rules),
        "rehearsal ({code}): {out}\n{err}"
    );
    assert_eq!(
        ours(db).await,
        0,
        "plan --check and the rehearsal leave nothing"
    );
    if rules {
        let (code, out, err) = run(url, &["run", job, "--execute"]);
        assert_eq!(code, 2, "run --execute: {out}\n{err}");
        assert!(
            err.contains(what) && err.contains("Fix:"),
            "run --execute: {err}"
        );
        assert_eq!(ours(db).await, 0, "nothing written");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn what_the_cut_over_could_not_carry_stops_at_plan_check_and_the_rehearsal() {
    let dir = tempfile::tempdir().unwrap();
    let legacy = |db: &TestDatabase| legacy(db, dir.path());
    // A target that drops a column's DEFAULT: the rules' refusal, with the target that keeps it.
    let db = test_database("legacy_ref1");
    legacy(&db);
    let (url, job) = planned(&db, dir.path(), |j| j.replace(" DEFAULT 'Москва'", "")).await;
    refused_before_any_write(&db, &url, &job, "drops the column's DEFAULT 'Ìîñêâà'", true).await;
    // A definition the server refuses (a DEFAULT no longer among the members), said on purpose.
    let db = test_database("legacy_ref2");
    legacy(&db);
    let (url, job) = planned(&db, dir.path(), |j| {
        j.replace(
            "target: \"ENUM('новый','оплачен','отменён')",
            "redefine: true\n        target: \"ENUM('оплачен','отменён')",
        )
    })
    .await;
    refused_before_any_write(&db, &url, &job, "refused by the server", false).await;
    // Each class of object whose text no reading decides (three bytes 0x98: no cp1251
    // letter, no UTF-8): a view, a function, a trigger, a generated column, an event.
    for (i, (ddl, what)) in [
        ("CREATE VIEW v_bad AS SELECT id FROM customers WHERE name = '~'", "view `v_bad`"),
        ("CREATE FUNCTION f_bad() RETURNS INT DETERMINISTIC RETURN (SELECT COUNT(*) FROM customers WHERE name = '~')", "function `f_bad`"),
        ("CREATE TRIGGER t_bad BEFORE UPDATE ON customers FOR EACH ROW SET NEW.note = '~'", "trigger `t_bad`"),
        ("ALTER TABLE orders ADD g_bad VARCHAR(300) AS (CONCAT(comment, '~')) VIRTUAL", "generated column g_bad"),
        ("CREATE EVENT e_bad ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM orders WHERE comment = '~'", "event `e_bad`"),
    ]
    .into_iter()
    .enumerate()
    {
        let db = test_database(&format!("legacy_ref{}", i + 3));
        legacy(&db);
        let mut bad = b"SET NAMES latin1;\n".to_vec();
        for (k, part) in ddl.split('~').enumerate() {
            if k > 0 {
                bad.extend([0x98, 0x98, 0x98]);
            }
            bad.extend(part.as_bytes());
        }
        bad.extend(b";\n");
        load(&db.config, &db.name, &bad, dir.path());
        let (url, job) = planned(&db, dir.path(), |j| j).await;
        refused_before_any_write(&db, &url, &job, what, false).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_shop_migrated_under_its_writer_through_sigkills_inside_its_cut_over_ends_as_the_control(
) {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let (db, control, dir) = shop("legacy_kill");
    let (url, job) = planned(&db, dir.path(), |j| {
        j.replace("batch_size: 1000 ", "batch_size: 10   ")
    })
    .await;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let (cfg, ctl, stop, schema) = (
            db.config.clone(),
            control.config.clone(),
            stop.clone(),
            db.name.clone(),
        );
        tokio::spawn(async move {
            let mut app = cfg.connect_one().await.unwrap();
            let mut k = ctl.connect_one().await.unwrap();
            let mut w = Writer::default();
            while !stop.load(Ordering::SeqCst) {
                w.step(&mut app, &mut k, &schema).await;
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
            w
        })
    };
    let mut life = common::lives(0x2545_F491_4F6C_DD1D);
    let mut kills = Vec::new();
    let mut c = db.config.connect_one().await.unwrap();
    runs_are_killed_while_the_tables_copy_and_once_ready(&url, &job, &mut life, &mut kills).await;
    kills_inside_the_cut_overs_lock_swap_nothing(
        &mut c, &db.name, &url, &job, &mut life, &mut kills,
    )
    .await;
    a_kill_lands_after_the_rename_before_the_objects_are_recreated(
        &mut c, &db.name, &url, &job, &mut life, &mut kills,
    )
    .await;
    // The rerun settles: the objects recreated once, from their record.
    let out = common::myrecode(Some(&url), &["run", &job, "--execute"]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    tokio::time::sleep(std::time::Duration::from_millis(300)).await;
    stop.store(true, Ordering::SeqCst);
    let w = writer.await.unwrap();
    assert!(kills.len() >= 20, "{kills:?}");
    assert!(w.statements > 100 && w.switched.len() >= 2, "{w:?}");
    the_shop_answers_as_its_control_but_for_the_writes_after_the_cut_over(
        &db, &control, &url, &job, &w, &kills,
    )
    .await;
}

/// Runs killed while the tables are copied and checked, and once the copies wait for the
/// cut-over.
async fn runs_are_killed_while_the_tables_copy_and_once_ready(
    url: &str,
    job: &str,
    life: &mut impl FnMut(u64, u64) -> u64,
    kills: &mut Vec<&'static str>,
) {
    // While the tables are copied and checked.
    for _ in 0..10 {
        kill_after(spawn_run(url, job, None), life(100, 700), "copy").await;
        kills.push("copy");
    }
    let mut ready = spawn_run(url, job, None);
    wait_status(
        url,
        job,
        &mut ready,
        "the copies to wait for the cut-over",
        |s| {
            s["tables"]
                .as_array()
                .is_some_and(|t| t.len() == 3 && t.iter().all(|t| t["ready"] == true))
        },
    )
    .await;
    kill_after(ready, life(0, 300), "ready").await;
    kills.push("ready");
}

/// `cutover`, then runs killed inside the cut-over's lock (the hook holds it longer than
/// the run lives) until nine landed there: a killed cut-over swapped nothing.
async fn kills_inside_the_cut_overs_lock_swap_nothing(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &str,
    life: &mut impl FnMut(u64, u64) -> u64,
    kills: &mut Vec<&'static str>,
) {
    let out = common::myrecode(Some(url), &["cutover", job]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
    // Inside the cut-over's lock (the hook holds it longer than the run lives).
    let mut inside = 0;
    for n in 0.. {
        assert!(n < 40, "no kill landed inside the cut-over: {kills:?}");
        kill_after(spawn_run(url, job, Some(1500)), life(200, 1300), "cut-over").await;
        let s = sentries(c, schema).await;
        inside += i64::from(s > 0);
        kills.push(if s > 0 { "locked" } else { "before the lock" });
        if inside >= 9 {
            break;
        }
    }
    assert_eq!(
        charset_of(c, schema, "customers").await,
        "latin1",
        "a killed cut-over swapped nothing"
    );
}

/// A run killed after the cut-over's rename ran (the tables are utf8mb4), inside the
/// hook's window before the views, routines and events are recreated, leaving their
/// record unapplied.
async fn a_kill_lands_after_the_rename_before_the_objects_are_recreated(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &str,
    life: &mut impl FnMut(u64, u64) -> u64,
    kills: &mut Vec<&'static str>,
) {
    // After the rename, before the views, routines and events are recreated.
    let mut after = 0;
    for n in 0.. {
        assert!(n < 40, "no kill landed after the rename: {kills:?}");
        let mut cmd = std::process::Command::new(env!("CARGO_BIN_EXE_myrecode"));
        cmd.args(["run", job, "--execute"])
            .env("MYSQL_URL", url)
            .env("MYRECODE_TEST_AFTER_RENAME_HOLD_MS", "3000")
            .stdin(std::process::Stdio::null())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped());
        let child = cmd.spawn().unwrap();
        let since = std::time::Instant::now();
        // Killed as soon as the rename ran (the tables are utf8mb4), inside the hook's window.
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
            if charset_of(c, schema, "customers").await == "utf8mb4"
                || since.elapsed().as_secs() > 60
            {
                break;
            }
        }
        kill_after(child, life(0, 500), "after the rename").await;
        kills.push("after the rename");
        let stale: i64 = sqlx::query_scalar(&format!(
            "SELECT COUNT(*) FROM `{}`.`_myrecode_objects` WHERE applied = 0",
            schema
        ))
        .fetch_one(&mut *c)
        .await
        .unwrap_or(0);
        after += i64::from(stale > 0);
        if after >= 1 || charset_of(c, schema, "customers").await == "utf8mb4" {
            break;
        }
    }
    assert!(
        after >= 1,
        "the kill after the rename came too late: {kills:?}"
    );
}

/// The writer went on after the cut-over: those rows differ from the kept originals, and
/// only those; every answer of the shop equals its control's, byte for byte.
async fn the_shop_answers_as_its_control_but_for_the_writes_after_the_cut_over(
    db: &TestDatabase,
    control: &TestDatabase,
    url: &str,
    job: &str,
    w: &Writer,
    kills: &[&str],
) {
    // The writer went on after the cut-over: those rows differ from the kept originals, and
    // only those (the control below is the proof of what they hold).
    let (code, out, err) = run(url, &["verify", job]);
    assert!(code <= 1, "verify: {out}\n{err}");
    for l in out.lines().filter(|l| l.starts_with("  ")) {
        assert!(
            l.trim_start().starts_with("written since the cut-over")
                || l.trim_start().starts_with("… and "),
            "verify: {l}\n{out}"
        );
    }
    let mut m = db.config.connect_one().await.unwrap();
    let mut k = control.config.connect_one().await.unwrap();
    like_the_control(&mut m, &mut k).await;
    for t in ["customers", "orders"] {
        let q = format!(
            "SELECT CAST(CONCAT_WS('|', {}) AS BINARY) FROM {t} ORDER BY id",
            if t == "customers" {
                "id, name, city, phone, note"
            } else {
                "id, customer_id, status, tags, amount, price_label, comment"
            }
        );
        let a: Vec<Vec<u8>> = sqlx::query_scalar(&q).fetch_all(&mut m).await.unwrap();
        let b: Vec<Vec<u8>> = sqlx::query_scalar(&q).fetch_all(&mut k).await.unwrap();
        assert_eq!(a, b, "{t} differs from the control");
    }
    assert_eq!(writes(&mut m).await, writes(&mut k).await);
    eprintln!("kills: {kills:?}; writer: {w:?}");
}
