//! What a dump holds, read from its text before a byte of it is sent to a server: the schemas
//! it creates or switches to (`CREATE DATABASE`, `USE`), the tables it creates (`CREATE
//! TABLE`, per schema), the tables it names otherwise (`DROP TABLE`, `INSERT INTO`, `LOCK
//! TABLES`, mysqldump's `-- Table structure for table` comments), and whether it ends with
//! the `-- Dump completed` line mysqldump and mariadb-dump write last.
//!
//! Pure: lines in, an [`Outline`] out. Statements are recognised at the start of a line, as
//! dump programs write them; their data never holds a raw newline (they write `\n`), so a
//! value cannot pass for a statement. Version comments (`/*!32312 IF NOT EXISTS*/`) are read
//! as the code they are; other comments are skipped.

/// The line mysqldump and mariadb-dump end every dump with; a dump without it was cut short.
pub const TRAILER: &str = "-- Dump completed";

/// How many bytes of a line are read: statement heads are short, and INSERT lines can be
/// megabytes long.
const HEAD: usize = 4096;

/// A table in a schema.
pub type Qualified = (String, String);

/// What a dump holds, as far as its text says.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Outline {
    /// Schemas the dump creates or `USE`s, and the default one when a table goes there; in order.
    pub schemas: Vec<String>,
    /// Tables the dump creates, (schema, table), in order.
    pub tables: Vec<Qualified>,
    /// Tables the dump names without creating them (a dump cut before their `CREATE TABLE`).
    pub never_created: Vec<Qualified>,
    /// Views the dump creates (mysqldump drops a view's name as a table first).
    pub views: Vec<Qualified>,
    /// Whether the last non-blank line is the [`TRAILER`].
    pub complete: bool,
}

/// Reads a dump line by line into an [`Outline`].
#[derive(Debug)]
pub struct Outliner {
    default: String,
    current: Option<String>,
    named: Vec<Qualified>,
    last_line: String,
    out: Outline,
}

impl Outliner {
    /// Starts an outline; tables before any `USE` go into `default` (the client's database).
    pub fn new(default: &str) -> Self {
        Self {
            default: default.to_string(),
            current: None,
            named: Vec::new(),
            last_line: String::new(),
            out: Outline::default(),
        }
    }

    /// Reads one line of the dump (without or with its newline).
    pub fn line(&mut self, bytes: &[u8]) {
        let head = String::from_utf8_lossy(&bytes[..bytes.len().min(HEAD)]);
        let text = head.trim();
        if text.is_empty() {
            return;
        }
        self.last_line = text.to_string();
        if let Some(rest) = text.strip_prefix("-- Table structure for table ") {
            if let Some(Token::Name(t)) = tokens(rest).into_iter().next() {
                let s = self.schema();
                self.name(s, t);
            }
            return;
        }
        if text.starts_with("--") || text.starts_with('#') {
            return;
        }
        self.statement(&tokens(text));
    }

    /// The outline of everything read.
    pub fn finish(mut self) -> Outline {
        self.out.complete = self.last_line.starts_with(TRAILER);
        self.out.never_created = self
            .named
            .into_iter()
            .filter(|t| !self.out.tables.contains(t) && !self.out.views.contains(t))
            .collect();
        self.out
    }

    fn schema(&self) -> String {
        self.current.clone().unwrap_or_else(|| self.default.clone())
    }

    fn add_schema(&mut self, s: &str) {
        if !self.out.schemas.iter().any(|x| x == s) {
            self.out.schemas.push(s.to_string());
        }
    }

    fn name(&mut self, schema: String, table: String) {
        let t = (schema, table);
        if !self.named.contains(&t) {
            self.named.push(t);
        }
    }

    fn statement(&mut self, t: &[Token]) {
        let mut i: usize;
        let kw = |i: usize, w: &str| matches!(t.get(i), Some(Token::Word(x)) if x.eq_ignore_ascii_case(w));
        let skip = |i: &mut usize, words: &[&str]| {
            if words.iter().enumerate().all(|(k, w)| kw(*i + k, w)) {
                *i += words.len();
            }
        };
        if kw(0, "USE") {
            if let Some(s) = name_at(t, 1) {
                self.add_schema(&s);
                self.current = Some(s);
            }
            return;
        }
        // A view: `CREATE [OR REPLACE] [ALGORITHM=…] [DEFINER=…] [SQL SECURITY …] VIEW name`,
        // which mysqldump spreads over lines, the last starting `/*!50001 VIEW name`.
        let view_at = if kw(0, "VIEW") {
            Some(0)
        } else if kw(0, "CREATE") {
            (1..t.len().min(24))
                .take_while(|k| !kw(*k, "AS") && !kw(*k, "TABLE"))
                .find(|k| kw(*k, "VIEW"))
        } else {
            None
        };
        if let Some(v) = view_at {
            if let Some(q) = self.qualified(t, v + 1) {
                if !self.out.views.contains(&q) {
                    self.out.views.push(q);
                }
            }
            return;
        }
        if kw(0, "CREATE") {
            i = 1;
            skip(&mut i, &["OR", "REPLACE"]);
            if kw(i, "DATABASE") || kw(i, "SCHEMA") {
                i += 1;
                skip(&mut i, &["IF", "NOT", "EXISTS"]);
                if let Some(s) = name_at(t, i) {
                    self.add_schema(&s);
                }
            } else if kw(i, "TABLE") {
                i += 1;
                skip(&mut i, &["IF", "NOT", "EXISTS"]);
                if let Some((s, n)) = self.qualified(t, i) {
                    self.add_schema(&s);
                    let q = (s, n);
                    if !self.out.tables.contains(&q) {
                        self.out.tables.push(q);
                    }
                }
            }
            return;
        }
        let at = if kw(0, "DROP") && kw(1, "TABLE") {
            i = 2;
            skip(&mut i, &["IF", "EXISTS"]);
            Some(i)
        } else if kw(0, "INSERT") || kw(0, "REPLACE") {
            i = 1;
            skip(&mut i, &["IGNORE"]);
            skip(&mut i, &["INTO"]);
            Some(i)
        } else if kw(0, "LOCK") && kw(1, "TABLES") {
            Some(2)
        } else {
            None
        };
        if let Some(at) = at {
            if let Some((s, n)) = self.qualified(t, at) {
                self.name(s, n);
            }
        }
    }

    /// `name` or `schema.name` at `i`, with the current schema filled in.
    fn qualified(&self, t: &[Token], i: usize) -> Option<Qualified> {
        let first = name_at(t, i)?;
        match (t.get(i + 1), name_at(t, i + 2)) {
            (Some(Token::Punct('.')), Some(second)) => Some((first, second)),
            _ => Some((self.schema(), first)),
        }
    }
}

/// Outlines a whole dump given as text (for tests and small dumps).
pub fn outline_text(text: &[u8], default: &str) -> Outline {
    let mut o = Outliner::new(default);
    for line in text.split(|b| *b == b'\n') {
        o.line(line);
    }
    o.finish()
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Token {
    Word(String),
    Name(String),
    Punct(char),
}

fn name_at(t: &[Token], i: usize) -> Option<String> {
    match t.get(i)? {
        Token::Word(w) | Token::Name(w) => Some(w.clone()),
        Token::Punct(_) => None,
    }
}

/// The tokens of a statement's head: words, quoted names (backticks, or double quotes) and punctuation; a
/// version comment's markers vanish (its text runs), other comments are skipped.
fn tokens(s: &str) -> Vec<Token> {
    let mut out = Vec::new();
    let c: Vec<char> = s.chars().collect();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch == '/' && c.get(i + 1) == Some(&'*') {
            if c.get(i + 2) == Some(&'!') {
                i += 3;
                while i < c.len() && c[i].is_ascii_digit() {
                    i += 1;
                }
            } else {
                i += 2;
                while i < c.len() && !(c[i] == '*' && c.get(i + 1) == Some(&'/')) {
                    i += 1;
                }
                i += 2;
            }
        } else if ch == '*' && c.get(i + 1) == Some(&'/') {
            i += 2;
        } else if ch == '`' || ch == '"' {
            // `"` quotes a name in a dump written under ANSI_QUOTES (mariadb-dump
            // --compatible=ansi); a statement head holds no double-quoted string otherwise.
            let mut name = String::new();
            i += 1;
            while i < c.len() {
                if c[i] == ch {
                    if c.get(i + 1) == Some(&ch) {
                        name.push(ch);
                        i += 2;
                        continue;
                    }
                    break;
                }
                name.push(c[i]);
                i += 1;
            }
            i += 1;
            out.push(Token::Name(name));
        } else if ch.is_alphanumeric() || ch == '_' || ch == '$' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_' || c[i] == '$') {
                i += 1;
            }
            out.push(Token::Word(c[start..i].iter().collect()));
        } else {
            out.push(Token::Punct(ch));
            i += 1;
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(s: &str, t: &str) -> Qualified {
        (s.to_string(), t.to_string())
    }

    #[test]
    fn a_databases_dump_names_its_schemas_and_tables() {
        let dump = b"-- MariaDB dump 10.19\n\
/*!40101 SET NAMES utf8mb4 */;\n\
CREATE DATABASE /*!32312 IF NOT EXISTS*/ `forum` /*!40100 DEFAULT CHARACTER SET latin1 */;\n\
\n\
USE `forum`;\n\
-- Table structure for table `posts`\n\
DROP TABLE IF EXISTS `posts`;\n\
CREATE TABLE `posts` (\n  `id` int(11) NOT NULL\n) ENGINE=InnoDB;\n\
LOCK TABLES `posts` WRITE;\n\
INSERT INTO `posts` VALUES (1),(2);\n\
UNLOCK TABLES;\n\
CREATE DATABASE IF NOT EXISTS shop;\n\
USE shop;\n\
CREATE TABLE IF NOT EXISTS `we``ird` (a INT);\n\
CREATE TABLE `forum`.`users` (a INT);\n\
-- Dump completed on 2024-05-01 10:00:00\n\n";
        let o = outline_text(dump, "rehearsal");
        assert_eq!(o.schemas, vec!["forum", "shop"]);
        assert_eq!(
            o.tables,
            vec![
                q("forum", "posts"),
                q("shop", "we`ird"),
                q("forum", "users")
            ]
        );
        assert!(o.never_created.is_empty(), "{o:?}");
        assert!(o.complete);
    }

    #[test]
    fn an_ansi_dump_names_its_schemas_and_tables_in_double_quotes() {
        let o = outline_text(
            b"/*!40101 SET SQL_MODE='NO_AUTO_VALUE_ON_ZERO,ANSI' */;\nCREATE DATABASE /*!32312 IF NOT EXISTS*/ \"shop\";\nUSE \"shop\";\n\
              CREATE TABLE \"a\"\"b\" (\n  \"id\" int\n);\nINSERT INTO \"a\"\"b\" VALUES (1);\n-- Dump completed on 2026-01-01\n",
            "rehearsal",
        );
        assert_eq!(o.schemas, vec!["shop".to_string()]);
        assert_eq!(o.tables, vec![q("shop", "a\"b")]);
        assert!(o.never_created.is_empty() && o.complete, "{o:?}");
    }

    #[test]
    fn a_dump_without_use_goes_to_the_default_schema() {
        let o = outline_text(
            b"CREATE TABLE t (a INT);\nINSERT INTO t VALUES (1);\n-- Dump completed\n",
            "rehearsal",
        );
        assert_eq!(o.schemas, vec!["rehearsal"]);
        assert_eq!(o.tables, vec![q("rehearsal", "t")]);
        assert!(o.complete);
    }

    #[test]
    fn a_dump_cut_between_statements_is_incomplete_and_names_what_it_never_created() {
        let o = outline_text(
            b"USE `f`;\nCREATE TABLE `a` (x INT);\nINSERT INTO `a` VALUES (1);\n\
-- Table structure for table `b`\nDROP TABLE IF EXISTS `b`;\n",
            "rehearsal",
        );
        assert!(!o.complete);
        assert_eq!(o.tables, vec![q("f", "a")]);
        assert_eq!(o.never_created, vec![q("f", "b")]);
    }

    #[test]
    fn temporary_tables_views_and_comments_create_nothing() {
        let o = outline_text(
            b"/* CREATE TABLE no (a INT) */\n-- CREATE TABLE no2\n\
CREATE TEMPORARY TABLE tmp (a INT);\n/*!50001 CREATE VIEW `v` AS SELECT 1 AS `a` */;\n\
-- Dump completed on x\n",
            "d",
        );
        assert!(o.tables.is_empty(), "{o:?}");
        assert!(o.schemas.is_empty(), "{o:?}");
        assert!(o.complete);
    }

    #[test]
    fn a_view_dropped_as_a_table_first_is_created_not_missing() {
        let o = outline_text(
            b"USE `f`;\nCREATE TABLE `p` (a INT);\n-- Temporary table structure for view `v`\nDROP TABLE IF EXISTS `v`;\n\
/*!50001 DROP VIEW IF EXISTS `v`*/;\n/*!50001 CREATE VIEW `v` AS SELECT\n 1 AS `a` */;\n\
/*!50001 CREATE ALGORITHM=UNDEFINED */\n/*!50013 DEFINER=`root`@`localhost` SQL SECURITY DEFINER */\n\
/*!50001 VIEW `v` AS select `p`.`a` AS `a` from `p` */;\nCREATE OR REPLACE VIEW w AS SELECT 1;\n-- Dump completed\n",
            "d",
        );
        assert_eq!(o.tables, vec![q("f", "p")]);
        assert_eq!(o.views, vec![q("f", "v"), q("f", "w")]);
        assert!(o.never_created.is_empty(), "{o:?}");
    }

    #[test]
    fn the_trailer_must_be_the_last_line() {
        let o = outline_text(b"-- Dump completed\nCREATE TABLE t (a INT);\n", "d");
        assert!(!o.complete);
    }
}
