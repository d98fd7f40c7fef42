//! `myrecode demo` end to end on a throwaway server, as a new user runs it.

use crate::common;
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
    // The shop's latin1 half: the photo captions are copied into utf8mb4, the photos (PNG and
    // JPEG bytes in a latin1 MEDIUMTEXT) come through the copy byte for byte.
    assert!(
        stdout.contains("product_images: 4 rows read, 4 values recoded, 0 quarantined"),
        "{stdout}"
    );
    assert_eq!(
        stdout.matches(" bytes  md5 ").count(),
        4,
        "one line per photo: {stdout}"
    );
    assert_eq!(stdout.matches("  unchanged\n").count(), 4, "{stdout}");
    // categories.name would overflow its COMPACT unique index under utf8mb4: the plan leaves it
    // out and says why, the run does not touch it, and the demo shows the reason and the fix.
    assert!(
        stdout.contains("# - name: categories   # not in the job: name left out (stays latin1): index `u_name` would need 1020 bytes"),
        "{stdout}"
    );
    assert!(
        !stdout.contains("\n  categories: "),
        "categories is not run: {stdout}"
    );
    assert!(
        stdout.contains("== left as is (categories.name: still latin1) ==\n  index `u_name` would need 1020 bytes for one column under utf8mb4, over the limit of 767 on row format Compact: the copy would fail at its ALTER. Fix: ALTER TABLE `categories` ROW_FORMAT=DYNAMIC"),
        "{stdout}"
    );
    // The Vietnamese catalogue: every TCVN3 name, description, category and address is
    // copied as utf8mb4 text; the two rows already in UTF-8 and the ASCII ones are not counted.
    for line in [
        "san_pham: 16 rows read, 24 values recoded, 0 quarantined",
        "danh_muc: 6 rows read, 6 values recoded, 0 quarantined",
        "cua_hang: 6 rows read, 12 values recoded, 0 quarantined",
    ] {
        assert!(stdout.contains(line), "missing {line}: {stdout}");
    }
    assert!(
        stdout.contains("verified 6 value(s); 0 error(s)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "users: 5 row(s) equal their original (kept as users_myrecode_old), recoded; 0 differ"
        ),
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
    assert!(
        stdout.contains("Nåi c¬m ®iÖn 1,8 lÝt") && stdout.contains("->  Nồi cơm điện 1,8 lít"),
        "the TCVN3 catalogue's before/after: {stdout}"
    );
}
