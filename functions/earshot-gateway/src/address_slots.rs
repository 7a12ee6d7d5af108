//! At most so many connections from one client address (`earshot serve --max-connections-per-address`),
//! so that one caller cannot take every one of the server's connection slots (`--max-connections`) while
//! others wait. The address is the socket's peer: behind a proxy or a NAT every caller has the proxy's,
//! and the cap should then be raised or turned off (0). An IPv6 caller is counted by the leading bits of its
//! address (its /64 by default): a subscriber is given a whole /64, and a cap on the exact address would let one
//! caller open a connection from each of its 2^64 addresses. An IPv4 address written as IPv6 (`::ffff:a.b.c.d`)
//! counts as the IPv4 address.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The connections open per client address, each held by an [`AddressSlot`].
#[derive(Debug)]
pub struct AddressSlots {
    /// `None`: no cap.
    max: Option<usize>,
    /// The leading bits of an IPv6 address that name its caller.
    ipv6_prefix: u8,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's place under its address's cap, given back when dropped.
#[derive(Debug)]
pub struct AddressSlot {
    address: IpAddr,
    open: Option<Arc<Mutex<HashMap<IpAddr, usize>>>>,
}

/// The leading bits of an IPv6 address that name its caller unless set otherwise: a subscriber's /64.
pub const DEFAULT_IPV6_PREFIX: u8 = 64;

/// The caller `address` stands for: an IPv4 address whole (also written as IPv6), an IPv6 one cut to its
/// first `ipv6_prefix` bits (1 to 128).
pub fn caller_of(address: IpAddr, ipv6_prefix: u8) -> IpAddr {
    match address {
        IpAddr::V4(_) => address,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let mask = u128::MAX << (128 - u32::from(ipv6_prefix.clamp(1, 128)));
                IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & mask))
            }
        },
    }
}

impl AddressSlots {
    /// At most `max` connections an address (0: no cap).
    pub fn new(max: usize) -> Self {
        AddressSlots { max: (max > 0).then_some(max), ipv6_prefix: DEFAULT_IPV6_PREFIX, open: Arc::default() }
    }

    /// IPv6 callers counted by this many leading bits of their address (1 to 128).
    pub fn ipv6_prefix(mut self, bits: u8) -> Self {
        self.ipv6_prefix = bits.clamp(1, 128);
        self
    }

    /// The caller an address stands for: an IPv4 address whole, an IPv6 one cut to its prefix.
    pub fn caller(&self, address: IpAddr) -> IpAddr {
        caller_of(address, self.ipv6_prefix)
    }

    /// A place for one more connection from `address`, or `None` when its caller already holds its cap.
    pub fn take(&self, address: IpAddr) -> Option<AddressSlot> {
        let address = self.caller(address);
        let Some(max) = self.max else { return Some(AddressSlot { address, open: None }) };
        let mut open = self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let count = open.entry(address).or_insert(0);
        if *count >= max {
            return None;
        }
        *count += 1;
        Some(AddressSlot { address, open: Some(self.open.clone()) })
    }

    /// The addresses holding a connection now (what the map keeps: none once they have all gone).
    pub fn addresses(&self) -> usize {
        self.open.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).len()
    }
}

impl Drop for AddressSlot {
    fn drop(&mut self) {
        let Some(open) = &self.open else { return };
        let mut open = open.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(count) = open.get_mut(&self.address) {
            *count -= 1;
            if *count == 0 {
                open.remove(&self.address);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_address_holds_at_most_its_cap_and_others_are_not_held_by_it() {
        let slots = AddressSlots::new(2);
        let (a, b): (IpAddr, IpAddr) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let first = slots.take(a).expect("one");
        let _second = slots.take(a).expect("two");
        assert!(slots.take(a).is_none(), "a third from the same address is refused");
        assert!(slots.take(b).is_some(), "another address is not");
        drop(first);
        assert!(slots.take(a).is_some(), "a place given back is taken again");
    }

    #[test]
    fn an_ipv6_caller_is_its_prefix_and_an_ipv4_one_written_as_ipv6_is_its_ipv4_address() {
        let slots = AddressSlots::new(2);
        let ip = |s: &str| -> IpAddr { s.parse().unwrap() };
        // Two addresses of one /64: one caller, at its cap after two.
        let _a = slots.take(ip("2001:db8:1:2::1")).expect("one");
        let _b = slots.take(ip("2001:db8:1:2:ffff:ffff:ffff:fffe")).expect("two");
        assert!(slots.take(ip("2001:db8:1:2:dead:beef::7")).is_none(), "a third address of the same /64 is the same caller");
        assert!(slots.take(ip("2001:db8:1:3::1")).is_some(), "the next /64 is another caller");
        // An IPv4 caller is the same whether the socket wrote it as IPv4 or as IPv6.
        let _c = slots.take(ip("192.0.2.7")).expect("one");
        let _d = slots.take(ip("::ffff:192.0.2.7")).expect("two");
        assert!(slots.take(ip("192.0.2.7")).is_none());
        // A narrower prefix counts wider networks as one caller; /128 is the exact address.
        assert_eq!(AddressSlots::new(1).ipv6_prefix(48).caller(ip("2001:db8:1:2::1")), ip("2001:db8:1::"));
        assert_eq!(AddressSlots::new(1).ipv6_prefix(128).caller(ip("2001:db8::1")), ip("2001:db8::1"));
    }

    #[test]
    fn nothing_is_kept_for_an_address_once_its_connections_are_gone() {
        let slots = AddressSlots::new(4);
        let taken: Vec<AddressSlot> = (0..100).map(|i| slots.take(IpAddr::from([10, 0, 0, i as u8])).unwrap()).collect();
        assert_eq!(slots.addresses(), 100);
        drop(taken);
        assert_eq!(slots.addresses(), 0);
        let open = AddressSlots::new(0);
        assert!((0..1000).all(|_| open.take("10.0.0.1".parse().unwrap()).is_some()), "0: no cap");
    }
}
