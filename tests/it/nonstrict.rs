//! A server without strict mode (issue 44): its sql_mode would let a value too long for its
//! column be cut short with a warning. The tool's own sessions are strict whatever the
//! server says, so a copy whose `target:` is too short and an in-place run whose column
//! cannot hold the recoded bytes both stop with the fix, every original byte where it was and
//! a canary untouched; while the change-log triggers, which run inside the application's
//! statements, keep the server's own mode, so the application's writes go on as before.

use crate::common;
use myrecode::codec::{encode, Encoding};
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::Executor;

/// The server's sql_mode: neither STRICT_TRANS_TABLES nor STRICT_ALL_TABLES.
const LAX: &str = "NO_ENGINE_SUBSTITUTION";

/// Each row's id and bytes of `column` in `table`.
async fn bytes_of(c: &mut sqlx::MySqlConnection, table: &str, column: &str) -> Vec<(i32, Vec<u8>)> {
    sqlx::query_as(&format!(
        "SELECT id, CAST(`{column}` AS BINARY) FROM `{table}` ORDER BY id"
    ))
    .fetch_all(c)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_server_without_strict_mode_cuts_nothing_short() {
    let server =
        ThrowawayServer::start_local_with(&[format!("--sql-mode={LAX}")]).unwrap_or_else(|e| {
            panic!("this test starts its own server: it needs mariadbd on the PATH ({e:#})")
        });
    let db = server.fresh_database("lax").unwrap();
    let mut admin = server.admin().connect_one().await.unwrap();
    let global: String = sqlx::query_scalar("SELECT @@GLOBAL.sql_mode")
        .fetch_one(&mut admin)
        .await
        .unwrap();
    assert_eq!(global, LAX);
    // The application: a session under the server's own mode.
    let mut app = db.config.connect_one().await.unwrap();
    app.execute("SET SESSION sql_mode = @@GLOBAL.sql_mode")
        .await
        .unwrap();
    for s in [
        "CREATE TABLE canary (id INT PRIMARY KEY, note VARCHAR(20)) ENGINE=InnoDB",
        "INSERT INTO canary VALUES (1, 'alive'), (2, 'still')",
        "CREATE TABLE t (id INT PRIMARY KEY, name VARCHAR(40) CHARACTER SET latin1) ENGINE=InnoDB",
        "CREATE TABLE vb (id INT PRIMARY KEY, b VARBINARY(12)) ENGINE=InnoDB",
    ] {
        app.execute(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    // The server itself cuts a value short here, with a warning only.
    app.execute("INSERT INTO canary VALUES (3, REPEAT('x', 30))")
        .await
        .unwrap();
    let cp = |s: &str| encode(Encoding::Windows1251, s).unwrap();
    for (id, text) in [(1, "Мир"), (2, "Привет, мир")] {
        sqlx::query("INSERT INTO t VALUES (?, ?)")
            .bind(id)
            .bind(cp(text))
            .execute(&mut app)
            .await
            .unwrap();
    }
    // 10 bytes of cp1251 each, 19 and 17 once in UTF-8: more than VARBINARY(12) holds.
    for (id, text) in [(1, "Привет мир"), (2, "Мир"), (3, "Пока всем")] {
        sqlx::query("INSERT INTO vb VALUES (?, ?)")
            .bind(id)
            .bind(cp(text))
            .execute(&mut app)
            .await
            .unwrap();
    }
    let canary = bytes_of(&mut app, "canary", "note").await;
    let (t_before, vb_before) = (
        bytes_of(&mut app, "t", "name").await,
        bytes_of(&mut app, "vb", "b").await,
    );
    let dir = tempfile::tempdir().unwrap();
    let url = db.config.url_with_secret();

    // A copy whose target is too short for one value.
    let copy = dir.path().join("copy.yaml");
    std::fs::write(
        &copy,
        format!(
            "version: 1\nschema: {}\ndefaults:\n  cutover: auto\ntables:\n  - name: t\n    strategy: copy\n    columns:\n      \
             - name: name\n        source: cp1251\n        target: VARCHAR(5) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci\n",
            db.name
        ),
    )
    .unwrap();
    let (code, out, err) = common::cli(&url, &["run", copy.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains("copying rows of 't': a value is longer than its column's `target:` allows")
            && err.contains("Fix: widen that column's `target:` in the job"),
        "{err}"
    );
    // The shadow holds no value cut short, and the original is as it was.
    let shadow: Vec<(i32, Vec<u8>)> = bytes_of(&mut app, "t_myrecode_new", "name").await;
    assert!(
        shadow
            .iter()
            .all(|(id, v)| *id == 1 && v == "Мир".as_bytes()),
        "{shadow:?}"
    );
    assert_eq!(bytes_of(&mut app, "t", "name").await, t_before);
    // The change-log triggers were made under the server's mode, not the tool's strict one:
    // the application's writes are judged as they always were.
    let modes: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(SQL_MODE AS CHAR) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = 't'",
    )
    .fetch_all(&mut app)
    .await
    .unwrap();
    assert_eq!(modes.len(), 3, "{modes:?}");
    // (The driver's PIPES_AS_CONCAT and IGNORE_SPACE are every session's of the tool.)
    assert!(
        modes
            .iter()
            .all(|m| m.contains(LAX) && !m.contains("STRICT")),
        "{modes:?}"
    );
    app.execute("INSERT INTO t VALUES (3, REPEAT('y', 50))")
        .await
        .unwrap();
    let cut: i64 = sqlx::query_scalar("SELECT CHARACTER_LENGTH(name) FROM t WHERE id = 3")
        .fetch_one(&mut app)
        .await
        .unwrap();
    assert_eq!(cut, 40, "the application's write is the server's to judge");

    // In place: the recoded bytes do not fit the binary column.
    let inplace = dir.path().join("inplace.yaml");
    std::fs::write(
        &inplace,
        format!(
            "version: 1\nschema: {}\ntables:\n  - name: vb\n    strategy: in-place\n    columns:\n      \
             - name: b\n        source: cp1251\n        target: VARBINARY(12)\n",
            db.name
        ),
    )
    .unwrap();
    let (code, out, err) = common::cli(&url, &["run", inplace.to_str().unwrap(), "--execute"]);
    assert_eq!(code, 2, "{out}\n{err}");
    assert!(
        err.contains(
            "recoding rows of 'vb' in place: a value is longer once recoded than column 'b' holds"
        ) && err.contains("Fix: widen the column first"),
        "{err}"
    );
    assert_eq!(
        bytes_of(&mut app, "vb", "b").await,
        vb_before,
        "nothing cut short"
    );
    assert_eq!(bytes_of(&mut app, "canary", "note").await, canary);
}
