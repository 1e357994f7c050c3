//! Routing keys and binding keys in the style of an AMQP topic exchange
//! (docs/amqp.md), the expression type `ROUTING` of a subscription.
//!
//! A routing key is dot-separated parts of letters, digits and `_` (`orders.created.eu`).
//! A message carries it in its `ROUTING_KEY` property; a message without that property
//! is routed by its tag. A binding key is dot-separated parts too, where a part may also
//! be `*` (exactly one part) or `#` (zero or more parts), each only as a whole part:
//! `orders.*.eu` and `orders.#` are binding keys, `orders.eu*` is not, and `#.#`, `#.*`
//! and `*.#` are refused (they say nothing a simpler key does not). A binding key
//! matches a routing key when it consumes the routing key to its end and is consumed
//! to its own end. A message whose routing key is not valid matches no binding key.

use super::super::message::property;

/// The message property that carries a routing key.
pub const ROUTING_KEY: &str = "ROUTING_KEY";

/// Why a routing key or a binding key was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RoutingKeyError {
    #[error("a binding key cannot be empty; `#` binds to every routing key")]
    EmptyBindingKey,
    #[error("part {index} of {key:?} is empty: parts are separated by single dots")]
    EmptyPart { key: String, index: usize },
    #[error("part {index} of {key:?} has the character {found:?}: a part is letters, digits and `_`{wild}")]
    BadCharacter {
        key: String,
        index: usize,
        found: char,
        wild: &'static str,
    },
    #[error("{key:?} has `{pair}`: a `#` cannot stand next to another `#` or a `*`")]
    RedundantWildcards { key: String, pair: &'static str },
}

fn plain_part(part: &str) -> Option<char> {
    part.chars()
        .find(|c| !(c.is_ascii_alphanumeric() || *c == '_'))
}

/// Checks a routing key: dot-separated non-empty parts of letters, digits and `_`.
/// The empty key (a message with no key) is valid and matches only `#`.
pub fn validate_routing_key(key: &str) -> Result<(), RoutingKeyError> {
    if key.is_empty() {
        return Ok(());
    }
    for (index, part) in key.split('.').enumerate() {
        if part.is_empty() {
            return Err(RoutingKeyError::EmptyPart {
                key: key.to_owned(),
                index,
            });
        }
        if let Some(found) = plain_part(part) {
            return Err(RoutingKeyError::BadCharacter {
                key: key.to_owned(),
                index,
                found,
                wild: "",
            });
        }
    }
    Ok(())
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Part {
    Word(String),
    /// `*`: exactly one part.
    One,
    /// `#`: zero or more parts.
    Any,
}

/// A parsed, valid binding key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BindingKey {
    text: String,
    parts: Vec<Part>,
}

impl BindingKey {
    /// Parses and checks a binding key.
    pub fn parse(key: &str) -> Result<BindingKey, RoutingKeyError> {
        if key.is_empty() {
            return Err(RoutingKeyError::EmptyBindingKey);
        }
        let mut parts = Vec::new();
        for (index, part) in key.split('.').enumerate() {
            let parsed = match part {
                "" => {
                    return Err(RoutingKeyError::EmptyPart {
                        key: key.to_owned(),
                        index,
                    })
                }
                "*" => Part::One,
                "#" => Part::Any,
                word => {
                    if let Some(found) = plain_part(word) {
                        return Err(RoutingKeyError::BadCharacter {
                            key: key.to_owned(),
                            index,
                            found,
                            wild: ", or a whole `*` or `#`",
                        });
                    }
                    Part::Word(word.to_owned())
                }
            };
            let pair = match (parts.last(), &parsed) {
                (Some(Part::Any), Part::Any) => Some("#.#"),
                (Some(Part::Any), Part::One) => Some("#.*"),
                (Some(Part::One), Part::Any) => Some("*.#"),
                _ => None,
            };
            if let Some(pair) = pair {
                return Err(RoutingKeyError::RedundantWildcards {
                    key: key.to_owned(),
                    pair,
                });
            }
            parts.push(parsed);
        }
        Ok(BindingKey {
            text: key.to_owned(),
            parts,
        })
    }

    pub fn as_str(&self) -> &str {
        &self.text
    }

    /// True when the key has no `*` or `#`: it matches one routing key only.
    pub fn is_exact(&self) -> bool {
        self.parts.iter().all(|p| matches!(p, Part::Word(_)))
    }

    /// Whether `routing_key` matches; an invalid routing key matches nothing.
    pub fn matches(&self, routing_key: &str) -> bool {
        if validate_routing_key(routing_key).is_err() {
            return false;
        }
        let words: Vec<&str> = if routing_key.is_empty() {
            Vec::new()
        } else {
            routing_key.split('.').collect()
        };
        self.matches_words(&words)
    }

    /// Dynamic programming over (binding position, routing position): linear in the
    /// product of the lengths, whatever the key.
    fn matches_words(&self, key: &[&str]) -> bool {
        let k = key.len();
        // reach[j]: the binding parts so far can consume exactly the first j words.
        let mut reach = vec![false; k + 1];
        let mut next = vec![false; k + 1];
        reach[0] = true;
        for part in &self.parts {
            match part {
                Part::Any => {
                    let mut any = false;
                    for j in 0..=k {
                        any |= reach[j];
                        next[j] = any;
                    }
                }
                Part::One => {
                    next[0] = false;
                    next[1..=k].copy_from_slice(&reach[..k]);
                }
                Part::Word(w) => {
                    next[0] = false;
                    for j in 1..=k {
                        next[j] = reach[j - 1] && key[j - 1] == w;
                    }
                }
            }
            std::mem::swap(&mut reach, &mut next);
        }
        reach[k]
    }

    /// Whether the message with this encoded property string matches: its
    /// `ROUTING_KEY` property, else its tag, else the empty key.
    pub fn matches_properties(&self, encoded: &str) -> bool {
        self.matches(routing_key_of_properties(encoded))
    }
}

/// The routing key in an encoded property string: `ROUTING_KEY`, else `TAGS`, else "".
pub fn routing_key_of_properties(encoded: &str) -> &str {
    let mut tag = None;
    let mut key = None;
    for (k, v) in property::pairs(encoded) {
        if k == ROUTING_KEY {
            key = Some(v);
        } else if k == property::TAGS {
            tag = Some(v);
        }
    }
    key.or(tag).unwrap_or("")
}

#[cfg(test)]
mod tests;
