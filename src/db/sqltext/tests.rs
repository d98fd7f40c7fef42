//! Unit tests of `sqltext`, kept apart so the module reads on its own.

use super::*;
use LexErrorKind::*;

const fn m(ansi_quotes: bool, no_backslash_escapes: bool) -> Mode {
    Mode {
        ansi_quotes,
        no_backslash_escapes,
    }
}
const D: Mode = m(false, false);
const ANSI: Mode = m(true, false);
const NBE: Mode = m(false, true);

/// Undoes the latin1 reading of cp1251 Cyrillic (А..я sit at 0xC0..0xFF in cp1251).
fn cp1251(s: &str) -> String {
    let fix = |c: char| match c as u32 {
        0xC0..=0xFF => char::from_u32(c as u32 - 0xC0 + 0x410).unwrap_or(c),
        0xA8 => 'Ё',
        0xB8 => 'ё',
        _ => c,
    };
    s.chars().map(fix).collect()
}

fn recode(sql: &str, mode: Mode) -> String {
    rewrite_literals(sql, mode, |l| Some(cp1251(&l.value))).unwrap()
}

/// Each literal as `[+]introducer|N|-:value`, `+` marking a continuation.
fn lits(sql: &str, mode: Mode) -> Vec<String> {
    let toks = tokens(sql, mode).unwrap();
    let show = |l: &Literal| {
        let cont = if l.continuation { "+" } else { "" };
        let intro = l.introducer.as_deref();
        let intro = intro.unwrap_or(if l.national { "N" } else { "-" });
        format!("{cont}{intro}:{}", l.value)
    };
    toks.iter().filter_map(Token::literal).map(show).collect()
}

fn add(sql: &str) -> String {
    routine_add_charset(sql, D, "utf8mb4").unwrap()
}

#[test]
fn view_body_as_mariadb_prints_it() {
    let sql = "select `t`.`id` AS `id` from `shop`.`t` where `t`.`city` = 'Ìîñêâà'";
    let want = "select `t`.`id` AS `id` from `shop`.`t` where `t`.`city` = 'Москва'";
    assert_eq!(recode(sql, D), want);
}

#[test]
fn procedure_body_single_and_double_quotes() {
    let sql = "BEGIN\n  SELECT 'Ìîñêâà', \"Êèåâ \"\"ok\"\"\" INTO a, b;\nEND";
    let want = "BEGIN\n  SELECT 'Москва', \"Киев \"\"ok\"\"\" INTO a, b;\nEND";
    assert_eq!(recode(sql, D), want);
}

#[test]
fn escapes_are_decoded_and_reencoded() {
    let sql = r"SELECT 'it''s', 'a\'b', 'c:\\dir', '\%\_\0\Z\n\q', 'Ж\Ж'";
    let want = ["-:it's", "-:a'b", r"-:c:\dir", "-:\\%\\_\0\x1a\nq", "-:ЖЖ"];
    assert_eq!(lits(sql, D), want);
    let want = "SELECT 'it''s', 'a''b', 'c:\\\\dir', '\\\\%\\\\_\\0\x1a\nq', 'ЖЖ'";
    assert_eq!(recode(sql, D), want);
}

#[test]
fn dash_comment_needs_space_and_hash_runs_to_eol() {
    let sql = "SELECT 1 -- 'Ìîñ'\n, 2 --'Ìîñ'\n, 3 # it's 'Ìîñ'\n, 4--\n, '¸'";
    let want = "SELECT 1 -- 'Ìîñ'\n, 2 --'Мос'\n, 3 # it's 'Ìîñ'\n, 4--\n, 'ё'";
    assert_eq!(recode(sql, D), want);
}

#[test]
fn block_comments_hide_literals_executable_ones_do_not() {
    let sql = "/* 'Ìîñ' */ /*!50001 SELECT 'Ìîñ', '*/' */ /*M!100100 'Ìîñ'*/ /*!'Ìîñ'*/";
    let want = "/* 'Ìîñ' */ /*!50001 SELECT 'Мос', '*/' */ /*M!100100 'Мос'*/ /*!'Мос'*/";
    assert_eq!(recode(sql, D), want);
    let toks = tokens("/*!50001 x*/ */", D).unwrap();
    let kinds: Vec<_> = toks
        .iter()
        .map(|t| (t.kind.clone(), t.span.clone()))
        .collect();
    assert_eq!(kinds[0], (TokenKind::ExecOpen, 0..8));
    assert_eq!(kinds[3], (TokenKind::ExecClose, 10..12));
    assert_eq!(kinds[5], (TokenKind::Punct, 13..14));
}

#[test]
fn quoted_identifiers_and_variables_are_not_literals() {
    let sql = "SELECT `it's ``Ìîñ`` x` = 'Ìîñ', @'Ìîñ', @@sql_mode FROM t";
    let want = "SELECT `it's ``Ìîñ`` x` = 'Мос', @'Ìîñ', @@sql_mode FROM t";
    assert_eq!(recode(sql, D), want);
    let toks = tokens("`a``b`", D).unwrap();
    assert_eq!(toks[0].kind, TokenKind::QuotedIdent("a`b".into()));
}

#[test]
fn introducers() {
    let sql = "SELECT _latin1'Ìîñêâà', _LATIN1 \n'Ìîñ', _utf8mb4'Ìîñ', N'Ìîñ', _binary'Ìîñ', \
                   X'41', x'4142', 0x41, B'01', 0b01, _col 'Ìîñ'";
    let want = "SELECT _utf8mb4'Москва', _utf8mb4 \n'Мос', _utf8mb4'Мос', N'Мос', \
                    _binary'Ìîñ', X'41', x'4142', 0x41, B'01', 0b01, _col 'Мос'";
    let mut seen = Vec::new();
    let got = rewrite_literals(sql, D, |l| {
        seen.push(l.introducer.clone().unwrap_or(format!("{}", l.national)));
        Some(cp1251(&l.value))
    });
    assert_eq!(got.unwrap(), want);
    assert_eq!(seen, ["latin1", "latin1", "utf8mb4", "true", "false"]);
    let toks = tokens("0x41 0x4g 0X41", D).unwrap();
    let kinds: Vec<_> = toks.iter().map(|t| t.kind.clone()).collect();
    assert_eq!(kinds[0], TokenKind::HexBits);
    assert_eq!((&kinds[2], &kinds[4]), (&TokenKind::Word, &TokenKind::Word));
}

#[test]
fn untouched_literal_keeps_its_introducer() {
    let sql = "SELECT _latin1'abc', _cp1251'Ìîñ'";
    let got = rewrite_literals(sql, D, |l| {
        (l.introducer.as_deref() == Some("cp1251")).then(|| cp1251(&l.value))
    });
    assert_eq!(got.unwrap(), "SELECT _latin1'abc', _utf8mb4'Мос'");
}

#[test]
fn ansi_quotes_make_double_quotes_identifiers() {
    let sql = "SELECT \"Ìîñ\" FROM t WHERE c = 'Ìîñ' AND d = _latin1\"x\"";
    let want = "SELECT \"Ìîñ\" FROM t WHERE c = 'Мос' AND d = _latin1\"x\"";
    assert_eq!(recode(sql, ANSI), want);
    let toks = tokens("\"a\"\"b\"", ANSI).unwrap();
    assert_eq!(toks[0].kind, TokenKind::QuotedIdent("a\"b".into()));
}

#[test]
fn no_backslash_escapes_mode() {
    let sql = r"SELECT 'a\', 'Ìîñ\\', '\0'";
    assert_eq!(lits(sql, NBE), [r"-:a\", r"-:Ìîñ\\", r"-:\0"]);
    assert_eq!(recode(sql, NBE), r"SELECT 'a\', 'Мос\\', '\0'");
    assert_eq!(quote_literal("a'\0\\", '\'', NBE), "'a''\0\\'");
    assert_eq!(quote_literal("a\"\0\\", '"', D), r#""a""\0\\""#);
}

#[test]
fn unterminated_things_report_their_offset() {
    let cases = [
        ("SELECT 'abc", D, 7, UnterminatedString),
        (r"SELECT 'a\'", D, 7, UnterminatedString),
        ("SELECT _latin1 'a", D, 15, UnterminatedString),
        ("SELECT X'41", D, 7, UnterminatedString),
        ("SELECT `a", D, 7, UnterminatedIdentifier),
        ("SELECT \"a", ANSI, 7, UnterminatedIdentifier),
        ("SELECT @'a", D, 8, UnterminatedIdentifier),
        ("SELECT 1 /* x", D, 9, UnterminatedComment),
        ("SELECT 1 /*!50001 x", D, 9, UnterminatedComment),
    ];
    for (sql, mode, offset, kind) in cases {
        assert_eq!(tokens(sql, mode), Err(err(offset, kind)), "{sql}");
    }
    let rw = rewrite_literals("x = 'é", D, |_| None).unwrap_err();
    assert_eq!(rw.to_string(), "unterminated string literal at byte 4");
}

#[test]
fn adjacent_literals_share_the_introducer() {
    let sql = "SELECT _latin1'Ìî' /* c */ 'ñ', 'a' 'b', _binary'Ì' 'î', N'x'\n'y' , 'z'";
    let want = [
        "latin1:Ìî",
        "+latin1:ñ",
        "-:a",
        "+-:b",
        "binary:Ì",
        "+binary:î",
        "N:x",
        "+N:y",
        "-:z",
    ];
    assert_eq!(lits(sql, D), want);
    let want = "SELECT _utf8mb4'Мо' /* c */ 'с', 'a' 'b', _binary'Ì' 'î', N'x'\n'y' , 'z'";
    assert_eq!(recode(sql, D), want);
    // Only the continuation changes, yet the run's introducer must still become utf8mb4.
    let got = rewrite_literals("_latin1'a' 'Ì'", D, |l| {
        l.continuation.then(|| cp1251(&l.value))
    });
    assert_eq!(got.unwrap(), "_utf8mb4'a' 'М'");
}

const PROC: &str = "CREATE DEFINER=`root`@`localhost` PROCEDURE `orders_in`(\
        IN p_city VARCHAR(50), OUT n INT, INOUT p_kind ENUM('a','b'), p_note text, \
        IN p_old CHAR(3) CHARSET latin1, p_amt DECIMAL(10,2), p_nat NATIONAL VARCHAR(5), \
        p_bin varchar(3) BINARY)
    READS SQL DATA
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE a, b VARCHAR(10) DEFAULT 'x';
  DECLARE c CHAR; -- DECLARE x TEXT;
  DECLARE cur CURSOR FOR SELECT CHAR(65), city FROM t WHERE c = 'Новый';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  lbl: BEGIN
    declare v_label varchar(20) default 'Новый';
    Declare `v``q` LONG VARCHAR;
  END lbl;
END";

#[test]
fn procedure_params_and_declares_get_a_charset() {
    let want = "CREATE DEFINER=`root`@`localhost` PROCEDURE `orders_in`(\
        IN p_city VARCHAR(50) CHARACTER SET utf8mb4, OUT n INT, INOUT p_kind ENUM('a','b') \
        CHARACTER SET utf8mb4, p_note text CHARACTER SET utf8mb4, \
        IN p_old CHAR(3) CHARSET latin1, p_amt DECIMAL(10,2), p_nat NATIONAL VARCHAR(5), \
        p_bin varchar(3) BINARY)
    READS SQL DATA
BEGIN
  DECLARE done INT DEFAULT 0;
  DECLARE a, b VARCHAR(10) CHARACTER SET utf8mb4 DEFAULT 'x';
  DECLARE c CHAR CHARACTER SET utf8mb4; -- DECLARE x TEXT;
  DECLARE cur CURSOR FOR SELECT CHAR(65), city FROM t WHERE c = 'Новый';
  DECLARE CONTINUE HANDLER FOR NOT FOUND SET done = 1;
  lbl: BEGIN
    declare v_label varchar(20) CHARACTER SET utf8mb4 default 'Новый';
    Declare `v``q` LONG VARCHAR CHARACTER SET utf8mb4;
  END lbl;
END";
    assert_eq!(add(PROC), want);
    let types = routine_string_types(PROC, D).unwrap();
    let names: Vec<_> = types.iter().map(|t| (t.site, t.name.as_str())).collect();
    assert_eq!(names[3], (Site::Param, "p_old"));
    assert_eq!(names[4], (Site::Param, "p_bin"));
    assert_eq!(names[5], (Site::Variable, "a, b"));
    assert_eq!(names[8], (Site::Variable, "v`q"));
    assert_eq!(types[3].charset.as_deref(), Some("latin1"));
    assert_eq!(&PROC[types[3].explicit.clone().unwrap()], "CHARSET latin1");
    assert_eq!(&PROC[types[4].explicit.clone().unwrap()], "BINARY");
    assert_eq!(types[4].charset, None);
}

#[test]
fn function_returns_and_explicit_charsets() {
    let f = "CREATE DEFINER=`root`@`localhost` FUNCTION `f`(c varchar(50)) RETURNS VARCHAR(20)\n\
                 DETERMINISTIC\nRETURN (SELECT CHAR(65) FROM t WHERE city = c)";
    let want = "CREATE DEFINER=`root`@`localhost` FUNCTION `f`(c varchar(50) CHARACTER SET \
                    utf8mb4) RETURNS VARCHAR(20) CHARACTER SET utf8mb4\n\
                    DETERMINISTIC\nRETURN (SELECT CHAR(65) FROM t WHERE city = c)";
    assert_eq!(add(f), want);
    let shown = "CREATE FUNCTION f() RETURNS varchar(20) CHARSET latin1 \
                     COLLATE latin1_swedish_ci\nRETURN 'x'";
    assert_eq!(add(shown), shown);
    let t = &routine_string_types(shown, D).unwrap()[0];
    assert_eq!(
        (t.site, t.charset.as_deref()),
        (Site::Returns, Some("latin1"))
    );
    let clause = &shown[t.explicit.clone().unwrap()];
    assert_eq!(clause, "CHARSET latin1 COLLATE latin1_swedish_ci");
    let int = "CREATE FUNCTION f(a INT) RETURNS int(11) RETURN a";
    assert_eq!(add(int), int);
}

#[test]
fn triggers_mariadb_cursors_and_non_routines() {
    let trg = "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN DECLARE x TEXT; \
                   DECLARE cur CURSOR(p CHAR(2) CHARACTER SET utf8) FOR SELECT 1; \
                   DECLARE r ROW(a SET('x'), b INT); SET NEW.a = 'Ìîñ'; END";
    let want = "CREATE TRIGGER tr BEFORE INSERT ON t FOR EACH ROW BEGIN DECLARE x TEXT \
                    CHARACTER SET utf8mb4; \
                    DECLARE cur CURSOR(p CHAR(2) CHARACTER SET utf8) FOR SELECT 1; \
                    DECLARE r ROW(a SET('x') CHARACTER SET utf8mb4, b INT); SET NEW.a = 'Ìîñ'; END";
    assert_eq!(add(trg), want);
    let view = routine_add_charset("CREATE VIEW v AS SELECT 1", D, "utf8mb4");
    assert_eq!(view, Err(err(0, NotARoutine)));
}

#[test]
fn mode_from_sql_mode() {
    let mode = Mode::from_sql_mode("STRICT_TRANS_TABLES,ANSI_QUOTES,NO_BACKSLASH_ESCAPES");
    assert_eq!(mode, m(true, true));
    assert_eq!(Mode::from_sql_mode("NO_ENGINE_SUBSTITUTION"), D);
}

#[test]
fn truncations_never_panic_and_tokens_tile_the_text() {
    let inputs = [
        PROC,
        r"SELECT _latin1 'Ìî\'ñ' 'x', N'é', X'4', 0b1, 1.5e-3, 1abc, @'v', @@x.y -- c",
        "/*!50001 SELECT `a``b` */ /*M!1 '*/' */ # x\n\"q\"\"\" /* z */ 'é\\",
        "CREATE FUNCTION f(a ENUM('x', 'y'), b SET(\nRETURNS CHAR VARYING(3) CHARACTER SET",
        "DECLARE a, ; DECLARE DECLARE x CURSOR( ROW( LONG CHAR VARYING; DECLARE z TEXT COLLATE",
    ];
    for sql in inputs {
        for mode in [D, ANSI, NBE] {
            for cut in (0..=sql.len()).filter(|&k| sql.is_char_boundary(k)) {
                let part = &sql[..cut];
                if let Ok(toks) = tokens(part, mode) {
                    let mut end = 0;
                    for t in &toks {
                        assert_eq!(t.span.start, end, "gap in {part:?}");
                        end = t.span.end;
                    }
                    assert_eq!(end, part.len());
                    assert_eq!(rewrite_literals(part, mode, |_| None).unwrap(), part);
                }
                let _ = rewrite_literals(part, mode, |l| Some(l.value.clone()));
                let _ = routine_add_charset(part, mode, "utf8mb4");
            }
        }
    }
}
