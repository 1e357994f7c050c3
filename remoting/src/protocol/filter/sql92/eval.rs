//! The compiled expression tree and its evaluation, with the three-valued logic of
//! Apache's expression classes (`LogicExpression`, `ComparisonExpression`,
//! `UnaryExpression`): an absent property is NULL, NULL propagates through comparisons
//! and `NOT`, `AND`/`OR` short-circuit left to right and yield NULL when undecided, and
//! only a TRUE result selects a message.

use std::collections::HashSet;

use super::value::{compare, EvalError, Value};

/// A literal of the expression.
#[derive(Debug, Clone, PartialEq)]
pub(super) enum Literal {
    Null,
    Bool(bool),
    Int(i32),
    Long(i64),
    Double(f64),
    Str(Box<str>),
}

impl Literal {
    pub(super) fn value(&self) -> Value<'_> {
        match self {
            Literal::Null => Value::Null,
            Literal::Bool(b) => Value::Bool(*b),
            Literal::Int(i) => Value::Int(*i),
            Literal::Long(l) => Value::Long(*l),
            Literal::Double(d) => Value::Double(*d),
            Literal::Str(s) => Value::Str(s),
        }
    }
}

/// `>`, `>=`, `<`, `<=`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Order {
    Gt,
    Ge,
    Lt,
    Le,
}

/// `CONTAINS`, `STARTSWITH`, `ENDSWITH`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Text {
    Contains,
    StartsWith,
    EndsWith,
}

/// The strings of an `IN` list: a scan for a few, a hash set for more (as Java does
/// from five elements on).
#[derive(Debug, Clone)]
pub(super) enum InList {
    Few(Vec<Box<str>>),
    Many(HashSet<Box<str>>),
}

impl InList {
    pub(super) fn new(items: Vec<String>) -> Self {
        if items.len() < 5 {
            InList::Few(items.into_iter().map(String::into_boxed_str).collect())
        } else {
            InList::Many(items.into_iter().map(String::into_boxed_str).collect())
        }
    }

    fn contains(&self, s: &str) -> bool {
        match self {
            InList::Few(items) => items.iter().any(|i| &**i == s),
            InList::Many(items) => items.contains(s),
        }
    }
}

/// One node of a compiled expression. Properties are slots, numbered at compile time.
#[derive(Debug, Clone)]
pub(super) enum Node {
    Literal(Literal),
    Property(usize),
    /// Unary minus: numbers only, anything else is NULL.
    Negate(Box<Node>),
    /// A property used as a condition: NULL when absent, else FALSE (a property is a
    /// string, never a boolean).
    BooleanCast(Box<Node>),
    Not(Box<Node>),
    And(Vec<Node>),
    Or(Vec<Node>),
    Equal(Box<Node>, Box<Node>),
    Order(Order, Box<Node>, Box<Node>),
    IsNull(Box<Node>),
    In {
        property: usize,
        list: InList,
        negated: bool,
    },
    Text {
        op: Text,
        operand: Box<Node>,
        pattern: Box<str>,
        negated: bool,
    },
}

/// Reads property slot `i` of the message being evaluated.
pub(super) type Slots<'a> = [Option<&'a str>];

impl Node {
    pub(super) fn eval<'a>(&'a self, slots: &Slots<'a>) -> Result<Value<'a>, EvalError> {
        Ok(match self {
            Node::Literal(l) => l.value(),
            Node::Property(i) => slots
                .get(*i)
                .copied()
                .flatten()
                .map_or(Value::Null, Value::Str),
            Node::Negate(n) => match n.eval(slots)? {
                Value::Int(i) => Value::Int(i.wrapping_neg()),
                Value::Long(l) => Value::Long(l.wrapping_neg()),
                Value::Double(d) => Value::Double(-d),
                _ => Value::Null,
            },
            Node::BooleanCast(n) => match n.eval(slots)? {
                Value::Null => Value::Null,
                Value::Bool(b) => Value::Bool(b),
                _ => Value::Bool(false),
            },
            Node::Not(n) => match truth(n.eval(slots)?)? {
                Some(b) => Value::Bool(!b),
                None => Value::Null,
            },
            Node::And(terms) => junction(terms, slots, false)?,
            Node::Or(terms) => junction(terms, slots, true)?,
            Node::Equal(l, r) => {
                let (lv, rv) = (l.eval(slots)?, r.eval(slots)?);
                match (lv, rv) {
                    (Value::Null, Value::Null) => Value::Bool(true),
                    (Value::Null, _) => Value::Null,
                    (_, Value::Null) => Value::Bool(false),
                    _ => Value::Bool(compare(lv, rv)?.is_eq()),
                }
            }
            Node::Order(op, l, r) => {
                let lv = l.eval(slots)?;
                if lv == Value::Null {
                    return Ok(Value::Null);
                }
                let rv = r.eval(slots)?;
                if rv == Value::Null {
                    return Ok(Value::Null);
                }
                let ordering = match (lv, rv) {
                    // Strings are ordered only as doubles.
                    (Value::Str(a), Value::Str(b)) => {
                        let parse = |s| {
                            super::value::parse_double(s).map_err(|_| EvalError::StringOrdering)
                        };
                        compare(Value::Double(parse(a)?), Value::Double(parse(b)?))?
                    }
                    _ => compare(lv, rv)?,
                };
                Value::Bool(match op {
                    Order::Gt => ordering.is_gt(),
                    Order::Ge => ordering.is_ge(),
                    Order::Lt => ordering.is_lt(),
                    Order::Le => ordering.is_le(),
                })
            }
            Node::IsNull(n) => Value::Bool(n.eval(slots)? == Value::Null),
            Node::In {
                property,
                list,
                negated,
            } => match slots.get(*property).copied().flatten() {
                Some(s) => Value::Bool(list.contains(s) != *negated),
                None => Value::Null,
            },
            Node::Text {
                op,
                operand,
                pattern,
                negated,
            } => {
                if pattern.is_empty() {
                    return Ok(Value::Bool(false));
                }
                match operand.eval(slots)? {
                    Value::Str(s) => {
                        let found = match op {
                            Text::Contains => s.contains(&**pattern),
                            Text::StartsWith => s.starts_with(&**pattern),
                            Text::EndsWith => s.ends_with(&**pattern),
                        };
                        Value::Bool(found != *negated)
                    }
                    _ => Value::Bool(false),
                }
            }
        })
    }
}

/// A condition's value: `Some(bool)`, `None` for NULL, an error for anything else
/// (Java casts it to `Boolean`).
fn truth(v: Value<'_>) -> Result<Option<bool>, EvalError> {
    match v {
        Value::Bool(b) => Ok(Some(b)),
        Value::Null => Ok(None),
        _ => Err(EvalError::WrongType),
    }
}

/// `AND` (`decisive` false) or `OR` (`decisive` true) over terms, left to right: the
/// first decisive term decides, else NULL if any term was NULL.
fn junction<'a>(
    terms: &'a [Node],
    slots: &Slots<'a>,
    decisive: bool,
) -> Result<Value<'a>, EvalError> {
    let mut unknown = false;
    for term in terms {
        match truth(term.eval(slots)?)? {
            Some(b) if b == decisive => return Ok(Value::Bool(decisive)),
            Some(_) => {}
            None => unknown = true,
        }
    }
    Ok(if unknown {
        Value::Null
    } else {
        Value::Bool(!decisive)
    })
}
