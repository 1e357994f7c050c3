//! The properties codec, both ways.
//! String → map: `Properties::decode` of any text keeps Java's rules (pairs without a
//! name or value dropped, the later duplicate wins), agrees with the lookup on the raw
//! text, and its encoding is normal (decoding it again changes nothing).
//! Map → string: pairs built from the input (separators removed) encode to a string
//! that decodes to the same map.
#![no_main]

use std::collections::BTreeMap;

use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::message::property::{
    find, pairs, NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR,
};
use vostok_remoting::protocol::message::Properties;

fuzz_target!(|data: &[u8]| {
    let text = String::from_utf8_lossy(data);
    let decoded = Properties::decode(&text);
    let mut java: BTreeMap<&str, &str> = BTreeMap::new();
    for (k, v) in pairs(&text) {
        assert!(!k.is_empty() && !v.is_empty());
        java.insert(k, v);
    }
    let ours: BTreeMap<&str, &str> = decoded.iter().collect();
    assert_eq!(ours.len(), decoded.len(), "a name appears twice");
    assert_eq!(ours, java);
    // Lookups scan the text: a sample of names keeps the target linear.
    for (k, v) in java.iter().take(16) {
        assert_eq!(find(&text, k), Some(*v));
        assert_eq!(decoded.get(k), Some(*v));
    }
    let encoded = decoded.encode();
    assert!(encoded.is_empty() || encoded.ends_with(PROPERTY_SEPARATOR));
    assert_eq!(Properties::decode(&encoded), decoded);

    // Map → string: lines are `name=value`, separators stripped.
    let clean = |s: &str| s.replace([NAME_VALUE_SEPARATOR, PROPERTY_SEPARATOR], "");
    let mut map = BTreeMap::new();
    for line in text.split('\n') {
        if let Some((k, v)) = line.split_once('=') {
            let (k, v) = (clean(k), clean(v));
            if !k.is_empty() && !v.is_empty() {
                map.insert(k, v);
            }
        }
    }
    let built: Properties = map.iter().collect();
    let back = Properties::decode(&built.encode());
    let back: BTreeMap<String, String> = back
        .iter()
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .collect();
    assert_eq!(back, map);
});
