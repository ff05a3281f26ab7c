//! Where a tool's web traffic may go: [`EgressRules`], the public internet plus the hosts an
//! operator allows (`BOTCRAFT_BROWSER_ALLOW`), and [`Refusal`], why a destination is not.

use std::net::IpAddr;

use crate::address::{AddressClass, OwnAddress, canonical, refused_class};

/// The variable operators list allowed non-public hosts in.
pub const ALLOW_VARIABLE: &str = "BOTCRAFT_BROWSER_ALLOW";

/// The longest list of allowed hosts read.
pub const MAX_ALLOWED: usize = 256;

/// The public internet, and the hosts listed as allowed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EgressRules {
    allowed: Vec<Allowed>,
}

/// One allowed host: a name or an address as a URL writes it, on one port or any.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Allowed {
    host: Host,
    port: Option<u16>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Host {
    Name(String),
    Address(IpAddr),
}

/// A list of allowed hosts that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RulesError {
    #[error(
        "{ALLOW_VARIABLE}: {entry:?} is not a host, host:port, or [IPv6]:port (e.g. localhost:5173, 10.0.0.5, intranet.example.com)"
    )]
    BadEntry { entry: String },
    #[error("{ALLOW_VARIABLE}: more than {MAX_ALLOWED} hosts")]
    TooMany,
}

/// Why a destination is refused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// The host as the request named it.
    pub host: String,
    pub port: u16,
    /// The address it is (or resolves to) that is not public.
    pub address: IpAddr,
    pub class: AddressClass,
}

/// What the page (and so the model) reads: the host and why, not the address it resolved
/// to (a page would map the internal network's names with it; the log has it).
impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let host = if self.host.contains(':') {
            format!("[{}]", self.host)
        } else {
            self.host.clone()
        };
        write!(
            f,
            "BotCraft refused {host}:{}: it is {}, and a tool's web traffic reaches only the public internet (an operator allows it by starting BotCraft with {ALLOW_VARIABLE}={host}:{})",
            self.port,
            self.class.as_str(),
            self.port
        )
    }
}

impl EgressRules {
    /// Rules from a comma-separated list of allowed hosts (`BOTCRAFT_BROWSER_ALLOW`):
    /// `host`, `host:port`, `[IPv6]` or `[IPv6]:port`; blank entries are skipped.
    pub fn parse(list: &str) -> Result<Self, RulesError> {
        let mut allowed = Vec::new();
        for entry in list.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if allowed.len() == MAX_ALLOWED {
                return Err(RulesError::TooMany);
            }
            allowed.push(parse_entry(entry).ok_or_else(|| RulesError::BadEntry {
                entry: entry.chars().take(200).collect(),
            })?);
        }
        Ok(Self { allowed })
    }

    /// Whether `host:port` is listed as the request names it (an operator's own host: its
    /// tunnels are kept open however long they are quiet, a dev server's reload socket).
    pub fn lists(&self, host: &str, port: u16) -> bool {
        let name = normalize(host);
        let wanted = match name.parse::<IpAddr>() {
            Ok(address) => Host::Address(canonical(address)),
            Err(_) => Host::Name(name),
        };
        self.allowed
            .iter()
            .any(|allowed| allowed.host == wanted && allowed.port.is_none_or(|p| p == port))
    }

    /// Whether `host:port` may be reached, given the addresses it is or resolves to and
    /// this machine's own addresses and their networks (`this_machine`): a host listed as the
    /// request names it (a name, or an address written as one; on that port or on any) may be
    /// whatever it resolves to; otherwise every address must be public, not this machine's
    /// and not on a network this machine is on. An
    /// address listed allows only requests that name it: a name that resolves to it is
    /// judged as a name (else a page's own name, rebound to it, would pass).
    pub fn verdict(
        &self,
        host: &str,
        port: u16,
        addresses: &[IpAddr],
        this_machine: &[OwnAddress],
    ) -> Result<(), Refusal> {
        if self.lists(host, port) {
            return Ok(());
        }
        let name = normalize(host);
        for address in addresses {
            let class = refused_class(*address)
                .or_else(|| this_machine.iter().find_map(|own| own.class_of(*address)));
            if let Some(class) = class {
                return Err(Refusal {
                    host: name,
                    port,
                    address: *address,
                    class,
                });
            }
        }
        Ok(())
    }
}

/// `host`, `host:port`, `[v6]`, `[v6]:port`; a URL's scheme and a final `/` are dropped
/// (`http://localhost:5173/` is `localhost:5173`).
fn parse_entry(entry: &str) -> Option<Allowed> {
    let entry = ["http://", "https://", "ws://", "wss://"]
        .iter()
        .find_map(|scheme| entry.strip_prefix(scheme))
        .unwrap_or(entry);
    let entry = entry.strip_suffix('/').unwrap_or(entry);
    let (host, port) = if let Some(rest) = entry.strip_prefix('[') {
        let (inside, after) = rest.split_once(']')?;
        let port = match after {
            "" => None,
            _ => Some(after.strip_prefix(':')?.parse::<u16>().ok()?),
        };
        (inside, port)
    } else if entry.matches(':').count() > 1 {
        // A bare IPv6 address, no port.
        (entry, None)
    } else {
        match entry.split_once(':') {
            Some((host, port)) => (host, Some(port.parse::<u16>().ok()?)),
            None => (entry, None),
        }
    };
    if port == Some(0) {
        return None;
    }
    let host = match normalize(host).parse::<IpAddr>() {
        Ok(address) => Host::Address(canonical(address)),
        Err(_) => {
            let name = normalize(host);
            let valid = !name.is_empty()
                && name.len() <= 253
                && name
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-' | '_'));
            if !valid {
                return None;
            }
            Host::Name(name)
        }
    };
    Some(Allowed { host, port })
}

/// A host as compared: lower case, without brackets or a final dot.
fn normalize(host: &str) -> String {
    host.trim_start_matches('[')
        .trim_end_matches(']')
        .trim_end_matches('.')
        .to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn ip(text: &str) -> IpAddr {
        text.parse().expect("address")
    }

    #[test]
    fn public_addresses_pass_and_the_rest_only_when_listed() {
        let rules =
            EgressRules::parse("localhost:3000, 10.0.0.5, [fd00::1]:8080, Intranet.Example.com., http://dev.local:5173/")
                .expect("rules");
        let loopback = ip("127.0.0.1");
        let own = [
            loopback,
            ip("198.51.100.7"),
            ip("93.184.215.99"),
            ip("2a01:4f8::9"),
        ]
        .map(OwnAddress::host);
        // (host, port, addresses, allowed)
        let cases = [
            ("example.com", 443, vec![ip("93.184.215.14")], true),
            ("127.0.0.1", 80, vec![loopback], false),
            ("localhost", 3000, vec![loopback, ip("::1")], true),
            ("LOCALHOST.", 3000, vec![loopback], true),
            ("localhost", 3001, vec![loopback], false),
            ("dev.local", 5173, vec![loopback], true),
            ("dev.local", 5174, vec![loopback], false),
            ("intranet.example.com", 443, vec![ip("10.9.9.9")], true),
            ("10.0.0.5", 80, vec![ip("10.0.0.5")], true),
            ("wiki", 80, vec![ip("10.0.0.5")], false),
            ("this-host.example", 80, vec![ip("2a01:4f8::9")], false),
            ("93.184.215.99", 80, vec![ip("93.184.215.99")], false),
            (
                "[64:ff9b::5db8:d763]",
                80,
                vec![ip("64:ff9b::5db8:d763")],
                false,
            ),
            ("93.184.215.14", 80, vec![ip("93.184.215.14")], true),
            ("[::ffff:10.0.0.5]", 80, vec![ip("::ffff:10.0.0.5")], true),
            ("[fd00::1]", 8080, vec![ip("fd00::1")], true),
            ("[fd00::1]", 8081, vec![ip("fd00::1")], false),
            (
                "rebound.example",
                80,
                vec![ip("1.1.1.1"), ip("169.254.169.254")],
                false,
            ),
        ];
        for (host, port, addresses, allowed) in cases {
            assert_eq!(
                rules.verdict(host, port, &addresses, &own).is_ok(),
                allowed,
                "{host}:{port} {addresses:?}"
            );
        }
        assert_eq!(
            rules
                .verdict("own.example", 443, &[ip("::ffff:93.184.215.99")], &own)
                .map_err(|refusal| refusal.class),
            Err(AddressClass::ThisMachine)
        );
        // A neighbour on this machine's IPv6 link (a NAS, a printer): public, refused.
        let link = OwnAddress {
            address: ip("2a01:4f8:c0c:1::5"),
            prefix: 64,
        };
        assert_eq!(
            [
                ("nas.example", "2a01:4f8:c0c:1::77"),
                ("far.example", "2a01:4f8:c0c:2::77")
            ]
            .map(|(host, address)| EgressRules::default()
                .verdict(host, 443, &[ip(address)], &[link])
                .map_err(|refusal| refusal.class)),
            [Err(AddressClass::ThisMachinesNetwork), Ok(())]
        );
        let refusal = EgressRules::default()
            .verdict("metadata.internal", 80, &[ip("169.254.169.254")], &[])
            .expect_err("refused");
        assert_eq!(
            refusal.to_string(),
            "BotCraft refused metadata.internal:80: it is a link-local address (where clouds serve instance metadata), and a tool's web traffic reaches only the public internet (an operator allows it by starting BotCraft with BOTCRAFT_BROWSER_ALLOW=metadata.internal:80)"
        );
    }

    #[test]
    fn entries_that_name_no_host_are_refused() {
        for bad in [
            "local host",
            "host:",
            "host:0",
            "host:70000",
            "[::1",
            "[::1]x",
            "http://host/path",
            "a/b",
        ] {
            assert_eq!(
                EgressRules::parse(bad),
                Err(RulesError::BadEntry { entry: bad.into() }),
                "{bad}"
            );
        }
        assert_eq!(EgressRules::parse(" , "), Ok(EgressRules::default()));
        let many = vec!["h"; MAX_ALLOWED + 1].join(",");
        assert_eq!(EgressRules::parse(&many), Err(RulesError::TooMany));
    }
}
