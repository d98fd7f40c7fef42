use super::super::statements::{Piece, Splitter};
use super::*;

fn guard() -> Guard {
    Guard::new(
        &["forum".to_string(), "rehearsal".to_string()],
        &[
            "mysql".to_string(),
            "victim".to_string(),
            "Forum".to_string(),
        ],
        Mode::default(),
    )
}

/// Every statement of `dump`, cut as the client cuts it, with its verdict.
fn verdicts(dump: &str) -> Vec<String> {
    let mut g = guard();
    let mut s = Splitter::new(Mode::default(), 1 << 20);
    let mut out = Vec::new();
    let mut emit = |p: Piece| {
        if let Piece::Statement { text, line } = &p {
            let before = g.refused.len();
            g.piece(p.clone());
            let head = head_of(&String::from_utf8_lossy(text));
            out.push(match g.refused.get(before) {
                Some(r) => format!("{line} {head} => {}", r.reason),
                None => format!("{line} {head} => ok"),
            });
        } else {
            g.piece(p.clone());
            out.push(format!("{:?}", g.refused.last()));
        }
        g.mode
    };
    for line in dump.as_bytes().split_inclusive(|b| *b == b'\n') {
        s.line(line, &mut emit);
    }
    s.finish(&mut emit);
    out
}

#[test]
fn what_mysqldump_writes_runs() {
    let dump = "/*!40101 SET @OLD_CHARACTER_SET_CLIENT=@@CHARACTER_SET_CLIENT */;\n\
/*!40101 SET NAMES utf8mb4 */;\n\
/*!40103 SET @OLD_TIME_ZONE=@@TIME_ZONE */;\n\
/*!40103 SET TIME_ZONE='+00:00' */;\n\
/*!40014 SET @OLD_UNIQUE_CHECKS=@@UNIQUE_CHECKS, UNIQUE_CHECKS=0 */;\n\
/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO' */;\n\
/*M!100616 SET @OLD_NOTE_VERBOSITY=@@NOTE_VERBOSITY, NOTE_VERBOSITY=0 */;\n\
CREATE DATABASE /*!32312 IF NOT EXISTS*/ `forum` /*!40100 DEFAULT CHARACTER SET latin1 */;\n\
USE `forum`;\n\
DROP TABLE IF EXISTS `posts`;\n\
/*!40101 SET @saved_cs_client     = @@character_set_client */;\n\
/*!40101 SET character_set_client = utf8mb4 */;\n\
CREATE TABLE `posts` (\n  `id` int(11) NOT NULL,\n  `body` text DEFAULT 'it\\'s; a \"test\"',\n  PRIMARY KEY (`id`)\n) ENGINE=InnoDB DEFAULT CHARSET=latin1;\n\
/*!40101 SET character_set_client = @saved_cs_client */;\n\
LOCK TABLES `posts` WRITE;\n\
/*!40000 ALTER TABLE `posts` DISABLE KEYS */;\n\
INSERT INTO `posts` VALUES (1,'a; DROP DATABASE victim; --'),(2,'victim.users');\n\
/*!40000 ALTER TABLE `posts` ENABLE KEYS */;\n\
UNLOCK TABLES;\n\
/*!50003 SET @saved_sql_mode       = @@sql_mode */ ;\n\
/*!50003 SET sql_mode              = 'STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES' */ ;\n\
DELIMITER ;;\n\
/*!50003 CREATE*/ /*!50017 DEFINER=`root`@`localhost`*/ /*!50003 TRIGGER `t` BEFORE INSERT ON `posts` FOR EACH ROW BEGIN\n  SET NEW.body = CONCAT(NEW.body, 'a\\'); SET @b = 1; -- ');\nEND */;;\n\
DELIMITER ;\n\
/*!50003 SET sql_mode              = @saved_sql_mode */ ;\n\
/*!50001 DROP VIEW IF EXISTS `v`*/;\n\
/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n/*!50001 VIEW `v` AS select `posts`.`id` AS `id` from `posts` */;\n\
/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;\n\
-- Dump completed on 2024-05-01 10:00:00\n";
    let v = verdicts(dump);
    assert!(v.iter().all(|l| l.ends_with("=> ok")), "{v:#?}");
    assert_eq!(v.len(), 27, "{v:#?}");
}

#[test]
fn anything_else_is_refused_by_name() {
    let cases = [
        ("DROP DATABASE victim", "drops schema `victim`, which is not the dump's"),
        ("DROP DATABASE IF EXISTS `forum`", "ok"),
        ("CREATE USER 'x'@'%' IDENTIFIED BY 'y'", "creates or changes accounts or roles"),
        ("GRANT ALL ON *.* TO 'x'@'%'", "grants privileges"),
        ("SET GLOBAL max_connections = 1", "changes a server-wide setting (GLOBAL)"),
        ("SET @@global.sql_mode = ''", "changes a server-wide setting (@@GLOBAL)"),
        ("/*!40101 SET @@GLOBAL.local_infile = 1 */", "changes a server-wide setting (@@GLOBAL)"),
        ("SET PASSWORD FOR root = PASSWORD('x')", "creates or changes accounts or roles"),
        (
            "LOAD DATA LOCAL INFILE '/etc/passwd' INTO TABLE t",
            "reads a file of the machine rehearse runs on into the database (LOAD DATA LOCAL INFILE)",
        ),
        ("LOAD DATA INFILE '/etc/passwd' INTO TABLE t", "reads a file of the server's machine (LOAD DATA/XML INFILE)"),
        ("INSERT INTO t VALUES (LOAD_FILE('/etc/passwd'))", "reads a file of the server's machine (LOAD_FILE)"),
        ("INSERT INTO t SELECT * FROM mysql.user", "names schema `mysql`, which is not the dump's"),
        ("INSERT INTO `victim`.`t` VALUES (1)", "names schema `victim`, which is not the dump's"),
        ("USE victim", "switches to schema `victim`, which is not the dump's"),
        ("SELECT 1", NOT_THE_DUMPS),
        ("CALL p()", NOT_THE_DUMPS),
        ("FLUSH PRIVILEGES", NOT_THE_DUMPS),
        ("CREATE FUNCTION f RETURNS STRING SONAME 'x.so'", "loads a shared library into the server (SONAME)"),
        ("INSTALL SONAME 'ha_connect'", "installs a server plugin"),
        ("CREATE TABLE t (a INT) ENGINE=CONNECT table_type=CSV file_name='/etc/passwd'", "makes a table of engine CONNECT, which reads files or other servers"),
        ("CREATE TABLE t (a INT) DATA DIRECTORY='/tmp'", "puts table files outside the server's data directory (DATA/INDEX DIRECTORY)"),
        ("SELECT 'x' INTO OUTFILE '/tmp/x'", "writes a file on the server's machine (INTO OUTFILE)"),
        ("SET sql_mode = 'ANSI'", "ok"),
        ("SET sql_mode = CONCAT(@@sql_mode, ',ANSI_QUOTES')", "sets sql_mode from an expression whose value is not known before the dump runs"),
        ("SET sql_mode = @nobody_set_this", "sets sql_mode from @nobody_set_this, whose value is not known before the dump runs"),
        ("SET NAMES gbk", "reads the rest of the dump in charset gbk, in which a `\\` byte can end a character"),
        ("PREPARE s FROM @q", "runs SQL built at run time (PREPARE), which cannot be read before it runs"),
        ("SET STATEMENT max_statement_time=1 FOR SELECT 1", "sets variables for one statement (SET STATEMENT … FOR), which is not read here"),
        ("CREATE SERVER s FOREIGN DATA WRAPPER mysql OPTIONS (HOST 'x')", NOT_THE_DUMPS),
        ("CREATE TABLE t (a INT)", "ok"),
        ("CREATE TABLE forum.t (a INT)", "ok"),
    ];
    let mut wrong = Vec::new();
    for (sql, want) in cases {
        let got = match guard().statement(sql.as_bytes()) {
            Ok(()) => "ok".to_string(),
            Err(e) => e,
        };
        if got != want {
            wrong.push(format!("{sql}\n  got:  {got}\n  want: {want}"));
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn statements_hidden_in_one_packet_are_refused() {
    // Under `DELIMITER ;;` the client sends both as one packet, which the server runs as two.
    let v = verdicts("DELIMITER ;;\nSELECT 1; DROP DATABASE victim;;\nINSERT INTO t VALUES (1); DELETE FROM t;;\nDELIMITER ;\n");
    assert_eq!(
        v,
        vec![
            "2 SELECT 1; DROP DATABASE victim => holds more than one statement (a `;` inside what the client sends as one), which would run unread",
            "3 INSERT INTO t VALUES (1); DELETE FROM t => holds more than one statement (a `;` inside what the client sends as one), which would run unread",
        ]
    );
    // A trigger whose body is one statement, followed by a second one.
    let v = verdicts("DELIMITER ;;\nCREATE TRIGGER t BEFORE INSERT ON p FOR EACH ROW SET @a = 1; USE victim;;\nDELIMITER ;\n");
    assert!(v[0].ends_with("holds more than one statement (another after the body of a trigger, routine or event, in what the client sends as one), which would run unread"), "{v:?}");
    // With the default delimiter the client cuts there itself: two statements, each read.
    let v = verdicts("SELECT 1; DROP DATABASE victim;\n");
    assert_eq!(v.len(), 2, "{v:?}");
    assert!(
        v[1].ends_with("drops schema `victim`, which is not the dump's"),
        "{v:?}"
    );
}

#[test]
fn the_sql_mode_is_followed_so_strings_end_where_the_server_ends_them() {
    // Under NO_BACKSLASH_ESCAPES the string ends at the second quote and the DROP is a statement.
    let v = verdicts("SET sql_mode = 'NO_BACKSLASH_ESCAPES';\nINSERT INTO t VALUES ('\\'), (1); DROP DATABASE victim; -- ');\n");
    assert_eq!(v.len(), 4, "{v:?}");
    assert!(
        v[1].ends_with("=> ok") && v[2].ends_with("drops schema `victim`, which is not the dump's"),
        "{v:?}"
    );
    // Through a variable the guard can follow, and back.
    let v = verdicts("SET @m = 'NO_BACKSLASH_ESCAPES', @old = @@sql_mode;\nSET sql_mode = @m;\nINSERT INTO t VALUES ('\\');\nSET sql_mode = @old;\nINSERT INTO t VALUES ('\\'');\n");
    assert!(v.iter().all(|l| l.ends_with("=> ok")), "{v:#?}");
    // A charset through a variable it cannot follow.
    let v = verdicts("SET @c = 'sjis';\nSET character_set_client = @c;\n");
    assert!(
        v[1].ends_with("in which a `\\` byte can end a character"),
        "{v:?}"
    );
}

#[test]
fn a_delimiter_inside_a_statement_is_refused() {
    let v = verdicts("INSERT INTO t VALUES (1)\nDELIMITER $$\n;\n");
    assert!(
        v[0].contains("comes inside an unfinished statement"),
        "{v:?}"
    );
}

/// The verdict on one statement, or "ok".
fn verdict(sql: &str) -> String {
    match guard().statement(sql.as_bytes()) {
        Ok(()) => "ok".to_string(),
        Err(e) => e,
    }
}

#[test]
fn bodies_are_read_statement_by_statement_not_word_by_word() {
    let more = "holds more than one statement (another after the body of a trigger, routine or event, in what the client sends as one), which would run unread";
    let cases = [
        // Good bodies, with the guard's words as names and inside strings.
        ("CREATE TRIGGER t BEFORE INSERT ON p FOR EACH ROW SET NEW.names = 'USE victim; KILL 1'", "ok"),
        ("CREATE TRIGGER t BEFORE INSERT ON p FOR EACH ROW BEGIN IF NEW.a > 0 THEN SET NEW.sql_mode = 1; ELSE SET NEW.b = CASE WHEN 1 THEN 2 ELSE 3 END; END IF; END", "ok"),
        ("CREATE PROCEDURE p(IN a INT) lbl: BEGIN DECLARE i INT DEFAULT 0; w: WHILE i < a DO SET i = i + 1; END WHILE w; REPEAT SET i = i - 1; UNTIL i = 0 END REPEAT; SELECT 'FLUSH TABLES'; END lbl", "ok"),
        ("CREATE FUNCTION f(c VARCHAR(50)) RETURNS varchar(20) CHARACTER SET latin1 READS SQL DATA RETURN (SELECT COUNT(*) FROM customers WHERE city = c)", "ok"),
        ("CREATE EVENT e ON SCHEDULE EVERY 1 DAY DISABLE DO DELETE FROM posts WHERE id < 0", "ok"),
        // A statement after the body, in the same packet.
        ("CREATE TRIGGER t BEFORE INSERT ON p FOR EACH ROW SET @a = 1; DELETE FROM t", more),
        ("CREATE PROCEDURE p() BEGIN SELECT 1; END; DROP TABLE t", more),
        ("CREATE TRIGGER t BEFORE INSERT ON p FOR EACH ROW BEGIN SET @a = 1; END; UPDATE t SET a = 1", more),
        // Statements inside a body that act on the server when it runs.
        ("CREATE EVENT e ON SCHEDULE EVERY 1 MINUTE DO KILL 5", "holds KILL in the body of a trigger, routine or event, which acts on the server (or the session) when it runs, not on the dump's data"),
        ("CREATE PROCEDURE p() BEGIN IF 1 THEN FLUSH PRIVILEGES; END IF; END", "holds FLUSH in the body of a trigger, routine or event, which acts on the server (or the session) when it runs, not on the dump's data"),
        ("CREATE TRIGGER t AFTER INSERT ON p FOR EACH ROW lbl: BEGIN RESET MASTER; END lbl", "holds RESET in the body of a trigger, routine or event, which acts on the server (or the session) when it runs, not on the dump's data"),
        ("CREATE PROCEDURE p() BEGIN SET NAMES sjis; END", "holds SET NAMES inside a trigger, routine or event (it would change the session)"),
        ("CREATE PROCEDURE p() BEGIN SET @x = 1, SESSION sql_mode = ''; END", "holds SET SQL_MODE inside a trigger, routine or event (it would change the session)"),
        ("CREATE PROCEDURE p() BEGIN USE victim; END", "holds USE in the body of a trigger, routine or event, which acts on the server (or the session) when it runs, not on the dump's data"),
        ("CREATE PROCEDURE p() BEGIN START SLAVE; END", "holds START in the body of a trigger, routine or event, which acts on the server when it runs, not on the dump's data"),
        ("CREATE PROCEDURE p() BEGIN START TRANSACTION; COMMIT; END", "ok"),
    ];
    let wrong: Vec<String> = cases
        .iter()
        .filter_map(|(sql, want)| {
            let got = verdict(sql);
            (got != *want).then(|| format!("{sql}\n  got:  {got}\n  want: {want}"))
        })
        .collect();
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn ansi_quotes_set_by_the_dump_is_followed() {
    // mariadb-dump --compatible=ansi: names in double quotes once the dump sets ANSI.
    let v = verdicts("/*!40101 SET @OLD_SQL_MODE=@@SQL_MODE, SQL_MODE='NO_AUTO_VALUE_ON_ZERO,ANSI' */;\n\
CREATE DATABASE /*!32312 IF NOT EXISTS*/ \"forum\";\nUSE \"forum\";\n\
CREATE TABLE \"t\" (\"id\" int NOT NULL, \"a\" text DEFAULT 'it\\'s \\\"q\\\"', PRIMARY KEY (\"id\"));\n\
INSERT INTO \"t\" VALUES (1,'it\\'s \\\"q\\\" \\\\ x; DROP DATABASE victim');\n\
/*!40101 SET SQL_MODE=@OLD_SQL_MODE */;\nINSERT INTO t VALUES (2, \"x\\\"y\");\n");
    assert!(v.iter().all(|l| l.ends_with("=> ok")), "{v:#?}");
    assert_eq!(v.len(), 7, "{v:#?}");
    // Another schema in double quotes is a name like any other.
    let v = verdicts("SET sql_mode = 'ANSI_QUOTES';\nUSE \"victim\";\nINSERT INTO \"victim\".\"t\" VALUES (1);\n");
    assert!(
        v[1].ends_with("switches to schema `victim`, which is not the dump's"),
        "{v:?}"
    );
    assert!(
        v[2].ends_with("names schema `victim`, which is not the dump's"),
        "{v:?}"
    );
    // A backslash inside a double-quoted name: the client would read it as an escape.
    let v = verdicts("SET sql_mode = 'ANSI_QUOTES';\nINSERT INTO \"t\\\" VALUES (1);\n");
    assert!(
        v[1].contains("holds a `\\` inside a double-quoted name under ANSI_QUOTES"),
        "{v:?}"
    );
}
