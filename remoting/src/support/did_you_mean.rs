//! The error for an unknown configuration key: the known key nearest to it, when one
//! is close enough to be a misspelling (`brokerClustername` for `brokerClusterName`,
//! `lisenPort` for `listenPort`).

/// `unknown key 'KEY'`, with the known key nearest to `key` when one is
/// close enough to be a misspelling of it.
pub fn unknown_key(key: &str, known: impl IntoIterator<Item = &'static str>) -> String {
    match did_you_mean(key, known) {
        Some(near) => format!("unknown key '{key}' (did you mean '{near}'?)"),
        None => format!("unknown key '{key}'"),
    }
}

/// The known key nearest to `key` by edit distance (letter case counting half), if
/// it is within a third of the key's length and keeps some of it.
pub fn did_you_mean(
    key: &str,
    known: impl IntoIterator<Item = &'static str>,
) -> Option<&'static str> {
    let len = key.chars().count();
    let limit = (len / 3).max(1) * 2;
    known
        .into_iter()
        .map(|k| (distance(key, k), k))
        .filter(|(d, _)| *d <= limit && *d < len * 2)
        .min_by_key(|(d, _)| *d)
        .map(|(_, k)| k)
}

/// Levenshtein distance in half steps: a change of letter case costs 1, any other
/// edit 2.
fn distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).map(|j| j * 2).collect();
    let mut row = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        row[0] = (i + 1) * 2;
        for (j, cb) in b.iter().enumerate() {
            let swap = if ca == cb {
                0
            } else if ca.eq_ignore_ascii_case(cb) {
                1
            } else {
                2
            };
            row[j + 1] = (prev[j] + swap).min(prev[j + 1] + 2).min(row[j] + 2);
        }
        std::mem::swap(&mut prev, &mut row);
    }
    prev[b.len()]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unknown_key_names_the_nearest_known_one() {
        let known = ["brokerClusterName", "brokerName", "listenPort", "brokerId"];
        assert_eq!(
            unknown_key("brokerClustername", known),
            "unknown key 'brokerClustername' (did you mean 'brokerClusterName'?)"
        );
        assert_eq!(did_you_mean("listenport", known), Some("listenPort"));
        assert_eq!(did_you_mean("brokerNmae", known), Some("brokerName"));
        assert_eq!(did_you_mean("lisenPort", known), Some("listenPort"));
        assert_eq!(did_you_mean("serverWorkerThreads", known), None);
        assert_eq!(did_you_mean("x", known), None);
        assert_eq!(did_you_mean("b", ["a"]), None);
        assert_eq!(unknown_key("nope", known), "unknown key 'nope'");
    }
}
