//! Message properties and their string encoding (docs/message.md, sections "Property
//! string" and "Property keys").
//!
//! ```text
//! name1 U+0001 value1 U+0002 name2 U+0001 value2 U+0002 ...
//! ```

/// Separates a property name from its value.
pub const NAME_VALUE_SEPARATOR: char = '\u{1}';
/// Ends every name/value pair.
pub const PROPERTY_SEPARATOR: char = '\u{2}';
/// Separates several values of `KEYS`.
pub const KEY_SEPARATOR: &str = " ";
/// Longest encoded property string (a short in the record).
pub const MAX_PROPERTIES_LEN: usize = i16::MAX as usize;

pub const KEYS: &str = "KEYS";
pub const TAGS: &str = "TAGS";
pub const WAIT_STORE_MSG_OK: &str = "WAIT";
pub const DELAY_TIME_LEVEL: &str = "DELAY";
pub const RETRY_TOPIC: &str = "RETRY_TOPIC";
pub const REAL_TOPIC: &str = "REAL_TOPIC";
pub const REAL_QUEUE_ID: &str = "REAL_QID";
pub const TRANSACTION_PREPARED: &str = "TRAN_MSG";
pub const PRODUCER_GROUP: &str = "PGROUP";
pub const MIN_OFFSET: &str = "MIN_OFFSET";
pub const MAX_OFFSET: &str = "MAX_OFFSET";
pub const BUYER_ID: &str = "BUYER_ID";
pub const ORIGIN_MESSAGE_ID: &str = "ORIGIN_MESSAGE_ID";
pub const TRANSFER_FLAG: &str = "TRANSFER_FLAG";
pub const CORRECTION_FLAG: &str = "CORRECTION_FLAG";
pub const MQ2_FLAG: &str = "MQ2_FLAG";
pub const RECONSUME_TIME: &str = "RECONSUME_TIME";
pub const MSG_REGION: &str = "MSG_REGION";
pub const TRACE_SWITCH: &str = "TRACE_ON";
pub const UNIQ_CLIENT_MESSAGE_ID_KEYIDX: &str = "UNIQ_KEY";
pub const EXTEND_UNIQ_INFO: &str = "EXTEND_UNIQ_INFO";
pub const MAX_RECONSUME_TIMES: &str = "MAX_RECONSUME_TIMES";
pub const CONSUME_START_TIMESTAMP: &str = "CONSUME_START_TIME";
pub const INNER_NUM: &str = "INNER_NUM";
pub const INNER_BASE: &str = "INNER_BASE";
pub const DUP_INFO: &str = "DUP_INFO";
pub const CHECK_IMMUNITY_TIME_IN_SECONDS: &str = "CHECK_IMMUNITY_TIME_IN_SECONDS";
pub const TRANSACTION_PREPARED_QUEUE_OFFSET: &str = "TRAN_PREPARED_QUEUE_OFFSET";
pub const TRANSACTION_ID: &str = "__transactionId__";
pub const TRANSACTION_CHECK_TIMES: &str = "TRANSACTION_CHECK_TIMES";
pub const INSTANCE_ID: &str = "INSTANCE_ID";
pub const CORRELATION_ID: &str = "CORRELATION_ID";
pub const MESSAGE_REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
pub const MESSAGE_TTL: &str = "TTL";
pub const REPLY_MESSAGE_ARRIVE_TIME: &str = "ARRIVE_TIME";
pub const PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
pub const CLUSTER: &str = "CLUSTER";
pub const MESSAGE_TYPE: &str = "MSG_TYPE";
pub const SHARDING_KEY: &str = "__SHARDINGKEY";
pub const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
pub const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
pub const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
pub const TIMER_ENQUEUE_MS: &str = "TIMER_ENQUEUE_MS";
pub const TIMER_DEQUEUE_MS: &str = "TIMER_DEQUEUE_MS";
pub const TIMER_ROLL_TIMES: &str = "TIMER_ROLL_TIMES";
pub const TIMER_OUT_MS: &str = "TIMER_OUT_MS";
pub const TIMER_DEL_UNIQKEY: &str = "TIMER_DEL_UNIQKEY";
pub const TIMER_DELAY_LEVEL: &str = "TIMER_DELAY_LEVEL";
pub const DLQ_ORIGIN_TOPIC: &str = "DLQ_ORIGIN_TOPIC";
pub const DLQ_ORIGIN_MESSAGE_ID: &str = "DLQ_ORIGIN_MESSAGE_ID";
pub const BORN_HOST: &str = "__BORNHOST";
pub const BORN_TIMESTAMP: &str = "BORN_TIMESTAMP";
pub const TRACE_CONTEXT: &str = "TRACE_CONTEXT";
/// A popped message's checkpoint handle (docs/pop.md#extrainfo): what ACK_MESSAGE and
/// CHANGE_MESSAGE_INVISIBLETIME send back as `extraInfo`.
pub const POP_CK: &str = "POP_CK";
pub const POP_CK_OFFSET: &str = "POP_CK_OFFSET";
/// When the message was first popped (kept through revives).
pub const FIRST_POP_TIME: &str = "1ST_POP_TIME";
/// Value of [`MESSAGE_TYPE`] on reply messages.
pub const REPLY_MESSAGE_FLAG: &str = "reply";

/// Names a user may not set (`MessageConst.STRING_HASH_SET`).
pub const RESERVED: &[&str] = &[
    TRACE_SWITCH,
    MSG_REGION,
    KEYS,
    TAGS,
    WAIT_STORE_MSG_OK,
    DELAY_TIME_LEVEL,
    RETRY_TOPIC,
    REAL_TOPIC,
    REAL_QUEUE_ID,
    TRANSACTION_PREPARED,
    PRODUCER_GROUP,
    MIN_OFFSET,
    MAX_OFFSET,
    BUYER_ID,
    ORIGIN_MESSAGE_ID,
    TRANSFER_FLAG,
    CORRECTION_FLAG,
    MQ2_FLAG,
    RECONSUME_TIME,
    UNIQ_CLIENT_MESSAGE_ID_KEYIDX,
    MAX_RECONSUME_TIMES,
    CONSUME_START_TIMESTAMP,
    INNER_NUM,
    INNER_BASE,
    TRANSACTION_PREPARED_QUEUE_OFFSET,
    TRANSACTION_CHECK_TIMES,
    CHECK_IMMUNITY_TIME_IN_SECONDS,
    SHARDING_KEY,
    TIMER_DELAY_SEC,
    TIMER_DELIVER_MS,
    TIMER_DELAY_MS,
    TIMER_ENQUEUE_MS,
    TIMER_DEQUEUE_MS,
    TIMER_ROLL_TIMES,
    TIMER_OUT_MS,
    TIMER_DEL_UNIQKEY,
    POP_CK,
    POP_CK_OFFSET,
    FIRST_POP_TIME,
    TIMER_DELAY_LEVEL,
    CLUSTER,
    INSTANCE_ID,
    CORRELATION_ID,
    MESSAGE_REPLY_TO_CLIENT,
    MESSAGE_TTL,
    REPLY_MESSAGE_ARRIVE_TIME,
    PUSH_REPLY_TIME,
    MESSAGE_TYPE,
    DUP_INFO,
    EXTEND_UNIQ_INFO,
    TRANSACTION_ID,
];

/// A message's properties, kept as their encoded string.
///
/// Messages are decoded far more often than their properties are changed: holding the
/// text (normalised: every pair valid, each name once, each pair terminated) costs one
/// allocation per message where a map costs two per property, and encoding is a copy.
/// Lookups scan the text, which is short. Pairs keep their insertion order.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Properties {
    text: String,
}

impl std::fmt::Debug for Properties {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_map().entries(self.iter()).finish()
    }
}

impl Properties {
    pub fn new() -> Self {
        Properties::default()
    }

    /// Empty, with room for `bytes` of encoded pairs: a message about to be sent gets
    /// its unique key, tags and keys without growing the text again.
    pub fn with_capacity(bytes: usize) -> Self {
        Properties {
            text: String::with_capacity(bytes),
        }
    }

    pub fn get(&self, name: &str) -> Option<&str> {
        pairs(&self.text).find(|(k, _)| *k == name).map(|(_, v)| v)
    }

    /// Sets `name`, returning its previous value. A pair with an empty name or value
    /// cannot be encoded (Java drops it), so none is added.
    pub fn insert(&mut self, name: impl AsRef<str>, value: impl AsRef<str>) -> Option<String> {
        let (name, value) = (name.as_ref(), value.as_ref());
        let old = self.remove(name);
        if !name.is_empty() && !value.is_empty() {
            push_pair(&mut self.text, name, value);
        }
        old
    }

    /// Sets `name` to what `write` appends to the text, unless `name` is already set:
    /// one scan and no copy of the value (the producer's unique key, on every send).
    /// A value `write` leaves empty or holding a separator is not kept. True if set.
    pub fn insert_if_absent_with(&mut self, name: &str, write: impl FnOnce(&mut String)) -> bool {
        if name.is_empty() || self.contains(name) {
            return false;
        }
        let start = self.text.len();
        self.text.push_str(name);
        self.text.push(NAME_VALUE_SEPARATOR);
        let value_start = self.text.len();
        write(&mut self.text);
        let value = &self.text[value_start..];
        if value.is_empty() || value.contains([NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR]) {
            self.text.truncate(start);
            return false;
        }
        self.text.push(PROPERTY_SEPARATOR);
        true
    }

    pub fn remove(&mut self, name: &str) -> Option<String> {
        // Pairs are normalised: each is `name U+0001 value U+0002`, back to back.
        let mut start = 0;
        for (k, v) in pairs(&self.text) {
            let len = k.len() + v.len() + 2;
            if k == name {
                let old = v.to_owned();
                self.text.replace_range(start..start + len, "");
                return Some(old);
            }
            start += len;
        }
        None
    }

    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    pub fn is_empty(&self) -> bool {
        self.text.is_empty()
    }

    pub fn len(&self) -> usize {
        pairs(&self.text).count()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&str, &str)> {
        pairs(&self.text)
    }

    /// Parses a property string with Java's rules: pairs without a name or a value are
    /// dropped, and a later duplicate wins.
    pub fn decode(text: &str) -> Self {
        if is_normal(text, |_, _| {}) {
            return Properties {
                text: text.to_owned(),
            };
        }
        Self::normalise(text, |_, _| {})
    }

    /// [`Properties::decode`] of an owned string, without a copy when it is already
    /// normal (what clients send). `visit` sees the pairs in order so a caller can read
    /// what it needs in the same pass; on a string that needs normalising it may see a
    /// pair twice, the later value last, so assignments end with the value that wins.
    pub fn decode_owned_with(text: String, mut visit: impl FnMut(&str, &str)) -> Self {
        if is_normal(&text, &mut visit) {
            return Properties { text };
        }
        Self::normalise(&text, visit)
    }

    fn normalise(text: &str, mut visit: impl FnMut(&str, &str)) -> Self {
        let mut properties = Properties {
            text: String::with_capacity(text.len()),
        };
        for (k, v) in pairs(text) {
            visit(k, v);
            properties.insert(k, v);
        }
        properties
    }

    /// The property string, by value.
    pub fn into_string(self) -> String {
        self.text
    }

    /// The property string, every pair terminated by U+0002.
    pub fn encode(&self) -> String {
        self.text.clone()
    }

    /// The property string, borrowed.
    pub fn as_str(&self) -> &str {
        &self.text
    }

    pub fn encoded_len(&self) -> usize {
        self.text.len()
    }

    /// Space-separated `KEYS`.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.get(KEYS)
            .unwrap_or("")
            .split(KEY_SEPARATOR)
            .filter(|k| !k.is_empty())
    }

    pub fn tags(&self) -> Option<&str> {
        self.get(TAGS)
    }

    pub fn uniq_key(&self) -> Option<&str> {
        self.get(UNIQ_CLIENT_MESSAGE_ID_KEYIDX)
    }

    /// `DELAY` as a level; absent or unparsable is 0.
    pub fn delay_level(&self) -> i32 {
        self.get(DELAY_TIME_LEVEL)
            .and_then(|v| v.parse().ok())
            .unwrap_or(0)
    }

    /// `TRAN_MSG=true`.
    pub fn is_transaction_prepared(&self) -> bool {
        self.get(TRANSACTION_PREPARED)
            .is_some_and(|v| v.eq_ignore_ascii_case("true"))
    }
}

/// True when `text` is already normal: its valid pairs cover it exactly (nothing
/// dropped, the last one terminated) and no name repeats.
fn is_normal(text: &str, mut visit: impl FnMut(&str, &str)) -> bool {
    let mut covered = 0;
    // Few names (on the stack): a scan beats hashing; many (a hostile message): hash.
    let mut names: [&str; 16] = [""; 16];
    let mut count = 0;
    let mut seen = std::collections::HashSet::new();
    for (k, v) in pairs(text) {
        visit(k, v);
        covered += k.len() + v.len() + 2;
        let repeated = if count < names.len() {
            let r = names[..count].contains(&k);
            names[count] = k;
            count += 1;
            if count == names.len() {
                seen.extend(names.iter().copied());
            }
            r
        } else {
            !seen.insert(k)
        };
        if repeated {
            return false;
        }
    }
    covered == text.len() && (text.is_empty() || text.ends_with(PROPERTY_SEPARATOR))
}

impl<K: AsRef<str>, V: AsRef<str>> FromIterator<(K, V)> for Properties {
    fn from_iter<I: IntoIterator<Item = (K, V)>>(iter: I) -> Self {
        let mut properties = Properties::new();
        for (k, v) in iter {
            properties.insert(k, v);
        }
        properties
    }
}

/// Appends one encoded pair.
pub fn push_pair(out: &mut String, name: &str, value: &str) {
    out.push_str(name);
    out.push(NAME_VALUE_SEPARATOR);
    out.push_str(value);
    out.push(PROPERTY_SEPARATOR);
}

/// The pairs of a property string, in order, with Java's filtering rules
/// (`MessageDecoder.string2messageProperties`): a pair needs a non-empty name and a
/// non-empty value around its first U+0001.
pub fn pairs(text: &str) -> Pairs<'_> {
    Pairs { text, pos: 0 }
}

/// Iterator of [`pairs`]. Works on bytes: both separators are ASCII, so every split
/// point is a character boundary.
pub struct Pairs<'a> {
    text: &'a str,
    pos: usize,
}

impl<'a> Iterator for Pairs<'a> {
    type Item = (&'a str, &'a str);

    fn next(&mut self) -> Option<(&'a str, &'a str)> {
        let bytes = self.text.as_bytes();
        while self.pos < bytes.len() {
            let start = self.pos;
            let end = bytes[start..]
                .iter()
                .position(|&b| b == PROPERTY_SEPARATOR as u8)
                .map_or(bytes.len(), |i| start + i);
            self.pos = end + 1;
            let segment = &bytes[start..end];
            if let Some(sep) = segment
                .iter()
                .position(|&b| b == NAME_VALUE_SEPARATOR as u8)
            {
                if sep != 0 && sep != segment.len() - 1 {
                    return Some((
                        &self.text[start..start + sep],
                        &self.text[start + sep + 1..end],
                    ));
                }
            }
        }
        None
    }
}

/// Looks one property up in an encoded string without building a map; the last
/// occurrence wins, as in [`Properties::decode`]. Used on hot paths (send, dispatch).
pub fn find<'a>(text: &'a str, name: &str) -> Option<&'a str> {
    pairs(text)
        .filter(|(k, _)| *k == name)
        .map(|(_, v)| v)
        .last()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn encodes_with_trailing_separator() {
        let p: Properties = [("TAGS", "TagA"), ("KEYS", "k1 k2")].into_iter().collect();
        assert_eq!(p.encode(), "TAGS\u{1}TagA\u{2}KEYS\u{1}k1 k2\u{2}");
        assert_eq!(p.encoded_len(), p.encode().len());
        assert_eq!(p.keys().collect::<Vec<_>>(), ["k1", "k2"]);
    }

    #[test]
    fn insert_if_absent_with_keeps_a_set_value_and_refuses_bad_ones() {
        let mut p: Properties = [("WAIT", "true")].into_iter().collect();
        assert!(p.insert_if_absent_with("UNIQ_KEY", |t| t.push_str("AC1")));
        assert!(!p.insert_if_absent_with("UNIQ_KEY", |_| unreachable!("already set")));
        assert_eq!(p.get("UNIQ_KEY"), Some("AC1"));
        // An empty value or one holding a separator leaves the text as it was.
        let before = p.encode();
        assert!(!p.insert_if_absent_with("A", |_| {}));
        assert!(!p.insert_if_absent_with("B", |t| t.push_str("x\u{2}y")));
        assert!(!p.insert_if_absent_with("", |t| t.push('x')));
        assert_eq!(p.encode(), before);
        assert_eq!(p, Properties::decode(&before));
    }

    /// Java's rules spelled out directly, to check the byte-level iterator against.
    fn reference_pairs(text: &str) -> Vec<(&str, &str)> {
        text.split(PROPERTY_SEPARATOR)
            .filter(|segment| segment.chars().count() >= 3)
            .filter_map(|segment| {
                let sep = segment.find(NAME_VALUE_SEPARATOR)?;
                (sep != 0 && sep != segment.len() - 1)
                    .then(|| (&segment[..sep], &segment[sep + 1..]))
            })
            .collect()
    }

    proptest::proptest! {
        /// Decoding keeps exactly Java's map (later duplicates win, bad pairs dropped),
        /// and edits behave as on a map.
        #[test]
        fn behaves_as_a_map(
            text in "[ab\u{1}\u{2}é]{0,24}",
            edits in proptest::collection::vec(("[abc]{1,2}", proptest::option::of("[xyé]{1,3}")), 0..8),
        ) {
            let mut model = std::collections::BTreeMap::new();
            for (k, v) in reference_pairs(&text) {
                model.insert(k.to_owned(), v.to_owned());
            }
            let mut props = Properties::decode(&text);
            for (k, v) in edits {
                match v {
                    Some(v) => {
                        proptest::prop_assert_eq!(props.insert(&k, &v), model.insert(k, v));
                    }
                    None => {
                        proptest::prop_assert_eq!(props.remove(&k), model.remove(&k));
                    }
                }
            }
            proptest::prop_assert_eq!(props.len(), model.len());
            for (k, v) in &model {
                proptest::prop_assert_eq!(props.get(k), Some(v.as_str()));
            }
            let reparsed = Properties::decode(&props.encode());
            proptest::prop_assert_eq!(reparsed, props);
        }

        #[test]
        fn byte_level_pairs_match_the_rules(text in "[ab\u{1}\u{2}é😀]{0,24}") {
            proptest::prop_assert_eq!(pairs(&text).collect::<Vec<_>>(), reference_pairs(&text));
        }
    }

    #[test]
    fn decodes_with_java_rules() {
        let p = Properties::decode(
            "A\u{1}1\u{2}\u{1}x\u{2}B\u{1}\u{2}C\u{1}3\u{2}A\u{1}9\u{2}junk\u{2}D\u{1}4",
        );
        assert_eq!(p.get("A"), Some("9"), "later duplicate wins");
        assert_eq!(p.get("B"), None, "empty value dropped");
        assert_eq!(p.get(""), None, "empty name dropped");
        assert_eq!(p.get("C"), Some("3"));
        assert_eq!(p.get("D"), Some("4"), "last pair without separator");
        assert_eq!(p.len(), 3);
        assert_eq!(find("A\u{1}1\u{2}A\u{1}2\u{2}", "A"), Some("2"));
        assert_eq!(find("A\u{1}1\u{2}", "B"), None);
        // A value may contain U+0001 after the first one.
        assert_eq!(
            Properties::decode("K\u{1}a\u{1}b\u{2}").get("K"),
            Some("a\u{1}b")
        );
    }
}
