//! Zone content as the publishing pipeline hands it to the server.

use std::net::IpAddr;

use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::routing::{ClientRegions, RoutedName};
use super::signing_key::DnssecConfig;
use super::version::TransferPolicy;

/// SOA values other than the serial, which [`crate::ZoneStore`] assigns.
/// Times are seconds (RFC 1035 §3.3.13; `minimum` is the negative-caching
/// TTL of RFC 2308 §4).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SoaFields {
    /// MNAME: the primary name server.
    pub mname: Name,
    /// RNAME: the responsible mailbox as a name (`hostmaster.example.com.`).
    pub rname: Name,
    /// REFRESH.
    pub refresh: u32,
    /// RETRY.
    pub retry: u32,
    /// EXPIRE.
    pub expire: u32,
    /// MINIMUM: negative-caching TTL.
    pub minimum: u32,
    /// TTL of the SOA and apex NS RRsets.
    pub ttl: u32,
}

/// One zone: apex, SOA values, apex name servers, and every other record.
///
/// Records must be class IN and inside the apex; the snapshot builder
/// skips (and reports) records that are not.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ZoneContent {
    /// Zone apex, fully qualified (`example.com.`).
    pub apex: Name,
    /// SOA values.
    pub soa: SoaFields,
    /// Apex NS targets (the NS RRset's TTL is `soa.ttl`).
    pub name_servers: Vec<Name>,
    /// Addresses of name servers inside the zone: (host name, address),
    /// served as A/AAAA RRsets with TTL `soa.ttl` and sent in transfers
    /// (secondaries need them to load a zone whose NS names are inside it,
    /// RFC 1034 §4.2.1). Settings, like `name_servers`: a name here must
    /// not also be given in `records` (the snapshot skips such records).
    pub name_server_addresses: Vec<(Name, IpAddr)>,
    /// All other records. Several records of one owner and type form one
    /// RRset; its TTL is the smallest given (RFC 2181 §5.2).
    pub records: Vec<Record>,
    /// Zone transfers and NOTIFY (default: none). Not part of the
    /// content: changing it does not change the serial.
    pub transfer: TransferPolicy,
    /// Names answered by a traffic policy (default: none). Each also needs
    /// its plain records in `records` (the union of its variants), which
    /// zone transfers and policy-free answers serve.
    pub routed: Vec<RoutedName>,
    /// Where clients are, for `Nearest` names.
    pub client_regions: ClientRegions,
    /// DNSSEC signing (default: none, the zone is served unsigned).
    pub dnssec: Option<DnssecConfig>,
    /// The region of a client neither EDNS Client Subnet, nor
    /// `client_regions`, nor the GeoIP database places (None: such a
    /// client gets a `Nearest` name's every-region variant). A member-side
    /// replica sets its member's region here (docs/discovery.md).
    pub default_client_region: Option<String>,
    /// Follow a CNAME chain that leaves this zone into the other zones the
    /// server serves, so the answer holds the whole chain and the final
    /// addresses (default off: out-of-zone records are out of bailiwick,
    /// RFC 2181 §5.4.1, and a resolver continues the chain itself). On for
    /// zones answered to stub resolvers through a forwarder that does not
    /// chase CNAMEs (dnsmasq, CoreDNS `forward`).
    pub follow_cnames_across_zones: bool,
    /// Owner names the server cannot answer yet (default: none): a query
    /// whose QNAME is exactly one of them, whatever its type, gets SERVFAIL
    /// (RFC 1035 §4.1.1 rcode 2) with the question echoed and no records,
    /// unsigned even in a signed zone, so resolvers try again (elsewhere)
    /// and cache no negative answer; a CNAME chain reaching one stops
    /// there. Names below a pending name are answered as usual; names not
    /// inside the apex are ignored. Like `transfer`, not part of the zone's
    /// data: zone transfers do not carry it.
    pub pending: Vec<Name>,
}

impl ZoneContent {
    /// An empty zone with the given apex and default SOA values:
    /// `ns1.<apex>`, `hostmaster.<apex>`, refresh 3600, retry 600,
    /// expire 1209600, minimum 30, TTL 30.
    pub fn new(apex: Name) -> Self {
        let child = |label: &str| Name::from_ascii(label).and_then(|l| l.append_name(&apex));
        // Appending one short label to a valid apex only fails when the
        // apex is already 250+ octets; fall back to the apex itself.
        let mname = child("ns1").unwrap_or_else(|_| apex.clone());
        let rname = child("hostmaster").unwrap_or_else(|_| apex.clone());
        ZoneContent {
            soa: SoaFields {
                mname: mname.clone(),
                rname,
                refresh: 3600,
                retry: 600,
                expire: 1_209_600,
                minimum: 30,
                ttl: 30,
            },
            name_servers: vec![mname],
            name_server_addresses: Vec::new(),
            records: Vec::new(),
            transfer: TransferPolicy::default(),
            routed: Vec::new(),
            client_regions: ClientRegions::default(),
            dnssec: None,
            default_client_region: None,
            follow_cnames_across_zones: false,
            pending: Vec::new(),
            apex,
        }
    }

    /// Adds one record (builder style).
    pub fn with_record(mut self, name: Name, ttl: u32, data: RData) -> Self {
        self.records.push(Record::from_rdata(name, ttl, data));
        self
    }

    /// Number of RRsets the zone will hold, SOA and apex NS included
    /// (before any record is skipped).
    pub fn rrset_count(&self) -> usize {
        let mut keys: Vec<(Name, RecordType)> = self
            .records
            .iter()
            .map(|r| (r.name.to_lowercase(), r.record_type()))
            .collect();
        keys.extend(self.name_server_addresses.iter().map(|(name, ip)| {
            let rtype = if ip.is_ipv4() { RecordType::A } else { RecordType::AAAA };
            (name.to_lowercase(), rtype)
        }));
        keys.sort();
        keys.dedup();
        keys.len() + 1 + usize::from(!self.name_servers.is_empty()) + usize::from(self.dnssec.is_some())
    }
}
