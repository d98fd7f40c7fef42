//! The throwaway-server harness itself: every other server test relies on it.

use myrecode::db::throwaway::{test_database, ThrowawayServer};
use sqlx::Row;

#[tokio::test]
async fn test_database_is_reachable_and_isolated() {
    let a = test_database("harness_a");
    let b = test_database("harness_b");
    assert_ne!(a.name, b.name, "each test gets its own database");
    let mut conn = a
        .config
        .connect_one()
        .await
        .expect("connect to the test database");
    let row = sqlx::query("SELECT DATABASE(), VERSION()")
        .fetch_one(&mut conn)
        .await
        .unwrap();
    let db: String = row.get(0);
    assert_eq!(db, a.name);
    assert!(
        a.config.password().is_some(),
        "tests authenticate with a password"
    );
    let shown = format!("{:?} {}", a.config, a.config);
    assert!(!shown.contains(a.config.password().unwrap()), "{shown}");
}

#[test]
fn shared_server_describes_itself() {
    let server = ThrowawayServer::shared().expect("a server");
    let d = server.description();
    assert!(
        d.contains("MariaDB") || d.contains("MySQL") || d.contains("MYSQL_TEST_URL"),
        "{d}"
    );
}
