//! Which addresses a tool's web traffic may not reach by default: [`refused_class`].
//!
//! Everything that is not the public internet: this host (loopback, unspecified), the
//! networks it sits in (private, shared CGNAT, unique local), link-local addresses (where
//! clouds serve their instance metadata: `169.254.169.254`, `fd00:ec2::254` is unique local),
//! multicast and broadcast, and the reserved ranges. An IPv6 address that carries an IPv4
//! one (mapped, compatible, NAT64's well-known prefix, 6to4) is judged by the IPv4 address.
//! Beyond the ranges, this machine's own addresses ([`this_machine`]) and the networks its
//! interfaces sit on ([`OwnAddress::class_of`]): a laptop's global IPv6 prefix holds its
//! neighbours (a NAS, a printer, the router), public addresses a range cannot tell.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

/// Why an address is not on the public internet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressClass {
    /// `0.0.0.0/8`, `::`: "this host".
    Unspecified,
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `10/8`, `172.16/12`, `192.168/16`.
    Private,
    /// `100.64/10` (carrier-grade NAT, also some clouds' metadata: `100.100.100.200`).
    SharedAddressSpace,
    /// `169.254/16`, `fe80::/10`: instance metadata lives here.
    LinkLocal,
    /// `fc00::/7`.
    UniqueLocal,
    /// `224/4`, `ff00::/8`, `255.255.255.255`.
    Multicast,
    /// `240/4`, `192.0.0/24`, `198.18/15`, documentation ranges: no host of the internet.
    Reserved,
    /// An address of one of this machine's own interfaces (a public one included: services
    /// bound to every interface answer on it).
    ThisMachine,
    /// An address on the network of one of this machine's interfaces (its neighbours), a
    /// public one included.
    ThisMachinesNetwork,
}

impl AddressClass {
    /// The class in words, for a refusal a person reads.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Unspecified => "an unspecified address (this host)",
            Self::Loopback => "a loopback address (this host)",
            Self::Private => "a private network address",
            Self::SharedAddressSpace => "a shared (carrier-grade NAT) address",
            Self::LinkLocal => "a link-local address (where clouds serve instance metadata)",
            Self::UniqueLocal => "a unique local IPv6 address",
            Self::Multicast => "a multicast or broadcast address",
            Self::Reserved => "a reserved address",
            Self::ThisMachine => "an address of this machine",
            Self::ThisMachinesNetwork => "an address on a network this machine is on",
        }
    }
}

/// Why `ip` may not be reached by default, or `None` for a public address.
pub fn refused_class(ip: IpAddr) -> Option<AddressClass> {
    match ip {
        IpAddr::V4(v4) => refused_v4(v4),
        IpAddr::V6(v6) => refused_v6(v6),
    }
}

fn refused_v4(ip: Ipv4Addr) -> Option<AddressClass> {
    let [a, b, c, _] = ip.octets();
    let class = match (a, b, c) {
        (0, _, _) => AddressClass::Unspecified,
        (127, _, _) => AddressClass::Loopback,
        (10, _, _) | (192, 168, _) => AddressClass::Private,
        (172, 16..=31, _) => AddressClass::Private,
        (100, 64..=127, _) => AddressClass::SharedAddressSpace,
        (169, 254, _) => AddressClass::LinkLocal,
        (224..=239, _, _) => AddressClass::Multicast,
        _ if ip.is_broadcast() => AddressClass::Multicast,
        (240..=255, _, _) => AddressClass::Reserved,
        // IETF protocol assignments, documentation (TEST-NET-1/2/3), benchmarking.
        (192, 0, 0) | (192, 0, 2) | (198, 51, 100) | (203, 0, 113) => AddressClass::Reserved,
        (198, 18..=19, _) => AddressClass::Reserved,
        _ => return None,
    };
    Some(class)
}

fn refused_v6(ip: Ipv6Addr) -> Option<AddressClass> {
    if let Some(v4) = embedded_v4(ip) {
        return refused_v4(v4);
    }
    let segments = ip.segments();
    let class = if ip.is_unspecified() {
        AddressClass::Unspecified
    } else if ip.is_loopback() {
        AddressClass::Loopback
    } else if segments[0] & 0xffc0 == 0xfe80 {
        AddressClass::LinkLocal
    } else if segments[0] & 0xfe00 == 0xfc00 {
        AddressClass::UniqueLocal
    } else if segments[0] & 0xff00 == 0xff00 {
        AddressClass::Multicast
    } else if segments[0] == 0x2001 && segments[1] == 0x0db8 {
        // Documentation.
        AddressClass::Reserved
    } else if segments[0] & 0xe000 != 0x2000 {
        // Outside 2000::/3, the only global unicast space assigned.
        AddressClass::Reserved
    } else {
        return None;
    };
    Some(class)
}

/// The shortest prefix of an interface's network taken as the link it sits on: an IPv4
/// network of at most 256 addresses (a LAN; a provider's public `/20` holds other customers'
/// sites), an IPv6 one of at most a `/56` (a link is a `/64`; a route of `/0`, or a tunnel's
/// wide prefix, is not a neighbourhood).
const NEIGHBOURS_V4: u8 = 24;
const NEIGHBOURS_V6: u8 = 56;

/// An address of one of this machine's interfaces, with the length of its network's prefix.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OwnAddress {
    pub address: IpAddr,
    pub prefix: u8,
}

impl OwnAddress {
    /// `address` alone (no network known).
    pub fn host(address: IpAddr) -> Self {
        let prefix = if address.is_ipv4() { 32 } else { 128 };
        Self { address, prefix }
    }

    /// `ThisMachine` when `ip` is this address, `ThisMachinesNetwork` when it is on this
    /// address's network (a narrow one: [`NEIGHBOURS_V4`], [`NEIGHBOURS_V6`]); each compared
    /// in canonical form ([`canonical`]).
    pub fn class_of(&self, ip: IpAddr) -> Option<AddressClass> {
        let (own, ip) = (canonical(self.address), canonical(ip));
        if own == ip {
            return Some(AddressClass::ThisMachine);
        }
        let same_network = match (own, ip) {
            (IpAddr::V4(own), IpAddr::V4(ip)) if self.prefix >= NEIGHBOURS_V4 => {
                let mask = u32::MAX.checked_shl(32 - u32::from(self.prefix.min(32)));
                let mask = mask.unwrap_or(0);
                u32::from(own) & mask == u32::from(ip) & mask
            }
            (IpAddr::V6(own), IpAddr::V6(ip)) if self.prefix >= NEIGHBOURS_V6 => {
                let mask = u128::MAX.checked_shl(128 - u32::from(self.prefix.min(128)));
                let mask = mask.unwrap_or(0);
                u128::from(own) & mask == u128::from(ip) & mask
            }
            _ => false,
        };
        same_network.then_some(AddressClass::ThisMachinesNetwork)
    }
}

/// `ip` as the rules compare it: an IPv6 address that carries an IPv4 one as that IPv4
/// address ([`embedded_v4`]).
pub(crate) fn canonical(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V6(v6) => embedded_v4(v6).map_or(ip, IpAddr::V4),
        IpAddr::V4(_) => ip,
    }
}

/// The addresses of this machine's interfaces now, with their networks (they change: read
/// at each request), as the process's network namespace sees them: in a container, the
/// host's addresses are not among them, and neither is a public address a cloud maps to a VM
/// by NAT. An interface list that cannot be read gives none: the ranges above still hold.
pub fn this_machine() -> Vec<OwnAddress> {
    let Ok(interfaces) = nix::ifaddrs::getifaddrs() else {
        return Vec::new();
    };
    interfaces
        .filter_map(|interface| {
            let address = interface.address?;
            let netmask = interface.netmask;
            if let Some(v4) = address.as_sockaddr_in() {
                let prefix = netmask
                    .as_ref()
                    .and_then(|mask| mask.as_sockaddr_in())
                    .map_or(32, |mask| u32::from(mask.ip()).leading_ones() as u8);
                return Some(OwnAddress {
                    address: IpAddr::V4(v4.ip()),
                    prefix,
                });
            }
            let v6 = address.as_sockaddr_in6()?;
            let prefix = netmask
                .as_ref()
                .and_then(|mask| mask.as_sockaddr_in6())
                .map_or(128, |mask| u128::from(mask.ip()).leading_ones() as u8);
            Some(OwnAddress {
                address: IpAddr::V6(v6.ip()),
                prefix,
            })
        })
        .collect()
}

/// The IPv4 address an IPv6 one carries: IPv4-mapped (`::ffff:a.b.c.d`), IPv4-compatible
/// (`::a.b.c.d`, deprecated), NAT64's well-known prefix (`64:ff9b::/96`), 6to4 (`2002::/16`).
pub(crate) fn embedded_v4(ip: Ipv6Addr) -> Option<Ipv4Addr> {
    let s = ip.segments();
    let tail = |high: u16, low: u16| {
        Ipv4Addr::new(
            (high >> 8) as u8,
            (high & 0xff) as u8,
            (low >> 8) as u8,
            (low & 0xff) as u8,
        )
    };
    match s {
        [0, 0, 0, 0, 0, 0xffff, high, low] => Some(tail(high, low)),
        // `::` and `::1` are not IPv4-compatible addresses.
        [0, 0, 0, 0, 0, 0, high, low] if high != 0 => Some(tail(high, low)),
        [0x64, 0xff9b, 0, 0, 0, 0, high, low] => Some(tail(high, low)),
        [0x2002, high, low, ..] => Some(tail(high, low)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    #[test]
    fn this_machines_addresses_include_loopback_and_its_network() {
        let own = this_machine();
        assert!(
            own.contains(&OwnAddress {
                address: IpAddr::V4(Ipv4Addr::LOCALHOST),
                prefix: 8
            }),
            "{own:?}"
        );
    }

    /// This machine's address, its neighbours on a narrow network, and nothing past it or
    /// on a wide one.
    #[test]
    fn an_interfaces_network_holds_its_neighbours() {
        let own = |text: &str| {
            let (address, prefix) = text.split_once('/').expect("prefix");
            OwnAddress {
                address: address.parse().expect("address"),
                prefix: prefix.parse().expect("prefix"),
            }
        };
        use AddressClass::{ThisMachine, ThisMachinesNetwork};
        // (interface, address, class)
        let cases = [
            (
                "2a01:4f8:c0c:1::5/64",
                "2a01:4f8:c0c:1::5",
                Some(ThisMachine),
            ),
            (
                "2a01:4f8:c0c:1::5/64",
                "2a01:4f8:c0c:1:abcd::1",
                Some(ThisMachinesNetwork),
            ),
            ("2a01:4f8:c0c:1::5/64", "2a01:4f8:c0c:2::1", None),
            ("2a01:4f8:c0c:1::5/128", "2a01:4f8:c0c:1::6", None),
            ("2a01:4f8::5/32", "2a01:4f8:ffff::1", None),
            ("2a01:4f8::5/0", "2606:4700::1", None),
            (
                "93.184.215.99/24",
                "93.184.215.14",
                Some(ThisMachinesNetwork),
            ),
            (
                "93.184.215.99/24",
                "::ffff:93.184.215.14",
                Some(ThisMachinesNetwork),
            ),
            ("93.184.215.99/24", "93.184.216.14", None),
            ("93.184.215.99/20", "93.184.215.14", None),
            ("93.184.215.99/32", "93.184.215.99", Some(ThisMachine)),
            ("93.184.215.99/24", "2a01:4f8::1", None),
        ];
        for (interface, address, class) in cases {
            let ip: IpAddr = address.parse().expect("address");
            assert_eq!(own(interface).class_of(ip), class, "{interface} {address}");
        }
    }

    #[test]
    fn every_non_public_range_is_refused_and_public_addresses_pass() {
        use AddressClass::*;
        let cases: [(&str, Option<AddressClass>); 30] = [
            ("0.0.0.0", Some(Unspecified)),
            ("127.0.0.1", Some(Loopback)),
            ("127.255.0.9", Some(Loopback)),
            ("10.1.2.3", Some(Private)),
            ("172.16.0.1", Some(Private)),
            ("172.31.255.255", Some(Private)),
            ("172.32.0.1", None),
            ("192.168.1.1", Some(Private)),
            ("100.64.0.1", Some(SharedAddressSpace)),
            ("100.100.100.200", Some(SharedAddressSpace)),
            ("100.128.0.1", None),
            ("169.254.169.254", Some(LinkLocal)),
            ("224.0.0.251", Some(Multicast)),
            ("255.255.255.255", Some(Multicast)),
            ("240.0.0.1", Some(Reserved)),
            ("198.18.0.1", Some(Reserved)),
            ("8.8.8.8", None),
            ("93.184.215.14", None),
            ("::", Some(Unspecified)),
            ("::1", Some(Loopback)),
            ("fe80::1", Some(LinkLocal)),
            ("fd00:ec2::254", Some(UniqueLocal)),
            ("ff02::1", Some(Multicast)),
            ("::ffff:127.0.0.1", Some(Loopback)),
            ("::ffff:169.254.169.254", Some(LinkLocal)),
            ("::10.0.0.1", Some(Private)),
            ("64:ff9b::a9fe:a9fe", Some(LinkLocal)),
            ("2002:7f00:1::", Some(Loopback)),
            ("2001:db8::1", Some(Reserved)),
            ("2606:4700:4700::1111", None),
        ];
        for (address, class) in cases {
            let ip: IpAddr = address.parse().expect("address");
            assert_eq!(refused_class(ip), class, "{address}");
        }
    }
}
