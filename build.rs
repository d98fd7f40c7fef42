//! Records the commit the binary is built from, for `myrecode --version`: `MYRECODE_COMMIT`
//! from the environment (a package built outside a git checkout says it), else
//! `git rev-parse`, else `unknown`. Reruns when the checked-out commit moves.

use std::process::Command;

fn git(args: &[&str]) -> Option<String> {
    let out = Command::new("git").args(args).output().ok()?;
    let text = String::from_utf8(out.stdout).ok()?;
    (out.status.success() && !text.trim().is_empty()).then(|| text.trim().to_string())
}

fn main() {
    println!("cargo:rerun-if-env-changed=MYRECODE_COMMIT");
    // The files that move with a commit: HEAD, the branch it names, packed refs. Only those
    // there: cargo takes a missing one for changed, and reran this script (and rebuilt the
    // crate and every test) on each build of a checkout without packed refs.
    let watch = |p: String| {
        if std::path::Path::new(&p).exists() {
            println!("cargo:rerun-if-changed={p}");
        }
    };
    for path in ["HEAD", "packed-refs"] {
        if let Some(p) = git(&["rev-parse", "--git-path", path]) {
            watch(p);
        }
    }
    if let Some(branch) = git(&["symbolic-ref", "-q", "HEAD"]) {
        if let Some(p) = git(&["rev-parse", "--git-path", &branch]) {
            watch(p);
        }
    }
    let commit = std::env::var("MYRECODE_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| git(&["rev-parse", "--short=12", "HEAD"]))
        .unwrap_or_else(|| "unknown".into());
    println!("cargo:rustc-env=MYRECODE_COMMIT={commit}");
}
