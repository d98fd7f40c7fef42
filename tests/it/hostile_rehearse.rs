//! Hostile dumps (issue 44 items 2 and 8). On a server rehearse did not start
//! (`MYSQL_TEST_URL`), a dump that drops another schema, creates a user, grants, sets a
//! global, reads a local file, hides a statement behind another or copies another schema is
//! refused by name and line before a byte of it is sent: every other schema, every account
//! and every global stay byte-identical. The same guard reads a dump bound for rehearse's own
//! throwaway server. Local infile is off in the dump's client and in the tool's own
//! connections. A dump written under ANSI_QUOTES (`mariadb-dump --compatible=ansi`) is
//! followed, not refused. A small gzip holding one endless line is refused after a bounded
//! read, in bounded memory.

use crate::common::texts;
use myrecode::db::throwaway::ThrowawayServer;
use sqlx::Executor;
use std::io::Write;
use std::path::Path;
use std::process::{Command, Stdio};

/// Runs `rehearse --dump dump` with `MYSQL_TEST_URL` set to `url` (or unset).
fn rehearse(url: Option<&str>, dump: &Path) -> (i32, String, String) {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.arg("rehearse")
        .arg("--dump")
        .arg(dump)
        .env_remove("MYSQL_TEST_URL")
        .env_remove("MYSQL_URL")
        .env_remove("MYSQL_PWD");
    if let Some(u) = url {
        cmd.env("MYSQL_TEST_URL", u);
    }
    let out = cmd.output().unwrap();
    let (stdout, stderr) = texts(&out);
    (out.status.code().unwrap_or(-1), stdout, stderr)
}

/// Everything a hostile dump could change outside its own schemas: the schemas, the canary's
/// rows and checksum, every account and grant, every global variable.
async fn snapshot(server: &ThrowawayServer) -> Vec<String> {
    let mut c = server.admin().connect_one().await.unwrap();
    let mut out = Vec::new();
    for q in [
        "SELECT CAST(SCHEMA_NAME AS CHAR) FROM information_schema.SCHEMATA ORDER BY 1",
        "SELECT CAST(CONCAT(id, ':', note) AS CHAR) FROM victim.canary ORDER BY id",
        "SELECT CAST(CONCAT(User, '@', Host, ' ', Priv) AS CHAR) FROM mysql.global_priv ORDER BY 1",
        "SELECT CAST(CONCAT_WS(' ', Host, Db, User) AS CHAR) FROM mysql.db ORDER BY 1",
        "SELECT CAST(CONCAT(VARIABLE_NAME, '=', VARIABLE_VALUE) AS CHAR) FROM information_schema.GLOBAL_VARIABLES ORDER BY 1",
    ] {
        let rows: Vec<String> = sqlx::query_scalar(q).fetch_all(&mut c).await.unwrap();
        out.extend(rows.into_iter().map(|r| format!("{q}: {r}")));
    }
    let (_, sum): (String, Option<i64>) = sqlx::query_as("CHECKSUM TABLE victim.canary")
        .fetch_one(&mut c)
        .await
        .unwrap();
    out.push(format!("checksum {sum:?}"));
    out
}

/// A dump of schema `hostile` with one table, `extra` after it, and mysqldump's last line.
fn dump_with(dir: &Path, name: &str, extra: &str) -> std::path::PathBuf {
    let path = dir.join(name);
    std::fs::write(
        &path,
        format!(
            "CREATE DATABASE `hostile`;\nUSE `hostile`;\nCREATE TABLE `t` (`id` int NOT NULL, `a` text, PRIMARY KEY (`id`));\n\
             INSERT INTO `t` VALUES (1,'x');\n{extra}\n-- Dump completed on 2026-01-01\n"
        ),
    )
    .unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_dumps_on_a_given_server_are_refused_before_anything_is_sent() {
    let server = ThrowawayServer::start_local_with(&[]).unwrap_or_else(|e| panic!("{e:#}"));
    let mut c = server.admin().connect_one().await.unwrap();
    for s in [
        "CREATE DATABASE victim",
        "CREATE TABLE victim.canary (id INT PRIMARY KEY, note VARCHAR(50))",
        "INSERT INTO victim.canary VALUES (1, 'alive'), (2, 'still')",
    ] {
        c.execute(s).await.unwrap();
    }
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "SECRET-MARKER-5f2c\n").unwrap();
    let before = snapshot(&server).await;
    let url = server.admin().url_with_secret();
    let cases: Vec<(String, &str)> = vec![
        (
            "DROP DATABASE IF EXISTS `victim`;".into(),
            "line 5: `DROP DATABASE IF EXISTS `victim`` drops schema `victim`, which is not the dump's",
        ),
        (
            "CREATE USER 'intruder'@'%' IDENTIFIED BY 'x';\nGRANT ALL ON *.* TO 'intruder'@'%';".into(),
            "line 5: `CREATE USER 'intruder'@'%' IDENTIFIED BY 'x'` creates or changes accounts or roles; \
             line 6: `GRANT ALL ON *.* TO 'intruder'@'%'` grants privileges",
        ),
        (
            "SET GLOBAL max_connections = 7;\n/*!40101 SET @@GLOBAL.sql_mode = '' */;\nSET GLOBAL local_infile = 1;".into(),
            "line 5: `SET GLOBAL max_connections = 7` changes a server-wide setting (GLOBAL); \
             line 6: `/*!40101 SET @@GLOBAL.sql_mode = '' */` changes a server-wide setting (@@GLOBAL); \
             line 7: `SET GLOBAL local_infile = 1` changes a server-wide setting (GLOBAL)",
        ),
        (
            "DELIMITER ;;\nSELECT 1; DROP DATABASE victim;;\nDELIMITER ;".into(),
            "line 6: `SELECT 1; DROP DATABASE victim` holds more than one statement",
        ),
        (
            format!("LOAD DATA LOCAL INFILE '{}' INTO TABLE `t`;", secret.display()),
            "reads a file of the machine rehearse runs on into the database (LOAD DATA LOCAL INFILE)",
        ),
        (
            "INSERT INTO `t` SELECT id, note FROM victim.canary;".into(),
            "names schema `victim`, which is not the dump's",
        ),
    ];
    for (i, (extra, want)) in cases.iter().enumerate() {
        let path = dump_with(dir.path(), &format!("hostile{i}.sql"), extra);
        let (code, stdout, stderr) = rehearse(Some(&url), &path);
        assert_eq!(code, 2, "{extra}\n{stdout}\n{stderr}");
        assert!(
            stderr.contains(want)
                && stderr.contains("nothing of the dump was sent")
                && stderr.contains("Fix: remove them from the dump"),
            "{extra}\nwant: {want}\n{stderr}"
        );
        assert_eq!(stderr.trim().lines().count(), 1, "one line: {stderr}");
        assert!(!stdout.contains("Loading"), "{stdout}");
        assert!(
            !stdout.contains("SECRET-MARKER") && !stderr.contains("SECRET-MARKER"),
            "{stdout}{stderr}"
        );
        assert_eq!(snapshot(&server).await, before, "after {extra}");
    }
    // The same server takes what mariadb-dump writes (a trigger, a view, a procedure and an
    // event, under sql_modes of their own) and is left as it was.
    let path = real_dump(&server, dir.path()).await;
    let before = snapshot(&server).await;
    let (code, stdout, stderr) = rehearse(Some(&url), &path);
    assert_eq!(code, 0, "{stdout}\n{stderr}");
    assert_eq!(snapshot(&server).await, before, "after a clean rehearsal");
}

/// A mariadb-dump of schema `appsrc` (made here) with its trigger, view, procedure and event,
/// its schema renamed `appcopy` so that it can load beside it.
async fn real_dump(server: &ThrowawayServer, dir: &Path) -> std::path::PathBuf {
    let mut c = server.admin().connect_one().await.unwrap();
    for s in [
        "CREATE DATABASE appsrc",
        "CREATE TABLE appsrc.posts (id INT PRIMARY KEY, body TEXT, n INT DEFAULT 0) DEFAULT CHARSET=latin1",
        "INSERT INTO appsrc.posts VALUES (1, 'it''s a \\\\ \"test\"; DROP DATABASE victim', 0)",
        "SET SESSION sql_mode = 'NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES'",
        "CREATE TRIGGER appsrc.bump BEFORE UPDATE ON appsrc.posts FOR EACH ROW BEGIN SET NEW.n = OLD.n + 1; SET @x = 'a\\'; END",
        "SET SESSION sql_mode = DEFAULT",
        "CREATE VIEW appsrc.v AS SELECT id, body FROM appsrc.posts",
        "CREATE PROCEDURE appsrc.p() BEGIN SELECT COUNT(*) FROM posts; END",
        "CREATE EVENT appsrc.e ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM appsrc.posts WHERE id < 0",
    ] {
        c.execute(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    let program = ["mariadb-dump", "mysqldump"]
        .iter()
        .flat_map(|n| ["/usr/bin", "/usr/local/bin"].map(|d| Path::new(d).join(n)))
        .find(|p| p.exists())
        .expect("mariadb-dump is needed to make the test's dump. Fix: apt-get install -y mariadb-client");
    let cnf = dir.join("dump.cnf");
    std::fs::write(
        &cnf,
        myrecode::rehearse::dump::client_options(server.admin()),
    )
    .unwrap();
    let out = Command::new(program)
        .arg(format!("--defaults-file={}", cnf.display()))
        .args([
            "--triggers",
            "--routines",
            "--events",
            "--databases",
            "appsrc",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout)
        .unwrap()
        .replace("appsrc", "appcopy");
    let path = dir.join("real.sql");
    std::fs::write(&path, text).unwrap();
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_connection_of_the_tool_reads_a_local_file() {
    let dir = tempfile::tempdir().unwrap();
    let secret = dir.path().join("secret.txt");
    std::fs::write(&secret, "1\tSECRET-MARKER-77aa\n").unwrap();
    // On a throwaway server rehearse starts itself: refused by the same guard before a byte
    // is sent (the dump's client runs with --local-infile=0 behind it).
    let path = dump_with(
        dir.path(),
        "infile.sql",
        &format!(
            "LOAD DATA LOCAL INFILE '{}' INTO TABLE `t`;",
            secret.display()
        ),
    );
    let (code, stdout, stderr) = rehearse(None, &path);
    assert_eq!(code, 2, "{stdout}\n{stderr}");
    assert!(
        stderr.contains("reads a file of the machine rehearse runs on into the database (LOAD DATA LOCAL INFILE)")
            && stderr.contains("which rehearse does not run on any server, its own throwaway one included; nothing of the dump was sent"),
        "{stderr}"
    );
    assert!(!stdout.contains("Loading"), "{stdout}");
    assert!(!stdout.contains("SECRET-MARKER") && !stderr.contains("SECRET-MARKER"));
    // The tool's own connections.
    let server = myrecode::db::throwaway::test_database("no_infile");
    let mut c = server.config.connect_one().await.unwrap();
    c.execute("CREATE TABLE t (id INT, note TEXT)")
        .await
        .unwrap();
    let e = c
        .execute(format!("LOAD DATA LOCAL INFILE '{}' INTO TABLE t", secret.display()).as_str())
        .await
        .expect_err("LOAD DATA LOCAL must be refused");
    assert!(matches!(crate::common::errno(&e), Some(1148 | 4166)), "{e}");
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM t")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(n, 0);
}

/// Runs `myrecode rehearse --dump dump` (no server given) and returns its exit code, stderr
/// and peak resident memory in KiB, read by `wait4` for this one child.
// wait4 below reaps the child (with its rusage), which clippy does not see.
#[allow(clippy::zombie_processes)]
fn rehearse_measured(dump: &Path) -> (i32, String, i64) {
    // Measured by GNU time, which forks the command: a child this (multi-threaded, large)
    // test process spawned directly would be charged this process's own peak, recorded by
    // the kernel at its exec (430 MB under the whole suite, whatever rehearse used).
    let time = Path::new("/usr/bin/time");
    assert!(
        time.exists(),
        "/usr/bin/time is missing: install it (apt-get install time, as scripts/setup-server.sh does)"
    );
    let err = dump.with_extension("stderr");
    let peak = dump.with_extension("peak");
    let status = Command::new(time)
        .arg("-f")
        .arg("%M")
        .arg("-o")
        .arg(&peak)
        .arg(env!("CARGO_BIN_EXE_myrecode"))
        .arg("rehearse")
        .arg("--dump")
        .arg(dump)
        .env_remove("MYSQL_TEST_URL")
        .stdout(Stdio::null())
        .stderr(std::fs::File::create(&err).unwrap())
        .status()
        .unwrap();
    let peak_kib: i64 = std::fs::read_to_string(&peak)
        .unwrap()
        .lines()
        .last()
        .and_then(|l| l.trim().parse().ok())
        .expect("GNU time wrote the peak RSS");
    (
        status.code().unwrap_or(-1),
        std::fs::read_to_string(&err).unwrap(),
        peak_kib,
    )
}

#[test]
fn a_gzip_holding_one_endless_line_is_refused_in_bounded_memory() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bomb.sql.gz");
    let member = |data: &[u8]| {
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
        enc.write_all(data).unwrap();
        enc.finish().unwrap()
    };
    // 1.5 GiB of zeros without a newline, as 1536 gzip members of 1 MiB each (a gzip file
    // may hold several members; gzip -d and rehearse read them as one stream).
    let zeros = member(&vec![b'0'; 1 << 20]);
    let mut f = std::io::BufWriter::new(std::fs::File::create(&path).unwrap());
    f.write_all(&member(b"CREATE TABLE t (a INT);\nINSERT INTO t VALUES ('"))
        .unwrap();
    for _ in 0..1536 {
        f.write_all(&zeros).unwrap();
    }
    f.flush().unwrap();
    drop(f);
    let size = std::fs::metadata(&path).unwrap().len();
    assert!(size < 4 << 20, "the bomb is small: {size} bytes");
    let (code, stderr, peak_kib) = rehearse_measured(&path);
    println!("bomb: {size} bytes of gzip, 1.5 GiB line; peak RSS {peak_kib} KiB");
    assert_eq!(code, 2, "{stderr}");
    assert!(
        stderr.contains("has a line longer than 64 MiB (line 2)")
            && stderr.contains("nothing was sent")
            && stderr.contains("Fix: "),
        "{stderr}"
    );
    assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    assert!(peak_kib < 200 * 1024, "peak RSS {peak_kib} KiB");
}

/// A real `mariadb-dump --compatible=ansi` (names in double quotes, ANSI set by the dump
/// itself), with a trigger and values holding quotes, a backslash and the guard's own words:
/// rehearsed end to end on a given server and on rehearse's own, every legacy value recoded.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ansi_dump_is_followed_and_rehearsed_end_to_end() {
    use crate::common::legacy::{bytes, RUSSIAN};
    use myrecode::codec::Encoding;
    let server = ThrowawayServer::start_local_with(&[]).unwrap_or_else(|e| panic!("{e:#}"));
    let mut c = server.admin().connect_one().await.unwrap();
    for s in [
        "CREATE DATABASE ansisrc",
        "CREATE TABLE ansisrc.posts (id INT PRIMARY KEY, body VARCHAR(200), n INT DEFAULT 0) DEFAULT CHARSET=latin1 COMMENT 'it''s \"x\"'",
        "CREATE TRIGGER ansisrc.bump BEFORE UPDATE ON ansisrc.posts FOR EACH ROW BEGIN SET NEW.n = OLD.n + 1; END",
        "INSERT INTO ansisrc.posts (id, body) VALUES (1000, 'plain \\\\ \"q\" USE victim; KILL 1')",
    ] {
        c.execute(s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
    for (i, text) in RUSSIAN.iter().enumerate() {
        sqlx::query("INSERT INTO ansisrc.posts (id, body) VALUES (?, ?)")
            .bind(i as i64 + 1)
            .bind(bytes(Encoding::Windows1251, text))
            .execute(&mut c)
            .await
            .unwrap();
    }
    let program = ["mariadb-dump", "mysqldump"]
        .iter()
        .flat_map(|n| ["/usr/bin", "/usr/local/bin"].map(|d| Path::new(d).join(n)))
        .find(|p| p.exists())
        .expect("mariadb-dump is needed to make the test's dump. Fix: apt-get install -y mariadb-client");
    let dir = tempfile::tempdir().unwrap();
    let cnf = dir.path().join("dump.cnf");
    std::fs::write(
        &cnf,
        myrecode::rehearse::dump::client_options(server.admin()),
    )
    .unwrap();
    let out = Command::new(program)
        .arg(format!("--defaults-file={}", cnf.display()))
        // --compatible=ansi writes no SET NAMES: the data is in the dump connection's
        // charset, which must be the utf8mb4 the loader reads it in.
        .args([
            "--default-character-set=utf8mb4",
            "--compatible=ansi",
            "--triggers",
            "--databases",
            "ansisrc",
        ])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).replace("ansisrc", "ansicopy");
    assert!(
        text.contains("SQL_MODE='NO_AUTO_VALUE_ON_ZERO,ANSI'")
            && text.contains("CREATE TABLE \"posts\""),
        "not an ANSI dump"
    );
    // The schema renamed so that it loads beside its source (the cp1251 bytes are written by
    // mariadb-dump in UTF-8, as the latin1 text they are to the server).
    let path = dir.path().join("ansi.sql");
    std::fs::write(&path, text.as_bytes()).unwrap();
    let url = server.admin().url_with_secret();
    for given in [Some(url.as_str()), None] {
        let (code, stdout, stderr) = rehearse(given, &path);
        assert_eq!(code, 0, "given: {}\n{stdout}\n{stderr}", given.is_some());
        assert!(
            stdout.contains(&format!(
                "ansicopy.posts: recoded {} value(s)",
                RUSSIAN.len()
            )),
            "given: {}\n{stdout}",
            given.is_some()
        );
    }
    // The source is as it was.
    let n: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM ansisrc.posts")
        .fetch_one(&mut c)
        .await
        .unwrap();
    assert_eq!(n, RUSSIAN.len() as i64 + 1);
}
