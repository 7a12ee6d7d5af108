//! At most so many connections from one client address (`earshot serve --max-connections-per-address`),
//! so that one caller cannot take every one of the server's connection slots (`--max-connections`) while
//! others wait. The address is the socket's peer: behind a proxy or a NAT every caller has the proxy's,
//! and the cap should then be raised or turned off (0).

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};

/// The connections open per client address, each held by an [`AddressSlot`].
#[derive(Debug)]
pub struct AddressSlots {
    /// `None`: no cap.
    max: Option<usize>,
    open: Arc<Mutex<HashMap<IpAddr, usize>>>,
}

/// One connection's place under its address's cap, given back when dropped.
#[derive(Debug)]
pub struct AddressSlot {
    address: IpAddr,
    open: Option<Arc<Mutex<HashMap<IpAddr, usize>>>>,
}

impl AddressSlots {
    /// At most `max` connections an address (0: no cap).
    pub fn new(max: usize) -> Self {
        AddressSlots { max: (max > 0).then_some(max), open: Arc::default() }
    }

    /// A place for one more connection from `address`, or `None` when it already holds its cap.
    pub fn take(&self, address: IpAddr) -> Option<AddressSlot> {
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
