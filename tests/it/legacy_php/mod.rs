//! A real legacy PHP application (`app.php`, run by Debian's `php-cli` with `php-mysql`)
//! through the switch: tables latin1, the application sets no charset (the server's default
//! handshake, latin1) and stores cp1251 bytes; it writes posts and reads pages, over mysqli
//! and PDO. `today.rs` shows what the cut-over does to it without the bridge; `bridge.rs`
//! what the job's bridge keeps working.

mod bridge;
mod revert;
mod set_names;
mod today;

use crate::common::legacy::RUSSIAN;
use myrecode::codec::{self, Encoding};
use myrecode::db::quote;
use myrecode::db::throwaway::{TestDatabase, ThrowawayServer};
use sqlx::Executor;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::sync::OnceLock;

/// The application's script.
const APP: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/it/legacy_php/app.php");
/// Posts seeded by the application before the job.
pub const SEEDED: usize = 60;
/// Pages of 10 posts the seeded posts fill.
pub const PAGES: usize = SEEDED / 10;

/// Fails (never skips) when `php` or its MySQL extensions are missing, with the install command.
fn php_present() {
    static CHECKED: OnceLock<Result<(), String>> = OnceLock::new();
    let checked = CHECKED.get_or_init(|| {
        let out = Command::new("php")
            .args([
                "-r",
                "exit(extension_loaded('mysqli') && extension_loaded('pdo_mysql') ? 0 : 3);",
            ])
            .output();
        match out {
            Ok(o) if o.status.success() => Ok(()),
            Ok(_) => Err("php has no mysqli or pdo_mysql extension".into()),
            Err(e) => Err(format!("no php on the PATH ({e})")),
        }
    });
    if let Err(e) = checked {
        panic!(
            "{e}: the switch's tests run a real PHP application. Fix: apt-get install php-cli php-mysql \
             (bash scripts/setup-server.sh does it)"
        );
    }
}

/// A server of the test's own (the bridge sets the global `init_connect`), a database on it
/// holding the legacy `posts` table, and the application's user (no SUPER: a plain account).
pub struct Shop {
    /// The server (kept alive for the test).
    pub _server: ThrowawayServer,
    /// The application's database.
    pub db: TestDatabase,
    /// The application's user and its password.
    pub user: (String, String),
}

impl Shop {
    /// Starts the server and creates the legacy table and the application's user.
    pub async fn open(hint: &str) -> Shop {
        Shop::open_with(hint, &[]).await
    }

    /// [`Shop::open`] on a server started with the options `opts`.
    pub async fn open_with(hint: &str, opts: &[&str]) -> Shop {
        Shop::open_declared(hint, opts, "latin1").await
    }

    /// [`Shop::open_with`], the table declared in `charset`.
    pub async fn open_declared(hint: &str, opts: &[&str], charset: &str) -> Shop {
        php_present();
        let opts: Vec<String> = opts.iter().map(|o| o.to_string()).collect();
        let server = ThrowawayServer::start_local_with(&opts)
            .unwrap_or_else(|e| panic!("a server of its own: {e:#}"));
        let db = server.fresh_database(hint).unwrap();
        let user = ("shopapp".to_string(), "Sh0p-app-pw".to_string());
        let mut c = db.config.connect_one().await.unwrap();
        for s in [
            format!(
                "CREATE TABLE posts (id INT AUTO_INCREMENT PRIMARY KEY, title VARCHAR(200) NOT NULL, \
                 body TEXT, KEY (title)) ENGINE=InnoDB DEFAULT CHARSET={charset}"
            ),
            format!(
                "CREATE USER {}@'%' IDENTIFIED BY {}",
                quote::literal(&user.0),
                quote::literal(&user.1)
            ),
            format!(
                "GRANT ALL PRIVILEGES ON {}.* TO {}@'%'",
                quote::ident(&db.name),
                quote::literal(&user.0)
            ),
        ] {
            c.execute(s.as_str()).await.unwrap();
        }
        Shop {
            _server: server,
            db,
            user,
        }
    }

    /// The server's URL for `myrecode` (the tests' administrative user).
    pub fn url(&self) -> String {
        self.db.config.url_with_secret()
    }

    /// The application started with `api` (`mysqli`, `pdo`), `charset` (`none`, `utf8mb4`,
    /// `latin1`) and `connection` (`fresh`, `keep`).
    pub fn app(&self, api: &str, charset: &str, connection: &str) -> Php {
        self.launcher().app(api, charset, connection)
    }

    /// What starts the application, to hand to another thread.
    pub fn launcher(&self) -> Launcher {
        Launcher {
            port: self.db.config.port,
            user: self.user.clone(),
            db: self.db.name.clone(),
        }
    }

    /// The seeded posts, written by the legacy application itself.
    pub fn seed(&self) {
        self.seed_as("none");
    }

    /// The seeded posts, written by the legacy application talking `charset`.
    pub fn seed_as(&self, charset: &str) {
        let mut app = self.app("mysqli", charset, "keep");
        for i in 0..SEEDED {
            let (title, body) = post(i);
            let r = app.add(&legacy(&title), &legacy(&body));
            assert!(r.starts_with("ok "), "seeding: {r}");
        }
    }

    /// `title` and `body` of the table's row `id`, as text (the server's reading of the
    /// column's charset, on a utf8mb4 connection).
    pub async fn stored(&self, id: i64) -> (String, String) {
        let mut c = self.db.config.connect_one().await.unwrap();
        sqlx::query_as("SELECT title, CAST(body AS CHAR) FROM posts WHERE id = ?")
            .bind(id)
            .fetch_one(&mut c)
            .await
            .unwrap()
    }
}

/// Fails unless the plan's text holds every line of `wants`.
pub fn plan_says(text: &str, wants: &[&str]) {
    for want in wants {
        assert!(text.contains(want), "{want}\nnot in the plan:\n{text}");
    }
}

/// `plan --check` of `job` against the scan's `report`: exit code, stdout, stderr.
pub fn plan_check(url: &str, job: &str, report: &std::path::Path) -> (i32, String, String) {
    crate::common::cli(
        url,
        &["plan", "--check", job, "--report", report.to_str().unwrap()],
    )
}

/// The stored bytes of post `id`'s title.
pub async fn title_bytes(c: &mut sqlx::MySqlConnection, id: i64) -> Vec<u8> {
    sqlx::query_scalar("SELECT CAST(title AS BINARY) FROM posts WHERE id = ?")
        .bind(id)
        .fetch_one(c)
        .await
        .unwrap()
}

/// The declared charset of `posts.title`.
pub async fn title_charset(c: &mut sqlx::MySqlConnection) -> String {
    sqlx::query_scalar(
        "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = DATABASE() \
         AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'title'",
    )
    .fetch_one(c)
    .await
    .unwrap()
}

/// The `i`th seeded post: its title and body as text.
pub fn post(i: usize) -> (String, String) {
    (
        format!("{} №{i}", RUSSIAN[i % RUSSIAN.len()]),
        format!(
            "{} {}",
            RUSSIAN[(i + 7) % RUSSIAN.len()],
            RUSSIAN[(i + 3) % RUSSIAN.len()]
        ),
    )
}

/// The legacy application's bytes of `text` (cp1251).
pub fn legacy(text: &str) -> Vec<u8> {
    codec::encode(Encoding::Windows1251, text).unwrap()
}

/// Starts the application against the shop (sendable to a thread).
#[derive(Clone)]
pub struct Launcher {
    port: u16,
    user: (String, String),
    db: String,
}

impl Launcher {
    /// The application started with `api`, `charset` and `connection` (see [`Shop::app`]).
    pub fn app(&self, api: &str, charset: &str, connection: &str) -> Php {
        Php::start(self, api, charset, connection)
    }
}

/// One running application process, answering requests.
pub struct Php {
    child: Child,
    input: ChildStdin,
    output: BufReader<ChildStdout>,
}

impl Php {
    fn start(l: &Launcher, api: &str, charset: &str, connection: &str) -> Php {
        let mut child = Command::new("php")
            .args([APP, api, charset, connection])
            .env("APP_HOST", "127.0.0.1")
            .env("APP_PORT", l.port.to_string())
            .env("APP_USER", &l.user.0)
            .env("APP_PASSWORD", &l.user.1)
            .env("APP_DB", &l.db)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("php runs");
        let input = child.stdin.take().unwrap();
        let output = BufReader::new(child.stdout.take().unwrap());
        Php {
            child,
            input,
            output,
        }
    }

    /// Sends one request and returns its answer.
    pub fn ask(&mut self, request: &str) -> String {
        writeln!(self.input, "{request}").unwrap();
        self.input.flush().unwrap();
        let mut line = String::new();
        self.output.read_line(&mut line).unwrap();
        assert!(!line.is_empty(), "the application died on: {request}");
        line.trim_end().to_string()
    }

    /// Page `n` as the application got it: its bytes.
    pub fn page(&mut self, n: usize) -> Vec<u8> {
        let a = self.ask(&format!("page {n}"));
        hex::decode(&a).unwrap_or_else(|_| panic!("page {n}: {a}"))
    }

    /// Every page of the seeded posts.
    pub fn pages(&mut self) -> Vec<Vec<u8>> {
        (0..PAGES).map(|n| self.page(n)).collect()
    }

    /// How many posts have the title `bytes`.
    pub fn find(&mut self, bytes: &[u8]) -> String {
        self.ask(&format!("find {}", hex::encode(bytes)))
    }

    /// Inserts a post; the answer (`ok ID` or `error …`).
    pub fn add(&mut self, title: &[u8], body: &[u8]) -> String {
        self.ask(&format!("add {} {}", hex::encode(title), hex::encode(body)))
    }

    /// Updates post `id`'s title; the answer.
    pub fn set(&mut self, id: i64, title: &[u8]) -> String {
        self.ask(&format!("set {id} {}", hex::encode(title)))
    }

    /// The session's `character_set_client` and `character_set_results`.
    pub fn charset(&mut self) -> String {
        self.ask("charset")
    }
}

impl Drop for Php {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

/// The id an `ok ID` answer names.
pub fn id_of(answer: &str) -> i64 {
    answer
        .strip_prefix("ok ")
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("not an insert's answer: {answer}"))
}

/// The job copying `posts` (title and body from cp1251), cut over as soon as caught up;
/// `extra`: YAML appended at the top level.
pub fn job(schema: &str, extra: &str) -> String {
    format!(
        "version: 1\nschema: {schema}\ndefaults:\n  cutover: auto\ntables:\n  - name: posts\n    strategy: copy\n    columns:\n      \
         - name: title\n        source: cp1251\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL\n      \
         - name: body\n        source: cp1251\n        target: TEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci\n{extra}"
    )
}
