//! Remote address patterns: ACL 1.0's `globalWhiteRemoteAddresses` and
//! `whiteRemoteAddress` forms (`RemoteAddressStrategyFactory`), and ACL 2.0's
//! `sourceIps` (an address or a CIDR block).
//!
//! ACL 1.0 forms: blank never matches; `*`, `*.*.*.*`, `*:*:*:*:*:*:*:*` match all;
//! `192.168.0.{1,2,5}` and `10.0.0.1,10.0.0.2` are sets; a pattern with `*` or `-` is a
//! range per segment (`192.168.1.*`, `192.168.1.1-100`, `10.*`: segments left out
//! after a `*` match anything); anything else is one exact address. IPv6 patterns take
//! the same forms over its eight hexadecimal segments, written out in full.

use std::net::IpAddr;

/// One compiled address pattern.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AddressPattern {
    Never,
    All,
    Set(Vec<IpAddr>),
    /// Inclusive bounds per segment: 4 for IPv4, 8 for IPv6.
    Range(Vec<(u16, u16)>),
    Exact(IpAddr),
}

/// The address a pattern is matched against: IPv4-mapped IPv6 counts as IPv4.
pub fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => v6.to_ipv4_mapped().map(IpAddr::V4).unwrap_or(ip),
        v4 => v4,
    }
}

fn segments(ip: IpAddr) -> Vec<u16> {
    match ip {
        IpAddr::V4(v4) => v4.octets().iter().map(|o| u16::from(*o)).collect(),
        IpAddr::V6(v6) => v6.segments().to_vec(),
    }
}

impl AddressPattern {
    /// Compiles a pattern; `Err` names what is wrong with it.
    pub fn parse(pattern: &str) -> Result<AddressPattern, String> {
        let p = pattern.trim();
        if p.is_empty() {
            return Ok(AddressPattern::Never);
        }
        if p == "*" || p == "*.*.*.*" || p == "*:*:*:*:*:*:*:*" {
            return Ok(AddressPattern::All);
        }
        let ip = |s: &str| {
            s.trim()
                .parse::<IpAddr>()
                .map(canonical)
                .map_err(|_| format!("{s:?} is not an IP address (in {pattern:?})"))
        };
        if let Some(open) = p.find('{') {
            let inner = p[open + 1..]
                .strip_suffix('}')
                .ok_or_else(|| format!("unbalanced braces in {pattern:?}"))?;
            let prefix = &p[..open];
            let set = inner
                .split(',')
                .map(|last| ip(&format!("{prefix}{}", last.trim())))
                .collect::<Result<Vec<_>, _>>()?;
            return Ok(AddressPattern::Set(set));
        }
        if p.contains(',') {
            return Ok(AddressPattern::Set(
                p.split(',').map(ip).collect::<Result<Vec<_>, _>>()?,
            ));
        }
        if p.contains('*') || p.contains('-') {
            return Self::range(p).ok_or_else(|| format!("bad address range {pattern:?}"));
        }
        ip(p).map(AddressPattern::Exact)
    }

    fn range(p: &str) -> Option<AddressPattern> {
        let (sep, count, radix, max) = if p.contains(':') {
            (':', 8, 16, 0xffff)
        } else {
            ('.', 4, 10, 0xff)
        };
        let parts: Vec<&str> = p.split(sep).collect();
        if parts.len() > count || parts.iter().any(|s| s.is_empty()) {
            return None;
        }
        let mut bounds = Vec::with_capacity(count);
        for part in &parts {
            let bound = if *part == "*" {
                (0, max)
            } else if let Some((lo, hi)) = part.split_once('-') {
                let lo = u16::from_str_radix(lo, radix).ok()?;
                let hi = u16::from_str_radix(hi, radix).ok()?;
                (lo <= hi && hi <= max).then_some((lo, hi))?
            } else {
                let v = u16::from_str_radix(part, radix).ok()?;
                (v <= max).then_some((v, v))?
            };
            bounds.push(bound);
        }
        if bounds.len() < count {
            // `10.*` covers the segments left out, only after a `*`.
            if parts.last() != Some(&"*") {
                return None;
            }
            bounds.resize(count, (0, max));
        }
        Some(AddressPattern::Range(bounds))
    }

    pub fn matches(&self, ip: IpAddr) -> bool {
        let ip = canonical(ip);
        match self {
            AddressPattern::Never => false,
            AddressPattern::All => true,
            AddressPattern::Set(set) => set.contains(&ip),
            AddressPattern::Exact(one) => *one == ip,
            AddressPattern::Range(bounds) => {
                let segs = segments(ip);
                segs.len() == bounds.len()
                    && segs
                        .iter()
                        .zip(bounds)
                        .all(|(s, (lo, hi))| lo <= s && s <= hi)
            }
        }
    }
}

/// An ACL 2.0 source address: one address or a CIDR block (`10.0.0.0/8`).
pub fn source_ip_matches(pattern: &str, ip: IpAddr) -> bool {
    let ip = canonical(ip);
    let (addr, bits) = match pattern.trim().split_once('/') {
        Some((a, b)) => (a, b.parse::<u32>().ok()),
        None => (pattern.trim(), None),
    };
    let Ok(base) = addr.parse::<IpAddr>().map(canonical) else {
        return false;
    };
    match (base, ip) {
        (IpAddr::V4(b), IpAddr::V4(i)) => {
            let bits = bits.unwrap_or(32).min(32);
            let mask = u32::MAX.checked_shl(32 - bits).unwrap_or(0);
            u32::from(b) & mask == u32::from(i) & mask
        }
        (IpAddr::V6(b), IpAddr::V6(i)) => {
            let bits = bits.unwrap_or(128).min(128);
            let mask = u128::MAX.checked_shl(128 - bits).unwrap_or(0);
            u128::from(b) & mask == u128::from(i) & mask
        }
        _ => false,
    }
}

/// Whether `pattern` is an address or a CIDR block.
pub fn is_valid_source_ip(pattern: &str) -> bool {
    let (addr, bits) = match pattern.trim().split_once('/') {
        Some((a, b)) => (a, Some(b)),
        None => (pattern.trim(), None),
    };
    match addr.parse::<IpAddr>() {
        Ok(ip) => bits.is_none_or(|b| {
            b.parse::<u32>()
                .is_ok_and(|n| n <= if ip.is_ipv4() { 32 } else { 128 })
        }),
        Err(_) => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(pattern: &str, ip: &str) -> bool {
        AddressPattern::parse(pattern)
            .unwrap()
            .matches(ip.parse().unwrap())
    }

    #[test]
    fn rocketmq_forms() {
        assert!(!m("", "10.0.0.1"));
        assert!(m("*", "10.0.0.1") && m("*.*.*.*", "::1") && m("*:*:*:*:*:*:*:*", "1.2.3.4"));
        assert!(m("192.168.0.{1,2,5}", "192.168.0.5"));
        assert!(!m("192.168.0.{1,2,5}", "192.168.0.3"));
        assert!(m("10.0.0.1,10.0.0.2", "10.0.0.2") && !m("10.0.0.1,10.0.0.2", "10.0.0.3"));
        assert!(m("192.168.1.*", "192.168.1.77") && !m("192.168.1.*", "192.168.2.77"));
        assert!(m("192.168.1.1-100", "192.168.1.100") && !m("192.168.1.1-100", "192.168.1.101"));
        assert!(m("192.168.*.1-3", "192.168.9.2"));
        assert!(m("10.*", "10.200.3.4") && !m("10.*", "11.0.0.1"));
        assert!(m("127.0.0.1", "127.0.0.1") && m("127.0.0.1", "::ffff:127.0.0.1"));
        assert!(m("fe80:0:0:0:0:0:0:1-ff", "fe80::9"));
        assert!(m("::1", "::1"));
    }

    #[test]
    fn malformed_patterns_are_errors() {
        for bad in [
            "192.168.1",
            "300.1.1.1",
            "192.168.1.5-2",
            "1.2.3.{4",
            "a.b.c.*",
            "1.2.3.4.5.*",
        ] {
            assert!(AddressPattern::parse(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn source_ips_are_addresses_or_cidr_blocks() {
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        assert!(source_ip_matches("10.0.0.0/8", ip("10.1.2.3")));
        assert!(!source_ip_matches("10.0.0.0/8", ip("11.1.2.3")));
        assert!(source_ip_matches("127.0.0.1", ip("127.0.0.1")));
        assert!(source_ip_matches("0.0.0.0/0", ip("8.8.8.8")));
        assert!(source_ip_matches("fd00::/8", ip("fd12::1")));
        assert!(is_valid_source_ip("10.0.0.0/8") && !is_valid_source_ip("10.0.0.0/33"));
        assert!(!is_valid_source_ip("10.0.0.*"));
    }
}
