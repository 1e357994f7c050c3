//! Integers written in decimal on the stack, without `fmt`: every request and response
//! header carries a few (codes, offsets, times), and the signature covers the request
//! code as text.

/// `n` in decimal (a leading `-` when negative), written into the end of `out`.
pub fn decimal(n: i64, out: &mut [u8; 20]) -> &[u8] {
    let mut i = out.len();
    let mut rest = n.unsigned_abs();
    loop {
        i -= 1;
        out[i] = b'0' + (rest % 10) as u8;
        rest /= 10;
        if rest == 0 {
            break;
        }
    }
    if n < 0 {
        i -= 1;
        out[i] = b'-';
    }
    &out[i..]
}

#[cfg(test)]
mod tests {
    use super::decimal;

    #[test]
    fn any_i64_as_fmt_writes_it() {
        let mut digits = [0u8; 20];
        for n in [0, 7, -310, 1_000_000, i64::MAX, i64::MIN, i64::MIN + 1] {
            assert_eq!(decimal(n, &mut digits), n.to_string().as_bytes());
        }
    }
}
