use super::*;

fn m(binding: &str, key: &str) -> bool {
    BindingKey::parse(binding)
        .unwrap_or_else(|e| panic!("{binding}: {e}"))
        .matches(key)
}

#[test]
fn valid_and_invalid_routing_keys() {
    for ok in ["", "a", "orders", "orders.created.eu", "a_b.C9.x", "1.2.3"] {
        assert_eq!(validate_routing_key(ok), Ok(()), "{ok:?}");
    }
    for bad in [
        ".", "a.", ".a", "a..b", "a.*", "a.#", "a-b", "a b", "é", "a/b",
    ] {
        assert!(validate_routing_key(bad).is_err(), "{bad:?}");
    }
}

#[test]
fn valid_and_invalid_binding_keys() {
    for ok in [
        "a",
        "aaa.*.bbb",
        "#",
        "*",
        "a.#",
        "#.a",
        "a.#.b",
        "*.a.*",
        "*.*",
        "a.*.b.#",
        "#.a.#",
        "orders.*.eu",
        "x_1.Y2",
    ] {
        assert!(BindingKey::parse(ok).is_ok(), "{ok:?}");
    }
    let refused = |key: &str| BindingKey::parse(key).unwrap_err();
    assert_eq!(refused(""), RoutingKeyError::EmptyBindingKey);
    for partial in ["aa*.bbb", "a.b#", "*a", "#a.b", "a.**", "a.##"] {
        assert!(
            matches!(refused(partial), RoutingKeyError::BadCharacter { .. }),
            "{partial:?}"
        );
    }
    for empty in [".", "a.", ".a", "a..b", "#.", ".#"] {
        assert!(
            matches!(refused(empty), RoutingKeyError::EmptyPart { .. }),
            "{empty:?}"
        );
    }
    for (key, pair) in [
        ("#.#", "#.#"),
        ("#.*", "#.*"),
        ("*.#", "*.#"),
        ("a.#.#.b", "#.#"),
        ("a.*.#", "*.#"),
        ("#.*.a", "#.*"),
    ] {
        assert_eq!(
            refused(key),
            RoutingKeyError::RedundantWildcards {
                key: key.to_owned(),
                pair
            }
        );
    }
    assert!(refused("a-b").to_string().contains("'-'"));
}

#[test]
fn star_is_exactly_one_part() {
    assert!(m("aaa.*.bbb", "aaa.x.bbb"));
    assert!(!m("aaa.*.bbb", "aaa.bbb"), "a star needs a part");
    assert!(!m("aaa.*.bbb", "aaa.x.y.bbb"), "a star takes one part only");
    assert!(m("*", "a"));
    assert!(!m("*", ""));
    assert!(!m("*", "a.b"));
    assert!(m("*.*", "a.b"));
    assert!(m("orders.*.eu", "orders.created.eu"));
    assert!(!m("orders.*.eu", "orders.created.us"));
    assert!(!m("orders.*.eu", "orders.eu"));
}

#[test]
fn hash_at_the_start_middle_and_end() {
    // At the end: everything after it, including nothing.
    assert!(m("a.#", "a"));
    assert!(m("a.#", "a.b"));
    assert!(m("a.#", "a.b.c.d"));
    assert!(!m("a.#", "b.a"));
    assert!(!m("a.#", ""));
    // At the start.
    assert!(m("#.z", "z"));
    assert!(m("#.z", "a.b.z"));
    assert!(!m("#.z", "a.z.b"));
    // In the middle.
    assert!(m("a.#.z", "a.z"));
    assert!(m("a.#.z", "a.b.c.z"));
    assert!(!m("a.#.z", "a.b.c"));
    assert!(!m("a.#.z", "b.z"));
    // Alone: every key, the empty one too.
    assert!(m("#", ""));
    assert!(m("#", "a"));
    assert!(m("#", "a.b.c"));
    // With stars around it.
    assert!(m("*.b.#", "a.b"));
    assert!(m("*.b.#", "x.b.c.d"));
    assert!(!m("*.b.#", "b"));
    assert!(m("#.a.#", "a"));
    assert!(m("#.a.#", "x.a.y"));
    assert!(!m("#.a.#", "x.y"));
}

#[test]
fn a_match_consumes_both_keys() {
    // The routing key ends early.
    assert!(!m("a.b.c", "a.b"));
    assert!(!m("a.b.*", "a.b"));
    assert!(!m("a.b.#.c", "a.b"));
    // The routing key runs long.
    assert!(!m("a.b", "a.b.c"));
    assert!(!m("a.*", "a.b.c"));
    assert!(!m("#.b", "a.b.c"));
    // Exact.
    assert!(m("a.b", "a.b"));
    assert!(!m("a.b", "a.bb"));
    assert!(!m("a.b", "A.b"), "keys are case-sensitive");
    // Many hashes stay linear and exact.
    let many = format!("{}x", "#.y.".repeat(40));
    assert!(m(&many, &format!("{}x", "y.".repeat(60))));
    assert!(!m(&many, &format!("{}z", "y.".repeat(60))));
}

#[test]
fn invalid_routing_keys_match_nothing() {
    assert!(!m("#", "a..b"));
    assert!(!m("#", "a-b"));
    assert!(!m("*", "a b"));
}

#[test]
fn the_routing_key_is_the_property_else_the_tag() {
    let key = BindingKey::parse("orders.*.eu").unwrap();
    assert!(!key.is_exact() && BindingKey::parse("a.b").unwrap().is_exact());
    let props = "TAGS\u{1}orders.paid.eu\u{2}";
    assert!(key.matches_properties(props));
    let both = "TAGS\u{1}x\u{2}ROUTING_KEY\u{1}orders.new.eu\u{2}";
    assert_eq!(routing_key_of_properties(both), "orders.new.eu");
    assert!(key.matches_properties(both));
    let property_wins = "ROUTING_KEY\u{1}orders.new.us\u{2}TAGS\u{1}orders.new.eu\u{2}";
    assert!(!key.matches_properties(property_wins));
    assert_eq!(routing_key_of_properties("KEYS\u{1}k\u{2}"), "");
    assert!(BindingKey::parse("#").unwrap().matches_properties(""));
}
