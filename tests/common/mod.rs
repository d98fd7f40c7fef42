//! Helpers shared by the integration tests: running the built binary and creating schemas.
#![allow(dead_code)]

pub mod diff;
pub mod legacy;

use myrecode::db::connect::ConnectionConfig;
use sqlx::Executor;
use std::process::{Command, Output, Stdio};

/// Runs the built `myrecode` with `args`, the given URL in MYSQL_URL, and no stdin.
pub fn myrecode(url: Option<&str>, args: &[&str]) -> Output {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL");
    if let Some(u) = url {
        cmd.env("MYSQL_URL", u);
    }
    cmd.output().expect("the myrecode binary runs")
}

/// How long each killed run lives, repeatably: `life(lo, span)` is `lo` plus up to `span`
/// milliseconds, from an xorshift sequence started at `seed`.
pub fn lives(seed: u64) -> impl FnMut(u64, u64) -> u64 {
    let mut x = seed;
    move |lo, span| {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        lo + x % span
    }
}

/// Stdout and stderr as text.
pub fn texts(out: &Output) -> (String, String) {
    (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Runs each `;`-terminated statement of `sql` (one per line group) on `cfg`.
pub async fn exec_script(cfg: &ConnectionConfig, statements: &[&str]) {
    let mut c = cfg.connect_one().await.expect("connect");
    for s in statements {
        c.execute(*s).await.unwrap_or_else(|e| panic!("{s}: {e}"));
    }
}
