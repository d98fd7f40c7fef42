//! `fleet plan`, `fleet run` and `fleet status` over two throwaway servers, `a` with a
//! replica and `b` without, each holding schemas of cp1251 text in latin1 columns: the
//! plan writes `plan`'s own job per schema and lists the schema refused (a foreign key
//! across schemas) and the one with nothing to do; a canary job that fails stops the
//! fleet before the next wave; a fleet run SIGKILLed mid-way (its whole process group,
//! children included) and run again ends every job as a single run would (the values
//! recoded on the primary and its replica, each job verified), without rerunning the
//! finished one; `fleet status` is right while the jobs run and after.

use crate::common::legacy::{bytes, RUSSIAN};
use crate::common::texts;
use crate::fleet::{exec, json, option_file, rt, seed, start, ROWS};
use myrecode::codec::Encoding;
use myrecode::db::connect::ConnectionConfig;
use myrecode::testkit::replicaset::{BinlogFormat, ThrowawayReplicaSet};
use serde_json::Value;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// `myrecode ARGS` with no connection from the caller's environment or home.
fn myrecode(home: &Path, args: &[&str]) -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_myrecode"));
    cmd.args(args)
        .stdin(Stdio::null())
        .env_remove("MYSQL_PWD")
        .env_remove("MYSQL_URL")
        .env("HOME", home);
    cmd
}

fn out(cmd: &mut Command) -> (Output, String, String) {
    let o = cmd.output().unwrap();
    let (a, b) = texts(&o);
    (o, a, b)
}

/// The job's `defaults:` key set to `value` (the DBA's review).
fn edit(job: &Path, key: &str, value: &str) {
    let text = std::fs::read_to_string(job).unwrap();
    let prefix = format!("  {key}: ");
    let mut found = false;
    let edited: Vec<String> = text
        .lines()
        .map(|l| {
            if l.starts_with(&prefix) && !found {
                found = true;
                format!("{prefix}{value}")
            } else {
                l.to_string()
            }
        })
        .collect();
    assert!(found, "no `{key}:` in {}", job.display());
    std::fs::write(job, edited.join("\n") + "\n").unwrap();
}

/// Each `posts` row's body as the server returns it to a utf8mb4 client, and the column's charset.
fn posts(cfg: &ConnectionConfig, schema: &str) -> (Vec<Vec<u8>>, String) {
    rt().block_on(async {
        let mut c = cfg.connect_one().await.unwrap();
        let rows: Vec<Vec<u8>> = sqlx::query_scalar(&format!(
            "SELECT CAST(body AS BINARY) FROM `{schema}`.`posts` ORDER BY id"
        ))
        .fetch_all(&mut c)
        .await
        .unwrap();
        let charset: String = sqlx::query_scalar(
            "SELECT CHARACTER_SET_NAME FROM information_schema.COLUMNS \
             WHERE TABLE_SCHEMA = ? AND TABLE_NAME = 'posts' AND COLUMN_NAME = 'body'",
        )
        .bind(schema)
        .fetch_one(&mut c)
        .await
        .unwrap();
        (rows, charset)
    })
}

fn assert_recoded(cfg: &ConnectionConfig, schema: &str, where_: &str) {
    let (rows, charset) = posts(cfg, schema);
    assert_eq!(charset, "utf8mb4", "{where_} {schema}");
    assert_eq!(rows.len(), ROWS, "{where_} {schema}");
    for (i, r) in rows.iter().enumerate() {
        assert_eq!(
            String::from_utf8_lossy(r),
            RUSSIAN[i % RUSSIAN.len()],
            "{where_} {schema} row {}",
            i + 1
        );
    }
}

fn plan_line<'a>(plan: &'a Value, server: &str, schema: &str) -> &'a Value {
    plan["schemas"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["server"] == server && s["schema"] == schema)
        .unwrap_or_else(|| panic!("{server}/{schema} not in {plan}"))
}

fn job_states(run: &Value) -> Vec<(String, String)> {
    run["waves"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|w| w["jobs"].as_array().unwrap())
        .map(|j| {
            (
                format!(
                    "{}/{}",
                    j["server"].as_str().unwrap(),
                    j["schema"].as_str().unwrap()
                ),
                j["state"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

#[test]
fn a_fleet_planned_run_in_waves_killed_and_rerun_ends_as_single_runs_would() {
    let began = Instant::now();
    let set = std::thread::spawn(|| {
        ThrowawayReplicaSet::start(BinlogFormat::Row, &[None])
            .unwrap_or_else(|e| panic!("cannot start a primary and its replica: {e:#}"))
    });
    let b = start(&[]).join().unwrap();
    let set = set.join().unwrap();
    let (a, replica) = (set.primary.admin().clone(), set.replica(0));
    seed(&a, "shop_1", &["posts", "archive"]);
    seed(&a, "shop_2", &["posts"]);
    seed(b.admin(), "shop_1", &["posts"]);
    seed(b.admin(), "shop_2", &["posts", "orders"]);
    // A foreign key across schemas: `plan` refuses both of its tables, which leaves shop_1
    // on b nothing it may recode.
    exec(
        b.admin(),
        "ALTER TABLE `shop_2`.`orders` ADD COLUMN post_id INT, \
         ADD FOREIGN KEY (post_id) REFERENCES `shop_1`.`posts` (id)",
    );
    exec(b.admin(), "CREATE DATABASE shop_3 CHARACTER SET utf8mb4");
    exec(
        b.admin(),
        "CREATE TABLE shop_3.logs (id INT PRIMARY KEY, msg VARCHAR(20) CHARACTER SET utf8mb4)",
    );
    exec(
        b.admin(),
        "INSERT INTO shop_3.logs VALUES (1, 'plain ASCII')",
    );

    let dir = tempfile::tempdir().unwrap();
    let home = dir.path();
    let a_cnf = option_file(home, "a", &a);
    let b_cnf = option_file(home, "b", b.admin());
    let fleet = home.join("fleet.yaml");
    std::fs::write(
        &fleet,
        format!(
            "servers:\n  - name: a\n    url: mysql://{}@{}:{}\n    defaults-file: {}\n    schemas: ['shop_*']\n    concurrency: 2\n\
             \x20 - name: b\n    url: mysql://{}@{}:{}\n    defaults-file: {}\n    schemas: ['shop_*']\n\
             groups:\n  canary: [b]\n  rest: [a]\n",
            a.user, a.host, a.port, a_cnf.display(),
            b.admin().user, b.admin().host, b.admin().port, b_cnf.display(),
        ),
    )
    .unwrap();
    let f = fleet.to_str().unwrap();
    let scan = home.join("scan");
    let jobs = home.join("jobs");
    let (s, j) = (scan.to_str().unwrap(), jobs.to_str().unwrap());

    // 1. Scan, then plan.
    let (o, _, e) = out(myrecode(
        home,
        &["fleet", "scan", f, "--out", s, "--full", "--pause-ms", "0"],
    )
    .arg("--batch-size")
    .arg("200"));
    assert_eq!(o.status.code(), Some(1), "{e}");
    let (o, stdout, e) = out(&mut myrecode(
        home,
        &["fleet", "plan", f, "--scan", s, "--out", j],
    ));
    assert_eq!(
        o.status.code(),
        Some(1),
        "a refused schema needs attention\n{stdout}\n{e}"
    );
    for (server, schema, job) in [
        ("a", "shop_1", true),
        ("a", "shop_2", true),
        ("b", "shop_1", false),
        ("b", "shop_2", true),
        ("b", "shop_3", false),
    ] {
        assert_eq!(
            jobs.join(server).join(format!("{schema}.yaml")).exists(),
            job,
            "{server}/{schema}"
        );
    }
    // Each job is `plan`'s own, byte for byte.
    let (o, single, e) = out(&mut myrecode(
        home,
        &[
            "plan",
            "--report",
            scan.join("a/shop_1.json").to_str().unwrap(),
            "-o",
            "-",
        ],
    ));
    assert_eq!(o.status.code(), Some(0), "{e}");
    assert_eq!(
        std::fs::read_to_string(jobs.join("a/shop_1.yaml")).unwrap(),
        single
    );
    let plan = json(&jobs.join("fleet-plan.json"));
    let refused = plan_line(&plan, "b", "shop_1");
    assert_eq!(refused["verdict"], "refused", "{refused}");
    let why = refused["refusals"][0].as_str().unwrap();
    assert!(
        why.starts_with("posts: ") && why.contains("across schemas") && why.contains("Fix:"),
        "{why}"
    );
    assert_eq!(plan_line(&plan, "b", "shop_3")["verdict"], "nothing-to-do");
    let b2 = plan_line(&plan, "b", "shop_2");
    assert_eq!(b2["tables"], serde_json::json!(["posts (copy)"]));
    assert!(
        b2["refusals"][0].as_str().unwrap().starts_with("orders: "),
        "{b2}"
    );
    let a1 = plan_line(&plan, "a", "shop_1");
    assert_eq!(
        a1["tables"],
        serde_json::json!(["archive (copy)", "posts (copy)"]),
        "{a1}"
    );
    let command = a1["command"].as_str().unwrap();
    assert!(
        command.contains("--defaults-file") && command.ends_with("--execute"),
        "{command}"
    );
    let md = std::fs::read_to_string(jobs.join("fleet-plan.md")).unwrap();
    assert!(md.contains("| b | shop_1 | REFUSED |"), "{md}");
    assert!(stdout.contains("b/shop_3: nothing to do"), "{stdout}");

    // 2. The DBA's review: swap as soon as copied, and go slowly enough to be watched.
    let job_files: Vec<PathBuf> = ["a/shop_1", "a/shop_2", "b/shop_2"]
        .iter()
        .map(|x| jobs.join(format!("{x}.yaml")))
        .collect();
    for job in &job_files {
        edit(job, "cutover", "auto");
        edit(job, "batch_size", "10");
        edit(job, "target_batch_time", "10ms");
        edit(job, "pause_between_batches", "120ms");
    }
    // A second plan keeps the edited jobs unless told.
    let (o, _, e) = out(&mut myrecode(
        home,
        &["fleet", "plan", f, "--scan", s, "--out", j],
    ));
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(
        e.contains("may hold your edits") && e.contains("Fix: pass --force"),
        "{e}"
    );

    // 3. A dry run names the waves and runs nothing.
    let (o, stdout, e) = out(&mut myrecode(home, &["fleet", "run", f, "--jobs", j]));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{e}");
    assert!(stdout.starts_with("wave canary:\n  b/shop_2: would-run\nwave rest:\n  a/shop_1: would-run\n  a/shop_2: would-run\n"), "{stdout}");
    let (o, stdout, e) = out(&mut myrecode(
        home,
        &["fleet", "run", f, "--jobs", j, "--wave", "rest"],
    ));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{e}");
    assert!(
        stdout.starts_with("wave rest:\n  a/shop_1: would-run\n"),
        "{stdout}"
    );
    let (o, _, e) = out(&mut myrecode(
        home,
        &["fleet", "run", f, "--jobs", j, "--wave", "nosuch"],
    ));
    assert_eq!(o.status.code(), Some(2), "{e}");
    assert!(e.contains("Fix: name one of: canary, rest"), "{e}");

    // 4. The canary fails (its table gone): the next wave does not start.
    exec(b.admin(), "RENAME TABLE shop_2.posts TO shop_2.posts_away");
    let result = home.join("run.json");
    let r = result.to_str().unwrap();
    let (o, stdout, e) = out(&mut myrecode(
        home,
        &["fleet", "run", f, "--jobs", j, "--execute", "--json", r],
    ));
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{e}");
    let run = json(&result);
    assert_eq!(
        job_states(&run),
        vec![
            ("b/shop_2".into(), "failed".into()),
            ("a/shop_1".into(), "not-run".into()),
            ("a/shop_2".into(), "not-run".into())
        ],
        "{run}"
    );
    assert!(
        run["waves"][0]["jobs"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("posts"),
        "{run}"
    );
    assert_eq!(
        run["waves"][1]["jobs"][0]["reason"],
        "wave 'canary' stopped: b/shop_2 failed"
    );
    assert!(!stdout.contains("hunter") && !e.contains(&a.url_with_secret()));
    exec(b.admin(), "RENAME TABLE shop_2.posts_away TO shop_2.posts");

    // 5. Run, watched by `fleet status`, and killed (the fleet and its children) once the
    // second wave is under way.
    let log = std::fs::File::create(home.join("fleet-run.log")).unwrap();
    let mut child = myrecode(home, &["fleet", "run", f, "--jobs", j, "--execute"])
        .stdout(log.try_clone().unwrap())
        .stderr(log)
        .process_group(0)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    let st = loop {
        assert!(
            Instant::now() < deadline,
            "the second wave never got under way"
        );
        assert!(
            child.try_wait().unwrap().is_none(),
            "the fleet run ended before it was killed: {}",
            std::fs::read_to_string(home.join("fleet-run.log")).unwrap()
        );
        let (o, stdout, e) = out(&mut myrecode(
            home,
            &["fleet", "status", f, "--jobs", j, "--json"],
        ));
        assert_eq!(o.status.code(), Some(1), "not all done yet\n{stdout}\n{e}");
        let st: Value = serde_json::from_str(&stdout).unwrap();
        assert_eq!(st["jobs"].as_array().unwrap().len(), 3);
        let line = |x: &str| {
            st["jobs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|l| {
                    format!(
                        "{}/{}",
                        l["server"].as_str().unwrap(),
                        l["schema"].as_str().unwrap()
                    ) == x
                })
                .unwrap()
                .clone()
        };
        for l in st["jobs"].as_array().unwrap() {
            let done = l["rows_done"].as_u64().unwrap();
            assert!(done <= l["rows_total"].as_u64().unwrap(), "{l}");
        }
        let a1 = line("a/shop_1");
        if a1["phase"] != "not started" && !a1["finished"].as_bool().unwrap() {
            // The canary wave ran first and finished before the rest began.
            assert_eq!(line("b/shop_2")["phase"], "done", "{st}");
            break st;
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let pgid = child.id() as i32;
    unsafe { libc::kill(-pgid, libc::SIGKILL) };
    child.wait().unwrap();
    // A table phase, or the pacer's wait (a replica briefly lagging), never a guess.
    let moving = |p: &str| {
        ["copying", "checking", "replaying", "waits for cutover"].contains(&p)
            || p.starts_with("waiting: throttled: replica")
    };
    assert!(moving(st["jobs"][0]["phase"].as_str().unwrap()), "{st}");
    assert!(
        !st["jobs"][0]["phase"]
            .as_str()
            .unwrap()
            .contains("replication stopped"),
        "{st}"
    );
    assert_eq!(st["done"], 1);

    // Killed: `fleet status` says what is left.
    let (o, stdout, e) = out(&mut myrecode(home, &["fleet", "status", f, "--jobs", j]));
    assert_eq!(o.status.code(), Some(1), "{stdout}\n{e}");
    assert!(stdout.contains("b/shop_2: done; rows "), "{stdout}");

    // 6. Run again: the finished job is not rerun, the interrupted ones resume.
    let (o, stdout, e) = out(&mut myrecode(
        home,
        &["fleet", "run", f, "--jobs", j, "--execute", "--json", r],
    ));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{e}");
    let run = json(&result);
    let states = job_states(&run);
    assert_eq!(
        states[0],
        ("b/shop_2".into(), "already-done".into()),
        "{run}"
    );
    assert!(
        states[1..]
            .iter()
            .all(|(_, s)| s == "done" || s == "already-done"),
        "{run}"
    );
    assert!(
        states[1..].iter().any(|(_, s)| s == "done"),
        "the killed wave's jobs ran again: {run}"
    );
    let a_log = std::fs::read_to_string(jobs.join("a/shop_1.log")).unwrap();
    assert!(
        a_log.matches("== fleet run: myrecode run ").count() >= 2,
        "{a_log}"
    );
    assert!(
        !a_log.contains(a.password().unwrap()),
        "no password in a job's log"
    );

    // 7. Every schema ends as a single run would: recoded on the primary and its replica,
    // each job verified; the refused schema untouched.
    let (o, stdout, e) = out(&mut myrecode(home, &["fleet", "status", f, "--jobs", j]));
    assert_eq!(o.status.code(), Some(0), "{stdout}\n{e}");
    assert!(
        stdout
            .lines()
            .last()
            .unwrap()
            .starts_with("fleet: 3 job(s): 3 done, 0 underway"),
        "{stdout}"
    );
    set.sync(Duration::from_secs(30)).unwrap();
    for schema in ["shop_1", "shop_2"] {
        assert_recoded(&a, schema, "a");
        assert_recoded(&replica, schema, "a's replica");
    }
    assert_recoded(b.admin(), "shop_2", "b");
    let (rows, charset) = posts(b.admin(), "shop_1");
    assert_eq!(charset, "latin1", "the refused schema is untouched");
    assert_eq!(rows[0], bytes(Encoding::Windows1251, RUSSIAN[0]));
    for (job, cnf, cfg) in [
        (&job_files[0], &a_cnf, &a),
        (&job_files[1], &a_cnf, &a),
        (&job_files[2], &b_cnf, b.admin()),
    ] {
        let url = format!("mysql://{}@{}:{}", cfg.user, cfg.host, cfg.port);
        let (o, stdout, e) = out(&mut myrecode(
            home,
            &[
                "verify",
                job.to_str().unwrap(),
                "--url",
                &url,
                "--defaults-file",
                cnf.to_str().unwrap(),
            ],
        ));
        assert_eq!(o.status.code(), Some(0), "{}: {stdout}\n{e}", job.display());
    }
    assert!(
        began.elapsed() < Duration::from_secs(180),
        "{:?}",
        began.elapsed()
    );
}
