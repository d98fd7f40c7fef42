//! What the bench examples share: the Russian seed texts, argument helpers, and running a child
//! process with its wall time and peak RSS measured.

use anyhow::{anyhow, bail, Context, Result};
use myrecode::codec::{self, Encoding};
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Russian values a forum or shop holds; every one fits cp1251, KOI8-R and CP866.
pub const RUSSIAN: &[&str] = &[
    "Привет всем! Подскажите, где купить запчасти для стиральной машины?",
    "Москва, ул. Садовая-Кудринская, д. 11, кв. 4",
    "Иванов Сергей Петрович",
    "Спасибо за быстрый ответ, всё заработало после перезагрузки.",
    "Доставка по Санкт-Петербургу занимает два рабочих дня.",
    "Новосибирск, проспект Карла Маркса, 57",
    "Кузнецова Анна Владимировна",
    "Не могу войти в личный кабинет: пишет, что пароль неверный.",
    "Куплю велосипед в хорошем состоянии, недорого.",
    "Екатеринбург, ул. Малышева, дом 36, офис 210",
    "Отличный магазин, заказываю уже третий раз.",
    "Модератор удалил мою тему без объяснения причин.",
    "Цена указана с учётом НДС и доставки до подъезда.",
    "Кто-нибудь знает, когда откроется новая станция метро?",
    "Сегодня вечером будет сильный ветер и дождь со снегом.",
];

/// Bytes of `text` in `enc` (the seed texts are chosen to fit every encoding used).
pub fn encode(enc: Encoding, text: &str) -> Vec<u8> {
    codec::encode(enc, text).unwrap_or_else(|e| panic!("seed text {text:?} in {enc:?}: {e}"))
}

/// A positive count given to `flag` (underscores allowed: `1_000_000`); `usage` goes into errors.
pub fn parse_count(flag: &str, v: Option<String>, usage: &str) -> Result<i64> {
    let v = v.ok_or_else(|| anyhow!("{flag} needs a value\n{usage}"))?;
    let n: i64 = v
        .replace('_', "")
        .parse()
        .with_context(|| format!("{flag} {v}: not a number\n{usage}"))?;
    if n < 1 {
        bail!("{flag} {v}: must be at least 1");
    }
    Ok(n)
}

/// `target/release/myrecode`: examples live in `target/release/examples/`.
pub fn default_bin() -> Result<PathBuf> {
    let exe = std::env::current_exe().context("cannot find this example's own path")?;
    let dir = exe
        .parent()
        .and_then(Path::parent)
        .ok_or_else(|| anyhow!("{} has no parent directory", exe.display()))?;
    Ok(dir.join("myrecode"))
}

/// Fails with the build command when the myrecode binary is missing.
pub fn check_bin(bin: &Path) -> Result<()> {
    if !bin.is_file() {
        bail!(
            "the myrecode binary is missing at {}. Fix: `cargo build --release --bin myrecode` \
             (with the same CARGO_TARGET_DIR), or pass --bin PATH",
            bin.display()
        );
    }
    Ok(())
}

/// What one child process cost: wall time, peak RSS, exit code.
#[derive(Debug, Clone, Copy)]
pub struct ChildCost {
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// The child's own `ru_maxrss`, KiB.
    pub max_rss_kib: i64,
    /// The child's CPU time, user + system.
    pub cpu: Duration,
    /// Its exit code.
    pub code: i32,
}

/// `bin args` with `MYSQL_URL` set and colours off: the myrecode child the benches run.
pub fn myrecode_command(bin: &Path, args: &[&str], url: &str) -> Command {
    let mut cmd = Command::new(bin);
    cmd.args(args).env("MYSQL_URL", url).env("NO_COLOR", "1");
    cmd
}

/// Runs `cmd`, output to `log`, and waits with `wait4` for its own rusage.
pub fn measure(mut cmd: Command, log: &Path) -> Result<ChildCost> {
    let out = std::fs::File::create(log)?;
    let err = out.try_clone()?;
    let what = format!("{:?}", cmd.get_program());
    let started = Instant::now();
    let child = cmd
        .stdin(Stdio::null())
        .stdout(out)
        .stderr(err)
        .spawn()
        .with_context(|| format!("cannot start {what}"))?;
    let pid = child.id() as libc::pid_t;
    let mut status: libc::c_int = 0;
    // SAFETY: a zeroed rusage is a valid value; wait4 fills it for our own child `pid`.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    let r = loop {
        // SAFETY: pid is our child, not yet reaped (std's Child is never waited on here).
        let r = unsafe { libc::wait4(pid, &mut status, 0, &mut usage) };
        if r == -1 && std::io::Error::last_os_error().kind() == std::io::ErrorKind::Interrupted {
            continue;
        }
        break r;
    };
    let wall = started.elapsed();
    if r != pid {
        bail!("wait4({pid}) failed: {}", std::io::Error::last_os_error());
    }
    let st = std::process::ExitStatus::from_raw(status);
    let code = st.code().ok_or_else(|| anyhow!("{what} died: {st}"))?;
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    Ok(ChildCost {
        wall,
        max_rss_kib: usage.ru_maxrss,
        cpu: tv(usage.ru_utime) + tv(usage.ru_stime),
        code,
    })
}

/// The last `n` lines of a child's log, with any URL password masked.
pub fn tail(log: &Path, n: usize) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    myrecode::db::redact::redact_urls(&lines[lines.len().saturating_sub(n)..].join("\n"))
}

/// The trimmed stdout of a small command (`date`, `nproc`), or `?`.
pub fn command_line(cmd: &str, args: &[&str]) -> String {
    Command::new(cmd)
        .args(args)
        .output()
        .ok()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_else(|| "?".into())
}

/// Runs the statement `make` builds, building and running it again while the server asks
/// for a retry (1213 deadlock, 1205 lock wait timeout: two seeding connections inserting
/// into one table with a secondary index deadlock now and then), at most five times.
#[allow(dead_code)] // the benches that seed over one connection do not need it
pub async fn execute_retrying<'q, F>(c: &mut sqlx::MySqlConnection, mut make: F) -> Result<()>
where
    F: FnMut() -> sqlx::query::Query<'q, sqlx::MySql, sqlx::mysql::MySqlArguments>,
{
    let mut tries = 0;
    loop {
        match make().execute(&mut *c).await {
            Ok(_) => return Ok(()),
            Err(e) => {
                let number = e
                    .as_database_error()
                    .and_then(|d| d.try_downcast_ref::<sqlx::mysql::MySqlDatabaseError>())
                    .map(|m| m.number());
                let again = matches!(number, Some(1213 | 1205));
                if !again || tries >= 5 {
                    return Err(e.into());
                }
                tries += 1;
                tokio::time::sleep(Duration::from_millis(50 * tries)).await;
            }
        }
    }
}
