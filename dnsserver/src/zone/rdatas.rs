//! The RDATA of one RRset as the build-time tree keeps it.
//!
//! The tree lives as long as the served snapshot (it is what
//! [`crate::ZoneStore::publish_changes`] updates), so its size is paid per
//! record of every zone. hickory's `RData` enum takes about 180 octets
//! whatever the type (its largest variants hold two names inline), while
//! nearly every record fedns publishes is an A or AAAA record: those are
//! kept as bare addresses, 4 or 16 octets each, to keep small the memory
//! each published Service costs.

use std::borrow::Cow;
use std::net::{Ipv4Addr, Ipv6Addr};

use hickory_proto::rr::rdata::{A, AAAA};
use hickory_proto::rr::RData;

/// The RDATA of one RRset, in insertion order. A and AAAA RDATA are
/// stored as addresses; every other type as hickory `RData`. Reading
/// gives `RData` either way ([`Rdatas::iter`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Rdatas {
    /// `A` RDATA (RFC 1035 §3.4.1).
    A(Vec<Ipv4Addr>),
    /// `AAAA` RDATA (RFC 3596 §2.2).
    Aaaa(Vec<Ipv6Addr>),
    /// Any other type.
    Other(Vec<RData>),
}

impl Default for Rdatas {
    fn default() -> Self {
        Rdatas::Other(Vec::new())
    }
}

impl Rdatas {
    /// No RDATA yet; the first [`Rdatas::push`] picks the storage.
    pub fn new() -> Self {
        Rdatas::default()
    }

    pub fn len(&self) -> usize {
        match self {
            Rdatas::A(v) => v.len(),
            Rdatas::Aaaa(v) => v.len(),
            Rdatas::Other(v) => v.len(),
        }
    }

    /// Every RDATA, in order (an A or AAAA one built on the fly, without
    /// allocating).
    pub fn iter(&self) -> Iter<'_> {
        match self {
            Rdatas::A(v) => Iter::A(v.iter()),
            Rdatas::Aaaa(v) => Iter::Aaaa(v.iter()),
            Rdatas::Other(v) => Iter::Other(v.iter()),
        }
    }

    /// The first RDATA.
    pub fn first(&self) -> Option<Cow<'_, RData>> {
        self.iter().next()
    }

    pub fn contains(&self, rdata: &RData) -> bool {
        match (self, rdata) {
            (Rdatas::A(v), RData::A(a)) => v.contains(&a.0),
            (Rdatas::Aaaa(v), RData::AAAA(a)) => v.contains(&a.0),
            (Rdatas::Other(v), _) => v.contains(rdata),
            // An address list holds nothing of another type.
            _ => false,
        }
    }

    /// Appends `rdata`. An RRset holds one type, so mixing types does not
    /// happen in practice; if it does, everything moves to `RData` storage.
    pub fn push(&mut self, rdata: RData) {
        match (&mut *self, rdata) {
            (Rdatas::A(v), RData::A(a)) => v.push(a.0),
            (Rdatas::Aaaa(v), RData::AAAA(a)) => v.push(a.0),
            (Rdatas::Other(v), RData::A(a)) if v.is_empty() => *self = Rdatas::A(vec![a.0]),
            (Rdatas::Other(v), RData::AAAA(a)) if v.is_empty() => *self = Rdatas::Aaaa(vec![a.0]),
            (Rdatas::Other(v), rdata) => v.push(rdata),
            (_, rdata) => {
                let mut all: Vec<RData> = self.iter().map(Cow::into_owned).collect();
                all.push(rdata);
                *self = Rdatas::Other(all);
            }
        }
    }

    /// Sorts by presentation format (RFC 1035 §5.1), the order answers
    /// list RDATA in.
    pub fn sort_by_text(&mut self) {
        match self {
            Rdatas::A(v) => v.sort_by_cached_key(|ip| A(*ip).to_string()),
            Rdatas::Aaaa(v) => v.sort_by_cached_key(|ip| AAAA(*ip).to_string()),
            Rdatas::Other(v) => v.sort_by_cached_key(|r| r.to_string()),
        }
    }

    /// Keeps the first `len` RDATA.
    pub fn truncate(&mut self, len: usize) {
        match self {
            Rdatas::A(v) => v.truncate(len),
            Rdatas::Aaaa(v) => v.truncate(len),
            Rdatas::Other(v) => v.truncate(len),
        }
    }

    /// Drops spare capacity (the tree is kept between publishes).
    pub fn shrink_to_fit(&mut self) {
        match self {
            Rdatas::A(v) => v.shrink_to_fit(),
            Rdatas::Aaaa(v) => v.shrink_to_fit(),
            Rdatas::Other(v) => v.shrink_to_fit(),
        }
    }

    /// The `RData` values held as such (none for address lists), to change
    /// in place (an SOA's serial).
    pub fn others_mut(&mut self) -> &mut [RData] {
        match self {
            Rdatas::Other(v) => v,
            _ => &mut [],
        }
    }
}

impl FromIterator<RData> for Rdatas {
    fn from_iter<I: IntoIterator<Item = RData>>(iter: I) -> Self {
        let mut out = Rdatas::new();
        for rdata in iter {
            out.push(rdata);
        }
        out
    }
}

/// Iterator over [`Rdatas`]: borrowed `RData`, or built from an address.
#[derive(Debug, Clone)]
pub(crate) enum Iter<'a> {
    A(std::slice::Iter<'a, Ipv4Addr>),
    Aaaa(std::slice::Iter<'a, Ipv6Addr>),
    Other(std::slice::Iter<'a, RData>),
}

impl<'a> Iterator for Iter<'a> {
    type Item = Cow<'a, RData>;

    fn next(&mut self) -> Option<Self::Item> {
        match self {
            Iter::A(it) => it.next().map(|ip| Cow::Owned(RData::A(A(*ip)))),
            Iter::Aaaa(it) => it.next().map(|ip| Cow::Owned(RData::AAAA(AAAA(*ip)))),
            Iter::Other(it) => it.next().map(Cow::Borrowed),
        }
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        match self {
            Iter::A(it) => it.size_hint(),
            Iter::Aaaa(it) => it.size_hint(),
            Iter::Other(it) => it.size_hint(),
        }
    }
}

impl<'a> IntoIterator for &'a Rdatas {
    type Item = Cow<'a, RData>;
    type IntoIter = Iter<'a>;

    fn into_iter(self) -> Iter<'a> {
        self.iter()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hickory_proto::rr::rdata::CNAME;
    use hickory_proto::rr::Name;

    fn a(ip: &str) -> RData {
        RData::A(A(ip.parse().unwrap()))
    }

    #[test]
    fn addresses_are_stored_bare_and_read_back_as_rdata() {
        let mut set = Rdatas::new();
        set.push(a("192.0.2.10"));
        set.push(a("192.0.2.9"));
        assert!(matches!(set, Rdatas::A(_)));
        assert_eq!(set.len(), 2);
        assert!(set.contains(&a("192.0.2.9")));
        assert!(!set.contains(&a("192.0.2.1")));
        assert!(!set.contains(&RData::AAAA(AAAA("2001:db8::1".parse().unwrap()))));
        // Presentation order, as RData::to_string sorts: "192.0.2.10" < "192.0.2.9".
        set.sort_by_text();
        let texts: Vec<String> = set.iter().map(|r| r.to_string()).collect();
        assert_eq!(texts, ["192.0.2.10", "192.0.2.9"]);
        set.truncate(1);
        assert_eq!(set.first().as_deref(), Some(&a("192.0.2.10")));

        let v6: Rdatas = ["2001:db8::2", "2001:db8::1"]
            .iter()
            .map(|ip| RData::AAAA(AAAA(ip.parse().unwrap())))
            .collect();
        assert!(matches!(v6, Rdatas::Aaaa(_)));
        assert_eq!(v6.iter().count(), 2);
    }

    #[test]
    fn other_types_and_mixed_sets_keep_every_rdata() {
        let cname = RData::CNAME(CNAME(Name::from_ascii("target.example.com.").unwrap()));
        let mut set: Rdatas = [cname.clone()].into_iter().collect();
        assert!(matches!(set, Rdatas::Other(_)));
        assert!(set.contains(&cname));
        assert_eq!(set.others_mut().len(), 1);
        // Not expected (one type per RRset), but nothing may be lost.
        let mut mixed = Rdatas::new();
        mixed.push(a("192.0.2.1"));
        mixed.push(cname.clone());
        assert_eq!(
            mixed.iter().map(Cow::into_owned).collect::<Vec<_>>(),
            vec![a("192.0.2.1"), cname]
        );
        set.shrink_to_fit();
        assert_eq!(set.len(), 1);
        assert_eq!(Rdatas::new().len(), 0);
    }
}
