//! A dump cut into the statements the `mariadb`/`mysql` client sends, one by one, as it
//! cuts them: at the current delimiter (`;`, or what a `DELIMITER` line sets), never inside
//! a string, a quoted name or a comment, with backslash escapes read as the session's
//! sql_mode says (the client follows the server's NO_BACKSLASH_ESCAPES status).
//!
//! Pure: lines in, statements out, through a callback that returns the sql_mode flags the
//! next statement is read under (a statement may change them). `/*!…*/` version comments are
//! code here, as they are for the server; a `DELIMITER` line inside an unfinished statement is
//! passed on as its own piece (see [`Piece::DelimiterInside`]) so the caller can refuse it:
//! where the client would read it is not certain.

use crate::db::sqltext::Mode;

/// The first line mariadb-dump writes since 10.11.8: the client's `\-` (sandbox mode: no
/// shell, no file commands) inside a comment no server runs.
pub const SANDBOX: &[u8] = b"/*M!999999\\- enable the sandbox mode */";

/// What the splitter hands on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Piece {
    /// One statement as the client sends it (without its delimiter), and the dump line it starts on.
    Statement {
        /// The statement's bytes.
        text: Vec<u8>,
        /// The line (from 1) of its first non-blank byte.
        line: usize,
    },
    /// A `DELIMITER` line met while a statement was unfinished, at this line.
    DelimiterInside(usize),
    /// A statement grew past the limit (it is dropped; the caller refuses the dump).
    TooLong(usize),
}

/// Cuts lines into [`Piece`]s.
#[derive(Debug)]
pub struct Splitter {
    delimiter: Vec<u8>,
    mode: Mode,
    buf: Vec<u8>,
    start: usize,
    line: usize,
    quote: Option<u8>,
    block_comment: bool,
    max: usize,
    too_long: bool,
    /// Whether the statement so far is only whitespace.
    blank: bool,
}

impl Splitter {
    /// A splitter with the `;` delimiter, reading under `mode`; statements over `max` bytes are
    /// reported as [`Piece::TooLong`].
    pub fn new(mode: Mode, max: usize) -> Self {
        Self {
            delimiter: b";".to_vec(),
            mode,
            buf: Vec::new(),
            start: 0,
            line: 0,
            quote: None,
            block_comment: false,
            max,
            too_long: false,
            blank: true,
        }
    }

    /// Reads one line (with or without its newline); `emit` gets each piece it ends and
    /// returns the sql_mode flags to read on with.
    pub fn line(&mut self, bytes: &[u8], emit: &mut impl FnMut(Piece) -> Mode) {
        self.line += 1;
        let idle = self.quote.is_none() && !self.block_comment;
        if idle {
            if let Some(d) = delimiter_command(bytes) {
                if self.blank {
                    self.buf.clear();
                    self.delimiter = d;
                } else {
                    self.mode = emit(Piece::DelimiterInside(self.line));
                }
                return;
            }
        }
        let mut i = 0;
        if idle && self.blank && bytes.starts_with(SANDBOX) {
            // The client's own command, which only takes rights away; the server never sees it.
            i = SANDBOX.len();
        }
        while i < bytes.len() {
            let c = bytes[i];
            if let Some(q) = self.quote {
                let escapes = !self.mode.no_backslash_escapes
                    && q != b'`'
                    && !(q == b'"' && self.mode.ansi_quotes);
                if c == b'\\' && escapes && i + 1 < bytes.len() {
                    self.push(&bytes[i..i + 2]);
                    i += 2;
                    continue;
                }
                if c == q {
                    self.quote = None;
                }
                self.push(&[c]);
                i += 1;
                continue;
            }
            if self.block_comment {
                if bytes[i..].starts_with(b"*/") {
                    self.block_comment = false;
                    self.push(b"*/");
                    i += 2;
                } else {
                    self.push(&[c]);
                    i += 1;
                }
                continue;
            }
            if bytes[i..].starts_with(&self.delimiter) {
                self.end(emit);
                i += self.delimiter.len();
                continue;
            }
            let next = bytes.get(i + 1).copied();
            let line_comment = c == b'#'
                || (c == b'-'
                    && next == Some(b'-')
                    && bytes.get(i + 2).is_none_or(|d| *d <= 32 || *d == 127));
            if line_comment {
                // The rest of the line is a comment (its newline still ends it).
                let end = bytes[i..]
                    .iter()
                    .position(|b| *b == b'\n')
                    .map_or(bytes.len(), |p| i + p);
                self.push(&bytes[i..end]);
                i = end;
                continue;
            }
            if c == b'/' && next == Some(b'*') {
                let code = matches!(bytes.get(i + 2), Some(b'!'))
                    || (bytes.get(i + 2) == Some(&b'M') && bytes.get(i + 3) == Some(&b'!'));
                if !code {
                    self.block_comment = true;
                }
                self.push(b"/*");
                i += 2;
                continue;
            }
            if matches!(c, b'\'' | b'"' | b'`') {
                self.quote = Some(c);
            }
            self.push(&[c]);
            i += 1;
        }
    }

    /// The statement left without a delimiter at the end of the dump (the client sends it too).
    pub fn finish(mut self, emit: &mut impl FnMut(Piece) -> Mode) {
        self.end(emit);
    }

    fn push(&mut self, b: &[u8]) {
        if self.blank && !b.iter().all(u8::is_ascii_whitespace) {
            self.blank = false;
            self.start = self.line;
        }
        if self.too_long {
            return;
        }
        if self.buf.len() + b.len() > self.max {
            self.too_long = true;
            self.buf = Vec::new();
            return;
        }
        self.buf.extend_from_slice(b);
    }

    fn end(&mut self, emit: &mut impl FnMut(Piece) -> Mode) {
        if self.too_long {
            self.too_long = false;
            self.mode = emit(Piece::TooLong(self.start));
        } else if !self.blank {
            let text = std::mem::take(&mut self.buf);
            self.mode = emit(Piece::Statement {
                text,
                line: self.start,
            });
        }
        self.buf.clear();
        self.blank = true;
    }
}

/// The new delimiter when `line` is the client's `DELIMITER x` command.
fn delimiter_command(line: &[u8]) -> Option<Vec<u8>> {
    let t = line.trim_ascii();
    if t.len() < 10 || !t[..9].eq_ignore_ascii_case(b"delimiter") || !t[9].is_ascii_whitespace() {
        return None;
    }
    let arg = t[10..].trim_ascii();
    let end = arg
        .iter()
        .position(u8::is_ascii_whitespace)
        .unwrap_or(arg.len());
    (end > 0).then(|| arg[..end].to_vec())
}

/// Cuts a whole text under a fixed mode (for tests).
pub fn split(text: &[u8], mode: Mode) -> Vec<Piece> {
    let mut s = Splitter::new(mode, usize::MAX);
    let mut out = Vec::new();
    let mut emit = |p: Piece| {
        out.push(p);
        mode
    };
    for line in text.split_inclusive(|b| *b == b'\n') {
        s.line(line, &mut emit);
    }
    s.finish(&mut emit);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(pieces: &[Piece]) -> Vec<String> {
        pieces
            .iter()
            .map(|p| match p {
                Piece::Statement { text, line } => {
                    format!("{line}: {}", String::from_utf8_lossy(text).trim())
                }
                other => format!("{other:?}"),
            })
            .collect()
    }

    #[test]
    fn statements_are_cut_at_the_delimiter_outside_strings_names_and_comments() {
        let dump = b"/*M!999999\\- enable the sandbox mode */ \n/*!40101 SET NAMES utf8mb4 */;\nINSERT INTO `a;b` VALUES ('x;y','it\\'s;'),(\"q;\");\n\
-- a comment; not a cut\n# nor this;\n/* nor; this */ SELECT 1; SELECT 2;\n";
        assert_eq!(
            texts(&split(dump, Mode::default())),
            vec![
                "2: /*!40101 SET NAMES utf8mb4 */",
                "3: INSERT INTO `a;b` VALUES ('x;y','it\\'s;'),(\"q;\")",
                "4: -- a comment; not a cut\n# nor this;\n/* nor; this */ SELECT 1",
                "6: SELECT 2",
            ]
        );
    }

    #[test]
    fn a_delimiter_line_changes_the_cut_and_one_inside_a_statement_is_reported() {
        let dump = b"DELIMITER ;;\nCREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET @a=1; END ;;\nDELIMITER ;\nSELECT 1\ndelimiter $$\n;\n";
        assert_eq!(
            texts(&split(dump, Mode::default())),
            vec![
                "2: CREATE TRIGGER t BEFORE INSERT ON x FOR EACH ROW BEGIN SET @a=1; END",
                "DelimiterInside(5)",
                "4: SELECT 1",
            ]
        );
    }

    #[test]
    fn backslashes_escape_unless_no_backslash_escapes() {
        let dump = b"INSERT INTO t VALUES ('\\'); DROP DATABASE d; -- ');\n";
        assert_eq!(split(dump, Mode::default()).len(), 1);
        let nbe = Mode {
            no_backslash_escapes: true,
            ansi_quotes: false,
        };
        assert_eq!(
            texts(&split(dump, nbe)),
            vec![
                "1: INSERT INTO t VALUES ('\\')",
                "1: DROP DATABASE d",
                "1: -- ');",
            ]
        );
    }

    #[test]
    fn a_statement_past_the_limit_is_reported_not_kept() {
        let mut s = Splitter::new(Mode::default(), 10);
        let mut out = Vec::new();
        let mut emit = |p: Piece| {
            out.push(p);
            Mode::default()
        };
        s.line(b"INSERT INTO t VALUES ('0123456789');\n", &mut emit);
        s.line(b"SELECT 1;\n", &mut emit);
        assert_eq!(texts(&out), vec!["TooLong(1)", "2: SELECT 1"]);
    }
}
