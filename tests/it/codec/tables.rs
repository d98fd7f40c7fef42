//! The generated tables are exactly what the committed generator writes:
//! running `scripts/gen_codec_tables.py` again must change nothing.

use std::process::Command;

#[test]
fn generated_tables_are_up_to_date() {
    let root = env!("CARGO_MANIFEST_DIR");
    let out = Command::new("python3")
        .arg(format!("{root}/scripts/gen_codec_tables.py"))
        .arg("--check")
        .output()
        .expect("python3 not found: it is needed to check src/codec/tables.rs (install python3; CI has it)");
    assert!(
        out.status.success(),
        "src/codec/tables.rs differs from the generator's output; run scripts/gen_codec_tables.py\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}
