//! A legacy application's whole schema becomes UTF-8, modelled on what old PHP CMSs and
//! forums install: tables empty at install time (users), columns only ASCII so far (settings,
//! URLs), a Cyrillic DEFAULT the application's INSERTs rely on, a MyISAM table whose indexes
//! outgrow MyISAM's 1000 bytes under utf8mb4, a table with no text column, and an indexed hex
//! token. After scan, plan and run as the README says, and the application's switch to
//! utf8mb4, every column it writes stores its Cyrillic text, its DEFAULTs read right, its
//! uniqueness holds, and the tables and the schema it creates later are UTF-8.

use crate::common;
use myrecode::codec::{self, Encoding};
use myrecode::db::throwaway::test_database;
use sqlx::{Executor, MySqlConnection, Row};

/// The application's install script as it ran: cp1251 text through a latin1 connection.
const INSTALL: &[&str] = &[
    "CREATE TABLE users (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, \
     username VARCHAR(50) NOT NULL, email VARCHAR(100) NOT NULL, activation CHAR(32) NOT NULL DEFAULT '', \
     UNIQUE KEY u_username (username), KEY k_activation (activation)) ENGINE=InnoDB DEFAULT CHARSET=latin1",
    "CREATE TABLE contacts (id INT NOT NULL AUTO_INCREMENT PRIMARY KEY, name VARCHAR(100) NOT NULL, \
     subject VARCHAR(255) NOT NULL DEFAULT 'Сообщение', currency VARCHAR(10) NOT NULL DEFAULT 'руб.', \
     url VARCHAR(255) NOT NULL DEFAULT '', title VARCHAR(255) NOT NULL DEFAULT '', \
     UNIQUE KEY u_url (url), KEY k_title (title)) ENGINE=MyISAM DEFAULT CHARSET=latin1",
    "INSERT INTO contacts (name, subject, url) VALUES ('Администратор', 'Hello', 'http://example.com/')",
    "CREATE TABLE settings (variable VARCHAR(80) NOT NULL PRIMARY KEY, value TEXT NOT NULL) ENGINE=MyISAM DEFAULT CHARSET=latin1",
    "INSERT INTO settings VALUES ('sitename', 'My site'), ('theme', 'default'), ('mail_from', 'admin@example.com')",
    "CREATE TABLE content (id INT NOT NULL PRIMARY KEY, title VARCHAR(200) NOT NULL, body TEXT) ENGINE=InnoDB DEFAULT CHARSET=latin1",
    "INSERT INTO content VALUES (1, 'О компании', 'Мы работаем с 1998 года.'), (2, 'Контакты', 'Москва, ул. Тверская, 1')",
    "CREATE TABLE hits (id INT NOT NULL PRIMARY KEY, n INT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=latin1",
    "CREATE TABLE log_marks (id_member INT NOT NULL, id_board INT NOT NULL, PRIMARY KEY (id_member, id_board)) ENGINE=MyISAM DEFAULT CHARSET=latin1",
    "INSERT INTO log_marks VALUES (1, 1), (1, 2)",
    "CREATE TABLE sessions (session_id CHAR(32) NOT NULL PRIMARY KEY, data TEXT NOT NULL) ENGINE=InnoDB DEFAULT CHARSET=latin1",
    "INSERT INTO sessions VALUES (MD5('a'), 'корзина: 2'), (MD5('b'), 'корзина: 0')",
];

/// The column the plan keeps single-byte, with its reason in the plan: an indexed hex token.
/// (`settings.variable`, the table's ASCII primary key, is recoded: copied online, each row
/// found in the new table by its old key read in its label.)
const KEPT: &[&str] = &["sessions.session_id"];

/// Loads [`INSTALL`] as the legacy installer did: the bytes of cp1251 stored as latin1 (sent
/// here as their latin1 reading, which the server stores as those bytes).
async fn install(c: &mut MySqlConnection, schema: &str) {
    c.execute(format!("ALTER DATABASE `{schema}` DEFAULT CHARACTER SET latin1").as_str())
        .await
        .unwrap();
    for s in INSTALL {
        let bytes = codec::encode(Encoding::Windows1251, s).unwrap();
        let latin1 = codec::decode(Encoding::Latin1, &bytes).unwrap();
        c.execute(latin1.as_str())
            .await
            .unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}

/// Runs `myrecode` on `url`, asserting it succeeds.
fn ok(url: &str, args: &[&str]) {
    let (code, o, e) = common::cli(url, args);
    assert_eq!(code, 0, "{args:?}: {o}\n{e}");
}

/// Each text column of the schema with its charset and collation.
async fn charsets(c: &mut MySqlConnection) -> Vec<(String, String, String)> {
    sqlx::query_as(
        "SELECT CAST(CONCAT(TABLE_NAME, '.', COLUMN_NAME) AS CHAR), CAST(CHARACTER_SET_NAME AS CHAR), CAST(COLLATION_NAME AS CHAR) \
         FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() AND CHARACTER_SET_NAME IS NOT NULL \
         AND TABLE_NAME NOT LIKE '%myrecode%' ORDER BY TABLE_NAME, ORDINAL_POSITION",
    )
    .fetch_all(c)
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_column_the_application_writes_becomes_utf8_with_its_defaults_and_keys() {
    let db = test_database("whole");
    let url = db.config.url_with_secret();
    let mut c = db.config.connect_one().await.unwrap();
    install(&mut c, &db.name).await;
    let dir = tempfile::tempdir().unwrap();
    let (report, job, text) = common::scan_and_plan(&url, dir.path());
    let (report, job) = (report.to_str().unwrap(), job.to_str().unwrap());
    // The plan says what it keeps and why, and how a column without text of its own is read.
    assert!(
        text.contains("# - name: session_id   # ASCII tokens only (hex of 32 digits) in index `PRIMARY`: stays latin1"),
        "{text}"
    );
    assert!(
        text.contains(
            "source: cp1251   # no legacy text at scan time: read as the schema's columns (cp1251)"
        ),
        "{text}"
    );
    assert!(
        text.contains("MariaDB keeps it as UNIQUE … USING HASH"),
        "{text}"
    );
    std::fs::write(job, text.replace("cutover: manual", "cutover: auto")).unwrap();
    ok(&url, &["plan", "--check", job, "--report", report]);
    ok(&url, &["run", job, "--execute"]);
    ok(&url, &["verify", job]);

    // Every text column utf8mb4 in the old collation's meaning, but the token the plan kept.
    let mut c = db.config.connect_one().await.unwrap();
    for (col, cs, coll) in charsets(&mut c).await {
        if KEPT.contains(&col.as_str()) {
            assert_eq!(cs, "latin1", "{col}");
            continue;
        }
        assert_eq!(
            (cs.as_str(), coll.as_str()),
            ("utf8mb4", "utf8mb4_general_ci"),
            "{col}"
        );
    }
    // The tables' and the schema's defaults, so what the application adds later is UTF-8.
    let legacy_defaults: Vec<String> = sqlx::query_scalar(
        "SELECT CAST(TABLE_NAME AS CHAR) FROM information_schema.TABLES WHERE TABLE_SCHEMA = DATABASE() \
         AND TABLE_NAME NOT LIKE '%myrecode%' AND TABLE_COLLATION NOT LIKE 'utf8mb4%'",
    )
    .fetch_all(&mut c)
    .await
    .unwrap();
    assert!(legacy_defaults.is_empty(), "{legacy_defaults:?}");
    let schema_cs: String = sqlx::query_scalar("SELECT @@character_set_database")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(schema_cs, "utf8mb4");

    // The application after its switch: Cyrillic into every column, empty or ASCII before.
    c.execute("SET NAMES utf8mb4").await.unwrap();
    c.execute(
        "INSERT INTO users (name, username, email) VALUES ('Иван Петров', 'иван', 'иван@пример.рф')",
    )
    .await
    .unwrap();
    c.execute("INSERT INTO settings VALUES ('слоган', 'Всё для дома')")
        .await
        .unwrap();
    c.execute(
        "INSERT INTO contacts (name, url, title) VALUES ('Пётр', 'http://котики.рф/', 'Котики')",
    )
    .await
    .unwrap();
    let row = sqlx::query(
        "SELECT u.name, u.username, u.email, s.value, c.subject, c.currency, c.url \
         FROM users u, settings s, contacts c WHERE s.variable = 'слоган' AND c.name = 'Пётр'",
    )
    .fetch_one(&mut c)
    .await
    .unwrap();
    let got: Vec<String> = (0..7).map(|i| row.get::<String, _>(i)).collect();
    assert_eq!(
        got,
        [
            "Иван Петров",
            "иван",
            "иван@пример.рф",
            "Всё для дома",
            "Сообщение",
            "руб.",
            "http://котики.рф/"
        ]
    );
    // The old rows read right, and the over-long UNIQUE key still refuses a duplicate.
    let old: (String, String) =
        sqlx::query_as("SELECT name, subject FROM contacts WHERE url = 'http://example.com/'")
            .fetch_one(&mut c)
            .await
            .unwrap();
    assert_eq!(old, ("Администратор".into(), "Hello".into()));
    let dup = c
        .execute("INSERT INTO contacts (name, url) VALUES ('x', 'http://котики.рф/')")
        .await
        .unwrap_err();
    assert_eq!(common::errno(&dup), Some(1062), "{dup}");
    // A table the application creates later is UTF-8.
    c.execute("CREATE TABLE later (v VARCHAR(20))")
        .await
        .unwrap();
    c.execute("INSERT INTO later VALUES ('Привет')")
        .await
        .unwrap();
    let v: String = sqlx::query_scalar("SELECT v FROM later")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(v, "Привет");
}
