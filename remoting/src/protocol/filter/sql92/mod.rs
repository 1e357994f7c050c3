//! SQL92 message selectors, as Apache RocketMQ defines them (docs/semantics.md#sql92):
//! `SelectorParser.jj` for the grammar, the classes of `filter/expression/` for the
//! meaning. A consumer subscribing with expression type `SQL92` selects the messages
//! whose properties (and `TAGS`) make the expression TRUE.
//!
//! [`Sql92Filter::compile`] parses once (bounded: [`MAX_EXPRESSION_LEN`] bytes,
//! [`MAX_DEPTH`] levels) into a tree whose property names are numbered slots; matching a
//! message fills the slots in one pass over its encoded property string and evaluates
//! the tree without allocating. Errors carry the byte position where the expression
//! fails.
//!
//! ```text
//! expr    := and (OR and)*
//! and     := eq (AND eq)*
//! eq      := cmp ( (= | <>) cmp | IS [NOT] NULL )*
//! cmp     := unary ( (> | >= | < | <=) unary
//!                  | [NOT] (CONTAINS | STARTSWITH | ENDSWITH) 'string'
//!                  | [NOT] BETWEEN unary AND unary
//!                  | [NOT] IN ( 'string' (, 'string')* ) )*
//! unary   := + unary | - unary | NOT unary | primary
//! primary := 'string' | 123 | 123L | 1.5 | 1E3 | TRUE | FALSE | NULL | name | ( expr )
//! ```

mod eval;
mod lexer;
mod parser;
mod value;

#[cfg(test)]
mod tests;

pub use parser::MAX_DEPTH;
pub use value::EvalError;

use crate::protocol::message::property;
use eval::Node;

/// Longest expression accepted, in bytes.
pub const MAX_EXPRESSION_LEN: usize = 32 * 1024;

/// Property slots filled on the stack; an expression naming more uses the heap.
const INLINE_SLOTS: usize = 16;

/// An expression that does not compile, and where: `position` is a byte offset into
/// the expression.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("Invalid SQL92 expression at byte {position}: {reason}")]
pub struct Sql92Error {
    pub position: usize,
    pub reason: String,
}

impl Sql92Error {
    pub(crate) fn new(position: usize, reason: impl Into<String>) -> Self {
        Sql92Error {
            position,
            reason: reason.into(),
        }
    }
}

/// A compiled SQL92 selector.
#[derive(Debug, Clone)]
pub struct Sql92Filter {
    expression: String,
    root: Node,
    /// Property name of each slot.
    names: Vec<String>,
}

impl Sql92Filter {
    /// Parses and checks `expression`.
    pub fn compile(expression: &str) -> Result<Self, Sql92Error> {
        if expression.len() > MAX_EXPRESSION_LEN {
            return Err(Sql92Error::new(
                MAX_EXPRESSION_LEN,
                format!(
                    "the expression is {} bytes long; at most {MAX_EXPRESSION_LEN} are accepted",
                    expression.len()
                ),
            ));
        }
        let parsed = parser::parse(expression)?;
        Ok(Sql92Filter {
            expression: expression.to_owned(),
            root: parsed.node,
            names: parsed.names,
        })
    }

    /// The source text.
    pub fn expression(&self) -> &str {
        &self.expression
    }

    /// The property names the expression reads.
    pub fn property_names(&self) -> &[String] {
        &self.names
    }

    /// Evaluates against properties given by `lookup`: `Ok(Some(b))` for TRUE or
    /// FALSE, `Ok(None)` for NULL.
    pub fn evaluate<'a>(
        &self,
        lookup: impl Fn(&str) -> Option<&'a str>,
    ) -> Result<Option<bool>, EvalError> {
        let slots: Vec<Option<&'a str>> = self.names.iter().map(|n| lookup(n)).collect();
        self.evaluate_slots(&slots)
    }

    /// True when the expression is TRUE for properties given by `lookup`; NULL,
    /// FALSE and evaluation errors select nothing (Apache's `ExpressionMessageFilter`).
    pub fn matches<'a>(&self, lookup: impl Fn(&str) -> Option<&'a str>) -> bool {
        self.evaluate(lookup) == Ok(Some(true))
    }

    /// [`Sql92Filter::matches`] on an encoded property string (as stored in a record):
    /// one pass over it, no allocation for up to 16 distinct names.
    pub fn matches_properties(&self, encoded: &str) -> bool {
        let n = self.names.len();
        if n <= INLINE_SLOTS {
            let mut slots = [None; INLINE_SLOTS];
            self.fill(encoded, &mut slots[..n]);
            self.evaluate_slots(&slots[..n]) == Ok(Some(true))
        } else {
            let mut slots = vec![None; n];
            self.fill(encoded, &mut slots);
            self.evaluate_slots(&slots) == Ok(Some(true))
        }
    }

    /// Sets each slot from the pairs of `encoded`; the last duplicate wins, as when
    /// Java decodes properties into a map.
    fn fill<'a>(&self, encoded: &'a str, slots: &mut [Option<&'a str>]) {
        for (k, v) in property::pairs(encoded) {
            if let Some(i) = self.names.iter().position(|n| n == k) {
                slots[i] = Some(v);
            }
        }
    }

    fn evaluate_slots(&self, slots: &[Option<&str>]) -> Result<Option<bool>, EvalError> {
        match self.root.eval(slots)? {
            value::Value::Bool(b) => Ok(Some(b)),
            value::Value::Null => Ok(None),
            _ => Err(EvalError::WrongType),
        }
    }
}
