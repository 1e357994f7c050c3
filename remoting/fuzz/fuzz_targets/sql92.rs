//! Feeds arbitrary text to the SQL92 selector compiler and evaluates what compiles.
//! Contract: no panic, no stack overflow, bounded work; an error's position lies
//! within the expression; matching an encoded property string agrees with matching
//! the same properties through a lookup.
#![no_main]

use libfuzzer_sys::fuzz_target;
use vostok_remoting::protocol::filter::sql92::{Sql92Filter, MAX_EXPRESSION_LEN};
use vostok_remoting::protocol::message::property::push_pair;

fuzz_target!(|data: &[u8]| {
    // The first line is the expression; the next lines are `name=value` properties.
    let text = String::from_utf8_lossy(data);
    let mut lines = text.split('\n');
    let expression = lines.next().unwrap_or("");
    let pairs: Vec<(&str, &str)> = lines
        .filter_map(|l| l.split_once('='))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty() && !k.contains(['\u{1}', '\u{2}']) && !v.contains('\u{2}'))
        .collect();
    match Sql92Filter::compile(expression) {
        Err(e) => assert!(e.position <= expression.len().max(MAX_EXPRESSION_LEN)),
        Ok(filter) => {
            let mut encoded = String::new();
            for (k, v) in &pairs {
                push_pair(&mut encoded, k, v);
            }
            let by_lookup =
                filter.matches(|name| pairs.iter().rev().find(|(k, _)| *k == name).map(|p| p.1));
            assert_eq!(filter.matches_properties(&encoded), by_lookup);
        }
    }
});
