//! Durations as a DBA writes them in a job: `500ms`, `2s`, `1m`, `1h`.

use serde::{Deserialize, Deserializer, Serialize, Serializer};
use std::fmt;
use std::time::Duration;

/// A duration read from and written as `500ms`, `2s`, `1m` or `1h`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Dur(pub Duration);

/// What to tell someone whose duration does not parse.
pub const DURATION_HELP: &str = "write a whole number with a unit: 500ms, 2s, 1m or 1h";

/// Parses `500ms`, `2s`, `1m`, `1h` (a bare `0` is zero).
pub fn parse(text: &str) -> Result<Duration, String> {
    let t = text.trim();
    if t == "0" {
        return Ok(Duration::ZERO);
    }
    let split = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
    let (num, unit) = t.split_at(split);
    let bad = || format!("invalid duration '{text}': {DURATION_HELP}");
    let n: u64 = num.parse().map_err(|_| bad())?;
    let ms = match unit.trim() {
        "ms" => Some(n),
        "s" => n.checked_mul(1000),
        "m" => n.checked_mul(60_000),
        "h" => n.checked_mul(3_600_000),
        _ => None,
    }
    .ok_or_else(bad)?;
    Ok(Duration::from_millis(ms))
}

impl Dur {
    /// Milliseconds.
    pub fn from_millis(ms: u64) -> Self {
        Dur(Duration::from_millis(ms))
    }
}

impl fmt::Display for Dur {
    /// The shortest exact form: `1h`, `1m`, `2s` or `500ms`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let ms = self.0.as_millis();
        if ms == 0 {
            write!(f, "0s")
        } else if ms.is_multiple_of(3_600_000) {
            write!(f, "{}h", ms / 3_600_000)
        } else if ms.is_multiple_of(60_000) {
            write!(f, "{}m", ms / 60_000)
        } else if ms.is_multiple_of(1000) {
            write!(f, "{}s", ms / 1000)
        } else {
            write!(f, "{ms}ms")
        }
    }
}

impl std::str::FromStr for Dur {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        parse(s).map(Dur)
    }
}

impl Serialize for Dur {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Dur {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Dur;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "a duration such as 500ms, 2s or 1m")
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Dur, E> {
                v.parse().map_err(E::custom)
            }
            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<Dur, E> {
                if v == 0 {
                    Ok(Dur(Duration::ZERO))
                } else {
                    Err(E::custom(format!(
                        "invalid duration '{v}' (no unit): {DURATION_HELP}"
                    )))
                }
            }
            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration '{v}' (no unit): {DURATION_HELP}"
                )))
            }
            fn visit_f64<E: serde::de::Error>(self, v: f64) -> Result<Dur, E> {
                Err(E::custom(format!(
                    "invalid duration '{v}' (no unit): {DURATION_HELP}"
                )))
            }
        }
        d.deserialize_any(V)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_units() {
        assert_eq!(parse("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse("2s"), Ok(Duration::from_secs(2)));
        assert_eq!(parse("1m"), Ok(Duration::from_secs(60)));
        assert_eq!(parse("1h"), Ok(Duration::from_secs(3600)));
        assert_eq!(parse(" 10s "), Ok(Duration::from_secs(10)));
        assert_eq!(parse("0"), Ok(Duration::ZERO));
    }

    #[test]
    fn rejects_what_is_not_a_duration() {
        for bad in ["", "5", "5 sec", "1.5s", "-1s", "ms", "2d", "s2"] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(DURATION_HELP), "{bad}: {e}");
        }
    }

    #[test]
    fn displays_the_shortest_exact_form() {
        for (ms, text) in [
            (500, "500ms"),
            (2000, "2s"),
            (60_000, "1m"),
            (1500, "1500ms"),
        ] {
            assert_eq!(Dur::from_millis(ms).to_string(), text);
            assert_eq!(text.parse::<Dur>().unwrap(), Dur::from_millis(ms));
        }
    }

    #[test]
    fn yaml_numbers_without_unit_are_errors() {
        let e = serde_yaml::from_str::<Dur>("5").unwrap_err().to_string();
        assert!(e.contains("no unit"), "{e}");
        assert_eq!(
            serde_yaml::from_str::<Dur>("250ms").unwrap(),
            Dur::from_millis(250)
        );
    }
}
