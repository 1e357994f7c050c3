//! Values during evaluation and how Apache's evaluator compares them
//! (`ComparisonExpression.__compare`): numbers widen (int → long → double), a string
//! meeting a number is parsed as that number's type (`Integer.valueOf`,
//! `Long.valueOf`, `Double.valueOf`) and a string meeting a boolean is read with
//! `Boolean.valueOf`. Incompatible types compare as "less" (Java returns -1), and a
//! string that does not parse is an evaluation error.

use std::cmp::Ordering;

/// A value: a literal, a property (always a string) or a sub-expression's result.
/// Integer literals that fit 32 bits are `Int` and larger ones `Long`, as Java's
/// `ConstantExpression.createFromDecimal` makes them; the difference matters when a
/// string is parsed to meet them.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) enum Value<'a> {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(&'a str),
}

/// Why an expression could not be evaluated for a message: the message does not match.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EvalError {
    /// A string met a number but does not parse as one.
    NotANumber,
    /// Two strings were ordered (`<`, `>`, ...) and one does not parse as a double.
    StringOrdering,
    /// An operand had the wrong type for its operator (Java's `ClassCastException`).
    WrongType,
}

impl std::fmt::Display for EvalError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            EvalError::NotANumber => "a property compared with a number is not that number",
            EvalError::StringOrdering => "strings can only be ordered when both are numbers",
            EvalError::WrongType => "an operand has the wrong type for its operator",
        })
    }
}

/// `__compare`: the sign of `lv` against `rv` after Java's conversions.
pub(super) fn compare(lv: Value<'_>, rv: Value<'_>) -> Result<Ordering, EvalError> {
    use Value::*;
    const INCOMPATIBLE: Ordering = Ordering::Less;
    Ok(match (lv, rv) {
        (Bool(a), Bool(b)) => a.cmp(&b),
        (Int(a), Int(b)) => a.cmp(&b),
        (Long(a), Long(b)) => a.cmp(&b),
        (Double(a), Double(b)) => java_double_cmp(a, b),
        (Str(a), Str(b)) => a.cmp(b),
        (Int(a), Long(b)) => i64::from(a).cmp(&b),
        (Long(a), Int(b)) => a.cmp(&i64::from(b)),
        (Int(a), Double(b)) => java_double_cmp(f64::from(a), b),
        (Long(a), Double(b)) => java_double_cmp(a as f64, b),
        (Double(a), Int(b)) => java_double_cmp(a, f64::from(b)),
        (Double(a), Long(b)) => java_double_cmp(a, b as f64),
        (Int(a), Str(b)) => a.cmp(&parse_int(b)?),
        (Long(a), Str(b)) => a.cmp(&parse_long(b)?),
        (Double(a), Str(b)) => java_double_cmp(a, parse_double(b)?),
        (Str(a), Int(b)) => parse_int(a)?.cmp(&b),
        (Str(a), Long(b)) => parse_long(a)?.cmp(&b),
        (Str(a), Double(b)) => java_double_cmp(parse_double(a)?, b),
        (Str(a), Bool(b)) => a.eq_ignore_ascii_case("true").cmp(&b),
        // Java casts the Boolean to a String here and fails.
        (Bool(_), Str(_)) => return Err(EvalError::WrongType),
        (Null, _) | (_, Null) => return Err(EvalError::WrongType),
        _ => INCOMPATIBLE,
    })
}

/// `Double.compare`: NaN above everything and equal to itself, -0.0 below 0.0.
pub(super) fn java_double_cmp(a: f64, b: f64) -> Ordering {
    if a < b {
        Ordering::Less
    } else if a > b {
        Ordering::Greater
    } else {
        let bits = |d: f64| {
            if d.is_nan() {
                0x7ff8_0000_0000_0000_i64
            } else {
                d.to_bits() as i64
            }
        };
        bits(a).cmp(&bits(b))
    }
}

/// `Integer.valueOf(String)`: an optional sign and decimal digits, nothing else.
fn parse_int(s: &str) -> Result<i32, EvalError> {
    s.parse().map_err(|_| EvalError::NotANumber)
}

/// `Long.valueOf(String)`.
fn parse_long(s: &str) -> Result<i64, EvalError> {
    s.parse().map_err(|_| EvalError::NotANumber)
}

/// `Double.valueOf(String)`: surrounding whitespace and control characters ignored,
/// an optional sign, `NaN`, `Infinity`, or a decimal number with an optional exponent
/// and an optional `f`/`d` suffix. (Java's hexadecimal form is not read.)
pub(super) fn parse_double(s: &str) -> Result<f64, EvalError> {
    let t = s.trim_matches(|c: char| c <= ' ');
    let (negative, body) = match t.as_bytes().first() {
        Some(b'-') => (true, &t[1..]),
        Some(b'+') => (false, &t[1..]),
        _ => (false, t),
    };
    let magnitude = match body {
        "NaN" => f64::NAN,
        "Infinity" => f64::INFINITY,
        _ => {
            let body = body.strip_suffix(['f', 'F', 'd', 'D']).unwrap_or(body);
            let valid = body.starts_with(|c: char| c.is_ascii_digit() || c == '.')
                && body
                    .bytes()
                    .all(|c| c.is_ascii_digit() || matches!(c, b'.' | b'e' | b'E' | b'+' | b'-'));
            if !valid {
                return Err(EvalError::NotANumber);
            }
            body.parse::<f64>().map_err(|_| EvalError::NotANumber)?
        }
    };
    Ok(if negative { -magnitude } else { magnitude })
}

#[cfg(test)]
mod tests {
    use super::*;
    use Value::*;

    #[test]
    fn numbers_widen_and_strings_parse_to_the_other_side() {
        assert_eq!(compare(Int(5), Long(5)), Ok(Ordering::Equal));
        assert_eq!(compare(Long(3_000_000_000), Int(5)), Ok(Ordering::Greater));
        assert_eq!(compare(Int(5), Double(5.5)), Ok(Ordering::Less));
        assert_eq!(compare(Str("10"), Int(9)), Ok(Ordering::Greater));
        assert_eq!(compare(Str("+10"), Int(10)), Ok(Ordering::Equal));
        // A property meeting an int is read as an int: a larger number does not parse.
        assert_eq!(
            compare(Str("3000000000"), Int(1)),
            Err(EvalError::NotANumber)
        );
        assert_eq!(compare(Str("3000000000"), Long(1)), Ok(Ordering::Greater));
        assert_eq!(compare(Str("10.5"), Int(10)), Err(EvalError::NotANumber));
        assert_eq!(compare(Str(" 10.5d "), Double(10.5)), Ok(Ordering::Equal));
        assert_eq!(compare(Str("abc"), Double(1.0)), Err(EvalError::NotANumber));
        assert_eq!(compare(Str("TRUE"), Bool(true)), Ok(Ordering::Equal));
        assert_eq!(compare(Str("yes"), Bool(false)), Ok(Ordering::Equal));
        assert_eq!(compare(Bool(true), Str("true")), Err(EvalError::WrongType));
        assert_eq!(compare(Bool(true), Int(1)), Ok(Ordering::Less));
    }

    #[test]
    fn doubles_compare_as_java_does() {
        assert_eq!(java_double_cmp(f64::NAN, f64::INFINITY), Ordering::Greater);
        assert_eq!(java_double_cmp(f64::NAN, f64::NAN), Ordering::Equal);
        assert_eq!(java_double_cmp(-0.0, 0.0), Ordering::Less);
        assert_eq!(parse_double("-Infinity"), Ok(f64::NEG_INFINITY));
        assert!(parse_double("NaN").is_ok_and(f64::is_nan));
        assert_eq!(parse_double("inf"), Err(EvalError::NotANumber));
        assert_eq!(parse_double("1e3"), Ok(1000.0));
        assert_eq!(parse_double(".5"), Ok(0.5));
        assert_eq!(parse_double(""), Err(EvalError::NotANumber));
    }
}
