//! Parsing IP addresses and CIDRs by the rules Kubernetes applies (`isIP`/`ip()` and
//! `isCIDR`/`cidr()` in CEL, Go's `net/netip` underneath), so that what the API server admits
//! and what the configurator and `kubectl netrollout migrate` accept is the same set:
//!
//! - IPv4 parts are decimal without leading zeros (`010.0.0.0` is refused: some tools read it
//!   as octal);
//! - no IPv6 zone (`fe80::1%eth0`);
//! - no IPv4-mapped IPv6 address (`::ffff:10.0.0.1`): it would be a second spelling of an IPv4
//!   address;
//! - the prefix length is decimal without sign or leading zeros, at most 32 (IPv4) or 128.
//!
//! IPv6 groups may have leading zeros (`fd00:0001::`), as in Go.

use std::net::IpAddr;

use ipnet::IpNet;

/// Why a text is not an IP address or CIDR; the message says what to write instead.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    /// No `/`, or nothing around it.
    #[error("{0:?} has no prefix length; write an address with /length, e.g. 10.250.0.0/24")]
    NoPrefix(String),
    /// The address part does not parse (leading zeros in IPv4 parts included).
    #[error(
        "{0:?} is not an IP address (IPv4 parts are decimal without leading zeros, e.g. 10.250.0.1 or fd94::1)"
    )]
    Address(String),
    /// The address carries an IPv6 zone.
    #[error("{0:?} has an IPv6 zone (%...); zones are not allowed, remove it")]
    Zone(String),
    /// An IPv4-mapped IPv6 address.
    #[error("{0:?} is an IPv4-mapped IPv6 address; write the IPv4 address itself")]
    Ipv4Mapped(String),
    /// The prefix length is not a plain decimal within the family's range.
    #[error(
        "{0:?} has an invalid prefix length; use a decimal without leading zeros from 0 to 32 (IPv4) or 128 (IPv6)"
    )]
    PrefixLength(String),
}

/// Parses an IP address as Kubernetes' `ip()` does.
///
/// # Errors
/// [`NetError`] saying what is wrong.
pub fn parse_ip(text: &str) -> Result<IpAddr, NetError> {
    if text.contains('%') {
        return Err(NetError::Zone(text.to_string()));
    }
    // The standard library refuses leading zeros in IPv4 parts, as Go's netip does.
    let addr: IpAddr = text
        .parse()
        .map_err(|_| NetError::Address(text.to_string()))?;
    if let IpAddr::V6(v6) = addr
        && v6.to_ipv4_mapped().is_some()
    {
        return Err(NetError::Ipv4Mapped(text.to_string()));
    }
    Ok(addr)
}

/// Parses `address/length` as Kubernetes' `cidr()` does. Host bits are kept (an interface
/// address such as `10.0.0.1/24` is a valid CIDR); the renderer refuses them where a network is meant.
///
/// # Errors
/// [`NetError`] saying what is wrong.
pub fn parse_cidr(text: &str) -> Result<IpNet, NetError> {
    let Some((addr, len)) = text.split_once('/') else {
        return Err(NetError::NoPrefix(text.to_string()));
    };
    if addr.contains('%') {
        return Err(NetError::Zone(text.to_string()));
    }
    let addr = parse_ip(addr).map_err(|e| match e {
        NetError::Address(_) => NetError::Address(text.to_string()),
        NetError::Ipv4Mapped(_) => NetError::Ipv4Mapped(text.to_string()),
        other => other,
    })?;
    let plain = !len.is_empty()
        && len.len() <= 3
        && len.bytes().all(|b| b.is_ascii_digit())
        && (len == "0" || !len.starts_with('0'));
    let len = plain
        .then(|| len.parse::<u8>().ok())
        .flatten()
        .ok_or_else(|| NetError::PrefixLength(text.to_string()))?;
    IpNet::new(addr, len).map_err(|_| NetError::PrefixLength(text.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_kubernetes_accepts_parses() {
        for ok in [
            "10.250.0.0/16",
            "0.0.0.0/0",
            "10.0.0.1/24",
            "fd94::/64",
            "FD94:0001::/64",
            "::/0",
            "::1.2.3.4/128",
        ] {
            assert!(parse_cidr(ok).is_ok(), "{ok}");
        }
        assert!(parse_ip("10.0.0.1").is_ok());
        assert!(parse_ip("fe80::1").is_ok());
    }

    #[test]
    fn leading_zeros_zones_and_mapped_addresses_are_refused() {
        for (bad, want) in [
            ("010.050.000.000/16", "leading zeros"),
            ("10.0.0.00/24", "leading zeros"),
            ("10.0.0.0/016", "prefix length"),
            ("10.0.0.0/+16", "prefix length"),
            ("10.0.0.0/33", "prefix length"),
            ("fd94::/129", "prefix length"),
            ("10.0.0.0/", "prefix length"),
            ("10.0.0.0", "no prefix length"),
            ("fe80::1%eth0/64", "zone"),
            ("::ffff:10.0.0.0/104", "IPv4-mapped"),
            ("::ffff:010.0.0.0/104", "leading zeros"),
            (" 10.0.0.0/8", "not an IP address"),
        ] {
            let err = parse_cidr(bad).expect_err(bad).to_string();
            assert!(err.contains(want), "{bad}: {err}");
        }
        assert!(matches!(parse_ip("01.2.3.4"), Err(NetError::Address(_))));
        assert!(matches!(parse_ip("fe80::1%lo"), Err(NetError::Zone(_))));
        assert!(matches!(
            parse_ip("::ffff:1.2.3.4"),
            Err(NetError::Ipv4Mapped(_))
        ));
    }
}
