//! `DNSEndpoint` (`multiclusterdns.fedns.io/v1alpha1`): the desired RRsets.
//!
//! `spec` is field-for-field external-dns's `DNSEndpoint`
//! (sigs.k8s.io/external-dns/endpoint, `DNSEndpointSpec` / `Endpoint`), so
//! external-dns can publish these objects with `--source=crd
//! --crd-source-apiversion=multiclusterdns.fedns.io/v1alpha1
//! --crd-source-kind=DNSEndpoint`. fedns adds only schema validation and
//! `status.conditions`.

use std::collections::BTreeMap;
use std::fmt;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::CustomResource;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::names::{MAX_NAME_OCTETS, OWNER_NAME_PATTERN};

/// A list of endpoints (owner name, type, targets) to publish.
// clippy reads each printcolumn(...)'s repeated `type_ = ...` as a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[kube(
    group = "multiclusterdns.fedns.io",
    version = "v1alpha1",
    kind = "DNSEndpoint",
    namespaced,
    status = "DNSEndpointStatus",
    derive = "PartialEq",
    derive = "Default",
    shortname = "dnse",
    category = "fedns",
    doc = "Desired DNS records in external-dns's DNSEndpoint format.",
    printcolumn(name = "Age", type_ = "date", json_path = ".metadata.creationTimestamp")
)]
#[serde(rename_all = "camelCase")]
pub struct DNSEndpointSpec {
    /// The records; several endpoints may share one `dnsName`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub endpoints: Vec<Endpoint>,
}

/// One RRset: external-dns's `Endpoint`.
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct Endpoint {
    /// The owner name, e.g. `nginx.ns.myfed.svc.example.com`.
    #[schemars(length(min = 1, max = MAX_NAME_OCTETS), pattern(OWNER_NAME_PATTERN))]
    pub dns_name: String,
    /// The RDATA in presentation form: addresses for A/AAAA, a name for
    /// CNAME, text for TXT. At least one.
    #[schemars(length(min = 1), inner(length(min = 1, max = 4096)))]
    pub targets: Vec<String>,
    /// The RR type.
    pub record_type: RecordType,
    /// Distinguishes endpoints of one name in weighted or geo routing
    /// (providers that support it).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub set_identifier: String,
    /// TTL in seconds. Absent: the provider's default.
    #[serde(default, rename = "recordTTL", skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 86400))]
    pub record_ttl: Option<i64>,
    /// Free-form labels (external-dns stores its owner and resource here).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    /// Provider-specific settings, e.g. `alias=true` for Route53.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub provider_specific: Vec<ProviderSpecificProperty>,
}

/// One provider-specific setting (external-dns's `ProviderSpecificProperty`).
#[derive(Serialize, Deserialize, Clone, Debug, PartialEq, Eq, Hash, JsonSchema)]
pub struct ProviderSpecificProperty {
    /// Setting name, e.g. `alias` or `aws/evaluate-target-health`.
    pub name: String,
    /// Setting value.
    #[serde(default)]
    pub value: String,
}

/// RR types a DNSEndpoint may carry (RFC 1035 §3.2.2, RFC 3596, RFC 2782,
/// RFC 8659). Written as their mnemonics, as external-dns does.
#[allow(clippy::upper_case_acronyms)] // the wire mnemonics, as external-dns writes them
#[derive(Serialize, Deserialize, Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, JsonSchema)]
pub enum RecordType {
    /// IPv4 address.
    A,
    /// IPv6 address.
    AAAA,
    /// Canonical name.
    CNAME,
    /// Text strings.
    TXT,
    /// Service location.
    SRV,
    /// Name server.
    NS,
    /// Mail exchange.
    MX,
    /// Pointer.
    PTR,
    /// Certification authority authorisation.
    CAA,
}

impl RecordType {
    /// Every type, in declaration order.
    pub const ALL: [RecordType; 9] = [
        RecordType::A,
        RecordType::AAAA,
        RecordType::CNAME,
        RecordType::TXT,
        RecordType::SRV,
        RecordType::NS,
        RecordType::MX,
        RecordType::PTR,
        RecordType::CAA,
    ];

    /// The type with mnemonic `mnemonic` (exact, upper case), if any.
    pub fn from_mnemonic(mnemonic: &str) -> Option<RecordType> {
        RecordType::ALL.into_iter().find(|t| t.as_str() == mnemonic)
    }

    /// The mnemonic, e.g. `"AAAA"`.
    pub fn as_str(self) -> &'static str {
        match self {
            RecordType::A => "A",
            RecordType::AAAA => "AAAA",
            RecordType::CNAME => "CNAME",
            RecordType::TXT => "TXT",
            RecordType::SRV => "SRV",
            RecordType::NS => "NS",
            RecordType::MX => "MX",
            RecordType::PTR => "PTR",
            RecordType::CAA => "CAA",
        }
    }
}

impl fmt::Display for RecordType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Publishing state of a DNSEndpoint.
#[derive(Serialize, Deserialize, Clone, Debug, Default, PartialEq, JsonSchema)]
#[serde(rename_all = "camelCase")]
pub struct DNSEndpointStatus {
    /// The `metadata.generation` last published.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
    /// `Published` per provider, `Conflict`, and skipped endpoints.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub conditions: Vec<Condition>,
}
