//! `myrecode demo` end to end on a throwaway server, as a new user runs it.

mod common;

use common::{myrecode, texts};

#[test]
fn demo_runs_the_whole_flow_and_shows_before_and_after() {
    let out = myrecode(None, &["demo"]);
    let (stdout, stderr) = texts(&out);
    assert_eq!(out.status.code(), Some(0), "{stdout}\n{stderr}");
    for step in [
        "== 1. inventory",
        "== 2. scan",
        "== 3. plan",
        "== 4. run",
        "== 5. verify",
        "== before / after",
    ] {
        assert!(stdout.contains(step), "missing {step}: {stdout}");
    }
    assert!(
        stdout.contains("products: 8 rows read, 6 values recoded, 0 quarantined"),
        "{stdout}"
    );
    assert!(
        stdout.contains("verified 6 value(s); 0 error(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("->  Чайник электрический, 1,7 л"),
        "{stdout}"
    );
    assert!(
        stdout.contains("->  Кофеварка капельная, чёрная"),
        "{stdout}"
    );
}
