//! Tokens of a SQL92 selector, with the rules of Apache's `SelectorParser.jj`:
//! case-insensitive keywords, identifiers `[a-zA-Z_$][a-zA-Z0-9_$]*`, decimal literals
//! `0 | [1-9][0-9]*[lL]?`, floating literals (`5.`, `5.5`, `.5`, `5E10`, with an
//! optional signed exponent), strings in single quotes with `''` for a quote, `--` line
//! comments that end at a line break and `/* */` block comments. The longest match
//! wins, and a keyword beats an identifier of the same length.

use super::Sql92Error;

/// What a token is; literals and names carry their text range in the expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Tok {
    Not,
    And,
    Or,
    Between,
    In,
    True,
    False,
    Null,
    Is,
    Contains,
    StartsWith,
    EndsWith,
    /// A decimal literal, its `l`/`L` suffix removed.
    Decimal(String),
    Float(String),
    /// A string literal, decoded (`''` is one quote).
    Str(String),
    Id(String),
    Eq,
    Ne,
    Gt,
    Ge,
    Lt,
    Le,
    LParen,
    RParen,
    Comma,
    Plus,
    Minus,
    Eof,
}

impl Tok {
    /// How an error message names the token.
    pub(super) fn describe(&self) -> String {
        match self {
            Tok::Decimal(s) | Tok::Float(s) => format!("number {s}"),
            Tok::Str(s) => format!("string '{}'", s.replace('\'', "''")),
            Tok::Id(s) => format!("name {s}"),
            Tok::Eof => "the end of the expression".to_owned(),
            other => format!("`{}`", other.symbol()),
        }
    }

    fn symbol(&self) -> &'static str {
        match self {
            Tok::Not => "NOT",
            Tok::And => "AND",
            Tok::Or => "OR",
            Tok::Between => "BETWEEN",
            Tok::In => "IN",
            Tok::True => "TRUE",
            Tok::False => "FALSE",
            Tok::Null => "NULL",
            Tok::Is => "IS",
            Tok::Contains => "CONTAINS",
            Tok::StartsWith => "STARTSWITH",
            Tok::EndsWith => "ENDSWITH",
            Tok::Eq => "=",
            Tok::Ne => "<>",
            Tok::Gt => ">",
            Tok::Ge => ">=",
            Tok::Lt => "<",
            Tok::Le => "<=",
            Tok::LParen => "(",
            Tok::RParen => ")",
            Tok::Comma => ",",
            Tok::Plus => "+",
            Tok::Minus => "-",
            Tok::Decimal(_) | Tok::Float(_) | Tok::Str(_) | Tok::Id(_) | Tok::Eof => "",
        }
    }
}

/// A token and the byte offset where it starts.
#[derive(Debug, Clone, PartialEq)]
pub(super) struct Token {
    pub tok: Tok,
    pub at: usize,
}

const KEYWORDS: &[(&str, Tok)] = &[
    ("NOT", Tok::Not),
    ("AND", Tok::And),
    ("OR", Tok::Or),
    ("BETWEEN", Tok::Between),
    ("IN", Tok::In),
    ("TRUE", Tok::True),
    ("FALSE", Tok::False),
    ("NULL", Tok::Null),
    ("IS", Tok::Is),
    ("CONTAINS", Tok::Contains),
    ("STARTSWITH", Tok::StartsWith),
    ("ENDSWITH", Tok::EndsWith),
];

/// Splits `text` into tokens, ending with [`Tok::Eof`].
pub(super) fn tokenize(text: &str) -> Result<Vec<Token>, Sql92Error> {
    let bytes = text.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let b = bytes[i];
        if matches!(b, b' ' | b'\t' | b'\n' | b'\r' | 0x0c) {
            i += 1;
            continue;
        }
        if b == b'-' && bytes.get(i + 1) == Some(&b'-') {
            // A line comment needs its line break; without one, `--` is two minuses.
            if let Some(end) = bytes[i..].iter().position(|c| matches!(c, b'\n' | b'\r')) {
                i += end + 1;
                continue;
            }
        }
        if b == b'/' && bytes.get(i + 1) == Some(&b'*') {
            match text[i + 2..].find("*/") {
                Some(end) => {
                    i += 2 + end + 2;
                    continue;
                }
                None => return Err(Sql92Error::new(i, "unterminated comment")),
            }
        }
        let at = i;
        let (tok, len) = match b {
            b'\'' => string(text, at)?,
            b'0'..=b'9' | b'.' => number(bytes, at)?,
            b'a'..=b'z' | b'A'..=b'Z' | b'_' | b'$' => {
                let len = bytes[at..]
                    .iter()
                    .position(|c| !(c.is_ascii_alphanumeric() || *c == b'_' || *c == b'$'))
                    .unwrap_or(bytes.len() - at);
                let word = &text[at..at + len];
                let tok = KEYWORDS
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case(word))
                    .map(|(_, t)| t.clone())
                    .unwrap_or_else(|| Tok::Id(word.to_owned()));
                (tok, len)
            }
            b'=' => (Tok::Eq, 1),
            b'<' => match bytes.get(at + 1) {
                Some(b'>') => (Tok::Ne, 2),
                Some(b'=') => (Tok::Le, 2),
                _ => (Tok::Lt, 1),
            },
            b'>' => match bytes.get(at + 1) {
                Some(b'=') => (Tok::Ge, 2),
                _ => (Tok::Gt, 1),
            },
            b'(' => (Tok::LParen, 1),
            b')' => (Tok::RParen, 1),
            b',' => (Tok::Comma, 1),
            b'+' => (Tok::Plus, 1),
            b'-' => (Tok::Minus, 1),
            _ => {
                let c = text[at..].chars().next().unwrap_or('?');
                return Err(Sql92Error::new(at, format!("unexpected character {c:?}")));
            }
        };
        tokens.push(Token { tok, at });
        i = at + len;
    }
    tokens.push(Token {
        tok: Tok::Eof,
        at: bytes.len(),
    });
    Ok(tokens)
}

/// `'...'` with `''` standing for one quote.
fn string(text: &str, at: usize) -> Result<(Tok, usize), Sql92Error> {
    let bytes = text.as_bytes();
    let mut value = String::new();
    let mut i = at + 1;
    let mut run = i;
    loop {
        match bytes.get(i) {
            None => return Err(Sql92Error::new(at, "unterminated string literal")),
            Some(b'\'') if bytes.get(i + 1) == Some(&b'\'') => {
                value.push_str(&text[run..=i]);
                i += 2;
                run = i;
            }
            Some(b'\'') => {
                value.push_str(&text[run..i]);
                return Ok((Tok::Str(value), i + 1 - at));
            }
            Some(_) => i += 1,
        }
    }
}

fn digits(bytes: &[u8], from: usize) -> usize {
    bytes[from..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// `E[+-]?[0-9]+` at `from`, its length (0 when there is none).
fn exponent(bytes: &[u8], from: usize) -> usize {
    if !matches!(bytes.get(from), Some(b'e' | b'E')) {
        return 0;
    }
    let sign = usize::from(matches!(bytes.get(from + 1), Some(b'+' | b'-')));
    let n = digits(bytes, from + 1 + sign);
    if n == 0 {
        0
    } else {
        1 + sign + n
    }
}

/// The longest of the decimal and floating literals starting at `at`.
fn number(bytes: &[u8], at: usize) -> Result<(Tok, usize), Sql92Error> {
    let text = |len: usize| String::from_utf8_lossy(&bytes[at..at + len]).into_owned();
    let int = digits(bytes, at);
    if int == 0 {
        // `.5`, `.5E3`
        let frac = digits(bytes, at + 1);
        if frac == 0 {
            return Err(Sql92Error::new(at, "unexpected character '.'"));
        }
        let len = 1 + frac + exponent(bytes, at + 1 + frac);
        return Ok((Tok::Float(text(len)), len));
    }
    if bytes.get(at + int) == Some(&b'.') {
        let frac = digits(bytes, at + int + 1);
        let len = int + 1 + frac + exponent(bytes, at + int + 1 + frac);
        return Ok((Tok::Float(text(len)), len));
    }
    let exp = exponent(bytes, at + int);
    if exp > 0 {
        return Ok((Tok::Float(text(int + exp)), int + exp));
    }
    // A decimal literal is `0` alone or starts with 1-9; `007` is three literals.
    if bytes[at] == b'0' {
        return Ok((Tok::Decimal("0".to_owned()), 1));
    }
    let suffix = usize::from(matches!(bytes.get(at + int), Some(b'l' | b'L')));
    Ok((Tok::Decimal(text(int)), int + suffix))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kinds(text: &str) -> Vec<Tok> {
        tokenize(text).unwrap().into_iter().map(|t| t.tok).collect()
    }

    #[test]
    fn splits_like_the_javacc_grammar() {
        assert_eq!(
            kinds("a>=5 AND notx <> 'it''s'"),
            [
                Tok::Id("a".into()),
                Tok::Ge,
                Tok::Decimal("5".into()),
                Tok::And,
                Tok::Id("notx".into()),
                Tok::Ne,
                Tok::Str("it's".into()),
                Tok::Eof
            ]
        );
        assert_eq!(kinds("10L")[0], Tok::Decimal("10".into()));
        assert_eq!(kinds("5.")[0], Tok::Float("5.".into()));
        assert_eq!(kinds(".5e-3")[0], Tok::Float(".5e-3".into()));
        assert_eq!(kinds("5E10")[0], Tok::Float("5E10".into()));
        assert_eq!(
            kinds("007"),
            [
                Tok::Decimal("0".into()),
                Tok::Decimal("0".into()),
                Tok::Decimal("7".into()),
                Tok::Eof
            ]
        );
        assert_eq!(
            kinds("1e")[..2],
            [Tok::Decimal("1".into()), Tok::Id("e".into())]
        );
        assert_eq!(kinds("between")[0], Tok::Between);
    }

    #[test]
    fn comments_and_positions() {
        let tokens = tokenize("/* x */ a -- note\n = --1").unwrap();
        assert_eq!(tokens[0].at, 8);
        assert_eq!(tokens[1].tok, Tok::Eq);
        // `--` without a line break after it is two minuses.
        assert_eq!(tokens[2].tok, Tok::Minus);
        assert_eq!(tokens[3].tok, Tok::Minus);
        assert_eq!(tokenize("a = 'x").unwrap_err().position, 4);
        assert_eq!(tokenize("a != 1").unwrap_err().position, 2);
        assert_eq!(tokenize("a /* open").unwrap_err().position, 2);
    }
}
