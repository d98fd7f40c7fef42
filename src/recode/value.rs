//! What to do with one stored value: keep it, rewrite it, or quarantine it. Pure.
//!
//! A value is rewritten only when the repaired text, encoded back through the
//! label's chain, gives exactly the stored bytes: the lossless round trip that
//! protects data. Everything else is kept or quarantined, never guessed.

use super::serialized;
use crate::codec::{self, Encoding, Tcvn3Convention};
use crate::detect::{self, ColumnPrior, Context, Label};
use std::sync::OnceLock;

/// Where a column's source encoding comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Source {
    /// Detect each value, with the column's prior.
    Auto,
    /// The job fixes the label: every non-ASCII value must repair under it.
    Fixed(Label),
}

/// The decision for one value.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Leave as stored (ASCII, already UTF-8, binary, empty).
    Keep,
    /// Replace the stored bytes with these UTF-8 bytes.
    Rewrite {
        /// The new bytes (UTF-8).
        new: Vec<u8>,
        /// The label that justified it.
        label: Label,
    },
    /// Leave as stored and list it: no safe reading.
    Quarantine {
        /// Why, for the quarantine table.
        reason: String,
        /// Best reading that was not good enough.
        runner_up: Option<String>,
    },
}

/// The stored bytes that `text` came from under `label`: the inverse of [`Label::repair`].
pub fn unrepair(label: Label, text: &str) -> Vec<Vec<u8>> {
    match label {
        Label::Ascii | Label::Utf8 => vec![text.as_bytes().to_vec()],
        Label::Legacy(Encoding::Tcvn3) => [Tcvn3Convention::SingleByte, Tcvn3Convention::TwoByte]
            .iter()
            .filter_map(|c| codec::encode_tcvn3(text, *c).ok())
            .collect(),
        Label::Legacy(e) => codec::encode(e, text).ok().into_iter().collect(),
        Label::Mojibake { real, read_as } => {
            let raw: Vec<Vec<u8>> = match real {
                Encoding::Utf8 => vec![text.as_bytes().to_vec()],
                _ => unrepair(Label::Legacy(real), text),
            };
            raw.iter()
                .filter_map(|b| codec::decode(read_as, b).ok())
                .map(|s| s.into_bytes())
                .collect()
        }
        Label::Binary | Label::Unknown => Vec::new(),
    }
}

/// Whether `text` is a lossless reading of `stored`: the bytes themselves as UTF-8, or the
/// text that some label's round trip turns back into exactly `stored`. What the copy's
/// check and `verify` ask of every copied value, without detecting it a second time.
pub fn is_lossless_reading(stored: &[u8], text: &str) -> bool {
    if text.as_bytes() == stored {
        return true;
    }
    if serialized::looks_serialized(stored) && serialized::payloads(stored).is_ok() {
        // Only string by string: the whole value read as text keeps counts that no longer
        // match its strings, which unserialize() refuses.
        return serialized::same_shape(stored, text.as_bytes(), string_reads);
    }
    let legacy = Encoding::ALL.iter().filter(|e| **e != Encoding::Utf8);
    let mut labels = legacy.clone().map(|e| Label::Legacy(*e)).chain(
        [Encoding::Latin1, Encoding::Windows1251]
            .into_iter()
            .flat_map(move |read_as| {
                Encoding::ALL
                    .into_iter()
                    .filter(move |real| *real != read_as)
                    .map(move |real| Label::Mojibake { real, read_as })
            }),
    );
    labels.any(|l| unrepair(l, text).iter().any(|b| b == stored))
}

/// Whether a serialized value's string `new` is `old` as stored, or a lossless reading of it.
fn string_reads(old: &[u8], new: &[u8]) -> bool {
    old == new || std::str::from_utf8(new).is_ok_and(|t| is_lossless_reading(old, t))
}

/// Whether a single-byte legacy encoding decodes every mapped byte to its own character,
/// none of them ASCII: then any value it decodes at all encodes back to the same bytes, and
/// the round trip need not be run (it is most of the time a copy spends proving).
fn round_trips_by_construction(enc: Encoding) -> bool {
    static T: OnceLock<Vec<(Encoding, bool)>> = OnceLock::new();
    let all = T.get_or_init(|| {
        Encoding::ALL
            .iter()
            .filter(|e| !matches!(e, Encoding::Utf8 | Encoding::Tcvn3))
            .map(|&e| {
                let mapped: Vec<char> = detect::tables::decode_table(e)
                    .iter()
                    .copied()
                    .filter(|&c| c != detect::tables::UNMAPPED)
                    .collect();
                let distinct: std::collections::HashSet<char> = mapped.iter().copied().collect();
                (
                    e,
                    distinct.len() == mapped.len() && mapped.iter().all(|c| !c.is_ascii()),
                )
            })
            .collect()
    });
    all.iter().any(|&(e, ok)| e == enc && ok)
}

/// Rewrites under `label` only if the round trip gives back `stored` exactly.
pub fn rewrite(label: Label, stored: &[u8]) -> Option<Vec<u8>> {
    let text = label.repair(stored)?;
    if text.as_bytes() == stored {
        return None;
    }
    if matches!(label, Label::Legacy(e) if round_trips_by_construction(e)) {
        return Some(text.into_bytes());
    }
    unrepair(label, &text)
        .iter()
        .any(|b| b == stored)
        .then(|| text.into_bytes())
}

/// Decides one value; `fallback` (the job's `undecidable: use <label>`) reads a value no
/// reading decided, still only through its lossless round trip.
pub fn decide(
    source: &Source,
    fallback: Option<Label>,
    prior: Option<&ColumnPrior>,
    threshold: f32,
    stored: &[u8],
) -> Action {
    match decide_alone(source, fallback, prior, threshold, stored) {
        Action::Quarantine { reason, runner_up } => {
            match fallback.and_then(|l| rewrite(l, stored).map(|new| (l, new))) {
                Some((label, new)) if !serialized::looks_serialized(stored) => {
                    Action::Rewrite { new, label }
                }
                _ => Action::Quarantine { reason, runner_up },
            }
        }
        a => a,
    }
}

/// [`decide`] before the fallback (a serialized value's strings each get it).
fn decide_alone(
    source: &Source,
    fallback: Option<Label>,
    prior: Option<&ColumnPrior>,
    threshold: f32,
    stored: &[u8],
) -> Action {
    if stored.is_ascii() {
        return Action::Keep;
    }
    if serialized::looks_serialized(stored) {
        return decide_serialized((source, fallback), prior, threshold, stored);
    }
    let label = match source {
        Source::Fixed(label) => {
            if std::str::from_utf8(stored).is_ok() && !matches!(label, Label::Mojibake { .. }) {
                if let Some(a) = valid_utf8_under(*label, prior, threshold, stored) {
                    return a;
                }
            }
            *label
        }
        Source::Auto => {
            // Plainly the column's text: its one reading, proven by the round trip below.
            if let Some(label) = prior.and_then(|p| detect::fast::in_column(stored, p, threshold)) {
                if let Some(new) = rewrite(label, stored) {
                    return Action::Rewrite { new, label };
                }
            }
            let v = detect::detect(stored, &Context { threshold, prior });
            match v.label {
                Label::Ascii | Label::Utf8 | Label::Binary => return Action::Keep,
                Label::Unknown => {
                    return Action::Quarantine {
                        reason: format!("undecidable (confidence {:.2})", v.confidence),
                        runner_up: v.runner_up.map(|(l, p)| format!("{l} ({p:.2})")),
                    }
                }
                l => l,
            }
        }
    };
    match rewrite(label, stored) {
        Some(new) => Action::Rewrite { new, label },
        None => Action::Quarantine {
            reason: format!("does not round-trip losslessly as {label}"),
            runner_up: Some(label.to_string()),
        },
    }
}

/// Valid UTF-8 in a column the plan fixed to `label`: the fixed label is the column's verdict,
/// so the value is read as the scan read it, by the detector under the column's prior (the
/// run's, else one of `label` alone). `None`: it reads as `label` (rewritten under it, round
/// trip proven); `Keep`: it reads as UTF-8 (a fixed client wrote it; an in-place run never
/// reads again a row it rewrote, its checkpoint past it); else it is listed, never kept as
/// UTF-8 in silence (cp1251 "Ні." is UTF-8 "ͳ.").
fn valid_utf8_under(
    label: Label,
    prior: Option<&ColumnPrior>,
    threshold: f32,
    stored: &[u8],
) -> Option<Action> {
    let own;
    let prior = match prior {
        Some(p) => p,
        None => {
            own = ColumnPrior::from_counts(&[(label, PLAN_VOTES)]);
            &own
        }
    };
    let v = detect::detect(
        stored,
        &Context {
            threshold,
            prior: Some(prior),
        },
    );
    match v.label {
        l if detect::same_family(l, label) => None,
        Label::Ascii | Label::Utf8 | Label::Binary => Some(Action::Keep),
        other => Some(Action::Quarantine {
            reason: format!(
                "valid UTF-8 that does not read as the column's {label} (reads as {other}, confidence {:.2})",
                v.confidence
            ),
            runner_up: v.runner_up.map(|(l, p)| format!("{l} ({p:.2})")),
        }),
    }
}

/// Votes a fixed `source:` lends its label where the run formed no prior: the plan's verdict
/// stands for a column of that many rows of it.
const PLAN_VOTES: f32 = 1000.0;

/// `action` for a column that holds `utf8mb3` (three bytes a character at most): a rewrite
/// whose text needs four (an emoji, a rare CJK character) is listed instead, with the reason
/// and the fix, since the server would refuse the whole batch with 1366 at every rerun and
/// the table's other rows would never be repaired.
pub fn within_utf8mb3(action: Action, utf8mb3: bool) -> Action {
    match action {
        Action::Rewrite { new, label } if utf8mb3 && new.iter().any(|b| *b >= 0xF0) => {
            Action::Quarantine {
                reason: format!(
                    "read as {label}, its text needs 4-byte UTF-8 (an emoji or a rare character), which this utf8mb3 column cannot hold. Fix: make the column utf8mb4 (strategy: copy with a utf8mb4 target), then run again"
                ),
                runner_up: Some(label.to_string()),
            }
        }
        other => other,
    }
}

/// A PHP-serialized value: each string decided as a value of the column and written back
/// with its new byte count, proven by the round trip of every string; a value that looks
/// serialized but does not parse, or holds an undecidable string, is quarantined whole
/// (recoded as text, its counts would no longer match and `unserialize()` would fail).
fn decide_serialized(
    (source, fallback): (&Source, Option<Label>),
    prior: Option<&ColumnPrior>,
    threshold: f32,
    stored: &[u8],
) -> Action {
    let mut undecided: Option<(String, Option<String>)> = None;
    let mut used: Option<Label> = None;
    let recoded = serialized::recode(stored, |payload| {
        match decide(source, fallback, prior, threshold, payload) {
            Action::Keep => None,
            Action::Rewrite { new, label } => {
                used.get_or_insert(label);
                Some(new)
            }
            Action::Quarantine { reason, runner_up } => {
                undecided.get_or_insert((reason, runner_up));
                None
            }
        }
    });
    let recoded = match recoded {
        Ok(r) => r,
        Err(e) => {
            return Action::Quarantine {
                reason: format!("{e}: left as it is (recoded as text, unserialize() would fail)"),
                runner_up: None,
            }
        }
    };
    if let Some((reason, runner_up)) = undecided {
        return Action::Quarantine {
            reason: format!("PHP-serialized, one of its strings {reason}"),
            runner_up,
        };
    }
    let Some(label) = used.filter(|_| recoded.changed) else {
        return Action::Keep;
    };
    let proven = serialized::same_shape(stored, &recoded.bytes, string_reads);
    if proven {
        Action::Rewrite {
            new: recoded.bytes,
            label,
        }
    } else {
        Action::Quarantine {
            reason: "PHP-serialized, and its recoded form does not round-trip".into(),
            runner_up: Some(label.to_string()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `s:N:"…";` of `text` in cp1251, N its cp1251 byte count.
    fn s1251(text: &str) -> Vec<u8> {
        let b = codec::encode(Encoding::Windows1251, text).unwrap();
        let mut out = format!("s:{}:\"", b.len()).into_bytes();
        out.extend(b);
        out.extend(b"\";");
        out
    }

    #[test]
    fn a_serialized_value_is_recoded_string_by_string_with_new_counts() {
        let mut stored = b"a:2:{s:5:\"title\";".to_vec();
        stored.extend(s1251("Скидки недели"));
        stored.extend(b"s:4:\"tags\";a:1:{i:0;");
        stored.extend(s1251("ёлки"));
        stored.extend(b"}}");
        let cp1251 = Source::Fixed(Label::Legacy(Encoding::Windows1251));
        let Action::Rewrite { new, .. } = decide(&cp1251, None, None, 0.95, &stored) else {
            panic!("not rewritten")
        };
        assert_eq!(
            String::from_utf8(new.clone()).unwrap(),
            "a:2:{s:5:\"title\";s:25:\"Скидки недели\";s:4:\"tags\";a:1:{i:0;s:8:\"ёлки\";}}"
        );
        assert!(is_lossless_reading(
            &stored,
            std::str::from_utf8(&new).unwrap()
        ));
        // Detected rather than fixed: the same.
        assert!(
            matches!(decide(&Source::Auto, None, None, 0.95, &stored), Action::Rewrite { new: n, .. } if n == new)
        );
        // Recoded as text, the counts stay: that is not a reading of the stored value.
        let naive = Label::Legacy(Encoding::Windows1251)
            .repair(&stored)
            .unwrap();
        assert!(!is_lossless_reading(&stored, &naive));
        // A value that looks serialized but whose counts are wrong is left alone, listed.
        let mut broken = stored.clone();
        broken[6] = b'9';
        assert!(matches!(
            decide(&cp1251, None, None, 0.95, &broken),
            Action::Quarantine { .. }
        ));
    }

    #[test]
    fn a_lossless_reading_is_one_a_label_encodes_back_to_the_stored_bytes() {
        let text = "Привет, мир";
        for e in [Encoding::Windows1251, Encoding::Koi8R, Encoding::Ibm866] {
            let stored = codec::encode(e, text).unwrap();
            assert!(is_lossless_reading(&stored, text), "{e:?}");
            assert!(!is_lossless_reading(&stored, "Привет, мир!"), "{e:?}");
        }
        assert!(is_lossless_reading(text.as_bytes(), text));
        let double = codec::decode(Encoding::Latin1, text.as_bytes()).unwrap();
        assert!(is_lossless_reading(double.as_bytes(), text), "utf-8>latin1");
    }

    #[test]
    fn the_round_trip_shortcut_agrees_with_running_it() {
        for e in Encoding::ALL {
            if !round_trips_by_construction(e) {
                continue;
            }
            let label = Label::Legacy(e);
            for b in 0x80..=0xFFu8 {
                let stored = [b'a', b, 0xE0, b' '];
                let Some(text) = label.repair(&stored) else {
                    continue;
                };
                assert_eq!(
                    unrepair(label, &text),
                    vec![stored.to_vec()],
                    "{e:?} {b:#x}"
                );
            }
        }
        assert!(round_trips_by_construction(Encoding::Windows1251));
        assert!(!round_trips_by_construction(Encoding::Tcvn3));
    }

    #[test]
    fn fixed_cp1251_rewrites_and_round_trips() {
        let stored = codec::encode(Encoding::Windows1251, "Привет, мир").unwrap();
        let a = decide(
            &Source::Fixed(Label::Legacy(Encoding::Windows1251)),
            None,
            None,
            0.95,
            &stored,
        );
        assert_eq!(
            a,
            Action::Rewrite {
                new: "Привет, мир".as_bytes().to_vec(),
                label: Label::Legacy(Encoding::Windows1251)
            }
        );
    }

    #[test]
    fn already_utf8_is_kept_under_a_fixed_legacy_label() {
        let a = decide(
            &Source::Fixed(Label::Legacy(Encoding::Windows1251)),
            None,
            None,
            0.95,
            "Привет".as_bytes(),
        );
        assert_eq!(a, Action::Keep);
    }

    const CP1251: Source = Source::Fixed(Label::Legacy(Encoding::Windows1251));

    #[test]
    fn a_fixed_label_is_the_column_s_verdict_for_a_legacy_value_that_is_also_valid_utf8() {
        // cp1251 "Ні." is CD B3 2E, also UTF-8 for "ͳ.": the plan's verdict reads it, with or
        // without a prior formed by the run.
        let stored = codec::encode(Encoding::Windows1251, "Ні.").unwrap();
        assert!(std::str::from_utf8(&stored).is_ok());
        let cities: Vec<Vec<u8>> = ["Москва", "Київ", "Новосибирск", "Тверь", "Ужгород"]
            .iter()
            .cycle()
            .take(200)
            .map(|c| codec::encode(Encoding::Windows1251, c).unwrap())
            .collect();
        let refs: Vec<&[u8]> = cities.iter().map(|c| c.as_slice()).collect();
        let prior = detect::column_prior(&refs);
        for p in [None, Some(&prior)] {
            assert_eq!(
                decide(&CP1251, None, p, 0.95, &stored),
                Action::Rewrite {
                    new: "Ні.".as_bytes().to_vec(),
                    label: Label::Legacy(Encoding::Windows1251)
                },
                "prior {:?}",
                p.is_some()
            );
        }
    }

    #[test]
    fn a_value_already_rewritten_or_written_as_utf8_is_kept_under_a_fixed_label() {
        // Every value a run rewrites, read again, stays: a resumed run never recodes twice.
        let words = [
            "Ні.",
            "нет",
            "лимб",
            "О Joostina",
            "Ёлка",
            "ё",
            "Ж",
            "Щука",
            "Київ",
            "я",
        ];
        for w in words {
            let stored = codec::encode(Encoding::Windows1251, w).unwrap();
            let Action::Rewrite { new, .. } = decide(&CP1251, None, None, 0.95, &stored) else {
                panic!("{w}: not rewritten")
            };
            // Never recoded twice; one Cyrillic letter beside Latin words is no evidence
            // either way (UTF-8 "О" reads as cp1251 "Рћ"): listed rather than kept in silence.
            let again = decide(&CP1251, None, None, 0.95, &new);
            let short = w.chars().filter(|c| !c.is_ascii()).count() < 2;
            assert!(
                again == Action::Keep || (short && matches!(again, Action::Quarantine { .. })),
                "{w}: {again:?}"
            );
        }
        // Honest UTF-8 text is never recoded under a legacy label.
        for t in [
            "café",
            "ação",
            "Καλημέρα",
            "日本語のテキスト",
            "ok 👍",
            "Привет, мир",
        ] {
            assert_eq!(
                decide(&CP1251, None, None, 0.95, t.as_bytes()),
                Action::Keep,
                "{t}"
            );
        }
    }

    #[test]
    fn the_fallback_reads_only_what_no_reading_decided_and_only_through_its_round_trip() {
        let cp1251 = Label::Legacy(Encoding::Windows1251);
        // Bytes no reading is sure of (alone, two letters): listed without a fallback.
        let stored = codec::encode(Encoding::Windows1251, "ГБ").unwrap();
        assert!(matches!(
            decide(&Source::Auto, None, None, 0.95, &stored),
            Action::Quarantine { .. }
        ));
        assert_eq!(
            decide(&Source::Auto, Some(cp1251), None, 0.95, &stored),
            Action::Rewrite {
                new: "ГБ".as_bytes().to_vec(),
                label: cp1251
            }
        );
        // A byte the fallback's table lacks (0x98 in cp1251): still listed.
        let junk = [0x98, 0xE0, 0x98];
        assert!(matches!(
            decide(&Source::Auto, Some(cp1251), None, 0.95, &junk),
            Action::Quarantine { .. }
        ));
        // What a reading decided is never the fallback's.
        let koi = codec::encode(Encoding::Koi8R, "Доставка курьером до двери").unwrap();
        assert!(matches!(
            decide(&Source::Auto, Some(cp1251), None, 0.95, &koi),
            Action::Rewrite {
                label: Label::Legacy(Encoding::Koi8R),
                ..
            }
        ));
    }

    #[test]
    fn mojibake_unrepairs_to_the_stored_bytes() {
        let label = Label::Mojibake {
            real: Encoding::Windows1251,
            read_as: Encoding::Latin1,
        };
        let stored = codec::decode(
            Encoding::Latin1,
            &codec::encode(Encoding::Windows1251, "Привет").unwrap(),
        )
        .unwrap();
        assert_eq!(
            rewrite(label, stored.as_bytes()),
            Some("Привет".as_bytes().to_vec())
        );
        assert!(unrepair(label, "Привет").contains(&stored.into_bytes()));
    }

    #[test]
    fn ascii_is_kept_and_junk_under_a_wrong_fixed_label_is_quarantined() {
        let src = Source::Fixed(Label::Mojibake {
            real: Encoding::Windows1251,
            read_as: Encoding::Latin1,
        });
        assert_eq!(decide(&src, None, None, 0.95, b"plain"), Action::Keep);
        assert!(matches!(
            decide(&src, None, None, 0.95, &[0xff, 0xfe, 0x00, 0x81]),
            Action::Quarantine { .. }
        ));
    }

    #[test]
    fn a_four_byte_character_waits_in_a_utf8mb3_column_and_passes_in_utf8mb4() {
        let rewrite = |t: &str| Action::Rewrite {
            new: t.as_bytes().to_vec(),
            label: "utf-8>latin1".parse().unwrap(),
        };
        match within_utf8mb3(rewrite("Привет 😀"), true) {
            Action::Quarantine { reason, .. } => {
                assert!(
                    reason.contains("utf8mb3 column cannot hold. Fix:"),
                    "{reason}"
                )
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            within_utf8mb3(rewrite("Привет 😀"), false),
            rewrite("Привет 😀")
        );
        assert_eq!(
            within_utf8mb3(rewrite("Привет ☺"), true),
            rewrite("Привет ☺")
        );
        assert_eq!(within_utf8mb3(Action::Keep, true), Action::Keep);
    }
}
