//! The refusal rules of cut-over groups against a real server: a foreign key on text
//! columns and a trigger that the job's groups would split are refused by `plan --check`,
//! the rehearsal and `run --execute` in the rules' words before anything is written; a group
//! the loader rejects stops `run` too.

use super::run;
use crate::common;

use common::legacy::{bytes, checksums, insert_raw, RUSSIAN};
use common::texts;
use myrecode::codec::Encoding::Windows1251;
use myrecode::db::connect::ConnectionConfig;
use myrecode::db::throwaway::test_database;
use myrecode::inventory::{self, Scope};
use myrecode::job::load::{load_str, Loaded};
use myrecode::job::refusal::{self, Class, Refusal};
use run::own_objects;
use sqlx::MySqlConnection;
use std::path::Path;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_text_foreign_key_or_a_trigger_split_between_groups_is_refused_before_any_write() {
    let db = test_database("groups_refused");
    let mut c = users_profiles_and_posts_in_latin1(&db.config).await;
    let split = job_with(
        &db.name,
        "cutover_groups:\n  - name: accounts\n    tables: [users]\n  - name: forum\n    tables: [profiles, posts]\n",
    );
    let dir = tempfile::tempdir().unwrap();
    let job = dir.path().join("split.yaml");
    std::fs::write(&job, &split).unwrap();
    let jobp = job.to_str().unwrap();
    let url = db.config.url_with_secret();

    // What the rules say of each table against the live schema, in the library's words.
    let loaded = load_str(&split).unwrap();
    let expected =
        the_rules_refuse_the_split_foreign_key_and_trigger(&mut c, &db.name, &loaded).await;
    plan_check_the_rehearsal_and_run_refuse_them_in_the_same_words(
        &db.config, &mut c, &db.name, &url, jobp, &loaded, &expected,
    )
    .await;
    a_group_the_loader_rejects_stops_run_and_one_group_for_all_passes(&mut c, &db.name, &url, &job)
        .await;
}

/// `users` (a unique latin1 login), `profiles` referencing that login (a foreign key on
/// text, cascading) and `posts` with a trigger touching `users`, each holding cp1251 text.
async fn users_profiles_and_posts_in_latin1(cfg: &ConnectionConfig) -> MySqlConnection {
    common::exec_script(
        cfg,
        &[
            "CREATE TABLE users (id INT NOT NULL PRIMARY KEY, login VARCHAR(40) CHARACTER SET latin1 NOT NULL, \
             UNIQUE KEY u_login (login)) ENGINE=InnoDB",
            "CREATE TABLE profiles (id INT NOT NULL PRIMARY KEY, user_login VARCHAR(40) CHARACTER SET latin1 NOT NULL, \
             bio VARCHAR(200) CHARACTER SET latin1, KEY k_login (user_login), \
             CONSTRAINT fk_profile_user FOREIGN KEY (user_login) REFERENCES users (login) ON UPDATE CASCADE) ENGINE=InnoDB",
            "CREATE TABLE posts (id INT NOT NULL PRIMARY KEY, user_id INT NOT NULL, title VARCHAR(200) CHARACTER SET latin1) ENGINE=InnoDB",
            "CREATE TRIGGER posts_touch AFTER INSERT ON posts FOR EACH ROW UPDATE `users` SET login = login WHERE id = NEW.user_id",
        ],
    )
    .await;
    let rows: Vec<(i64, Vec<u8>)> = (1..=12)
        .map(|i| (i, bytes(Windows1251, &format!("логин_{i}"))))
        .collect();
    insert_raw(cfg, "users", "login", &rows).await;
    let mut c = cfg.connect_one().await.unwrap();
    for (i, login) in &rows {
        sqlx::query("INSERT INTO profiles (id, user_login, bio) VALUES (?, ?, ?)")
            .bind(i)
            .bind(login)
            .bind(bytes(Windows1251, RUSSIAN[*i as usize % RUSSIAN.len()]))
            .execute(&mut c)
            .await
            .unwrap();
        sqlx::query("INSERT INTO posts (id, user_id, title) VALUES (?, ?, ?)")
            .bind(i)
            .bind(i)
            .bind(bytes(Windows1251, RUSSIAN[*i as usize % RUSSIAN.len()]))
            .execute(&mut c)
            .await
            .unwrap();
    }
    c
}

/// The job copying the three tables (`auto` cut-over) with the cut-over groups `groups`.
fn job_with(schema: &str, groups: &str) -> String {
    let col = |name: &str| {
        format!("      - name: {name}\n        source: auto\n        target: VARCHAR(200) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci NOT NULL\n")
    };
    let tables = format!(
        "  - name: users\n    strategy: copy\n    columns:\n{}  - name: profiles\n    strategy: copy\n    columns:\n{}  - name: posts\n    strategy: copy\n    columns:\n{}",
        col("login").replace("VARCHAR(200)", "VARCHAR(40)"),
        col("user_login").replace("VARCHAR(200)", "VARCHAR(40)"),
        col("title").replace(" NOT NULL", "")
    );
    format!("version: 1\nschema: {schema}\ndefaults:\n  cutover: auto\ntables:\n{tables}{groups}")
}

/// The rules, against the live schema: the foreign key on text split between the groups
/// (on both its tables) and the trigger naming a table of the other group, in their words.
/// Returns each refusal with its table's place in the job.
async fn the_rules_refuse_the_split_foreign_key_and_trigger(
    c: &mut MySqlConnection,
    schema: &str,
    loaded: &Loaded,
) -> Vec<(usize, String, Refusal)> {
    let inv = inventory::take(
        c,
        &Scope {
            schemas: vec![schema.to_string()],
            tables: vec![],
        },
    )
    .await
    .unwrap();
    let mut expected = Vec::new();
    for (i, tj) in loaded.job.tables.iter().enumerate() {
        let t = inv.tables.iter().find(|t| t.name == tj.name).unwrap();
        for r in refusal::group_splits(&refusal::Facts::of_table(t), tj, &loaded.job) {
            expected.push((i, tj.name.clone(), r));
        }
    }
    let classes: Vec<(&str, Class)> = expected
        .iter()
        .map(|(_, t, r)| (t.as_str(), r.class))
        .collect();
    assert_eq!(
        classes,
        [
            ("users", Class::ForeignKeyAcrossGroups),
            ("profiles", Class::ForeignKeyAcrossGroups),
            ("posts", Class::TriggerAcrossGroups)
        ]
    );
    assert_eq!(
        expected[1].2.to_string(),
        "foreign key `fk_profile_user` joins profiles.user_login (group 'forum') to users.login (group 'accounts'), text columns recoded from latin1 to utf8mb4 on both sides: \
         between the two groups' cut-overs one would be utf8mb4 and the other still latin1, and the server keeps no constraint between text columns of different character sets. \
         Fix: put 'profiles' and 'users' in the same cut-over group"
    );
    assert_eq!(
        expected[2].2.to_string(),
        "trigger `posts_touch` on table 'posts' (group 'forum') names table 'users' of group 'accounts': \
         between the two groups' cut-overs it would carry text between a table already recoded to utf8mb4 and one still in its legacy character set. \
         Fix: put 'posts' and 'users' in the same cut-over group, or drop the trigger for the job and create it again once both groups are swapped"
    );
    expected
}

/// `plan --check` names each refusal at its line, the rehearsal prints the same sentences,
/// and `run --execute` refuses before the first write: checksums unchanged, nothing created.
async fn plan_check_the_rehearsal_and_run_refuse_them_in_the_same_words(
    cfg: &ConnectionConfig,
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    jobp: &str,
    loaded: &Loaded,
    expected: &[(usize, String, Refusal)],
) {
    // plan --check: each at its line.
    let out = common::myrecode(Some(url), &["plan", "--check", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for (i, _, r) in expected {
        let mut f = r.finding(&format!("tables[{i}]"));
        f.line = loaded.locator.line(&f.path);
        let line = f.render(jobp);
        assert!(
            stdout.lines().any(|l| l == line),
            "expected {line:?} in:\n{stdout}"
        );
    }
    // The rehearsal: refused, the same sentences.
    let out = common::myrecode(Some(url), &["run", jobp]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}\n{stderr}");
    for (_, table, r) in expected {
        let line = format!("  {table}: refused: {r}");
        assert!(
            stdout.lines().any(|l| l == line),
            "expected {line:?} in:\n{stdout}"
        );
    }
    // --execute: refused before the first write.
    let before = checksums(cfg, &["users", "profiles", "posts"]).await;
    let out = common::myrecode(Some(url), &["run", jobp, "--execute"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stdout}\n{stderr}");
    assert!(stderr.contains("nothing was written"), "{stderr}");
    for (_, table, r) in expected {
        let line = format!("  {table}: {r}");
        assert!(
            stderr.lines().any(|l| l == line),
            "expected {line:?} in:\n{stderr}"
        );
    }
    assert_eq!(
        checksums(cfg, &["users", "profiles", "posts"]).await,
        before
    );
    assert_eq!(own_objects(c, schema).await, Vec::<String>::new());
}

/// A group naming a table the job does not have: the loader stops `run` too, nothing
/// written. One group for the three: nothing split, nothing refused.
async fn a_group_the_loader_rejects_stops_run_and_one_group_for_all_passes(
    c: &mut MySqlConnection,
    schema: &str,
    url: &str,
    job: &Path,
) {
    let jobp = job.to_str().unwrap();
    // A group naming a table the job does not have: the loader stops `run` too, nothing written.
    std::fs::write(
        job,
        job_with(
            schema,
            "cutover_groups:\n  - name: all\n    tables: [users, profiles, posts, post]\n",
        ),
    )
    .unwrap();
    let out = common::myrecode(Some(url), &["plan", "--check", jobp]);
    let (stdout, _) = texts(&out);
    assert_eq!(out.status.code(), Some(1), "{stdout}");
    assert!(
        stdout.contains(&format!("{jobp}:26: cutover_groups[0].tables[3]: group 'all' names table 'post', which is not in the job's tables. Fix: name a copied table of the job (did you mean 'posts'?)")),
        "{stdout}"
    );
    let out = common::myrecode(Some(url), &["run", jobp, "--execute"]);
    let (_, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(
        stderr.contains("is not valid") && stderr.contains("names table 'post'"),
        "{stderr}"
    );
    assert_eq!(own_objects(c, schema).await, Vec::<String>::new());

    // One group for the three: nothing split, nothing refused.
    std::fs::write(
        job,
        job_with(
            schema,
            "cutover_groups:\n  - name: all\n    tables: [users, profiles, posts]\n",
        ),
    )
    .unwrap();
    let out = common::myrecode(Some(url), &["plan", "--check", jobp]);
    assert_eq!(out.status.code(), Some(0), "{:?}", texts(&out));
}
