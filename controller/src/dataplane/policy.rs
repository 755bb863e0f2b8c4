//! Which load balancer addresses the controller may probe.
//!
//! A probe target is whatever a member's Service, Ingress or Gateway status
//! says, and the record's author chooses port, path, headers and the body
//! looked for: without a rule, a member (or a record) could point the
//! controller's prober at the controller's own host, at loopback services
//! there, or at the cloud metadata service (169.254.169.254), and read the
//! answer back one probe at a time.
//!
//! So an address that is loopback (`127.0.0.0/8`, `::1`), link-local
//! (`169.254.0.0/16`, `fe80::/10`), unspecified (`0.0.0.0/8`, `::`) or an
//! address of the prober's own host (its interfaces, read from
//! `/proc/net` on Linux) is *refused*: not probed, not handed to the
//! agents, and Down (a failing address: it leaves the answers, and when
//! that empties a name `whenAllUnhealthy` decides as for any failing
//! address). Its `lastError` says why, e.g. `probe target 127.0.0.1 is
//! loopback; not probed (Domain spec.probeAllowedNetworks can allow it)`.
//! A Domain's `spec.probeAllowedNetworks` (CIDRs, the operator's) allows
//! such addresses for the records of its zone; a target several records
//! share is probed when one of them is allowed (the probe is the same).
//!
//! The agents probe the list the controller wrote, already filtered.

use std::net::{IpAddr, Ipv6Addr};

use ipnet::IpNet;

/// Why an address is not probed unless a Domain allows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// `127.0.0.0/8`, `::1`.
    Loopback,
    /// `169.254.0.0/16` (cloud metadata), `fe80::/10`.
    LinkLocal,
    /// `0.0.0.0/8`, `::` (connecting there reaches the local host).
    Unspecified,
    /// One of the prober's own host's addresses.
    OwnHost,
}

impl Refusal {
    /// `loopback`, `link-local`, `unspecified`, `an address of the
    /// prober's own host`.
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Loopback => "loopback",
            Refusal::LinkLocal => "link-local",
            Refusal::Unspecified => "unspecified",
            Refusal::OwnHost => "an address of the prober's own host",
        }
    }

    /// The one line status, explain and the log say of a refused
    /// `address`.
    pub fn message(self, address: IpAddr) -> String {
        format!(
            "probe target {} is {}; not probed (Domain spec.probeAllowedNetworks can allow it)",
            address.to_canonical(),
            self.as_str()
        )
    }
}

/// Whether `address` is refused without an allowance, and why; `own` are
/// the prober's host's addresses ([`host_addresses`]). An IPv4-mapped
/// IPv6 address (`::ffff:127.0.0.1`) is judged as the IPv4 one.
pub fn classify(address: IpAddr, own: &[IpAddr]) -> Option<Refusal> {
    let address = address.to_canonical();
    let refusal = match address {
        IpAddr::V4(v4) if v4.is_loopback() => Some(Refusal::Loopback),
        IpAddr::V4(v4) if v4.is_link_local() => Some(Refusal::LinkLocal),
        IpAddr::V4(v4) if v4.octets()[0] == 0 => Some(Refusal::Unspecified),
        IpAddr::V6(v6) if v6.is_loopback() => Some(Refusal::Loopback),
        IpAddr::V6(v6) if v6.segments()[0] & 0xffc0 == 0xfe80 => Some(Refusal::LinkLocal),
        IpAddr::V6(v6) if v6.is_unspecified() => Some(Refusal::Unspecified),
        _ => None,
    };
    refusal.or_else(|| own.contains(&address).then_some(Refusal::OwnHost))
}

/// What a user of the prober may have probed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowance {
    /// Every address as given (an agent: the controller filtered its list).
    Everything,
    /// Addresses [`classify`] refuses only inside these networks (a
    /// record: its Domains' `spec.probeAllowedNetworks`).
    Networks(Vec<IpNet>),
}

impl Allowance {
    /// Whether an address [`classify`] refuses is allowed anyway.
    pub fn allows(&self, address: IpAddr) -> bool {
        match self {
            Allowance::Everything => true,
            Allowance::Networks(networks) => {
                let address = address.to_canonical();
                networks.iter().any(|n| n.contains(&address))
            }
        }
    }
}

/// The networks of `spec.probeAllowedNetworks` entries (`127.0.0.0/8`, or
/// an address alone for itself); an entry that is neither is left out
/// (the schema admits only CIDR-shaped strings, so this is an address
/// such as `300.0.0.0/8`): it allows nothing.
pub fn parse_networks<'a>(entries: impl IntoIterator<Item = &'a str>) -> Vec<IpNet> {
    entries
        .into_iter()
        .filter_map(|entry| {
            let entry = entry.trim();
            entry
                .parse::<IpNet>()
                .ok()
                .or_else(|| entry.parse::<IpAddr>().ok().map(IpNet::from))
        })
        .collect()
}

/// The addresses of this host's interfaces (IPv4 from
/// `/proc/net/fib_trie`, IPv6 from `/proc/net/if_inet6`); empty where
/// those are not readable (not Linux): loopback and link-local are still
/// refused.
pub fn host_addresses() -> Vec<IpAddr> {
    let mut out = std::fs::read_to_string("/proc/net/fib_trie")
        .map(|text| local_ipv4(&text))
        .unwrap_or_default();
    out.extend(
        std::fs::read_to_string("/proc/net/if_inet6")
            .map(|text| local_ipv6(&text))
            .unwrap_or_default(),
    );
    out.sort();
    out.dedup();
    out
}

/// The local (`/32 host LOCAL`) addresses of a `/proc/net/fib_trie`.
fn local_ipv4(text: &str) -> Vec<IpAddr> {
    let mut out = Vec::new();
    let mut last: Option<IpAddr> = None;
    for line in text.lines() {
        let line = line.trim();
        if let Some(leaf) = line.strip_prefix("|-- ") {
            last = leaf.trim().parse().ok();
        } else if line.starts_with("/32 host LOCAL") {
            out.extend(last);
        }
    }
    out
}

/// The addresses of a `/proc/net/if_inet6` (32 hex digits first on each line).
fn local_ipv6(text: &str) -> Vec<IpAddr> {
    text.lines()
        .filter_map(|line| line.split_whitespace().next())
        .filter(|hex| hex.len() == 32)
        .filter_map(|hex| u128::from_str_radix(hex, 16).ok())
        .map(|bits| IpAddr::V6(Ipv6Addr::from(bits)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap_or(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED))
    }

    #[test]
    fn loopback_link_local_unspecified_and_own_addresses_are_refused() {
        let own = [ip("10.1.2.3"), ip("2001:db8::7")];
        for (address, want) in [
            ("127.0.0.1", Some(Refusal::Loopback)),
            ("127.0.10.2", Some(Refusal::Loopback)),
            ("::1", Some(Refusal::Loopback)),
            ("::ffff:127.0.0.1", Some(Refusal::Loopback)),
            ("169.254.169.254", Some(Refusal::LinkLocal)),
            ("fe80::1", Some(Refusal::LinkLocal)),
            ("febf::1", Some(Refusal::LinkLocal)),
            ("0.0.0.0", Some(Refusal::Unspecified)),
            ("0.1.2.3", Some(Refusal::Unspecified)),
            ("::", Some(Refusal::Unspecified)),
            ("10.1.2.3", Some(Refusal::OwnHost)),
            ("::ffff:10.1.2.3", Some(Refusal::OwnHost)),
            ("2001:db8::7", Some(Refusal::OwnHost)),
            ("10.1.2.4", None),
            ("fec0::1", None),
            ("2001:db8::8", None),
        ] {
            assert_eq!(classify(ip(address), &own), want, "{address}");
        }
        assert_eq!(
            Refusal::Loopback.message(ip("127.0.0.1")),
            "probe target 127.0.0.1 is loopback; not probed (Domain spec.probeAllowedNetworks can allow it)"
        );
        assert!(Refusal::LinkLocal
            .message(ip("::ffff:169.254.169.254"))
            .starts_with("probe target 169.254.169.254 is link-local;"));
    }

    #[test]
    fn allowances_name_networks_or_addresses() {
        let allowed = Allowance::Networks(parse_networks(["127.0.0.0/8", " ::1 ", "300.0.0.0/8", "fe80::/10"]));
        assert_eq!(
            allowed,
            Allowance::Networks(parse_networks(["127.0.0.0/8", "::1/128", "fe80::/10"]))
        );
        assert!(allowed.allows(ip("127.0.10.1")) && allowed.allows(ip("::ffff:127.0.0.1")));
        assert!(allowed.allows(ip("::1")) && allowed.allows(ip("fe80::9")));
        assert!(!allowed.allows(ip("169.254.169.254")));
        assert!(!Allowance::Networks(Vec::new()).allows(ip("127.0.0.1")));
        assert!(Allowance::Everything.allows(ip("169.254.169.254")));
    }

    #[test]
    fn the_hosts_own_addresses_are_read_from_proc() {
        let fib_trie = "Main:\n  +-- 0.0.0.0/0 3 0 5\n     |-- 0.0.0.0\n        /0 universe UNICAST\n     +-- 10.0.0.0/8 2 0 2\n        |-- 10.1.2.0\n           /24 link UNICAST\n        |-- 10.1.2.3\n           /32 host LOCAL\n        |-- 10.1.2.255\n           /32 link BROADCAST\n     |-- 127.0.0.1\n        /32 host LOCAL\nLocal:\n  +-- 0.0.0.0/0 3 0 5\n        |-- 10.1.2.3\n           /32 host LOCAL\n";
        assert_eq!(local_ipv4(fib_trie), [ip("10.1.2.3"), ip("127.0.0.1"), ip("10.1.2.3")]);
        let if_inet6 = "00000000000000000000000000000001 01 80 10 80       lo\nfe80000000000000021122fffe334455 02 40 20 80     eth0\nbad line\n";
        assert_eq!(local_ipv6(if_inet6), [ip("::1"), ip("fe80::211:22ff:fe33:4455")]);
        // Wherever this runs, the answer is a list (empty off Linux).
        let _ = host_addresses();
    }
}
