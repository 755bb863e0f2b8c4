//! `Domain` (`multiclusterdns.fedns.io/v1alpha1`): one DNS zone fedns serves.
//! Its `metadata.name` is the *federation name* in service names
//! (`<service>.<namespace>.<federation>.svc.<zone>`).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, LabelSelector};
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{ADDRESS_PORT_PATTERN, CIDR_PATTERN, HOSTNAME_PATTERN, IP_ADDRESS_PATTERN, MAX_NAME_OCTETS};

/// A zone: its apex name, the name servers in its NS RRset, and SOA values.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, JsonSchema)]
#[kube(
    group = "multiclusterdns.fedns.io",
    version = "v1alpha1",
    kind = "Domain",
    namespaced,
    status = "DomainStatus",
    derive = "PartialEq",
    category = "fedns",
    doc = "A DNS zone served by fedns; its name is the federation name used in service names.",
    printcolumn(name = "Domain", type_ = "string", json_path = ".spec.domain"),
    printcolumn(name = "Serial", type_ = "integer", json_path = ".status.serial"),
    printcolumn(name = "Records", type_ = "integer", json_path = ".status.recordCount"),
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct DomainSpec {
    /// The zone apex, e.g. `example.com`.
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub domain: String,
    /// Host names of the zone's name servers (its apex NS RRset),
    /// e.g. `ns1.example.com`. Empty: `ns1.<domain>`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(inner(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN)))]
    pub name_servers: Vec<String>,
    /// Addresses of the name servers inside the zone itself (e.g.
    /// `ns1.example.com` in `example.com`): served as their A/AAAA RRsets
    /// (TTL: `soa.ttl`) and sent in zone transfers, which secondaries need
    /// to load the zone (RFC 1034 §4.2.1: a zone's NS names must resolve;
    /// BIND refuses an in-zone NS without address records). Each `name`
    /// is one of `nameServers` inside the zone; a DNSEndpoint cannot
    /// publish records at such a name. An in-zone name server without
    /// addresses is reported in the condition `NameServerAddresses`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64))]
    pub name_server_addresses: Vec<NameServerAddresses>,
    /// The SOA RNAME (RFC 1035 §3.3.13) as a domain name, e.g.
    /// `hostmaster.example.com` for `hostmaster@example.com`.
    /// Absent: `hostmaster.<domain>`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub hostmaster: Option<String>,
    /// SOA timers (RFC 1035 §3.3.13, RFC 2308 §4), all in seconds.
    #[serde(default)]
    pub soa: SoaTimers,
    /// Which namespaces' DNSEndpoints may publish names in this zone, as
    /// Gateway API's `allowedRoutes.namespaces`. Absent: `from: All`
    /// (kubefed's model: a ServiceDNSRecord in any namespace publishes its
    /// own service names). Whatever this admits, ownership is
    /// hierarchical: a namespace `N` alone publishes `S.N.F.svc.<zone>`
    /// and every name below it; the apex, the names from `N.F.svc.<zone>`
    /// up, the name-server hosts, delegations (NS below the apex) and
    /// wildcards belong to this Domain's namespace unless `grants` give
    /// them out; any other name belongs to the first namespace claiming it
    /// or a name above or below it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub allowed_namespaces: Option<AllowedNamespaces>,
    /// Names this Domain's namespace gives to other namespaces: each
    /// grant lets one namespace publish the listed host names (delegations
    /// and wildcards included) and keeps every other namespace off them,
    /// in the manner of Gateway API's listener `hostname` with
    /// `allowedRoutes`. A grant never gives out service names.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 1000))]
    pub grants: Vec<NameGrant>,
    /// Zone transfers (AXFR/IXFR) from the embedded DNS server to
    /// secondaries, and NOTIFY on every serial change. Absent: transfers
    /// are refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transfer: Option<ZoneTransfer>,
    /// Where clients are, for records with `routing.policy: Nearest`:
    /// client networks → region; the longest prefix wins. The client is
    /// the EDNS Client Subnet of the query (RFC 7871), else its source.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 10000))]
    pub client_regions: Vec<crate::routing::ClientRegion>,
    /// GeoIP country and continent codes → region, for clients the
    /// `clientRegions` table does not place (needs `--geoip-db`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 256))]
    pub geo_regions: Vec<crate::routing::GeoRegion>,
    /// DNSSEC signing by the embedded DNS server (RFC 4033-4035). Absent
    /// or `enabled: false`: the zone is served unsigned.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dnssec: Option<DnssecSpec>,
    /// Networks (CIDR) the data-plane probes of this zone's records may
    /// reach although they are loopback (`127.0.0.0/8`, `::1`),
    /// link-local (`169.254.0.0/16`, where cloud metadata answers;
    /// `fe80::/10`), unspecified (`0.0.0.0/8`, `::`) or an address of the
    /// controller's own host. A load balancer address there is otherwise
    /// not probed, counts as failing, and says why in `status.probes[]`.
    /// Empty (default): none. An operator's decision, never a record's: a
    /// local test bed with loopback load balancers sets `127.0.0.0/8`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 3, max = 49), pattern(CIDR_PATTERN)))]
    pub probe_allowed_networks: Vec<String>,
}

/// How the embedded DNS server signs a zone. Signatures (RRSIG) are made
/// when the zone's snapshot is built, for every RRset and every traffic
/// policy variant, and made again before they expire; the DNSKEY RRset is
/// served at the apex. External providers (Route53, Cloud DNS) never get
/// DNSSEC records from fedns: they sign with their own keys.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DnssecSpec {
    /// Sign the zone.
    #[serde(default)]
    pub enabled: bool,
    /// The signing algorithm (RFC 8624): `ECDSAP256SHA256` (13, default)
    /// or `ED25519` (15).
    #[serde(default)]
    pub algorithm: DnssecAlgorithm,
    /// `CSK` (default): one combined signing key signs every RRset.
    /// `KSK+ZSK`: a key-signing key (DNSKEY flags 257) signs the DNSKEY
    /// RRset, a zone-signing key (256) every other RRset (RFC 6781 §3.1).
    /// Either way the DS for the parent is the CSK's or KSK's.
    #[serde(default)]
    pub key_mode: DnssecKeyMode,
    /// The Secret (in the Domain's namespace) holding the private keys as
    /// PKCS#8 DER: `key.pkcs8` (CSK), or `ksk.pkcs8` and `zsk.pkcs8`
    /// (KSK+ZSK); any other `*.pkcs8` data key is a standby key, published
    /// in the DNSKEY RRset and signing nothing (flags 256 when its name
    /// starts with `zsk`, else 257). Created with the mode's keys when
    /// absent. Absent: `<domain name>-dnssec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub key_secret: Option<String>,
    /// How long a signature is valid from the time it is made, in seconds
    /// (RRSIG expiration − now; an inception one hour before now covers
    /// clock skew). Default 1,209,600 (14 days).
    #[serde(default = "DnssecSpec::default_validity")]
    #[schemars(range(min = 7200, max = 31536000))]
    pub signature_validity: i64,
    /// Signatures with less than this many seconds left are made again,
    /// in seconds; smaller than `signatureValidity` by at least an hour.
    /// Default 604,800 (7 days).
    #[serde(default = "DnssecSpec::default_refresh")]
    #[schemars(range(min = 3600, max = 31536000))]
    pub signature_refresh: i64,
    /// Denial of existence: `Compact` (default): RFC 9824 compact denial,
    /// a minimal NSEC at the query name (NXNAME for names that do not
    /// exist), signed when answered; no zone walking. `NSEC`: a signed
    /// NSEC chain (RFC 4035), answers for names that do not exist made of
    /// pre-signed links (faster; the zone's names can be walked).
    #[serde(default)]
    pub denial: DnssecDenial,
}

impl DnssecSpec {
    fn default_validity() -> i64 {
        1_209_600
    }
    fn default_refresh() -> i64 {
        604_800
    }

    /// Checks what the schema cannot: refresh below validity by at least an
    /// hour. Errors name the field.
    pub fn validate(&self) -> Result<(), String> {
        if !(7200..=31_536_000).contains(&self.signature_validity) {
            return Err(format!(
                "spec.dnssec.signatureValidity: {} s is outside 7200..=31536000",
                self.signature_validity
            ));
        }
        if self.signature_refresh < 3600 || self.signature_refresh > self.signature_validity - 3600 {
            return Err(format!(
                "spec.dnssec.signatureRefresh: {} s must be at least 3600 and at least an hour below \
                 signatureValidity ({} s)",
                self.signature_refresh, self.signature_validity
            ));
        }
        Ok(())
    }
}

/// DNSSEC signing algorithms fedns offers (IANA DNS Security Algorithm
/// Numbers; RFC 8624 §3.1 "MUST"/"RECOMMENDED" for signing).
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DnssecAlgorithm {
    /// ECDSA P-256 with SHA-256, number 13 (RFC 6605).
    #[default]
    #[serde(rename = "ECDSAP256SHA256")]
    EcdsaP256Sha256,
    /// Ed25519, number 15 (RFC 8080).
    #[serde(rename = "ED25519")]
    Ed25519,
}

impl DnssecAlgorithm {
    /// The algorithm number (DNSKEY, RRSIG and DS ALGORITHM field).
    pub fn number(self) -> u8 {
        match self {
            DnssecAlgorithm::EcdsaP256Sha256 => 13,
            DnssecAlgorithm::Ed25519 => 15,
        }
    }
}

/// Which keys sign the zone.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DnssecKeyMode {
    /// One combined signing key (flags 257, SEP) signs every RRset.
    #[default]
    #[serde(rename = "CSK")]
    Csk,
    /// A key-signing key (flags 257, SEP) signs the DNSKEY RRset only, a
    /// zone-signing key (flags 256) every other RRset: the ZSK can be
    /// rolled without touching the parent's DS (RFC 6781 §3.1).
    #[serde(rename = "KSK+ZSK")]
    KskZsk,
}

/// How the zone proves that names and types do not exist.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum DnssecDenial {
    /// RFC 9824 compact denial of existence ("black lies"): an NSEC at
    /// the query name itself; answers for names that do not exist are
    /// signed when asked. The zone's names cannot be listed.
    #[default]
    Compact,
    /// An NSEC chain over the zone's names in canonical order (RFC 4034
    /// §4, RFC 4035 §3.1.3.2), every link signed ahead: no signing per
    /// query, but anyone can list the zone's names by walking the chain.
    #[serde(rename = "NSEC")]
    Nsec,
}

/// The addresses of one in-zone name server (see
/// [`DomainSpec::name_server_addresses`]).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NameServerAddresses {
    /// The name server's host name, one of `nameServers`, e.g. `ns1.example.com`.
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub name: String,
    /// Its IPv4 and IPv6 addresses (`192.0.2.53`, `2001:db8::53`).
    #[schemars(length(min = 1, max = 16), inner(pattern(IP_ADDRESS_PATTERN)))]
    pub addresses: Vec<String>,
}

/// Who may transfer the zone from the embedded DNS server, and whom it
/// notifies. A transfer needs both: the client's address inside `allow`
/// and, when `tsigKeys` is set, a request signed with one of the keys.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct ZoneTransfer {
    /// Networks allowed to transfer the zone (AXFR/IXFR over TCP), in CIDR
    /// notation. Empty: nobody.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 64), inner(length(min = 3, max = 49), pattern(CIDR_PATTERN)))]
    pub allow: Vec<String>,
    /// TSIG keys (RFC 8945). When set, every transfer must be signed with
    /// one of them and is answered signed; NOTIFY is signed with the first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 8))]
    pub tsig_keys: Vec<TsigKeyReference>,
    /// Secondaries sent a NOTIFY (RFC 1996) on every serial change,
    /// `address:port` (IPv6 as `[address]:port`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    #[schemars(length(max = 32), inner(length(min = 9, max = 55), pattern(ADDRESS_PORT_PATTERN)))]
    pub notify: Vec<String>,
}

/// A TSIG key: its name as the secondaries know it, its algorithm, and
/// the Secret (in the Domain's namespace) holding its secret.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct TsigKeyReference {
    /// The key name, e.g. `xfr.example.com` (what `tsig-keygen NAME` or
    /// `keymgr -t NAME` was given).
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(HOSTNAME_PATTERN))]
    pub name: String,
    /// `hmac-sha256` (default) or `hmac-sha512`.
    #[serde(default)]
    pub algorithm: TsigAlgorithm,
    /// The Secret holding the key's secret, base64 as `tsig-keygen` prints
    /// it, under `key` (default `secret`).
    pub secret_ref: TsigSecretReference,
}

/// A key of a Secret in the Domain's own namespace.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
pub struct TsigSecretReference {
    /// Name of the Secret.
    #[schemars(length(min = 1, max = 253))]
    pub name: String,
    /// The data key holding the base64 secret. Absent: `secret`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(length(min = 1, max = 253))]
    pub key: Option<String>,
}

impl TsigSecretReference {
    /// The data key (default `secret`).
    pub fn key(&self) -> &str {
        self.key.as_deref().unwrap_or("secret")
    }
}

/// TSIG MAC algorithms the embedded server offers.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum TsigAlgorithm {
    /// HMAC-SHA256 (RFC 8945 §6).
    #[default]
    #[serde(rename = "hmac-sha256")]
    HmacSha256,
    /// HMAC-SHA512.
    #[serde(rename = "hmac-sha512")]
    HmacSha512,
}

impl TsigAlgorithm {
    /// The name as DNS servers write it.
    pub fn as_str(self) -> &'static str {
        match self {
            TsigAlgorithm::HmacSha256 => "hmac-sha256",
            TsigAlgorithm::HmacSha512 => "hmac-sha512",
        }
    }
}

/// Namespaces admitted to publish into a zone (Gateway API's
/// `RouteNamespaces`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct AllowedNamespaces {
    /// `All`, `Same` (the Domain's own namespace) or `Selector`.
    #[serde(default)]
    pub from: NamespacesFrom,
    /// With `from: Selector`: the labels a namespace must carry
    /// (`matchLabels`, `matchExpressions`). Ignored otherwise.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<LabelSelector>,
}

/// Names a Domain gives to one namespace ([`DomainSpec::grants`]).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct NameGrant {
    /// The namespace the names are given to.
    #[schemars(length(min = 1, max = 63), pattern(crate::names::LABEL_PATTERN))]
    pub namespace: String,
    /// Owner names inside the zone: `www.example.com` gives that name and
    /// every name below it (`_acme-challenge.www.example.com`);
    /// `*.apps.example.com` gives every name below `apps.example.com`
    /// (its wildcard included), not `apps.example.com` itself;
    /// `example.com` (the apex) gives the apex's own records (never its
    /// NS or SOA) and nothing below it.
    #[schemars(length(min = 1, max = 100))]
    #[schemars(inner(length(min = 1, max = MAX_NAME_OCTETS), pattern(crate::names::OWNER_NAME_PATTERN)))]
    pub hostnames: Vec<String>,
}

/// Where [`AllowedNamespaces`] admits DNSEndpoints from.
#[derive(Serialize, Deserialize, Clone, Copy, Debug, Default, PartialEq, Eq, JsonSchema)]
pub enum NamespacesFrom {
    /// Every namespace.
    #[default]
    All,
    /// Only the Domain's own namespace.
    Same,
    /// Namespaces whose labels match `selector`.
    Selector,
}

/// The SOA record's timers, in seconds.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SoaTimers {
    /// TTL of the SOA and NS RRsets.
    #[serde(default = "SoaTimers::default_ttl")]
    #[schemars(range(min = 1, max = 86400))]
    pub ttl: i64,
    /// SOA REFRESH: how often secondaries check the serial.
    #[serde(default = "SoaTimers::default_refresh")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub refresh: i64,
    /// SOA RETRY: how long a secondary waits after a failed refresh.
    #[serde(default = "SoaTimers::default_retry")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub retry: i64,
    /// SOA EXPIRE: how long a secondary serves without a refresh.
    #[serde(default = "SoaTimers::default_expire")]
    #[schemars(range(min = 1, max = 2147483647))]
    pub expire: i64,
    /// SOA MINIMUM: the negative-caching TTL of NXDOMAIN/NODATA answers
    /// (RFC 2308 §4; resolvers use min(SOA TTL, MINIMUM)).
    #[serde(default = "SoaTimers::default_minimum")]
    #[schemars(range(min = 1, max = 86400))]
    pub minimum: i64,
}

impl SoaTimers {
    fn default_ttl() -> i64 {
        30
    }
    fn default_refresh() -> i64 {
        3600
    }
    fn default_retry() -> i64 {
        600
    }
    fn default_expire() -> i64 {
        1_209_600
    }
    fn default_minimum() -> i64 {
        30
    }
}

impl Default for SoaTimers {
    fn default() -> Self {
        SoaTimers {
            ttl: Self::default_ttl(),
            refresh: Self::default_refresh(),
            retry: Self::default_retry(),
            expire: Self::default_expire(),
            minimum: Self::default_minimum(),
        }
    }
}

/// What the embedded DNS server serves for this zone now.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DomainStatus {
    /// `Ready` once the zone is served.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
    /// The SOA serial now served (an unsigned 32-bit number, RFC 1982):
    /// `serialRecord.serial` once that is due.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub serial: Option<i64>,
    /// The serial every DNS server replica serves for the zone, recorded
    /// once by the replica that writes status (the controller's leader, or
    /// a `fedns dns-server` without `--read-only`) for the content it
    /// names: replicas show it from `activeFromUnixMs` and transfer the
    /// version they built when their content had that fingerprint, so a
    /// serial names the same content everywhere.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub serial_record: Option<SerialRecord>,
    /// Number of RRsets in the zone, apex SOA and NS included.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub record_count: Option<i64>,
    /// The `metadata.generation` this status describes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// The DS record(s) to put in the parent zone when the zone is signed
    /// (RFC 4034 §5.3 presentation format, SHA-256 digest, RFC 4509), e.g.
    /// `example.com. IN DS 12345 13 2 3A1F…`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ds_records: Vec<String>,
}

#[cfg(test)]
mod dnssec_tests {
    use super::*;

    #[test]
    fn dnssec_defaults_and_validation() {
        let spec: DnssecSpec = serde_json::from_value(serde_json::json!({"enabled": true})).unwrap();
        assert_eq!(spec.algorithm, DnssecAlgorithm::EcdsaP256Sha256);
        assert_eq!(spec.algorithm.number(), 13);
        assert_eq!(spec.key_mode, DnssecKeyMode::Csk);
        assert_eq!((spec.signature_validity, spec.signature_refresh), (1_209_600, 604_800));
        assert_eq!(spec.denial, DnssecDenial::Compact);
        assert_eq!(spec.validate(), Ok(()));

        let ed: DnssecSpec =
            serde_json::from_value(serde_json::json!({"enabled": true, "algorithm": "ED25519"})).unwrap();
        assert_eq!(ed.algorithm.number(), 15);

        let late = DnssecSpec {
            signature_refresh: 1_209_000,
            ..spec.clone()
        };
        let err = late.validate().unwrap_err();
        assert!(err.contains("spec.dnssec.signatureRefresh"), "{err}");
        let split = DnssecSpec {
            key_mode: DnssecKeyMode::KskZsk,
            ..spec.clone()
        };
        assert_eq!(split.validate(), Ok(()));
        let parsed: DnssecSpec =
            serde_json::from_value(serde_json::json!({"enabled": true, "keyMode": "KSK+ZSK"})).unwrap();
        assert_eq!(parsed.key_mode, DnssecKeyMode::KskZsk);
        assert_eq!(
            serde_json::to_value(DnssecKeyMode::KskZsk).unwrap(),
            serde_json::json!("KSK+ZSK")
        );
        assert!(serde_json::from_value::<DnssecSpec>(serde_json::json!({"algorithm": "RSASHA1"})).is_err());
    }
}

/// A zone's SOA serial as recorded for every replica (`status.serialRecord`).
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, Eq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct SerialRecord {
    /// The SOA serial (RFC 1982).
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub serial: i64,
    /// Fingerprint of the zone content it names (16 hex digits), as the
    /// DNS server computes it: records, routed names, SOA fields but the
    /// serial, apex NS.
    pub content: String,
    /// Unix time in milliseconds from which replicas serve it (a moment
    /// after it was recorded, so they switch together).
    pub active_from_unix_ms: i64,
    /// The serial shown until then: the one recorded before, 0 before a
    /// zone's first record.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 4294967295u32))]
    pub previous: Option<i64>,
}
