//! Loads a SQL dump, plain or gzip, into a server through the `mariadb`/`mysql` client: the
//! program dumps are written for (`DELIMITER` around triggers and routines, `/*!…*/`
//! conditional comments, `SET NAMES`, `USE`), so they load here as they would by hand.
//!
//! The password goes to the client in a private option file, never on its command line
//! (where `ps` shows it) nor in its environment.

use super::guard::{Guard, Refusal};
use super::outline::{Outline, Outliner};
use super::statements::Splitter;
use crate::db::connect::ConnectionConfig;
use crate::db::sqltext::Mode;
use anyhow::{anyhow, bail, Context, Result};
use std::io::{BufRead, BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// The gzip magic number: a dump is unpacked when it starts with it, whatever its name.
const GZIP_MAGIC: [u8; 2] = [0x1f, 0x8b];

/// Opens a dump for reading, unpacking gzip on the fly; fails early on an unreadable file.
pub fn open(path: &Path) -> Result<Box<dyn Read + Send>> {
    let mut file = std::fs::File::open(path).with_context(|| {
        format!(
            "cannot read the dump {}. Fix: give the path of a .sql or .sql.gz file (mysqldump or mariadb-dump output)",
            path.display()
        )
    })?;
    let mut head = [0u8; 2];
    let n = file.read(&mut head)?;
    let gzip = n == 2 && head == GZIP_MAGIC;
    let reader = BufReader::new(std::io::Cursor::new(head[..n].to_vec()).chain(file));
    Ok(if gzip {
        Box::new(BufReader::new(flate2::read::MultiGzDecoder::new(reader)))
    } else {
        Box::new(reader)
    })
}

/// The longest line (and statement) a dump may have: mysqldump and mariadb-dump write rows
/// in lines of at most `--net-buffer-length` (1 MiB by default), and the client sends no
/// statement over its `max_allowed_packet` (16 MiB by default); a longer one is refused after
/// this many bytes, so a small gzip holding one endless line cannot fill the memory.
pub const MAX_LINE: usize = 64 << 20;

/// A line past this size is given its whole bound at once (see [`each_line`]).
const LONG_LINE: usize = 4 << 20;

/// Reads the lines of the dump at `path` (unpacking gzip) into `f`, each with its newline,
/// none longer than `max` bytes: a longer one stops the reading with an error naming it.
pub fn each_line(path: &Path, max: usize, mut f: impl FnMut(&[u8])) -> Result<()> {
    let mut reader = BufReader::new(open(path)?);
    let mut line = Vec::new();
    let mut number = 0usize;
    let broken = || {
        format!(
            "reading the dump {} failed. Fix: check that the file is whole (gzip -t for a .gz)",
            path.display()
        )
    };
    loop {
        line.clear();
        number += 1;
        loop {
            let buf = reader.fill_buf().with_context(broken)?;
            if buf.is_empty() {
                break;
            }
            let (take, ends) = match buf.iter().position(|b| *b == b'\n') {
                Some(p) => (p + 1, true),
                None => (buf.len(), false),
            };
            if line.len() + take > max {
                bail!(too_long(path, number, max));
            }
            if line.len() + take > line.capacity() && line.len() + take > LONG_LINE {
                // A long line grows to its bound in one allocation, not by doublings whose
                // freed halves the allocator may hold on to under load (a 1.5 GiB line
                // reached 430 MB of RSS on a loaded machine, 115 MB on a quiet one).
                line.reserve_exact(max - line.len());
            }
            line.extend_from_slice(&buf[..take]);
            reader.consume(take);
            if ends {
                break;
            }
        }
        if line.is_empty() {
            return Ok(());
        }
        f(&line);
    }
}

/// Why a dump with a line over `max` bytes is refused.
pub fn too_long(path: &Path, line: usize, max: usize) -> String {
    format!(
        "the dump {} has a line longer than {} MiB (line {line}), more than mysqldump or mariadb-dump write and than the client sends; \
         it was not read further and nothing was sent. Fix: dump again with mysqldump/mariadb-dump (its default --net-buffer-length keeps rows apart), \
         and leave out a value that large",
        path.display(),
        max >> 20
    )
}

/// Reads the whole dump (unpacking gzip) into an [`Outline`] without sending anything anywhere;
/// tables before any `USE` count as `default`'s.
pub fn outline(path: &Path, default: &str) -> Result<Outline> {
    let mut outliner = Outliner::new(default);
    each_line(path, MAX_LINE, |line| outliner.line(line))?;
    Ok(outliner.finish())
}

/// Reads the whole dump through the [`Guard`], as the client would cut it, for a server
/// rehearse did not start: what it refuses, statement by statement (nothing is sent).
pub fn guard(path: &Path, own: &[String], others: &[String]) -> Result<Vec<Refusal>> {
    let mut guard = Guard::new(own, others, Mode::default());
    let mut splitter = Splitter::new(Mode::default(), MAX_LINE);
    let mut emit = |p| guard.piece(p);
    each_line(path, MAX_LINE, |line| splitter.line(line, &mut emit))?;
    splitter.finish(&mut emit);
    Ok(guard.refused)
}

/// The client program to load dumps with, or an error saying how to get one.
pub fn client() -> Result<PathBuf> {
    crate::db::throwaway::find_client().ok_or_else(|| {
        anyhow!(
            "neither the mariadb nor the mysql client program is on the PATH, and dumps are loaded with it. \
             Fix: `apt-get install -y mariadb-client` (mariadb-server brings it too)"
        )
    })
}

/// Streams `dump` into `database` on the server of `admin`; the dump's own `USE` statements
/// may load other schemas too. The client reads no local file (`--local-infile=0`), does not
/// reconnect (a new session would lose the state the guard followed), and starts in the
/// server's sql_mode without the modes that change how quotes are read, as the guard reads
/// the dump.
pub fn load(admin: &ConnectionConfig, database: &str, dump: &Path) -> Result<()> {
    let client = client()?;
    let mut reader = open(dump)?;
    let dir = tempfile::Builder::new()
        .prefix("myrecode-rehearse-")
        .tempdir()?;
    let cnf = dir.path().join("client.cnf");
    write_private(&cnf, &client_options(admin))?;
    let mut child = Command::new(&client)
        .arg(format!("--defaults-file={}", cnf.display()))
        .arg("--binary-mode")
        .arg("--batch")
        .arg("--local-infile=0")
        .arg("--skip-reconnect")
        .arg(format!(
            "--init-command={}",
            crate::db::sqlmode::clean_session_sql()
        ))
        .arg("--default-character-set=utf8mb4")
        .arg(database)
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start {}", client.display()))?;
    let mut stdin = child.stdin.take().expect("stdin was piped");
    let feeder = std::thread::spawn(move || -> std::io::Result<u64> {
        let n = std::io::copy(&mut reader, &mut stdin)?;
        stdin.flush()?;
        Ok(n)
    });
    let out = child.wait_with_output()?;
    let fed = feeder
        .join()
        .map_err(|_| anyhow!("the thread feeding the dump panicked"))?;
    let stderr = String::from_utf8_lossy(&out.stderr);
    let said: Vec<&str> = stderr
        .lines()
        .filter(|l| !l.trim().is_empty())
        .take(5)
        .collect();
    if !out.status.success() {
        bail!(
            "loading the dump {} failed: {}. Fix: check that it is complete SQL as mysqldump/mariadb-dump writes it (it must load with `mariadb < dump.sql`)",
            dump.display(),
            crate::db::redact::redact_urls(&said.join(" | "))
        );
    }
    if let Err(e) = fed {
        bail!(
            "reading the dump {} failed: {e}. Fix: check that the file is whole (gzip -t for a .gz)",
            dump.display()
        );
    }
    Ok(())
}

/// The `[client]` option file that points the client at `admin`.
pub fn client_options(admin: &ConnectionConfig) -> String {
    let mut o = String::from("[client]\n");
    let quoted = |v: &str| format!("\"{}\"", v.replace('\\', "\\\\").replace('"', "\\\""));
    o.push_str(&format!("user={}\n", quoted(&admin.user)));
    if let Some(p) = admin.password() {
        o.push_str(&format!("password={}\n", quoted(p)));
    }
    match &admin.socket {
        Some(s) => o.push_str(&format!("socket={}\n", quoted(s))),
        None => o.push_str(&format!(
            "host={}\nport={}\nprotocol=TCP\n",
            quoted(&admin.host),
            admin.port
        )),
    }
    o
}

fn write_private(path: &Path, text: &str) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    let mut f = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .open(path)?;
    f.write_all(text.as_bytes())?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gzip_is_recognised_by_its_bytes_not_its_name() {
        let dir = tempfile::tempdir().unwrap();
        let plain = dir.path().join("a.sql.gz");
        std::fs::write(&plain, "SELECT 1;\n").unwrap();
        let mut s = String::new();
        open(&plain).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "SELECT 1;\n");
        let packed = dir.path().join("b.sql");
        let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
        enc.write_all("CREATE TABLE t (a INT);\n".as_bytes())
            .unwrap();
        std::fs::write(&packed, enc.finish().unwrap()).unwrap();
        let mut s = String::new();
        open(&packed).unwrap().read_to_string(&mut s).unwrap();
        assert_eq!(s, "CREATE TABLE t (a INT);\n");
        let e = open(&dir.path().join("missing.sql"))
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("Fix:"), "{e}");
    }

    #[test]
    fn client_options_quote_the_password() {
        let c = ConnectionConfig::from_url("mysql://u:a%22b%5Cc@127.0.0.1:3307/").unwrap();
        let o = client_options(&c);
        assert!(o.contains("password=\"a\\\"b\\\\c\"\n"), "{o}");
        assert!(o.contains("port=3307\nprotocol=TCP\n"), "{o}");
    }
}
