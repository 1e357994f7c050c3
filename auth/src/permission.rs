//! ACL 1.0 permission words and bits (`Permission.java`, docs/security.md#plain-acl).
//!
//! Words: `DENY`, `PUB`, `SUB`, `PUB|SUB` (or `SUB|PUB`); anything else reads as DENY.
//! Bits: DENY 1, ANY 2, PUB 4, SUB 8. An owned DENY refuses; a needed ANY is met by
//! PUB or SUB; otherwise needed and owned bits must meet.

pub const DENY: u8 = 1;
pub const ANY: u8 = 2;
pub const PUB: u8 = 4;
pub const SUB: u8 = 8;

/// The bits of a permission word; unknown words are DENY, as in Java.
pub fn parse(word: &str) -> u8 {
    match word.trim() {
        "PUB" => PUB,
        "SUB" => SUB,
        "PUB|SUB" | "SUB|PUB" => PUB | SUB,
        _ => DENY,
    }
}

/// Whether `owned` grants `needed`.
pub fn allows(needed: u8, owned: u8) -> bool {
    if owned & DENY != 0 {
        return false;
    }
    if needed & ANY != 0 {
        return owned & (PUB | SUB) != 0;
    }
    needed & owned != 0
}

/// The word of a needed permission, for remarks.
pub fn name(perm: u8) -> &'static str {
    match perm {
        PUB => "PUB",
        SUB => "SUB",
        ANY => "PUB or SUB",
        DENY => "DENY",
        p if p == PUB | SUB => "PUB|SUB",
        _ => "?",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_and_checks_follow_java() {
        assert_eq!(parse("PUB|SUB"), PUB | SUB);
        assert_eq!(parse(" SUB|PUB "), PUB | SUB);
        assert_eq!(parse("pub"), DENY, "case matters");
        assert_eq!(parse("RW"), DENY);
        assert!(allows(PUB, PUB) && allows(SUB, PUB | SUB));
        assert!(!allows(PUB, SUB) && !allows(SUB, DENY) && !allows(PUB, DENY | PUB));
        assert!(allows(ANY, SUB) && !allows(ANY, DENY));
    }
}
