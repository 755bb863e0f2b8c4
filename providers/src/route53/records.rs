//! Conversions between fedns's RRsets and Route53's `ResourceRecordSet`s
//! (Route53 API reference, "ResourceRecordSet"; value formats in the Route53
//! Developer Guide, "Supported DNS record types").
//!
//! fedns compares RRsets in canonical presentation form (lower-case names
//! without the trailing dot, IPv6 compressed, TXT as quoted
//! character-strings, [`crate::plan::txt`]), so a value Route53 spells
//! differently (`WWW.Example.com.`, `"a"   "b"`) is not a change. A TXT
//! value is the canonical form itself: for a quoted target that is what
//! external-dns writes for the same target.

use aws_sdk_route53::types::{
    AliasTarget, GeoLocation, ResourceRecord, ResourceRecordSet, ResourceRecordSetFailover, ResourceRecordSetRegion,
    RrType,
};
use fedns_api::RecordType;

use crate::plan::desired::DesiredRRset;

/// Canonical ELB hosted zone ids by host name suffix, for ALIAS targets
/// (AWS General Reference, "Elastic Load Balancing endpoints and quotas";
/// the same table external-dns uses). Other targets need
/// `aws/target-hosted-zone`.
const ELB_HOSTED_ZONES: [(&str, &str); 16] = [
    ("us-east-1.elb.amazonaws.com", "Z35SXDOTRQ7X7K"),
    ("us-east-2.elb.amazonaws.com", "Z3AADJGX6KTTL2"),
    ("us-west-1.elb.amazonaws.com", "Z368ELLRRE2KJ0"),
    ("us-west-2.elb.amazonaws.com", "Z1H1FL5HABSF5"),
    ("ca-central-1.elb.amazonaws.com", "ZQSVJUPU6J1EY"),
    ("ap-east-1.elb.amazonaws.com", "Z3DQVH9N71FHZ0"),
    ("ap-south-1.elb.amazonaws.com", "ZP97RAFLXTNZK"),
    ("ap-northeast-1.elb.amazonaws.com", "Z14GRHDCWA56QT"),
    ("ap-northeast-2.elb.amazonaws.com", "ZWKZPGTI48KDX"),
    ("ap-northeast-3.elb.amazonaws.com", "Z5LXEXXYW11ES"),
    ("ap-southeast-1.elb.amazonaws.com", "Z1LMS91P8CMLE5"),
    ("ap-southeast-2.elb.amazonaws.com", "Z1GM3OXH4ZPM65"),
    ("eu-central-1.elb.amazonaws.com", "Z215JYRZR1TBD5"),
    ("eu-west-1.elb.amazonaws.com", "Z32O12XQLNTSW2"),
    ("eu-west-2.elb.amazonaws.com", "ZHURV8PSTC4K8"),
    ("eu-west-3.elb.amazonaws.com", "Z3Q77PNBQS71R4"),
];

/// `providerSpecific` name asking for an ALIAS record (external-dns).
pub const ALIAS: &str = "alias";
/// `providerSpecific` name setting `EvaluateTargetHealth` (external-dns).
pub const EVALUATE_TARGET_HEALTH: &str = "aws/evaluate-target-health";
/// `providerSpecific` name giving the alias target's hosted zone id
/// (external-dns); `same-zone` means the zone being written.
pub const TARGET_HOSTED_ZONE: &str = "aws/target-hosted-zone";

/// The mnemonic's type, if fedns publishes it.
pub fn record_type(rr_type: &RrType) -> Option<RecordType> {
    RecordType::from_mnemonic(rr_type.as_str())
}

/// Route53's spelling of a name (`\052` for `*`, octal escapes for other
/// special octets) to fedns's: unescaped, lower case, no trailing dot.
pub fn decode_name(name: &str) -> String {
    let bytes = name.trim_end_matches('.').as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|d| d.iter().all(|b| (b'0'..=b'7').contains(b)));
        match (bytes[i], octal) {
            (b'\\', Some(digits)) => {
                let value = digits.iter().fold(0u32, |v, d| v * 8 + u32::from(d - b'0'));
                out.push(u8::try_from(value).unwrap_or(b'?'));
                i += 4;
            }
            (b'\\', None) if i + 1 < bytes.len() => {
                out.push(bytes[i + 1]);
                i += 2;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).to_ascii_lowercase()
}

/// A Route53 value in fedns's canonical form, and a canonical target in
/// Route53's value form: the presentation form every provider shares.
pub use crate::plan::presentation::{absolute_value as route53_value, canonical_value};

/// The planning key of an ALIAS target: the type it is published as (A)
/// and one pseudo-target naming the alias, its zone and health flag, so a
/// change to any of them is an update.
pub fn alias_target_key(dns_name: &str, hosted_zone_id: &str, evaluate_target_health: bool) -> String {
    format!(
        "ALIAS {} {hosted_zone_id} evaluate-target-health={evaluate_target_health}",
        dns_name.trim_end_matches('.').to_ascii_lowercase()
    )
}

/// Parses a key made by [`alias_target_key`].
pub fn parse_alias_key(key: &str) -> Option<(String, String, bool)> {
    let mut fields = key.split_whitespace();
    if fields.next()? != "ALIAS" {
        return None;
    }
    let dns_name = fields.next()?.to_owned();
    let zone = fields.next()?.to_owned();
    let health = fields.next()? == "evaluate-target-health=true";
    Some((dns_name, zone, health))
}

fn specific<'a>(rrset: &'a DesiredRRset, name: &str) -> Option<&'a str> {
    rrset
        .provider_specific
        .iter()
        .find(|(n, _)| n == name)
        .map(|(_, v)| v.as_str())
}

/// The RRset as Route53 should hold it: an ALIAS (published as A) when
/// `providerSpecific` says `alias=true`, else unchanged. `zone_id` is the
/// hosted zone written to (for `same-zone` and targets inside it).
///
/// # Errors
/// An alias with several targets, or whose target's hosted zone is unknown.
pub fn for_route53(rrset: &DesiredRRset, zone_apex: &str, zone_id: &str) -> Result<DesiredRRset, String> {
    if specific(rrset, ALIAS) != Some("true") {
        return Ok(rrset.clone());
    }
    let [target] = rrset.targets.as_slice() else {
        return Err(format!(
            "an ALIAS record has exactly one target, {} has {}",
            rrset.name,
            rrset.targets.len()
        ));
    };
    let target = target.trim_end_matches('.').to_ascii_lowercase();
    let hosted_zone = match specific(rrset, TARGET_HOSTED_ZONE) {
        Some("same-zone") => zone_id.to_owned(),
        Some(id) if !id.is_empty() => id.to_owned(),
        _ if target == zone_apex || target.ends_with(&format!(".{zone_apex}")) => zone_id.to_owned(),
        _ => ELB_HOSTED_ZONES
            .iter()
            .find(|(suffix, _)| target.ends_with(&format!(".{suffix}")))
            .map(|(_, id)| (*id).to_owned())
            .ok_or_else(|| {
                format!(
                    "ALIAS target {target}: its hosted zone is not a known ELB zone; set providerSpecific {TARGET_HOSTED_ZONE}"
                )
            })?,
    };
    let health = specific(rrset, EVALUATE_TARGET_HEALTH) == Some("true");
    Ok(DesiredRRset {
        record_type: RecordType::A,
        // Route53 gives ALIAS records the target's TTL.
        ttl: 0,
        targets: vec![alias_target_key(&target, &hosted_zone, health)],
        ..rrset.clone()
    })
}

/// Builds the `ResourceRecordSet` for `name` (normalised) of `record_type`
/// with `targets` in canonical form (or one ALIAS key).
///
/// # Errors
/// The SDK's builder refusing a field (never for valid input).
pub fn build_rrset(
    name: &str,
    record_type: RecordType,
    ttl: u32,
    targets: &[String],
) -> Result<ResourceRecordSet, String> {
    build_routed_rrset(name, record_type, ttl, targets, "", "")
}

/// [`build_rrset`] for one routed record set: `set_identifier` and its
/// routing attribute `policy` (`weight=N`, `failover=PRIMARY|SECONDARY`,
/// `region=R`, as [`DesiredRRset::policy_key`] writes it); both empty for
/// a plain record set.
///
/// # Errors
/// The SDK's builder refusing a field, or a policy it cannot express.
pub fn build_routed_rrset(
    name: &str,
    record_type: RecordType,
    ttl: u32,
    targets: &[String],
    set_identifier: &str,
    policy: &str,
) -> Result<ResourceRecordSet, String> {
    let mut builder = ResourceRecordSet::builder()
        .name(format!("{name}."))
        .r#type(RrType::from(record_type.as_str()));
    if !set_identifier.is_empty() {
        builder = builder.set_identifier(set_identifier);
        builder = match policy.split_once('=') {
            Some(("weight", w)) => builder.weight(w.parse::<i64>().map_err(|_| format!("weight {w:?}"))?),
            Some(("failover", role)) => builder.failover(ResourceRecordSetFailover::from(role)),
            Some(("region", region)) => builder.region(ResourceRecordSetRegion::from(region)),
            Some(("multivalue", "true")) => builder.multi_value_answer(true),
            Some(("geo", location)) => {
                let geo = match location.split_once(':') {
                    Some(("country", code)) => GeoLocation::builder().country_code(code),
                    Some(("continent", code)) => GeoLocation::builder().continent_code(code),
                    _ => return Err(format!("set {set_identifier}: location {location:?}")),
                };
                builder.geo_location(geo.build())
            }
            _ => return Err(format!("set {set_identifier}: no routing policy Route53 can express")),
        };
    }
    let builder = match targets.first().and_then(|t| parse_alias_key(t)) {
        Some((dns_name, zone, health)) => builder.alias_target(
            AliasTarget::builder()
                .dns_name(format!("{dns_name}."))
                .hosted_zone_id(zone)
                .evaluate_target_health(health)
                .build()
                .map_err(|e| e.to_string())?,
        ),
        None => {
            let mut records = Vec::with_capacity(targets.len());
            for target in targets {
                records.push(
                    ResourceRecord::builder()
                        .value(route53_value(record_type, target))
                        .build()
                        .map_err(|e| e.to_string())?,
                );
            }
            builder.ttl(i64::from(ttl)).set_resource_records(Some(records))
        }
    };
    builder.build().map_err(|e| e.to_string())
}

/// One RRset as Route53 holds it, decoded.
#[derive(Debug, Clone)]
pub struct Held {
    /// Owner name, normalised.
    pub name: String,
    /// Type, if one fedns publishes (None: SOA, DS, …).
    pub record_type: Option<RecordType>,
    /// TTL in seconds (0 for ALIAS records).
    pub ttl: u32,
    /// Canonical targets, sorted (one ALIAS key for alias records).
    pub targets: Vec<String>,
    /// Set identifier of a routed record set (weighted, failover, latency…).
    pub set_identifier: Option<String>,
    /// Its routing attribute as fedns writes them (`weight=N`,
    /// `failover=ROLE`, `region=R`); empty for a plain record set or one
    /// fedns does not write (geolocation, multivalue…).
    pub policy: String,
    /// The record exactly as read, for DELETE (which must match it).
    pub raw: ResourceRecordSet,
}

/// The routing attribute of a record set, as [`DesiredRRset::policy_key`]
/// writes it; empty when it has none fedns writes.
fn policy_of(raw: &ResourceRecordSet) -> String {
    if raw.set_identifier().is_none() {
        return String::new();
    }
    if let Some(multivalue) = raw.multi_value_answer() {
        return if multivalue {
            "multivalue=true".to_owned()
        } else {
            String::new()
        };
    }
    if let Some(geo) = raw.geo_location() {
        return match (geo.continent_code(), geo.country_code(), geo.subdivision_code()) {
            (Some(continent), None, None) => format!("geo=continent:{continent}"),
            (None, Some(country), None) => format!("geo=country:{country}"),
            _ => String::new(),
        };
    }
    if let Some(weight) = raw.weight() {
        return format!("weight={weight}");
    }
    if let Some(role) = raw.failover() {
        return format!("failover={}", role.as_str());
    }
    if let Some(region) = raw.region() {
        return format!("region={}", region.as_str());
    }
    String::new()
}

/// Decodes one `ResourceRecordSet`.
pub fn decode(raw: &ResourceRecordSet) -> Held {
    let record_type = record_type(raw.r#type());
    let mut targets: Vec<String> = match (raw.alias_target(), record_type) {
        (Some(alias), _) => vec![alias_target_key(
            alias.dns_name(),
            alias.hosted_zone_id(),
            alias.evaluate_target_health(),
        )],
        (None, Some(t)) => raw
            .resource_records()
            .iter()
            .map(|r| canonical_value(t, r.value()))
            .collect(),
        (None, None) => raw.resource_records().iter().map(|r| r.value().to_owned()).collect(),
    };
    targets.sort();
    targets.dedup();
    Held {
        name: decode_name(raw.name()),
        record_type,
        ttl: if raw.alias_target().is_some() {
            0
        } else {
            u32::try_from(raw.ttl().unwrap_or(0)).unwrap_or(u32::MAX)
        },
        targets,
        set_identifier: raw.set_identifier().map(str::to_owned),
        policy: policy_of(raw),
        raw: raw.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    fn rrset(name: &str, t: RecordType, targets: &[&str], specific: &[(&str, &str)]) -> DesiredRRset {
        DesiredRRset {
            name: name.into(),
            record_type: t,
            ttl: 60,
            targets: targets.iter().map(|s| s.to_string()).collect(),
            provider_specific: specific.iter().map(|(n, v)| (n.to_string(), v.to_string())).collect(),
            sources: BTreeSet::new(),
            routing: None,
            set_identifier: String::new(),
        }
    }

    #[test]
    fn names_values_and_txt_round_trip() {
        assert_eq!(decode_name("\\052.Apps.Example.COM."), "*.apps.example.com");
        assert_eq!(decode_name("a\\.b.example.com."), "a.b.example.com");
        assert_eq!(route53_value(RecordType::CNAME, "lb.example.net"), "lb.example.net.");
        assert_eq!(
            route53_value(RecordType::SRV, "0 5 443 web.example.com"),
            "0 5 443 web.example.com."
        );
        let tricky = "say \"hi\" \\ now\u{7}";
        assert_eq!(
            route53_value(RecordType::TXT, tricky),
            "\"say \\\"hi\\\" \\\\ now\\007\""
        );
        // A quoted target is written as external-dns writes it.
        assert_eq!(route53_value(RecordType::TXT, "\"v=spf1 -all\""), "\"v=spf1 -all\"");
        assert_eq!(canonical_value(RecordType::TXT, "\"ab\"   \"cd\""), "\"ab\" \"cd\"");
        assert_eq!(canonical_value(RecordType::TXT, "\"v=spf1 -all\""), "\"v=spf1 -all\"");
        assert_eq!(canonical_value(RecordType::CNAME, "LB.Example.NET."), "lb.example.net");
        assert_eq!(canonical_value(RecordType::AAAA, "2001:db8:0:0::1"), "2001:db8::1");
        assert_eq!(
            canonical_value(RecordType::MX, "10 Mail.Example.com."),
            "10 mail.example.com"
        );
    }

    #[test]
    fn alias_targets() {
        let elb = rrset(
            "www.example.com",
            RecordType::CNAME,
            &["my-lb-1.us-east-1.elb.amazonaws.com"],
            &[(ALIAS, "true"), (EVALUATE_TARGET_HEALTH, "true")],
        );
        let out = for_route53(&elb, "example.com", "ZONE").unwrap();
        assert_eq!(out.record_type, RecordType::A);
        assert_eq!(
            out.targets,
            vec!["ALIAS my-lb-1.us-east-1.elb.amazonaws.com Z35SXDOTRQ7X7K evaluate-target-health=true"]
        );
        let built = build_rrset(&out.name, out.record_type, out.ttl, &out.targets).unwrap();
        let alias = built.alias_target().unwrap();
        assert_eq!(alias.dns_name(), "my-lb-1.us-east-1.elb.amazonaws.com.");
        assert!(alias.evaluate_target_health());
        assert_eq!(decode(&built).targets, out.targets, "decode undoes build");

        let inside = rrset(
            "a.example.com",
            RecordType::CNAME,
            &["b.example.com"],
            &[(ALIAS, "true")],
        );
        assert!(for_route53(&inside, "example.com", "ZONE").unwrap().targets[0].contains(" ZONE "));
        let unknown = rrset(
            "a.example.com",
            RecordType::CNAME,
            &["x.example.net"],
            &[(ALIAS, "true")],
        );
        assert!(for_route53(&unknown, "example.com", "ZONE")
            .unwrap_err()
            .contains(TARGET_HOSTED_ZONE));
        let plain = rrset("a.example.com", RecordType::CNAME, &["x.example.net"], &[]);
        assert_eq!(for_route53(&plain, "example.com", "ZONE").unwrap(), plain);
    }
}
