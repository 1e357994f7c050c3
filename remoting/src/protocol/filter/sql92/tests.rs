//! Semantics checked against what Apache's evaluator does (docs/semantics.md#sql92).

use super::*;
use crate::protocol::message::property::push_pair;

/// Encoded properties from pairs.
fn props(pairs: &[(&str, &str)]) -> String {
    let mut s = String::new();
    for (k, v) in pairs {
        push_pair(&mut s, k, v);
    }
    s
}

fn eval(expr: &str, pairs: &[(&str, &str)]) -> Result<Option<bool>, EvalError> {
    let filter = Sql92Filter::compile(expr).unwrap_or_else(|e| panic!("{expr}: {e}"));
    let result = filter.evaluate(|name| pairs.iter().find(|(k, _)| *k == name).map(|p| p.1));
    // The two ways of matching agree.
    assert_eq!(
        filter.matches_properties(&props(pairs)),
        result == Ok(Some(true)),
        "{expr}"
    );
    result
}

fn is(expr: &str, pairs: &[(&str, &str)]) -> bool {
    eval(expr, pairs) == Ok(Some(true))
}

fn error_at(expr: &str) -> usize {
    match Sql92Filter::compile(expr) {
        Ok(_) => panic!("{expr} compiled"),
        Err(e) => e.position,
    }
}

#[test]
fn numbers_compare_as_ints_longs_and_doubles() {
    assert!(is("a > 5", &[("a", "10")]));
    assert!(!is("a > 5", &[("a", "3")]));
    assert!(is("a >= 5 AND a <= 5", &[("a", "5")]));
    assert!(is("a < 5.5", &[("a", "5")]));
    assert!(is("a > 5.5", &[("a", "5.6")]));
    assert!(is("a = 10", &[("a", "10")]));
    assert!(is("a <> 10", &[("a", "11")]));
    // Against an int literal the property is read as a 32-bit int: a larger number or a
    // decimal fraction is an error, and the message is not selected.
    assert_eq!(
        eval("a > 5", &[("a", "3000000000")]),
        Err(EvalError::NotANumber)
    );
    assert_eq!(eval("a = 10", &[("a", "10.0")]), Err(EvalError::NotANumber));
    // Against a literal beyond 32 bits it is read as a long.
    assert!(is("a > 3000000000", &[("a", "3000000001")]));
    assert!(is("a = 3000000000L", &[("a", "3000000000")]));
    assert!(is("a > -5", &[("a", "-3")]));
    assert!(is("a = -2147483648", &[("a", "-2147483648")]));
    assert!(is("a > 1.5E3", &[("a", "1501")]));
    // Two properties are ordered as doubles.
    assert!(is("a < b", &[("a", "2"), ("b", "10")]));
    assert_eq!(
        eval("a < b", &[("a", "x"), ("b", "10")]),
        Err(EvalError::StringOrdering)
    );
}

#[test]
fn strings_compare_only_for_equality() {
    assert!(is("b = 'abc'", &[("b", "abc")]));
    assert!(!is("b = 'abc'", &[("b", "abd")]));
    assert!(is("b <> 'abc'", &[("b", "abd")]));
    assert!(is("s = 'it''s'", &[("s", "it's")]));
    assert!(is("b = 'é😀'", &[("b", "é😀")]));
    assert_eq!(error_at("b > 'abc'"), 4);
    assert_eq!(error_at("'abc' <= b"), 0);
    assert!(is("b CONTAINS 'bc'", &[("b", "abc")]));
    assert!(is("b STARTSWITH 'ab'", &[("b", "abc")]));
    assert!(is("b ENDSWITH 'bc'", &[("b", "abc")]));
    assert!(is("b NOT CONTAINS 'x'", &[("b", "abc")]));
    assert!(!is("b NOT CONTAINS 'x'", &[]), "absent is FALSE, not NULL");
    assert!(
        !is("b CONTAINS ''", &[("b", "abc")]),
        "an empty pattern never matches"
    );
    // A string meeting a boolean is read with Boolean.valueOf.
    assert!(is("flag = TRUE", &[("flag", "True")]));
    assert!(is("flag = FALSE", &[("flag", "no")]));
}

#[test]
fn null_is_absence_and_propagates() {
    assert_eq!(eval("a > 5", &[]), Ok(None));
    assert_eq!(eval("NOT (a > 5)", &[]), Ok(None));
    assert_eq!(eval("a <> 'x'", &[]), Ok(None));
    assert!(is("a IS NULL", &[]));
    assert!(!is("a IS NULL", &[("a", "1")]));
    assert!(is("a IS NOT NULL", &[("a", "1")]));
    // AND is FALSE as soon as a term is, OR TRUE as soon as a term is.
    assert_eq!(eval("a > 5 AND FALSE", &[]), Ok(Some(false)));
    assert_eq!(eval("a > 5 AND TRUE", &[]), Ok(None));
    assert_eq!(eval("a > 5 OR TRUE", &[]), Ok(Some(true)));
    assert_eq!(eval("a > 5 OR FALSE", &[]), Ok(None));
    // Equality of two absent properties is TRUE; one absent: NULL on the left, FALSE on
    // the right.
    assert!(is("a = b", &[]));
    assert_eq!(eval("a = b", &[("b", "1")]), Ok(None));
    assert_eq!(eval("a = b", &[("a", "1")]), Ok(Some(false)));
    // An error on the left decides the whole expression, even where the right would
    // have selected the message; short-circuiting skips errors on the right.
    assert!(eval("a = 1 OR b = 'x'", &[("a", "z"), ("b", "x")]).is_err());
    assert!(is("b = 'x' OR a = 1", &[("a", "z"), ("b", "x")]));
    // A bare property is a condition that is NULL when absent and FALSE otherwise.
    assert_eq!(eval("a", &[]), Ok(None));
    assert_eq!(eval("a", &[("a", "true")]), Ok(Some(false)));
    assert!(is("TRUE", &[]));
    assert!(!is("FALSE", &[]));
    assert!(!is("NULL", &[]));
}

#[test]
fn between_and_in() {
    assert!(is("a BETWEEN 1 AND 10", &[("a", "1")]));
    assert!(is("a BETWEEN 1 AND 10", &[("a", "10")]));
    assert!(!is("a BETWEEN 1 AND 10", &[("a", "11")]));
    assert!(is("a NOT BETWEEN 1 AND 10", &[("a", "11")]));
    assert!(!is("a NOT BETWEEN 1 AND 10", &[]));
    assert!(is("a BETWEEN 1.5 AND 2.5", &[("a", "1.75")]));
    // Each bound converts the property to its own type: `1.75 <= 2` reads 1.75 as an int.
    assert_eq!(
        eval("a BETWEEN 1.5 AND 2", &[("a", "1.75")]),
        Err(EvalError::NotANumber)
    );
    assert_eq!(error_at("a BETWEEN 10 AND 1"), 10);
    assert_eq!(error_at("a BETWEEN NULL AND 1"), 10);
    assert!(is("TAGS IN ('TagA', 'TagB')", &[("TAGS", "TagB")]));
    assert!(!is("TAGS IN ('TagA', 'TagB')", &[("TAGS", "TagC")]));
    assert!(is("TAGS NOT IN ('TagA')", &[("TAGS", "TagC")]));
    assert!(!is("TAGS NOT IN ('TagA')", &[]));
    let many = "k IN ('a', 'b', 'c', 'd', 'e', 'f')";
    assert!(is(many, &[("k", "f")]));
    assert!(!is(many, &[("k", "g")]));
    assert_eq!(error_at("k IN (1)"), 6);
    assert_eq!(error_at("5 IN ('a')"), 0);
}

#[test]
fn keywords_comments_and_precedence() {
    assert!(is("a = 1 and b = 2 OR c = 3", &[("c", "3")]));
    assert!(!is("a = 1 AND (b = 2 OR c = 3)", &[("c", "3")]));
    assert!(is("NOT a = 1 OR TRUE", &[]));
    // NOT binds tighter than =, as in Apache's grammar: `NOT a = 1` is `(NOT a) = 1`.
    assert!(!is("NOT a = 1", &[("a", "2")]));
    assert!(is("/* c */ a = 1 -- trailing\n", &[("a", "1")]));
    assert!(is("a = --1", &[("a", "1")]));
    assert!(is("$x_1 = 'y'", &[("$x_1", "y")]));
}

#[test]
fn bad_expressions_say_where() {
    assert_eq!(error_at(""), 0);
    assert_eq!(error_at("a ="), 3);
    assert_eq!(error_at("a = NULL"), 4);
    assert_eq!(error_at("5"), 0);
    assert_eq!(error_at("a = 1 b = 2"), 6, "trailing text is refused");
    assert_eq!(error_at("a = 1 AND 5"), 10);
    assert_eq!(error_at("TRUE = 1"), 7);
    assert_eq!(error_at("a > TRUE"), 4);
    assert_eq!(error_at("(a = 1) > 2"), 0);
    assert_eq!(error_at("a = 99999999999999999999"), 4);
    assert_eq!(error_at("a > 0.0"), 4);
    assert_eq!(error_at("a IS 1"), 5);
    assert_eq!(error_at("a # 1"), 2);
    let e = Sql92Filter::compile("a IN ('x' 'y')").unwrap_err();
    assert_eq!(e.position, 10);
    assert!(e.to_string().contains("at byte 10"), "{e}");
}

#[test]
fn hostile_input_is_bounded() {
    let deep = format!("{}a = 1{}", "(".repeat(10_000), ")".repeat(10_000));
    assert!(Sql92Filter::compile(&deep).is_err());
    let nots = format!("{}a", "NOT ".repeat(10_000));
    assert!(Sql92Filter::compile(&nots).is_err());
    let minus = format!("a > {}1", "-".repeat(10_000));
    assert!(Sql92Filter::compile(&minus).is_err());
    // Long flat chains are fine: AND and OR are n-ary.
    let chain = vec!["a = 1"; 2000].join(" AND ");
    assert!(is(&chain, &[("a", "1")]));
    // Chained equalities nest to the left and are bounded too.
    let eqs = format!("a = 1{}", " = TRUE".repeat(1000));
    assert!(Sql92Filter::compile(&eqs).is_err());
    let long = format!("a = '{}'", "x".repeat(MAX_EXPRESSION_LEN));
    assert!(Sql92Filter::compile(&long).is_err());
}

#[test]
fn many_properties_use_the_heap_path() {
    let names: Vec<String> = (0..20).map(|i| format!("p{i}")).collect();
    let expr = names
        .iter()
        .map(|n| format!("{n} = '1'"))
        .collect::<Vec<_>>()
        .join(" AND ");
    let pairs: Vec<(&str, &str)> = names.iter().map(|n| (n.as_str(), "1")).collect();
    assert!(is(&expr, &pairs));
    assert!(!is(&expr, &pairs[1..]));
}

proptest::proptest! {
    /// Arbitrary text never panics the compiler, and whatever compiles evaluates
    /// against arbitrary properties without panicking.
    #[test]
    fn arbitrary_text_never_panics(text in ".{0,64}", a in ".{0,8}", b in "[0-9.eE+-]{0,6}") {
        if let Ok(filter) = Sql92Filter::compile(&text) {
            filter.matches_properties(&props(&[("a", &a), ("b", &b), ("TAGS", &a)]));
        }
    }

    /// Token soup from the grammar's vocabulary reaches deeper into the parser.
    #[test]
    fn token_soup_never_panics(
        words in proptest::collection::vec(proptest::sample::select(vec![
            "a", "b", "TAGS", "(", ")", "=", "<>", ">", ">=", "<", "<=", "AND", "OR", "NOT",
            "BETWEEN", "IN", "IS", "NULL", "TRUE", "FALSE", "CONTAINS", "STARTSWITH",
            "ENDSWITH", ",", "+", "-", "1", "2147483648", "1.5", "'x'", "'1'", "--", "/*", "*/",
        ]), 0..24),
        a in "[0-9x.-]{0,4}",
    ) {
        let text = words.join(" ");
        if let Ok(filter) = Sql92Filter::compile(&text) {
            filter.matches_properties(&props(&[("a", &a), ("b", "1"), ("TAGS", "x")]));
        }
    }
}
