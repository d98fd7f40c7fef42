//! "Did you mean": the closest name by edit distance.

/// Levenshtein distance over characters, case-insensitive.
pub fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.to_lowercase().chars().collect();
    let b: Vec<char> = b.to_lowercase().chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    let mut cur = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        cur[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let sub = prev[j] + usize::from(ca != cb);
            cur[j + 1] = sub.min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        std::mem::swap(&mut prev, &mut cur);
    }
    prev[b.len()]
}

/// The candidate closest to `wanted`, if it is close enough to be a likely typo
/// (at most a third of the longer name, and at least 2 edits allowed).
pub fn closest<'a, I, S>(wanted: &str, candidates: I) -> Option<&'a str>
where
    I: IntoIterator<Item = &'a S>,
    S: AsRef<str> + 'a + ?Sized,
{
    candidates
        .into_iter()
        .map(|c| c.as_ref())
        .map(|c| (distance(wanted, c), c))
        .filter(|(d, c)| *d <= (wanted.chars().count().max(c.chars().count()) / 3).max(2))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

/// ` (did you mean 'x'?)`, or nothing.
pub fn did_you_mean<'a, I, S>(wanted: &str, candidates: I) -> String
where
    I: IntoIterator<Item = &'a S>,
    S: AsRef<str> + 'a + ?Sized,
{
    match closest(wanted, candidates) {
        Some(c) => format!(" (did you mean '{c}'?)"),
        None => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distances() {
        assert_eq!(distance("kitten", "sitting"), 3);
        assert_eq!(distance("", "abc"), 3);
        assert_eq!(distance("CP1251", "cp1251"), 0);
    }

    #[test]
    fn suggests_only_plausible_names() {
        let names = ["customers", "orders", "order_lines"];
        assert_eq!(closest("customer", &names), Some("customers"));
        assert_eq!(closest("ordrs", &names), Some("orders"));
        assert_eq!(closest("zzzzzz", &names), None);
        assert_eq!(
            did_you_mean("cp1215", crate::job::labels::known()),
            " (did you mean 'cp1251'?)"
        );
    }
}
