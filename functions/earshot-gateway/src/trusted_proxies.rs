//! Which peers may tell earshot who the caller is: a proxy in front (CloudFront, a load balancer, a
//! company's reverse proxy) is one peer for every caller, so where anyone may call (auth `public`), every
//! caller behind it would be one owner with one budget. A deployment names the proxies it trusts (CIDRs);
//! a request whose peer is one of them has its caller taken from the headers the proxy writes: `Forwarded`
//! (RFC 7239: its `for=` parameters) where present, else `X-Forwarded-For`. Read from the right: each
//! proxy appends the address it received from, so the first address from the right that is not itself a
//! trusted proxy is the caller, and whatever a client wrote further left is its own claim, ignored.
//! A peer that is not trusted is the caller, whatever its headers say.
//!
//! The peer is the TCP peer under `earshot serve` and the function URL's `sourceIp` on Lambda.
//!
//! CIDRs are read with `ipnet` (already in the build through the HTTP stack).

use std::net::IpAddr;

use axum::http::HeaderMap;
use ipnet::IpNet;

/// The most addresses of a forwarding header that are read (from the right); a longer chain is cut there.
const MOST_HOPS: usize = 16;

/// The proxies a deployment trusts to name the caller; none by default.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TrustedProxies(Vec<IpNet>);

impl TrustedProxies {
    /// Reads a comma-separated list of CIDRs (`10.0.0.0/8, 2600:9000::/28`; a bare address is its own /32
    /// or /128). Empty: none.
    pub fn parse(list: &str) -> Result<TrustedProxies, String> {
        let mut nets = Vec::new();
        for item in list.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            let net = match item.parse::<IpNet>() {
                Ok(net) => net,
                Err(_) => item.parse::<IpAddr>().map(IpNet::from).map_err(|_| format!("`{item}` is not a CIDR such as 10.0.0.0/8"))?,
            };
            nets.push(net.trunc());
        }
        Ok(TrustedProxies(nets))
    }

    /// Whether no proxy is trusted.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Whether `address` is a trusted proxy's.
    pub fn contains(&self, address: IpAddr) -> bool {
        let address = address.to_canonical();
        self.0.iter().any(|net| net.contains(&address))
    }

    /// The caller of a request that came from `peer` with `headers`; see the module docs.
    pub fn caller(&self, peer: IpAddr, headers: &HeaderMap) -> IpAddr {
        if !self.contains(peer) {
            return peer;
        }
        let chain = forwarded_for(headers);
        let mut caller = peer;
        for address in chain.iter().rev().take(MOST_HOPS) {
            caller = *address;
            if !self.contains(*address) {
                break;
            }
        }
        caller.to_canonical()
    }
}

/// The addresses the forwarding headers name, left to right: `Forwarded`'s `for=` where any is given,
/// else `X-Forwarded-For`'s. A value that is no address (`unknown`, an obfuscated name) ends the chain
/// there: what stands left of it cannot be placed.
fn forwarded_for(headers: &HeaderMap) -> Vec<IpAddr> {
    let values = |name: &str| headers.get_all(name).iter().filter_map(|v| v.to_str().ok()).flat_map(|v| v.split(',')).map(str::trim).collect::<Vec<_>>();
    let forwarded: Vec<&str> = values("forwarded")
        .into_iter()
        .filter_map(|element| element.split(';').map(str::trim).find_map(|pair| pair.get(..4).filter(|k| k.eq_ignore_ascii_case("for=")).map(|_| &pair[4..])))
        .collect();
    let named = if forwarded.is_empty() { values("x-forwarded-for") } else { forwarded };
    let mut out = Vec::new();
    for value in named.iter().rev() {
        match address_of(value) {
            Some(address) => out.push(address),
            None => break,
        }
    }
    out.reverse();
    out
}

/// An address as a forwarding header writes it: bare, quoted, in brackets, with or without a port.
fn address_of(value: &str) -> Option<IpAddr> {
    let value = value.trim().trim_matches('"');
    if let Ok(address) = value.parse() {
        return Some(address);
    }
    if let Some(rest) = value.strip_prefix('[') {
        return rest.split_once(']')?.0.parse().ok();
    }
    // `192.0.2.1:443`
    value.rsplit_once(':').and_then(|(host, _)| host.parse::<std::net::Ipv4Addr>().ok()).map(IpAddr::V4)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&'static str, &str)]) -> HeaderMap {
        let mut map = HeaderMap::new();
        for (name, value) in pairs {
            map.append(*name, value.parse().unwrap());
        }
        map
    }

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn only_a_trusted_peer_names_the_caller_read_from_the_right() {
        let trusted = TrustedProxies::parse("10.0.0.0/8, 2600:9000::/28, 192.0.2.7").unwrap();
        let proxy = ip("10.1.2.3");
        // A client's own claim (left) is ignored; the proxy's appended address is the caller.
        let xff = headers(&[("x-forwarded-for", "6.6.6.6, 198.51.100.20")]);
        assert_eq!(trusted.caller(proxy, &xff), ip("198.51.100.20"));
        // Two trusted proxies in a row: the first untrusted address from the right.
        let chained = headers(&[("x-forwarded-for", "198.51.100.20, 10.9.9.9")]);
        assert_eq!(trusted.caller(proxy, &chained), ip("198.51.100.20"));
        // An untrusted peer is the caller, whatever it writes.
        assert_eq!(trusted.caller(ip("203.0.113.5"), &xff), ip("203.0.113.5"));
        // No header: the proxy itself.
        assert_eq!(trusted.caller(proxy, &HeaderMap::new()), proxy);
        // Forwarded wins over X-Forwarded-For, in its quoted, bracketed and ported forms.
        let forwarded = headers(&[("forwarded", "for=6.6.6.6, for=\"[2001:db8::1]:4711\";proto=https"), ("x-forwarded-for", "198.51.100.20")]);
        assert_eq!(trusted.caller(proxy, &forwarded), ip("2001:db8::1"));
        assert_eq!(trusted.caller(proxy, &headers(&[("forwarded", "for=192.0.2.60:443")])), ip("192.0.2.60"));
        // `unknown` ends the chain: nothing left of it is placed.
        assert_eq!(trusted.caller(proxy, &headers(&[("x-forwarded-for", "198.51.100.20, unknown")])), proxy);
        // A bare address is its own network; an IPv4-mapped peer is the IPv4 one.
        assert!(trusted.contains(ip("192.0.2.7")) && !trusted.contains(ip("192.0.2.8")));
        assert!(trusted.contains(ip("::ffff:10.0.0.1")));
        assert!(TrustedProxies::parse("10.0.0.0/33").is_err() && TrustedProxies::parse("proxy").is_err());
        assert!(TrustedProxies::parse("").unwrap().is_empty());
    }
}
