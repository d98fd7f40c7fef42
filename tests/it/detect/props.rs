//! Properties of detection on arbitrary bytes: it never panics, and a verdict
//! that would rewrite a value always round-trips to the original bytes.

use myrecode::codec::{self, Encoding};
use myrecode::detect::{detect, detect_column, Context, Label};
use proptest::prelude::*;

/// Re-applies the wrong steps a label names to its decoded text.
fn reencode(label: Label, text: &str) -> Option<Vec<u8>> {
    match label {
        Label::Legacy(e) => codec::encode(e, text).ok(),
        Label::Mojibake { real, read_as } => {
            let raw = if real == Encoding::Utf8 {
                text.as_bytes().to_vec()
            } else {
                codec::encode(real, text).ok()?
            };
            Some(codec::decode(read_as, &raw).ok()?.into_bytes())
        }
        Label::Ascii | Label::Utf8 => Some(text.as_bytes().to_vec()),
        Label::Binary | Label::Unknown => None,
    }
}

fn check(bytes: &[u8], v: &myrecode::detect::Verdict) {
    assert!((0.0..=1.0).contains(&v.confidence), "{v:?}");
    if v.actionable() {
        let decoded = v.decoded.as_deref().unwrap();
        assert_eq!(reencode(v.label, decoded).as_deref(), Some(bytes), "{v:?}");
    }
}

proptest! {
    #[test]
    fn arbitrary_bytes_never_panic_and_rewrites_round_trip(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
        let v = detect(&bytes, &Context::default());
        check(&bytes, &v);
    }

    #[test]
    fn high_bytes_and_letters_round_trip(bytes in proptest::collection::vec(prop_oneof![0x80u8..=0xFF, Just(b' '), b'a'..=b'z'], 1..40)) {
        let v = detect(&bytes, &Context::default());
        check(&bytes, &v);
    }

    #[test]
    fn columns_round_trip(rows in proptest::collection::vec(proptest::collection::vec(0x80u8..=0xFF, 1..12), 1..8)) {
        let refs: Vec<&[u8]> = rows.iter().map(Vec::as_slice).collect();
        for (bytes, v) in rows.iter().zip(detect_column(&refs)) {
            check(bytes, &v);
        }
    }
}

#[test]
fn a_column_mixing_encodings_row_by_row_gets_each_row_right() {
    let text = [
        "Просьба позвонить после обеда",
        "Доставка курьером, оплата наличными",
        "Заказ отменён по просьбе покупателя",
    ];
    let encs = [Encoding::Windows1251, Encoding::Koi8R, Encoding::Ibm866];
    let mut rows = Vec::new();
    for (i, t) in text.iter().cycle().take(9).enumerate() {
        rows.push((encs[i % 3], codec::encode(encs[i % 3], t).unwrap(), *t));
    }
    let refs: Vec<&[u8]> = rows.iter().map(|r| r.1.as_slice()).collect();
    for (row, v) in rows.iter().zip(detect_column(&refs)) {
        assert_eq!(v.label, Label::Legacy(row.0), "{v:?}");
        assert_eq!(v.decoded.as_deref(), Some(row.2));
    }
}

#[test]
fn random_blobs_are_almost_never_called_text() {
    // xorshift64*: deterministic blobs of 8..64 bytes.
    let mut s: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        s ^= s >> 12;
        s ^= s << 25;
        s ^= s >> 27;
        s.wrapping_mul(0x2545_F491_4F6C_DD1D)
    };
    let (mut n, mut texty) = (0, 0);
    for _ in 0..10_000 {
        let len = 8 + (next() % 57) as usize;
        let blob: Vec<u8> = (0..len).map(|_| (next() >> 56) as u8).collect();
        let v = detect(&blob, &Context::default());
        n += 1;
        texty += v.label.needs_recode() as usize;
    }
    assert!(
        texty * 1000 <= n,
        "{texty} of {n} random blobs labelled legacy or mojibake"
    );
}
