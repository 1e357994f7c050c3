//! Routing-key patterns in the style of an AMQP 0-9-1 topic exchange, matched against a
//! message's tag on the client.
//!
//! A key and a pattern are dot-separated words; in a pattern `*` stands for exactly one
//! word and `#` for zero or more words: `a.*` matches `a.b` but not `a` or `a.b.c`;
//! `a.#` matches `a`, `a.b` and `a.b.c`; `#` matches everything.

/// A parsed pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RoutingPattern {
    words: Vec<String>,
}

impl RoutingPattern {
    pub fn new(pattern: &str) -> Self {
        RoutingPattern {
            words: pattern.split('.').map(str::to_owned).collect(),
        }
    }

    /// True when the pattern has no wildcard, so the broker can filter by tag hash.
    pub fn is_literal(&self) -> bool {
        self.words.iter().all(|w| w != "*" && w != "#")
    }

    pub fn as_string(&self) -> String {
        self.words.join(".")
    }

    /// Whether `key` (a message tag; no tag is the empty key) matches.
    pub fn matches(&self, key: &str) -> bool {
        let key: Vec<&str> = if key.is_empty() {
            Vec::new()
        } else {
            key.split('.').collect()
        };
        let pattern: Vec<&str> = self.words.iter().map(String::as_str).collect();
        matches_words(&pattern, &key)
    }
}

/// Dynamic programming over (pattern position, key position): linear in the product,
/// no backtracking blow-up on patterns like `#.#.#.x`.
fn matches_words(pattern: &[&str], key: &[&str]) -> bool {
    let k = key.len();
    // reach[j]: the first i pattern words can match the first j key words.
    let mut reach = vec![false; k + 1];
    reach[0] = true;
    for word in pattern {
        let mut next = vec![false; k + 1];
        match *word {
            "#" => {
                let mut any = false;
                for j in 0..=k {
                    any |= reach[j];
                    next[j] = any;
                }
            }
            "*" => {
                next[1..=k].copy_from_slice(&reach[..k]);
            }
            literal => {
                for j in 1..=k {
                    next[j] = reach[j - 1] && key[j - 1] == literal;
                }
            }
        }
        reach = next;
    }
    reach[k]
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, key: &str) -> bool {
        RoutingPattern::new(pattern).matches(key)
    }

    #[test]
    fn amqp_topic_exchange_rules() {
        assert!(m("a.*", "a.b"));
        assert!(!m("a.*", "a.b.c"));
        assert!(!m("a.*", "a"));
        assert!(m("a.#", "a"));
        assert!(m("a.#", "a.b"));
        assert!(m("a.#", "a.b.c"));
        assert!(!m("a.#", "b.a"));
        assert!(m("#", ""));
        assert!(m("#", "a"));
        assert!(m("#", "a.b.c"));
        assert!(m("*.b.#", "a.b"));
        assert!(m("*.b.#", "x.b.c.d"));
        assert!(!m("*.b.#", "b"));
        assert!(!m("*.b.#", "a.c.b"));
        assert!(m("*.orange.*", "quick.orange.rabbit"));
        assert!(!m("*.orange.*", "quick.orange.male.rabbit"));
        assert!(m("lazy.#", "lazy.orange.male.rabbit"));
        assert!(m("*.*.rabbit", "quick.orange.rabbit"));
        assert!(!m("*.*.rabbit", "orange"));
        assert!(m("#.rabbit", "rabbit"));
        assert!(m("a.#.z", "a.z"));
        assert!(m("a.#.z", "a.b.c.z"));
        assert!(!m("a.#.z", "a.b.c"));
        assert!(m("a.b", "a.b"));
        assert!(!m("a.b", "a.bb"));
        assert!(!m("*", ""));
        assert!(m("#.#.#.x", "x"));
        // Many `#`s stay linear and exact.
        assert!(!m(
            &format!("{}x", "#.".repeat(50)),
            &format!("{}z", "y.".repeat(60))
        ));
        assert!(m(
            &format!("{}x", "#.".repeat(50)),
            &format!("{}x", "y.".repeat(60))
        ));
    }

    #[test]
    fn literal_patterns() {
        assert!(RoutingPattern::new("a.b").is_literal());
        assert!(!RoutingPattern::new("a.*").is_literal());
        assert_eq!(RoutingPattern::new("a.#").as_string(), "a.#");
    }
}
