//! Property tests for the codecs: round trips, buffer splits, and the UTF-8
//! validator against `std`. The default case counts keep `cargo test` fast;
//! `no_panic_on_random_inputs` runs 2,000 cases by default; the million-case
//! run is `CODEC_FUZZ_CASES=1000000 cargo test --release --test it codec::props::no_panic`.

use myrecode::codec::{
    decode, decode_lossless, decode_lossy, decode_tcvn3, encode, encode_tcvn3, validate_utf8,
    Decoder, Encoder, Encoding, Tcvn3Convention,
};
use proptest::prelude::*;

/// Text drawn from the characters `enc` can write (plus ASCII), so encoding succeeds.
fn encodable_text(enc: Encoding) -> impl Strategy<Value = String> {
    let mut chars: Vec<char> = (0..=255u8).filter_map(|b| enc.decode_byte(b)).collect();
    if enc == Encoding::Tcvn3 {
        // Toned capitals (two-byte convention) too.
        chars.extend("ÀÁẢÃẠẤẦẨẪẬẮẰẲẴẶÈÉẺẼẸẾỀỂỄỆÌÍỈĨỊÒÓỎÕỌỐỒỔỖỘỚỜỞỠỢÙÚỦŨỤỨỪỬỮỰỲÝỶỸỴ".chars());
    }
    if enc == Encoding::Utf8 {
        return any::<String>().boxed();
    }
    prop::collection::vec(prop::sample::select(chars), 0..64)
        .prop_map(|v| v.into_iter().collect())
        .boxed()
}

fn any_encoding() -> impl Strategy<Value = Encoding> {
    prop::sample::select(Encoding::ALL.to_vec())
}

/// Bytes biased toward the interesting ones: high bytes, TCVN3 bases, UTF-8 leads.
fn bytes() -> impl Strategy<Value = Vec<u8>> {
    let byte = prop_oneof![
        any::<u8>(),
        prop::sample::select(b"AEIOUY\xA1\xA2\xA3\xA4\xA5\xA6\xB5\xCA\xE8".to_vec()),
        0x80..=0xBFu8,
        0xC2..=0xF4u8,
    ];
    prop::collection::vec(byte, 0..80)
}

/// Decodes `input` fed in pieces cut at `cuts` (sorted, deduplicated).
fn decode_split(dec: &mut Decoder, input: &[u8], cuts: &[usize]) -> (String, Result<(), String>) {
    let mut out = String::new();
    let mut start = 0;
    for &c in cuts.iter().chain(std::iter::once(&input.len())) {
        let c = c.min(input.len()).max(start);
        let last = c == input.len();
        if let Err(e) = dec.decode_to(&input[start..c], last, &mut out) {
            return (out, Err(e.to_string()));
        }
        start = c;
        if last {
            break;
        }
    }
    (out, Ok(()))
}

fn cuts() -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..90usize, 0..8).prop_map(|mut v| {
        v.sort();
        v.dedup();
        v
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn encode_then_decode_is_identity((enc, text) in any_encoding().prop_flat_map(|e| (Just(e), encodable_text(e)))) {
        match encode(enc, &text) {
            Ok(bytes) => {
                prop_assert_eq!(&decode(enc, &bytes).unwrap(), &text);
                prop_assert_eq!(&decode_lossless(enc, &bytes).unwrap(), &text);
            }
            // Only TCVN3's refusal of a base capital + its own toned letter.
            Err(e) => prop_assert!(enc == Encoding::Tcvn3, "{}", e),
        }
    }

    #[test]
    fn tcvn3_each_convention_round_trips(text in encodable_text(Encoding::Tcvn3)) {
        for conv in [Tcvn3Convention::SingleByte, Tcvn3Convention::TwoByte] {
            if let Ok(bytes) = encode_tcvn3(&text, conv) {
                prop_assert_eq!(&decode_tcvn3(&bytes, conv).unwrap(), &text);
                prop_assert!(decode_lossless(Encoding::Tcvn3, &bytes).is_ok());
            }
        }
    }

    #[test]
    fn decode_then_encode_gives_back_the_bytes(enc in any_encoding(), input in bytes()) {
        if let Ok(text) = decode(enc, &input) {
            prop_assert_eq!(&encode(enc, &text).unwrap(), &input);
            prop_assert_eq!(decode_lossless(enc, &input).unwrap(), text);
        } else {
            prop_assert!(decode_lossless(enc, &input).is_err());
        }
    }

    #[test]
    fn split_points_do_not_change_the_output(enc in any_encoding(), input in bytes(), cuts in cuts()) {
        let whole = decode(enc, &input).map_err(|e| e.to_string());
        let (text, res) = decode_split(&mut Decoder::new(enc), &input, &cuts);
        match whole {
            Ok(w) => { prop_assert_eq!(res, Ok(())); prop_assert_eq!(text, w); }
            Err(e) => prop_assert_eq!(res, Err(e)),
        }
        let (lossy_whole, n) = decode_lossy(enc, &input);
        let mut dec = Decoder::lossy(enc);
        let (lossy_split, res) = decode_split(&mut dec, &input, &cuts);
        prop_assert_eq!(res, Ok(()));
        prop_assert_eq!(lossy_split, lossy_whole);
        prop_assert_eq!(dec.replacements(), n);
    }

    #[test]
    fn split_encoding_matches_whole(enc in any_encoding(), text in any::<String>(), cut in 0..64usize) {
        let whole = encode(enc, &text).map_err(|e| e.to_string());
        let mut cut = cut.min(text.len());
        while !text.is_char_boundary(cut) { cut -= 1; }
        let mut e = Encoder::new(enc);
        let mut out = Vec::new();
        let split = e.encode_to(&text[..cut], &mut out).and_then(|_| e.encode_to(&text[cut..], &mut out))
            .map(|_| out).map_err(|e| e.to_string());
        prop_assert_eq!(split, whole);
    }

    #[test]
    fn utf8_validator_agrees_with_std(input in bytes()) {
        let ours = validate_utf8(&input);
        let std = std::str::from_utf8(&input);
        match (ours, std) {
            (Ok(()), Ok(_)) => {}
            (Err(a), Err(b)) => {
                prop_assert_eq!(a.valid_up_to, b.valid_up_to());
                prop_assert_eq!(a.error_len.map(usize::from), b.error_len());
            }
            (a, b) => prop_assert!(false, "ours {:?} std {:?}", a, b),
        }
    }

    #[test]
    fn utf8_validator_agrees_with_std_on_arbitrary_bytes(input in prop::collection::vec(any::<u8>(), 0..300)) {
        let ours = validate_utf8(&input).map_err(|e| (e.valid_up_to, e.error_len.map(usize::from)));
        let std = std::str::from_utf8(&input).map(|_| ()).map_err(|e| (e.valid_up_to(), e.error_len()));
        prop_assert_eq!(ours, std);
    }

    #[test]
    fn utf8_lossy_matches_std_lossy(input in bytes()) {
        let (ours, _) = decode_lossy(Encoding::Utf8, &input);
        prop_assert_eq!(ours, String::from_utf8_lossy(&input).into_owned());
    }
}

/// The no-panic run over every decoder (and the lossy and streaming paths).
/// The default run tries 2,000 cases; the million-case run is
/// `CODEC_FUZZ_CASES=1000000 cargo test --release --test it codec::props::no_panic`.
#[test]
fn no_panic_on_random_inputs() {
    let cases: u32 = std::env::var("CODEC_FUZZ_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(2_000);
    let mut runner = proptest::test_runner::TestRunner::new(ProptestConfig {
        cases,
        failure_persistence: None,
        ..ProptestConfig::default()
    });
    let strategy = (prop::collection::vec(any::<u8>(), 0..200), bytes(), cuts());
    runner
        .run(&strategy, |(random, biased, cuts)| {
            for input in [&random, &biased] {
                for enc in Encoding::ALL {
                    let strict = decode(enc, input);
                    let _ = decode_lossless(enc, input);
                    let (lossy, _) = decode_lossy(enc, input);
                    if let Ok(s) = strict {
                        prop_assert_eq!(s, lossy);
                    }
                    let _ = decode_split(&mut Decoder::lossy(enc), input, &cuts);
                }
                let _ = validate_utf8(input);
            }
            Ok(())
        })
        .unwrap();
    println!(
        "{cases} cases x 2 inputs x {} decoders: no panic",
        Encoding::ALL.len()
    );
}

/// Every split point of inputs full of TCVN3 pairs and multi-byte UTF-8,
/// including splits into single bytes.
#[test]
fn every_split_point_of_pairs_and_sequences() {
    let vi = "ẤN ĐỘ Ước mơ Tiếng Việt: Ỷ Ẵ ÀÁ trường";
    let tcvn = encode(Encoding::Tcvn3, vi).unwrap();
    let utf8 = "Привет 中文 😀 ok".as_bytes().to_vec();
    for (enc, input, text) in [
        (Encoding::Tcvn3, tcvn, vi),
        (Encoding::Utf8, utf8.clone(), "Привет 中文 😀 ok"),
    ] {
        for cut in 0..=input.len() {
            let (out, res) = decode_split(&mut Decoder::new(enc), &input, &[cut]);
            assert_eq!((out.as_str(), res), (text, Ok(())), "{enc} cut {cut}");
        }
        let all: Vec<usize> = (1..input.len()).collect();
        let (out, res) = decode_split(&mut Decoder::new(enc), &input, &all);
        assert_eq!((out.as_str(), res), (text, Ok(())), "{enc} byte by byte");
    }
    // An error after a split reports its stream offset.
    let mut bad = utf8.clone();
    bad.insert(4, 0xFF);
    for cut in 0..=bad.len() {
        let (_, res) = decode_split(&mut Decoder::new(Encoding::Utf8), &bad, &[cut]);
        assert_eq!(
            res,
            Err("invalid UTF-8 0xFF at offset 4".to_string()),
            "cut {cut}"
        );
    }
}

/// A reference decoder: one byte at a time through `Encoding::decode_byte`
/// (the generated high-half table itself, not the packed UTF-8 the fast path uses).
fn naive_decode(enc: Encoding, input: &[u8]) -> Result<String, usize> {
    input
        .iter()
        .enumerate()
        .map(|(i, &b)| enc.decode_byte(b).ok_or(i))
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Long inputs cross the fast path's ASCII runs, 4-byte groups and 4 KiB blocks.
    #[test]
    fn long_single_byte_inputs_match_a_naive_decoder(
        enc in prop::sample::select(Encoding::ALL.iter().copied().filter(|e| e.is_single_byte()).collect::<Vec<_>>()),
        runs in prop::collection::vec((0..70usize, prop::collection::vec(0x80..=0xFFu8, 0..40)), 0..300),
    ) {
        let mut input = Vec::new();
        for (ascii, high) in runs {
            input.extend(std::iter::repeat_n(b'a', ascii));
            input.extend(high);
        }
        let ours = decode(enc, &input).map_err(|e| e.offset);
        prop_assert_eq!(ours, naive_decode(enc, &input));
    }
}
