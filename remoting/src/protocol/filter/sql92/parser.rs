//! Recursive descent over the grammar of Apache's `SelectorParser.jj`, with the checks
//! its expression factories make while building (`ComparisonExpression.create*`,
//! `ConstantExpression.create*`, `asBooleanExpression`). Precedence, loosest first:
//! `OR`; `AND`; `=`, `<>`, `IS [NOT] NULL`; `>`, `>=`, `<`, `<=`, `[NOT] BETWEEN`,
//! `[NOT] IN`, `[NOT] CONTAINS|STARTSWITH|ENDSWITH`; unary `+`, `-`, `NOT`; literals,
//! names and parentheses. Operators of one level associate to the left.
//!
//! Nesting is bounded: recursion by [`MAX_DEPTH`] and the tree's depth likewise, so
//! neither parsing nor evaluating nor dropping a hostile expression can overflow the
//! stack.

use super::eval::{InList, Literal, Node, Order, Text};
use super::lexer::{tokenize, Tok, Token};
use super::Sql92Error;

/// Deepest nesting of parentheses and operators accepted.
pub const MAX_DEPTH: usize = 64;

/// A compiled expression and the property names its slots stand for.
pub(super) struct Parsed {
    pub node: Node,
    pub names: Vec<String>,
}

pub(super) fn parse(text: &str) -> Result<Parsed, Sql92Error> {
    let mut parser = Parser {
        tokens: tokenize(text)?,
        pos: 0,
        names: Vec::new(),
        nesting: 0,
    };
    let expr = parser.or()?;
    let next = parser.peek();
    if next.tok != Tok::Eof {
        return Err(Sql92Error::new(
            next.at,
            format!(
                "unexpected {} after a complete expression",
                next.tok.describe()
            ),
        ));
    }
    let node = as_boolean(expr)?.node;
    Ok(Parsed {
        node,
        names: parser.names,
    })
}

/// A sub-expression while parsing: its node, tree depth and where it starts.
struct Expr {
    node: Node,
    depth: usize,
    at: usize,
}

impl Expr {
    fn leaf(node: Node, at: usize) -> Expr {
        Expr { node, depth: 1, at }
    }

    /// Java's `ConstantExpression` (literals, `TRUE`, `FALSE` and `NULL` included).
    fn literal(&self) -> Option<&Literal> {
        match &self.node {
            Node::Literal(l) => Some(l),
            _ => None,
        }
    }

    /// Java's `BooleanExpression`: conditions, and the `TRUE`/`FALSE`/`NULL` literals.
    fn is_boolean(&self) -> bool {
        match &self.node {
            Node::Literal(l) => matches!(l, Literal::Null | Literal::Bool(_)),
            Node::Property(_) | Node::Negate(_) => false,
            _ => true,
        }
    }
}

/// Builds a node over `children`, refusing trees deeper than [`MAX_DEPTH`].
fn node(node: Node, at: usize, children: &[usize]) -> Result<Expr, Sql92Error> {
    let depth = 1 + children.iter().copied().max().unwrap_or(0);
    if depth > MAX_DEPTH {
        return Err(Sql92Error::new(
            at,
            format!("expression nested more than {MAX_DEPTH} levels deep"),
        ));
    }
    Ok(Expr { node, depth, at })
}

/// `asBooleanExpression`: a condition as is, a property as a boolean cast.
fn as_boolean(e: Expr) -> Result<Expr, Sql92Error> {
    if e.is_boolean() {
        return Ok(e);
    }
    if matches!(e.node, Node::Property(_)) {
        let at = e.at;
        return node(Node::BooleanCast(Box::new(e.node)), at, &[e.depth]);
    }
    Err(Sql92Error::new(
        e.at,
        "this expression does not result in a boolean value",
    ))
}

/// `checkLessThanOperand`: ordering takes numbers, properties and arithmetic only.
fn check_orderable(e: &Expr) -> Result<(), Sql92Error> {
    let refused = match e.literal() {
        Some(l) => !matches!(l, Literal::Int(_) | Literal::Long(_) | Literal::Double(_)),
        None => e.is_boolean(),
    };
    if refused {
        return Err(Sql92Error::new(
            e.at,
            "only numbers can be compared with >, >=, < or <= (strings only with = and <>)",
        ));
    }
    Ok(())
}

/// `checkEqualOperand` and `checkEqualOperandCompatability`.
fn check_equatable(l: &Expr, r: &Expr) -> Result<(), Sql92Error> {
    for e in [l, r] {
        if e.literal() == Some(&Literal::Null) {
            return Err(Sql92Error::new(
                e.at,
                "NULL cannot be compared: use IS NULL or IS NOT NULL",
            ));
        }
    }
    if l.literal().is_some() && r.literal().is_some() && l.is_boolean() && !r.is_boolean() {
        return Err(Sql92Error::new(
            r.at,
            "a boolean literal cannot be compared with this value",
        ));
    }
    Ok(())
}

struct Parser {
    tokens: Vec<Token>,
    pos: usize,
    names: Vec<String>,
    nesting: usize,
}

impl Parser {
    fn peek(&self) -> &Token {
        // The token list always ends with Eof, which is never consumed.
        &self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn peek2(&self) -> &Tok {
        &self.tokens[(self.pos + 1).min(self.tokens.len() - 1)].tok
    }

    fn bump(&mut self) -> Token {
        let t = self.peek().clone();
        if t.tok != Tok::Eof {
            self.pos += 1;
        }
        t
    }

    fn expect(&mut self, tok: Tok, what: &str) -> Result<usize, Sql92Error> {
        let t = self.bump();
        if t.tok == tok {
            Ok(t.at)
        } else {
            Err(Sql92Error::new(
                t.at,
                format!("expected {what}, found {}", t.tok.describe()),
            ))
        }
    }

    fn enter(&mut self, at: usize) -> Result<(), Sql92Error> {
        self.nesting += 1;
        if self.nesting > MAX_DEPTH {
            return Err(Sql92Error::new(
                at,
                format!("expression nested more than {MAX_DEPTH} levels deep"),
            ));
        }
        Ok(())
    }

    fn or(&mut self) -> Result<Expr, Sql92Error> {
        self.junction(Tok::Or)
    }

    /// `orExpression` / `andExpression`, collected into one n-ary node.
    fn junction(&mut self, op: Tok) -> Result<Expr, Sql92Error> {
        let first = if op == Tok::Or {
            self.junction(Tok::And)?
        } else {
            self.equality()?
        };
        if self.peek().tok != op {
            return Ok(first);
        }
        let at = first.at;
        let mut depth = first.depth;
        let mut terms = vec![as_boolean(first)?.node];
        while self.peek().tok == op {
            self.bump();
            let next = if op == Tok::Or {
                self.junction(Tok::And)?
            } else {
                self.equality()?
            };
            let next = as_boolean(next)?;
            depth = depth.max(next.depth);
            terms.push(next.node);
        }
        let n = if op == Tok::Or {
            Node::Or(terms)
        } else {
            Node::And(terms)
        };
        node(n, at, &[depth])
    }

    /// `equalityExpression`: `=`, `<>`, `IS NULL`, `IS NOT NULL`.
    fn equality(&mut self) -> Result<Expr, Sql92Error> {
        let mut left = self.comparison()?;
        loop {
            let at = left.at;
            left = match self.peek().tok {
                Tok::Eq | Tok::Ne => {
                    let negated = self.bump().tok == Tok::Ne;
                    let right = self.comparison()?;
                    check_equatable(&left, &right)?;
                    let eq = node(
                        Node::Equal(Box::new(left.node), Box::new(right.node)),
                        at,
                        &[left.depth, right.depth],
                    )?;
                    if negated {
                        node(Node::Not(Box::new(eq.node)), at, &[eq.depth])?
                    } else {
                        eq
                    }
                }
                Tok::Is => {
                    self.bump();
                    let negated = self.peek().tok == Tok::Not;
                    if negated {
                        self.bump();
                    }
                    self.expect(Tok::Null, "NULL after IS")?;
                    let is_null = node(Node::IsNull(Box::new(left.node)), at, &[left.depth])?;
                    if negated {
                        node(Node::Not(Box::new(is_null.node)), at, &[is_null.depth])?
                    } else {
                        is_null
                    }
                }
                _ => return Ok(left),
            };
        }
    }

    /// `comparisonExpression`.
    fn comparison(&mut self) -> Result<Expr, Sql92Error> {
        let mut left = self.unary()?;
        loop {
            let negated = self.peek().tok == Tok::Not
                && matches!(
                    self.peek2(),
                    Tok::Contains | Tok::StartsWith | Tok::EndsWith | Tok::Between | Tok::In
                );
            if negated {
                self.bump();
            }
            let at = left.at;
            left = match self.peek().tok.clone() {
                Tok::Gt | Tok::Ge | Tok::Lt | Tok::Le => {
                    let op = match self.bump().tok {
                        Tok::Gt => Order::Gt,
                        Tok::Ge => Order::Ge,
                        Tok::Lt => Order::Lt,
                        _ => Order::Le,
                    };
                    let right = self.unary()?;
                    order(op, left, right)?
                }
                Tok::Contains | Tok::StartsWith | Tok::EndsWith => {
                    let op = match self.bump().tok {
                        Tok::Contains => Text::Contains,
                        Tok::StartsWith => Text::StartsWith,
                        _ => Text::EndsWith,
                    };
                    let pattern = self.string("a string literal")?;
                    let depth = left.depth;
                    let n = Node::Text {
                        op,
                        operand: Box::new(left.node),
                        pattern: pattern.into_boxed_str(),
                        negated,
                    };
                    node(n, at, &[depth])?
                }
                Tok::Between => {
                    self.bump();
                    let low = self.unary()?;
                    self.expect(Tok::And, "AND between the bounds of BETWEEN")?;
                    let high = self.unary()?;
                    between(left, low, high, negated)?
                }
                Tok::In => {
                    self.bump();
                    let Node::Property(property) = left.node else {
                        return Err(Sql92Error::new(at, "IN needs a property on its left"));
                    };
                    self.expect(Tok::LParen, "( after IN")?;
                    let mut items = vec![self.string("a string literal in the IN list")?];
                    while self.peek().tok == Tok::Comma {
                        self.bump();
                        items.push(self.string("a string literal in the IN list")?);
                    }
                    self.expect(Tok::RParen, ", or ) in the IN list")?;
                    let n = Node::In {
                        property,
                        list: InList::new(items),
                        negated,
                    };
                    node(n, at, &[1])?
                }
                _ => return Ok(left),
            };
        }
    }

    /// `unaryExpr`: `+`, `-`, `NOT`, or a primary expression.
    fn unary(&mut self) -> Result<Expr, Sql92Error> {
        let at = self.peek().at;
        self.enter(at)?;
        let result = match self.peek().tok {
            Tok::Plus => {
                self.bump();
                self.unary()
            }
            Tok::Minus => {
                self.bump();
                let e = self.unary()?;
                node(Node::Negate(Box::new(e.node)), at, &[e.depth])
            }
            Tok::Not => {
                self.bump();
                let e = as_boolean(self.unary()?)?;
                node(Node::Not(Box::new(e.node)), at, &[e.depth])
            }
            _ => self.primary(),
        };
        self.nesting -= 1;
        result
    }

    /// `primaryExpr`: a literal, a property name or a parenthesised expression.
    fn primary(&mut self) -> Result<Expr, Sql92Error> {
        let t = self.bump();
        let literal = match t.tok {
            Tok::Str(s) => Literal::Str(s.into_boxed_str()),
            Tok::Decimal(digits) => decimal(&digits, t.at)?,
            Tok::Float(text) => float(&text, t.at)?,
            Tok::True => Literal::Bool(true),
            Tok::False => Literal::Bool(false),
            Tok::Null => Literal::Null,
            Tok::Id(name) => {
                let slot = match self.names.iter().position(|n| *n == name) {
                    Some(i) => i,
                    None => {
                        self.names.push(name);
                        self.names.len() - 1
                    }
                };
                return Ok(Expr::leaf(Node::Property(slot), t.at));
            }
            Tok::LParen => {
                let mut e = self.or()?;
                self.expect(Tok::RParen, ")")?;
                e.at = t.at;
                return Ok(e);
            }
            other => {
                return Err(Sql92Error::new(
                    t.at,
                    format!(
                        "expected a literal, a property name or (, found {}",
                        other.describe()
                    ),
                ))
            }
        };
        Ok(Expr::leaf(Node::Literal(literal), t.at))
    }

    fn string(&mut self, what: &str) -> Result<String, Sql92Error> {
        let t = self.bump();
        match t.tok {
            Tok::Str(s) => Ok(s),
            other => Err(Sql92Error::new(
                t.at,
                format!("expected {what}, found {}", other.describe()),
            )),
        }
    }
}

fn order(op: Order, left: Expr, right: Expr) -> Result<Expr, Sql92Error> {
    check_orderable(&left)?;
    check_orderable(&right)?;
    let (at, depths) = (left.at, [left.depth, right.depth]);
    node(
        Node::Order(op, Box::new(left.node), Box::new(right.node)),
        at,
        &depths,
    )
}

/// `createBetween` (`>= low AND <= high`, constant bounds checked) and
/// `createNotBetween` (`< low OR > high`).
fn between(value: Expr, low: Expr, high: Expr, negated: bool) -> Result<Expr, Sql92Error> {
    let at = value.at;
    if !negated {
        if let (Some(l), Some(h)) = (low.literal(), high.literal()) {
            if *l == Literal::Null || *h == Literal::Null {
                return Err(Sql92Error::new(low.at, "BETWEEN bounds cannot be NULL"));
            }
            let descending = super::value::compare(h.value(), l.value())
                .map_err(|e| Sql92Error::new(high.at, format!("BETWEEN bounds: {e}")))?
                .is_lt();
            if descending {
                return Err(Sql92Error::new(
                    low.at,
                    "the low bound of BETWEEN must not be greater than its high bound",
                ));
            }
        }
    }
    let copy = Expr {
        node: value.node.clone(),
        depth: value.depth,
        at,
    };
    let (first, second) = if negated {
        (order(Order::Lt, value, low)?, order(Order::Gt, copy, high)?)
    } else {
        (order(Order::Ge, value, low)?, order(Order::Le, copy, high)?)
    };
    let depth = first.depth.max(second.depth);
    let terms = vec![first.node, second.node];
    let n = if negated {
        Node::Or(terms)
    } else {
        Node::And(terms)
    };
    node(n, at, &[depth])
}

/// `createFromDecimal`: a 64-bit integer, narrowed to 32 bits when it fits.
fn decimal(digits: &str, at: usize) -> Result<Literal, Sql92Error> {
    let value: i64 = digits
        .parse()
        .map_err(|_| Sql92Error::new(at, format!("{digits} does not fit in a 64-bit integer")))?;
    Ok(match i32::try_from(value) {
        Ok(i) => Literal::Int(i),
        Err(_) => Literal::Long(value),
    })
}

/// `createFloat`: Java refuses what overflows and what is below `Double.MIN_VALUE`
/// (4.9E-324), which includes `0.0`.
fn float(text: &str, at: usize) -> Result<Literal, Sql92Error> {
    let value: f64 = text
        .parse()
        .map_err(|_| Sql92Error::new(at, format!("{text} is not a number")))?;
    if value.is_infinite() {
        return Err(Sql92Error::new(
            at,
            format!("{text} is greater than {}", f64::MAX),
        ));
    }
    if value < f64::from_bits(1) {
        return Err(Sql92Error::new(
            at,
            format!("{text} is less than 4.9E-324 (write 0 for zero)"),
        ));
    }
    Ok(Literal::Double(value))
}
