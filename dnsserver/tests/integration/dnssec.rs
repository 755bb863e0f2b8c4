//! DNSSEC answers checked by real validators: BIND's `delv` with the
//! zone's DNSKEY as trust anchor validates positive answers, CNAME
//! chains, a Weighted name (every variant), compact-denial NXDOMAIN and
//! NODATA (RFC 9824), a wildcard answer and the absence of a DS at a
//! delegation, for ECDSA P-256 and Ed25519; `dnssec-verify` checks the
//! zone as AXFR sends it. Queries without DO are unchanged. KSK+ZSK mode:
//! `delv` and `dnssec-verify` with the KSK's DS as the only trust, and a
//! ZSK rollover by pre-publication that Unbound follows without a
//! validation failure.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use base64::Engine;
use fedns_dnsserver::hickory_proto::dnssec::PublicKey;
use fedns_dnsserver::hickory_proto::rr::{Record, RecordType};
use fedns_dnsserver::{
    DenialOfExistence, DnsMetrics, DnsServer, DnssecAlgorithm, DnssecConfig, DnssecKey, RoutedName, RoutedVariant,
    RoutingPolicy, ServerConfig, TransferPolicy, ZoneContent, ZoneStore,
};

use fedns_dnsserver::hickory_proto::op::ResponseCode;

use crate::common::{fixture_zones, name, query_tcp, query_udp, rdata, simple_query, temp_dir};

const ROUTED: &str = "nginx.ns.myfed.svc.example.com.";

fn find_binary(name: &str, package: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let path = Path::new(dir).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!("{name} not found: install Debian package '{package}' (./scripts/test.sh does)");
}

fn variant(id: &str, weight: u32, ips: &[&str]) -> RoutedVariant {
    RoutedVariant {
        id: id.into(),
        weight,
        region: None,
        records: ips
            .iter()
            .map(|ip| {
                let rtype = if ip.contains(':') {
                    RecordType::AAAA
                } else {
                    RecordType::A
                };
                Record::from_rdata(name(ROUTED), 30, rdata(rtype, ip))
            })
            .collect(),
    }
}

/// The fixture's example.com, signed with a new key of `algorithm`, its
/// `nginx` name Weighted over three clusters; transfers to loopback.
fn signed_zone(algorithm: DnssecAlgorithm) -> (ZoneContent, DnssecKey) {
    let mut zone = fixture_zones().into_iter().next().unwrap();
    zone.routed.push(RoutedName {
        name: name(ROUTED),
        policy: RoutingPolicy::Weighted,
        variants: vec![
            variant("east", 1, &["203.0.113.10", "2001:db8::10"]),
            variant("west", 1, &["203.0.113.11"]),
            variant("eu", 1, &["198.51.100.20"]),
        ],
        max_answers: None,
        sticky_within: None,
    });
    let pkcs8 = DnssecKey::generate_pkcs8(algorithm).unwrap();
    let key = DnssecKey::from_pkcs8(algorithm, &pkcs8).unwrap();
    zone.dnssec = Some(DnssecConfig {
        key: key.clone(),
        zone_signing_key: None,
        standby: Vec::new(),
        signature_validity: 14 * 86_400,
        signature_refresh: 7 * 86_400,
        denial: Default::default(),
    });
    zone.transfer = TransferPolicy {
        allow: vec!["127.0.0.1/32".parse().unwrap()],
        keys: Vec::new(),
        notify: Vec::new(),
    };
    (zone, key)
}

/// example.com with `a` and `b` (A records), signed with a new ECDSA
/// P-256 CSK denying by `denial`.
pub(crate) fn two_name_zone(denial: DenialOfExistence) -> (ZoneContent, DnssecKey) {
    let mut zone = ZoneContent::new(name("example.com."));
    for (owner, ip) in [("a", "192.0.2.1"), ("b", "192.0.2.2")] {
        zone.records.push(Record::from_rdata(
            name(&format!("{owner}.example.com.")),
            30,
            rdata(RecordType::A, ip),
        ));
    }
    let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
    let key = DnssecKey::from_pkcs8(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap()).unwrap();
    zone.dnssec = Some(DnssecConfig {
        key: key.clone(),
        zone_signing_key: None,
        standby: Vec::new(),
        signature_validity: 14 * 86_400,
        signature_refresh: 7 * 86_400,
        denial,
    });
    (zone, key)
}

async fn serve(zone: ZoneContent) -> (DnsServer, SocketAddr, Arc<ZoneStore>) {
    let store = ZoneStore::new();
    let outcome = store.publish(vec![zone]);
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store.clone(), DnsMetrics::new())
        .await
        .unwrap();
    let addr = server.udp_addrs()[0];
    (server, addr, store)
}

/// A `delv` trust-anchor file holding `key` as the static key of example.com.
fn anchor_file(dir: &Path, key: &DnssecKey) -> PathBuf {
    let dnskey = key.dnskey();
    let public = base64::engine::general_purpose::STANDARD.encode(dnskey.public_key().public_bytes());
    let algorithm = match key.algorithm() {
        DnssecAlgorithm::EcdsaP256Sha256 => 13,
        DnssecAlgorithm::Ed25519 => 15,
    };
    let path = dir.join("anchors.conf");
    std::fs::write(
        &path,
        format!(
            "trust-anchors {{\n  example.com. static-key {} 3 {algorithm} \"{public}\";\n}};\n",
            dnskey.flags()
        ),
    )
    .unwrap();
    path
}

/// `delv`'s output for one question, validated against `anchors`.
fn delv(addr: SocketAddr, anchors: &Path, qname: &str, qtype: &str) -> String {
    let output = Command::new(find_binary("delv", "bind9-dnsutils"))
        .arg(format!("@{}", addr.ip()))
        .args(["-p", &addr.port().to_string(), "-a"])
        .arg(anchors)
        .args(["+root=example.com", "+vtrace", qname, qtype])
        .output()
        .unwrap();
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn assert_validated(addr: SocketAddr, anchors: &Path, qname: &str, qtype: &str, expect: &str) {
    let out = delv(addr, anchors, qname, qtype);
    assert!(
        out.contains(expect) && !out.contains("resolution failed: failure") && !out.contains("broken trust chain"),
        "delv {qname} {qtype}: expected {expect:?}:\n{out}"
    );
    println!("delv {qname} {qtype}: {expect}");
}

async fn validated_by_delv(algorithm: DnssecAlgorithm) {
    let dir = temp_dir("dnssec");
    let (zone, key) = signed_zone(algorithm);
    let (_server, addr, _store) = serve(zone).await;
    let anchors = anchor_file(&dir, &key);
    let started = std::time::Instant::now();
    let checks = [
        ("mail.example.com", "A", "; fully validated"),
        ("example.com", "SOA", "; fully validated"),
        ("example.com", "DNSKEY", "; fully validated"),
        ("example.com", "MX", "; fully validated"),
        // CNAME chain into the Weighted name: every step signed.
        ("www.example.com", "A", "; fully validated"),
        ("nginx.ns.myfed.svc.example.com", "AAAA", "fully validated"),
        // Compact denial: a missing name (NXNAME), NODATA, a CNAME to a missing name.
        ("missing.example.com", "A", "; negative response, fully validated"),
        ("mail.example.com", "TXT", "; negative response, fully validated"),
        ("b.c.example.com", "A", "; negative response, fully validated"),
        ("dangling.example.com", "A", "NXRRSET"),
        // A wildcard answer, signed at the query name.
        ("host.wild.example.com", "TXT", "; fully validated"),
        ("host.wild.example.com", "MX", "; negative response, fully validated"),
        // No DS at the delegation.
        ("sub.example.com", "DS", "; negative response, fully validated"),
    ];
    for (qname, qtype, expect) in checks {
        assert_validated(addr, &anchors, qname, qtype, expect);
    }
    // Every variant of the Weighted name validates (picked at random per query).
    for _ in 0..12 {
        assert_validated(addr, &anchors, ROUTED, "A", "; fully validated");
    }
    println!("{} delv runs validated in {:?}", checks.len() + 12, started.elapsed());
    std::fs::remove_dir_all(&dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delv_validates_ecdsa_p256_answers() {
    validated_by_delv(DnssecAlgorithm::EcdsaP256Sha256).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delv_validates_ed25519_answers() {
    validated_by_delv(DnssecAlgorithm::Ed25519).await;
}

/// The zone as AXFR from `tcp` sends it (`dig +onesoa`).
fn axfr(tcp: SocketAddr) -> String {
    let output = Command::new(find_binary("dig", "bind9-dnsutils"))
        .arg(format!("@{}", tcp.ip()))
        .args([
            "-p",
            &tcp.port().to_string(),
            "example.com",
            "AXFR",
            "+onesoa",
            "+nocmd",
            "+nostats",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(text.contains("RRSIG") && text.contains("NSEC"), "AXFR:\n{text}");
    text
}

/// BIND's `dnssec-verify` on zone text: every RRset signed, the NSEC
/// chain complete, the DNSKEY RRset self-signed (`-z`: one combined key,
/// flags 257, signs everything).
fn dnssec_verify(dir: &Path, text: &str) -> String {
    dnssec_verify_with(dir, text, &["-z"])
}

/// [`dnssec_verify`] with `dnssec-verify` options `options` (none: the
/// DNSKEY RRset must be signed by a key with the SEP flag, every other
/// RRset by a zone-signing key).
fn dnssec_verify_with(dir: &Path, text: &str, options: &[&str]) -> String {
    let file = dir.join("example.com.zone");
    std::fs::write(&file, text).unwrap();
    let verify = Command::new(find_binary("dnssec-verify", "bind9-utils"))
        .args(options)
        .args(["-o", "example.com"])
        .arg(&file)
        .output()
        .unwrap();
    let report = format!(
        "{}{}",
        String::from_utf8_lossy(&verify.stdout),
        String::from_utf8_lossy(&verify.stderr)
    );
    assert!(
        verify.status.success(),
        "dnssec-verify failed:\n{report}\nzone:\n{text}"
    );
    report
}

/// The zone as AXFR sends it passes `dnssec-verify`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn axfr_passes_dnssec_verify() {
    let dir = temp_dir("dnssec-axfr");
    let (zone, _key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let (server, _addr, _store) = serve(zone).await;
    let report = dnssec_verify(&dir, &axfr(server.tcp_addrs()[0]));
    println!("dnssec-verify: {}", report.trim());
    std::fs::remove_dir_all(&dir).ok();
}

/// After an incremental publish the transfer is signed again where it
/// changed only (an unchanged RRset keeps its RRSIG) and still verifies.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_axfr_keeps_unchanged_signatures() {
    let dir = temp_dir("dnssec-axfr-incr");
    let apex = name("example.com.");
    let mut zone = ZoneContent::new(apex.clone());
    for i in 0..50 {
        zone.records.push(Record::from_rdata(
            name(&format!("host-{i}.example.com.")),
            30,
            rdata(RecordType::A, &format!("192.0.2.{}", i + 1)),
        ));
    }
    let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
    let key = DnssecKey::from_pkcs8(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap()).unwrap();
    zone.dnssec = Some(DnssecConfig {
        key,
        zone_signing_key: None,
        standby: Vec::new(),
        signature_validity: 14 * 86_400,
        signature_refresh: 7 * 86_400,
        denial: Default::default(),
    });
    zone.transfer.allow = vec!["127.0.0.1/32".parse().unwrap()];
    let (server, _addr, store) = serve(zone).await;
    let tcp = server.tcp_addrs()[0];
    let sig_of = |text: &str, owner: &str| -> String {
        text.lines()
            .find(|l| l.starts_with(owner) && l.contains("RRSIG\tA "))
            .unwrap_or_default()
            .to_owned()
    };
    let before = axfr(tcp);
    store
        .publish_changes(vec![fedns_dnsserver::ZoneChanges {
            apex: apex.clone(),
            names: vec![(
                name("new.example.com."),
                vec![Record::from_rdata(
                    name("new.example.com."),
                    30,
                    rdata(RecordType::A, "192.0.2.200"),
                )],
            )],
            routed: Vec::new(),
        }])
        .expect("applied incrementally");
    let after = axfr(tcp);
    assert!(after.contains("new.example.com."), "{after}");
    assert!(!sig_of(&before, "host-7.example.com.").is_empty());
    assert_eq!(
        sig_of(&before, "host-7.example.com."),
        sig_of(&after, "host-7.example.com.")
    );
    dnssec_verify(&dir, &after);
    std::fs::remove_dir_all(&dir).ok();
}

fn rrsigs(message: &fedns_dnsserver::hickory_proto::op::Message) -> Vec<String> {
    message
        .answers
        .iter()
        .chain(&message.authorities)
        .filter(|r| r.record_type() == RecordType::RRSIG)
        .map(ToString::to_string)
        .collect()
}

/// TC over UDP when the signed answer does not fit, the whole of it over
/// TCP; without DO the answers carry no DNSSEC record.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn truncation_tcp_and_no_do() {
    let (zone, _key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let (server, udp, _store) = serve(zone).await;
    let tcp = server.tcp_addrs()[0];
    // 40 A records fit 1232 octets unsigned (about 700) and signed (+~110).
    let medium = query_udp(
        udp,
        &simple_query("medium.example.com.", RecordType::A, Some((1232, true))),
    )
    .unwrap();
    assert!(!medium.metadata.truncation && rrsigs(&medium).len() == 1, "{medium:?}");
    // 100 A records: TC over UDP, all with the RRSIG over TCP.
    let big = query_udp(
        udp,
        &simple_query("big.example.com.", RecordType::A, Some((1232, true))),
    )
    .unwrap();
    assert!(big.metadata.truncation && big.answers.is_empty(), "{big:?}");
    let big = query_tcp(
        tcp,
        &simple_query("big.example.com.", RecordType::A, Some((1232, true))),
    )
    .unwrap();
    assert_eq!(big.answers.len(), 101, "100 A and their RRSIG");
    assert_eq!(rrsigs(&big).len(), 1);
    // Without DO: no RRSIG, NSEC or DNSKEY-only changes; NXDOMAIN stays NXDOMAIN.
    for (qname, qtype) in [
        ("mail.example.com.", RecordType::A),
        ("www.example.com.", RecordType::A),
        ("missing.example.com.", RecordType::A),
        ("mail.example.com.", RecordType::TXT),
    ] {
        for edns in [None, Some((1232, false))] {
            let plain = query_udp(udp, &simple_query(qname, qtype, edns)).unwrap();
            let dnssec = plain
                .answers
                .iter()
                .chain(&plain.authorities)
                .any(|r| matches!(r.record_type(), RecordType::RRSIG | RecordType::NSEC));
            assert!(!dnssec, "{qname} {qtype} without DO: {plain:?}");
        }
    }
    let nx = query_udp(
        udp,
        &simple_query("missing.example.com.", RecordType::A, Some((1232, false))),
    )
    .unwrap();
    assert_eq!(nx.metadata.response_code, ResponseCode::NXDomain);
}

/// An incremental publish re-signs the changed names only: an unchanged
/// name keeps its signature bytes, a changed and a new name validate.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn incremental_publish_resigns_changed_names() {
    let dir = temp_dir("dnssec-incr");
    let apex = name("example.com.");
    let (zone, key) = two_name_zone(DenialOfExistence::Compact);
    let (_server, addr, store) = serve(zone).await;
    let anchors = anchor_file(&dir, &key);
    let ask = |qname: &str| query_udp(addr, &simple_query(qname, RecordType::A, Some((1232, true)))).unwrap();
    let before = rrsigs(&ask("a.example.com."));
    let outcome = store
        .publish_changes(vec![fedns_dnsserver::ZoneChanges {
            apex: apex.clone(),
            names: vec![
                (
                    name("b.example.com."),
                    vec![Record::from_rdata(
                        name("b.example.com."),
                        30,
                        rdata(RecordType::A, "192.0.2.22"),
                    )],
                ),
                (
                    name("new.example.com."),
                    vec![Record::from_rdata(
                        name("new.example.com."),
                        30,
                        rdata(RecordType::A, "192.0.2.3"),
                    )],
                ),
            ],
            routed: Vec::new(),
        }])
        .expect("applied incrementally");
    assert!(outcome.changed);
    assert_eq!(
        rrsigs(&ask("a.example.com.")),
        before,
        "an unchanged name was re-signed"
    );
    assert_validated(addr, &anchors, "b.example.com", "A", "; fully validated");
    assert_validated(addr, &anchors, "new.example.com", "A", "; fully validated");
    // The serial changed: the SOA's signature in negative answers follows it.
    assert_validated(
        addr,
        &anchors,
        "gone.example.com",
        "A",
        "; negative response, fully validated",
    );
    assert_validated(addr, &anchors, "example.com", "SOA", "; fully validated");
    std::fs::remove_dir_all(&dir).ok();
}

/// Signatures near expiry are made again by the next publish, under a new
/// serial, even when nothing else changed; an unsigned zone keeps its serial.
#[test]
fn publish_resigns_when_due() {
    let apex = name("example.com.");
    let algorithm = DnssecAlgorithm::Ed25519;
    let key = DnssecKey::from_pkcs8(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap()).unwrap();
    let mut signed = ZoneContent::new(apex);
    signed.dnssec = Some(DnssecConfig {
        key,
        zone_signing_key: None,
        standby: Vec::new(),
        // Refresh as long as the validity: due at once.
        signature_validity: 7200,
        signature_refresh: 7200,
        denial: Default::default(),
    });
    let store = ZoneStore::new();
    let first = store.publish(vec![signed.clone()]).zones[0].serial;
    let outcome = store.publish(vec![signed.clone()]);
    assert!(outcome.changed, "re-signing did not rebuild");
    assert!(fedns_dnsserver::serial_gt(outcome.zones[0].serial, first));
    assert_eq!(outcome.zones[0].ds_records.len(), 1);
    // Not due: nothing changes.
    let mut calm = signed;
    if let Some(config) = &mut calm.dnssec {
        config.signature_refresh = 3600;
    }
    let store = ZoneStore::new();
    let first = store.publish(vec![calm.clone()]).zones[0].serial;
    let again = store.publish(vec![calm]);
    assert!(!again.changed);
    assert_eq!(again.zones[0].serial, first);
}

/// An Unbound process on a loopback port: a validating resolver with a
/// stub zone for example.com at our server and the zone's DNSKEY as its
/// trust anchor; killed on drop.
struct Unbound {
    port: u16,
    child: std::process::Child,
}

impl Unbound {
    fn start(dir: &Path, server: SocketAddr, key: &DnssecKey) -> Unbound {
        Unbound::start_with_anchor(dir, server, &key.dnskey_record(&name("example.com."), 60))
    }

    /// [`Unbound::start`] with `anchor` (a DNSKEY or DS record in
    /// presentation format) as the trust anchor of example.com.
    fn start_with_anchor(dir: &Path, server: SocketAddr, anchor_record: &str) -> Unbound {
        Unbound::start_configured(dir, server, anchor_record, false)
    }

    /// [`Unbound::start`] with Unbound's EDNS Client Subnet module
    /// (RFC 7871): a client's ECS option is passed on to our server (on
    /// loopback, so `send-client-subnet: 127.0.0.1`) and the answer, cached
    /// per subnet, is validated as any other.
    fn start_ecs(dir: &Path, server: SocketAddr, key: &DnssecKey) -> Unbound {
        Unbound::start_configured(dir, server, &key.dnskey_record(&name("example.com."), 60), true)
    }

    fn start_configured(dir: &Path, server: SocketAddr, anchor_record: &str, ecs: bool) -> Unbound {
        let port = crate::common::free_port();
        let (modules, extra) = if ecs {
            (
                "subnetcache validator iterator",
                "  send-client-subnet: 127.0.0.1\n  client-subnet-always-forward: yes\n  max-client-subnet-ipv4: 24\n",
            )
        } else {
            ("validator iterator", "")
        };
        let anchor = dir.join("anchor.key");
        std::fs::write(&anchor, format!("{anchor_record}\n")).unwrap();
        let config = dir.join("unbound.conf");
        std::fs::write(
            &config,
            format!(
                "server:\n  interface: 127.0.0.1\n  port: {port}\n  do-not-query-localhost: no\n  username: \"\"\n  \
                 chroot: \"\"\n  directory: \"{dir}\"\n  pidfile: \"\"\n  use-syslog: no\n  logfile: \"\"\n  \
                 do-ip6: no\n  verbosity: 1\n  val-log-level: 2\n  trust-anchor-file: \"{anchor}\"\n  \
                 module-config: \"{modules}\"\n{extra}  access-control: 127.0.0.0/8 allow\n\
                 stub-zone:\n  name: \"example.com\"\n  stub-addr: {ip}@{sport}\n",
                dir = dir.display(),
                anchor = anchor.display(),
                ip = server.ip(),
                sport = server.port(),
            ),
        )
        .unwrap();
        let child = Command::new(find_binary("unbound", "unbound"))
            .args(["-d", "-c"])
            .arg(&config)
            .stdout(std::process::Stdio::null())
            .stderr(std::fs::File::create(dir.join("unbound.log")).unwrap())
            .spawn()
            .unwrap();
        Unbound { port, child }
    }

    /// `dig +dnssec` through Unbound: (status, AD flag set, answer lines).
    fn dig(&self, qname: &str, qtype: &str) -> (String, bool, String) {
        self.dig_with(qname, qtype, &[])
    }

    /// [`Unbound::dig`] with more `dig` options (e.g. `+subnet=…`).
    fn dig_with(&self, qname: &str, qtype: &str, options: &[&str]) -> (String, bool, String) {
        let output = Command::new(find_binary("dig", "bind9-dnsutils"))
            .args([
                "@127.0.0.1",
                "-p",
                &self.port.to_string(),
                "+dnssec",
                "+time=2",
                "+tries=1",
                qname,
                qtype,
            ])
            .args(options)
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).into_owned();
        let status = text
            .lines()
            .find_map(|l| l.split("status: ").nth(1))
            .map(|s| s.split(',').next().unwrap_or_default().to_owned())
            .unwrap_or_default();
        let ad = text.lines().find(|l| l.starts_with(";; flags:")).is_some_and(|l| {
            l.split(';')
                .nth(2)
                .is_some_and(|f| f.split_whitespace().any(|w| w == "ad"))
        });
        (status, ad, text)
    }
}

impl Drop for Unbound {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Unbound as a validating resolver in front of the signed zone: every
/// kind of answer comes back with AD, never SERVFAIL; after a key rollover
/// (a new key, a new trust anchor) too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbound_validates_with_ad() {
    let dir = temp_dir("dnssec-unbound");
    let (zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let (_server, addr, store) = serve(zone.clone()).await;
    let checks = [
        ("mail.example.com", "A", "NOERROR"),
        ("www.example.com", "A", "NOERROR"),
        (ROUTED, "A", "NOERROR"),
        ("mail.example.com", "TXT", "NOERROR"),
        ("missing.example.com", "A", "NOERROR"),
        ("host.wild.example.com", "A", "NOERROR"),
    ];
    let run = |unbound: &Unbound, label: &str| {
        for (qname, qtype, status) in checks {
            let mut last = (String::new(), false, String::new());
            // Unbound needs a moment to start listening.
            for _ in 0..60 {
                last = unbound.dig(qname, qtype);
                if !last.0.is_empty() {
                    break;
                }
                std::thread::sleep(std::time::Duration::from_millis(100));
            }
            let (got, ad, text) = last;
            assert!(
                got == status && ad,
                "{label}: {qname} {qtype}: want {status} with AD:\n{text}"
            );
        }
        println!("{label}: {} answers validated by Unbound (AD)", checks.len());
    };
    let started = std::time::Instant::now();
    {
        let unbound = Unbound::start(&dir, addr, &key);
        run(&unbound, "first key");
    }
    // Rollover: a new key; a resolver trusting the new key validates.
    let algorithm = DnssecAlgorithm::Ed25519;
    let new_key = DnssecKey::from_pkcs8(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap()).unwrap();
    let mut rolled = zone;
    if let Some(config) = &mut rolled.dnssec {
        config.key = new_key.clone();
    }
    let outcome = store.publish(vec![rolled]);
    assert!(outcome.changed);
    {
        let unbound = Unbound::start(&dir, addr, &new_key);
        run(&unbound, "after rollover");
    }
    println!("Unbound checks took {:?}", started.elapsed());
    std::fs::remove_dir_all(&dir).ok();
}

/// Knot DNS as a secondary of the signed zone serves it as transferred
/// (it does not sign): `delv` validates its answers too, denial from the
/// NSEC chain included.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn knot_secondary_serves_the_signed_zone() {
    use crate::transfer::{key_spec, Kind, Secondary, SECRET};
    let dir = temp_dir("dnssec-knot");
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    zone.transfer.keys = vec![fedns_dnsserver::TsigKey::parse(&key_spec(SECRET)).unwrap()];
    let (server, _addr, store) = serve(zone).await;
    let serial = store.load().zones()[0].serial;
    let knot = Secondary::start(Kind::Knot, crate::common::free_port(), server.tcp_addrs()[0], SECRET);
    let took = knot.wait_for(serial, std::time::Duration::from_secs(30));
    println!("Knot serves serial {serial} after {took:?}");
    let anchors = anchor_file(&dir, &key);
    for (qname, qtype, expect) in [
        ("mail.example.com", "A", "; fully validated"),
        ("www.example.com", "A", "; fully validated"),
        ("missing.example.com", "A", "; negative response, fully validated"),
        ("mail.example.com", "TXT", "; negative response, fully validated"),
        ("host.wild.example.com", "TXT", "; fully validated"),
    ] {
        assert_validated(knot.addr, &anchors, qname, qtype, expect);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// Every RRSIG of `message` verifies over the RRset it covers (same
/// owner and type, in the same message) with `key`; returns how many.
fn verify_all(message: &fedns_dnsserver::hickory_proto::op::Message, key: &DnssecKey) -> usize {
    use fedns_dnsserver::hickory_proto::dnssec::rdata::DNSSECRData;
    use fedns_dnsserver::hickory_proto::dnssec::Verifier;
    use fedns_dnsserver::hickory_proto::rr::{DNSClass, RData};
    let records: Vec<&Record> = message.answers.iter().chain(&message.authorities).collect();
    let mut verified = 0;
    for record in &records {
        let RData::DNSSEC(DNSSECRData::RRSIG(rrsig)) = &record.data else {
            continue;
        };
        let covered = records
            .iter()
            .filter(|r| r.name == record.name && r.record_type() == rrsig.input().type_covered)
            .copied();
        key.dnskey()
            .verify_rrsig(&record.name, DNSClass::IN, rrsig, covered)
            .unwrap_or_else(|e| panic!("RRSIG {record} does not verify: {e}"));
        verified += 1;
    }
    verified
}

/// A `Nearest` name answered per EDNS Client Subnet (RFC 7871): each
/// region's variant comes signed, and its signatures verify.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nearest_variants_by_ecs_are_signed() {
    use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use fedns_dnsserver::hickory_proto::rr::rdata::opt::{ClientSubnet, EdnsOption};
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    zone.routed[0] = RoutedName {
        name: name(ROUTED),
        policy: RoutingPolicy::Nearest {
            fallback: vec!["us-east-1".into()],
        },
        variants: vec![
            RoutedVariant {
                region: Some("us-east-1".into()),
                ..variant("east", 0, &["203.0.113.10", "2001:db8::10"])
            },
            RoutedVariant {
                region: Some("us-west-2".into()),
                ..variant("west", 0, &["203.0.113.11"])
            },
            RoutedVariant {
                region: Some("eu-west-1".into()),
                ..variant("eu", 0, &["198.51.100.20"])
            },
        ],
        max_answers: None,
        sticky_within: None,
    };
    zone.client_regions = fedns_dnsserver::ClientRegions {
        networks: vec![
            ("192.0.2.0/24".parse().unwrap(), "eu-west-1".into()),
            ("198.51.100.0/24".parse().unwrap(), "us-west-2".into()),
        ],
        ..Default::default()
    };
    let (_server, addr, _store) = serve(zone).await;
    let ask = |subnet: &str, qtype: RecordType| {
        let mut message = Message::new(9, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(name(ROUTED), qtype));
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        edns.set_dnssec_ok(true);
        edns.options_mut()
            .insert(EdnsOption::Subnet(ClientSubnet::new(subnet.parse().unwrap(), 24, 0)));
        message.set_edns(edns);
        query_udp(addr, &message.to_vec().unwrap()).unwrap()
    };
    for (subnet, want) in [
        ("192.0.2.0", "198.51.100.20"),
        ("198.51.100.0", "203.0.113.11"),
        ("203.0.113.0", "203.0.113.10"),
    ] {
        let answer = ask(subnet, RecordType::A);
        let addresses: Vec<String> = answer
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::A)
            .map(|r| r.data.to_string())
            .collect();
        assert_eq!(addresses, [want], "{subnet}: {answer:?}");
        assert_eq!(verify_all(&answer, &key), 1, "{subnet}: one RRSIG over the A RRset");
        // NODATA of a variant without AAAA: its NSEC, and the SOA, verify.
        let nodata = ask(subnet, RecordType::AAAA);
        let verified = verify_all(&nodata, &key);
        println!("{subnet}: A {want} and AAAA ({verified} RRSIGs) verified");
        assert!(verified >= 1);
    }
}

/// `maxAnswers` on a signed zone: every window of the name's addresses is
/// its own RRset, signed; each answer holds one address and one RRSIG that
/// verifies, and every address comes up.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answer_windows_are_signed() {
    use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    zone.routed[0].policy = RoutingPolicy::Every;
    zone.routed[0].max_answers = Some(1);
    let (_server, addr, _store) = serve(zone).await;
    let mut seen = std::collections::BTreeSet::new();
    for _ in 0..60 {
        let mut message = Message::new(9, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(name(ROUTED), RecordType::A));
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        edns.set_dnssec_ok(true);
        message.set_edns(edns);
        let answer = query_udp(addr, &message.to_vec().unwrap()).unwrap();
        let addresses: Vec<String> = answer
            .answers
            .iter()
            .filter(|r| r.record_type() == RecordType::A)
            .map(|r| r.data.to_string())
            .collect();
        assert_eq!(addresses.len(), 1, "{answer:?}");
        assert_eq!(verify_all(&answer, &key), 1, "one RRSIG over the one-address RRset");
        seen.extend(addresses);
    }
    println!("60 signed answers of one address: {seen:?}");
    assert_eq!(seen.len(), 3, "{seen:?}");
}

/// A `Nearest` name through Unbound with its EDNS Client Subnet module:
/// each client subnet's variant reaches the client validated (AD), and a
/// Weighted name beside it too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unbound_validates_nearest_answers_by_ecs() {
    let dir = temp_dir("dnssec-unbound-ecs");
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let weighted = zone.routed[0].clone();
    zone.routed[0] = RoutedName {
        name: name("near.example.com."),
        policy: RoutingPolicy::Nearest {
            fallback: vec!["us-east-1".into()],
        },
        variants: vec![
            RoutedVariant {
                region: Some("us-east-1".into()),
                records: vec![Record::from_rdata(
                    name("near.example.com."),
                    30,
                    rdata(RecordType::A, "203.0.113.10"),
                )],
                ..variant("east", 0, &[])
            },
            RoutedVariant {
                region: Some("eu-west-1".into()),
                records: vec![Record::from_rdata(
                    name("near.example.com."),
                    30,
                    rdata(RecordType::A, "198.51.100.20"),
                )],
                ..variant("eu", 0, &[])
            },
        ],
        max_answers: None,
        sticky_within: None,
    };
    zone.routed.push(weighted);
    // A routed name's plain records: what it answers without a policy.
    for ip in ["203.0.113.10", "198.51.100.20"] {
        zone.records.push(Record::from_rdata(
            name("near.example.com."),
            30,
            rdata(RecordType::A, ip),
        ));
    }
    zone.client_regions = fedns_dnsserver::ClientRegions {
        networks: vec![("192.0.2.0/24".parse().unwrap(), "eu-west-1".into())],
        ..Default::default()
    };
    let (_server, addr, _store) = serve(zone).await;
    let unbound = Unbound::start_ecs(&dir, addr, &key);
    let started = std::time::Instant::now();
    let ask = |qname: &str, subnet: &str| {
        let option = format!("+subnet={subnet}");
        let mut last = (String::new(), false, String::new());
        for _ in 0..60 {
            last = unbound.dig_with(qname, "A", &[&option]);
            if !last.0.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        last
    };
    for (subnet, want) in [("192.0.2.0/24", "198.51.100.20"), ("203.0.113.0/24", "203.0.113.10")] {
        let (status, ad, text) = ask("near.example.com", subnet);
        assert!(
            status == "NOERROR" && ad && text.contains(want),
            "{subnet}: want {want} with AD:\n{text}"
        );
        println!("Unbound, ECS {subnet}: near.example.com A {want}, AD");
    }
    let (status, ad, text) = ask(ROUTED, "192.0.2.0/24");
    assert!(status == "NOERROR" && ad, "Weighted through Unbound: {text}");
    println!("Unbound with ECS validated in {:?}", started.elapsed());
    drop(unbound);
    std::fs::remove_dir_all(&dir).ok();
}

/// A referral below a delegation (rendered at query time): the child's NS
/// unsigned, AA clear, and the NSEC of the cut proving there is no DS,
/// signed (RFC 4035 §3.1.4).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn referral_proves_no_ds() {
    use fedns_dnsserver::hickory_proto::dnssec::rdata::DNSSECRData;
    use fedns_dnsserver::hickory_proto::rr::RData;
    let (zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let (_server, addr, _store) = serve(zone).await;
    let referral = query_udp(
        addr,
        &simple_query("x.sub.example.com.", RecordType::A, Some((1232, true))),
    )
    .unwrap();
    assert!(!referral.metadata.authoritative, "{referral:?}");
    assert!(referral.answers.is_empty());
    let ns = referral
        .authorities
        .iter()
        .filter(|r| r.record_type() == RecordType::NS)
        .count();
    assert_eq!(ns, 1, "{referral:?}");
    let nsec = referral
        .authorities
        .iter()
        .find_map(|r| match &r.data {
            RData::DNSSEC(DNSSECRData::NSEC(nsec)) => Some((r.name.clone(), nsec.clone())),
            _ => None,
        })
        .expect("an NSEC at the cut");
    assert_eq!(nsec.0, name("sub.example.com."));
    let types: Vec<RecordType> = nsec.1.type_bit_maps().collect();
    assert!(
        types.contains(&RecordType::NS) && !types.contains(&RecordType::DS),
        "{types:?}"
    );
    assert_eq!(
        verify_all(&referral, &key),
        1,
        "the NSEC's RRSIG, and no RRSIG over the child's NS"
    );
    // The glue travels unsigned.
    assert!(referral
        .additionals
        .iter()
        .all(|r| r.record_type() != RecordType::RRSIG));
}

/// RFC 9824 §4: with the CO bit a missing name is NXDOMAIN (still with
/// its compact-denial NSEC), and CO is echoed; without it, NOERROR.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_ok_bit_restores_nxdomain() {
    let (zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    let (_server, addr, _store) = serve(zone).await;
    let mut packet = simple_query("missing.example.com.", RecordType::A, Some((1232, true)));
    let plain = query_udp(addr, &packet).unwrap();
    assert_eq!(plain.metadata.response_code, ResponseCode::NoError);
    // The OPT RR ends the query: its TTL's second octet after the
    // extended RCODE and version holds DO (0x80) and CO (0x40).
    let flags_at = packet.len() - 4;
    assert_eq!(packet[flags_at] & 0x80, 0x80, "DO where expected");
    packet[flags_at] |= 0x40;
    let raw = crate::common::query_udp_raw(addr, &packet).unwrap();
    let co = fedns_dnsserver::hickory_proto::op::Message::from_vec(&raw).unwrap();
    assert_eq!(co.metadata.response_code, ResponseCode::NXDomain);
    assert_eq!(verify_all(&co, &key), 2, "the NSEC's and the SOA's RRSIG");
    assert_eq!(raw[raw.len() - 4] & 0xC0, 0xC0, "DO and CO echoed");
}

/// The SOA serial of `message` (answer or authority section) and how many
/// of its RRSIGs verify with `key` (every one must).
fn soa_serial_verified(message: &fedns_dnsserver::hickory_proto::op::Message, key: &DnssecKey) -> (u32, usize) {
    use fedns_dnsserver::hickory_proto::rr::RData;
    let serial = message
        .answers
        .iter()
        .chain(&message.authorities)
        .find_map(|r| match &r.data {
            RData::SOA(soa) => Some(soa.serial),
            _ => None,
        })
        .unwrap_or_else(|| panic!("no SOA in {message:?}"));
    (serial, verify_all(message, key))
}

/// The SOA serial the AXFR text of `dig +onesoa` starts with.
fn axfr_serial(text: &str) -> u32 {
    let soa = text
        .lines()
        .find(|l| !l.starts_with(';') && l.split_whitespace().nth(3) == Some("SOA"))
        .unwrap_or_else(|| panic!("no SOA in AXFR:\n{text}"));
    soa.split_whitespace().nth(6).unwrap().parse().unwrap()
}

/// A signed zone following recorded serials (`SerialMode::Follow`): when a pending
/// serial comes due (no publish in between), negative answers and SOA
/// answers show it with an SOA RRSIG that validates for it (signed when
/// the serial was set, not on the query path); transfers, before and
/// after the store takes the serial up, announce a serial their SOA
/// RRSIG validates (`dnssec-verify` on the AXFR).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signed_zone_switches_to_a_pending_serial_with_valid_signatures() {
    use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
    use fedns_dnsserver::{RecordedSerial, SerialMode};
    use std::collections::BTreeMap;
    let dir = temp_dir("dnssec-pending-serial");
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    // No wildcard, no delegation: the store keeps its tree and takes
    // recorded serials in place.
    zone.records
        .retain(|r| !r.name.is_wildcard() && r.record_type() != RecordType::NS && !r.name.to_ascii().contains("sub."));
    let follow = |serial: u32, content: u64, active_from_ms: u64, previous: Option<u32>| {
        SerialMode::Follow(BTreeMap::from([(
            "example.com.".to_owned(),
            Some(RecordedSerial {
                serial,
                content,
                active_from_ms,
                previous,
            }),
        )]))
    };
    let now_ms = || {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_millis() as u64
    };
    let store = ZoneStore::new();
    let _ = store.set_serial_mode(SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), None)])));
    store.publish(vec![zone.clone()]);
    let first = store.serial_states().remove(0);
    assert_eq!(store.set_serial_mode(follow(100, first.content, 0, None)), Ok(true));
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store.clone(), DnsMetrics::new())
        .await
        .unwrap();
    let (addr, tcp) = (server.udp_addrs()[0], server.tcp_addrs()[0]);
    let anchors = anchor_file(&dir, &key);
    let ask = |qname: &str, qtype: RecordType| {
        let mut message = Message::new(7, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(name(qname), qtype));
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        edns.set_dnssec_ok(true);
        message.set_edns(edns);
        query_tcp(tcp, &message.to_vec().unwrap()).unwrap()
    };
    let questions = [
        ("missing.example.com.", RecordType::A), // compact denial, query-time NSEC
        ("mail.example.com.", RecordType::TXT),  // NODATA, stored
        ("example.com.", RecordType::SOA),       // the SOA itself
    ];
    for (qname, qtype) in questions {
        let (serial, verified) = soa_serial_verified(&ask(qname, qtype), &key);
        assert_eq!(serial, 100, "{qname} {qtype}");
        assert!(verified >= 1, "{qname} {qtype}: no RRSIG verified");
    }
    let text = axfr(tcp);
    assert_eq!(axfr_serial(&text), 100, "AXFR:\n{text}");
    dnssec_verify(&dir, &text);

    // New content; its serial recorded from 1.5 s on.
    zone.records.push(Record::from_rdata(
        name("new.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.77"),
    ));
    store.publish(vec![zone.clone()]);
    let second = store.serial_states().remove(0);
    assert_ne!(second.content, first.content);
    let due = now_ms() + 1500;
    store
        .set_serial_mode(follow(200, second.content, due, Some(100)))
        .unwrap();
    let text = axfr(tcp);
    assert_eq!(axfr_serial(&text), 100, "transfers stay at 100 until due:\n{text}");
    dnssec_verify(&dir, &text);
    for (qname, qtype) in questions {
        assert_eq!(
            soa_serial_verified(&ask(qname, qtype), &key).0,
            100,
            "{qname} {qtype} before due"
        );
    }

    // Due, no publish in between: the answers show 200, signed for it.
    let started = std::time::Instant::now();
    tokio::time::sleep(std::time::Duration::from_millis(due.saturating_sub(now_ms()) + 100)).await;
    for (qname, qtype) in questions {
        let (serial, verified) = soa_serial_verified(&ask(qname, qtype), &key);
        assert_eq!(serial, 200, "{qname} {qtype} once due");
        assert!(verified >= 1, "{qname} {qtype}: no RRSIG verified");
        println!("{qname} {qtype}: serial {serial}, {verified} RRSIGs verified");
    }
    assert_validated(
        addr,
        &anchors,
        "missing.example.com",
        "A",
        "; negative response, fully validated",
    );
    assert_validated(
        addr,
        &anchors,
        "mail.example.com",
        "TXT",
        "; negative response, fully validated",
    );
    assert_validated(addr, &anchors, "example.com", "SOA", "; fully validated");

    // Taken up: transfers move to the held version, its SOA signed for 200.
    assert_eq!(
        store.set_serial_mode(follow(200, second.content, due, Some(100))),
        Ok(true)
    );
    let text = axfr(tcp);
    assert_eq!(axfr_serial(&text), 200, "AXFR after take-up:\n{text}");
    assert!(text.contains("new.example.com."), "{text}");
    dnssec_verify(&dir, &text);
    for (qname, qtype) in questions {
        let (serial, verified) = soa_serial_verified(&ask(qname, qtype), &key);
        assert_eq!((serial, verified >= 1), (200, true), "{qname} {qtype} after take-up");
    }
    println!("switch checked {:?} after the due instant", started.elapsed());
    std::fs::remove_dir_all(&dir).ok();
}

/// The same for answers rendered and signed at query time (a wildcard's
/// NODATA, whose SOA is signed per query): once a pending serial is due,
/// they show it, signed for it. The zone has a wildcard, so the store
/// takes recorded serials at its next whole publish.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn query_time_signed_answers_show_a_due_pending_serial() {
    use fedns_dnsserver::{RecordedSerial, SerialMode};
    use std::collections::BTreeMap;
    let (zone, key) = signed_zone(DnssecAlgorithm::Ed25519);
    let follow = |serial: u32, content: u64, active_from_ms: u64, previous: Option<u32>| {
        SerialMode::Follow(BTreeMap::from([(
            "example.com.".to_owned(),
            Some(RecordedSerial {
                serial,
                content,
                active_from_ms,
                previous,
            }),
        )]))
    };
    let store = ZoneStore::new();
    let _ = store.set_serial_mode(SerialMode::Follow(BTreeMap::from([("example.com.".to_owned(), None)])));
    store.publish(vec![zone.clone()]);
    let content = store.serial_states().remove(0).content;
    let _ = store.set_serial_mode(follow(100, content, 0, None));
    store.publish(vec![zone.clone()]);
    let due = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 800;
    let _ = store.set_serial_mode(follow(200, content, due, Some(100)));
    // Same content: the whole publish applies the pending serial.
    store.publish(vec![zone]);
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store.clone(), DnsMetrics::new())
        .await
        .unwrap();
    let tcp = server.tcp_addrs()[0];
    let ask = |qname: &str, qtype: RecordType| {
        use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
        let mut message = Message::new(8, MessageType::Query, OpCode::Query);
        message.add_query(Query::query(name(qname), qtype));
        let mut edns = Edns::new();
        edns.set_max_payload(1232);
        edns.set_dnssec_ok(true);
        message.set_edns(edns);
        query_tcp(tcp, &message.to_vec().unwrap()).unwrap()
    };
    let questions = [
        ("host.wild.example.com.", RecordType::MX), // wildcard NODATA, query time
        ("missing.example.com.", RecordType::A),    // compact denial
    ];
    for (qname, qtype) in questions {
        assert_eq!(
            soa_serial_verified(&ask(qname, qtype), &key).0,
            100,
            "{qname} {qtype} before due"
        );
    }
    tokio::time::sleep(std::time::Duration::from_millis(1000)).await;
    for (qname, qtype) in questions {
        let (serial, verified) = soa_serial_verified(&ask(qname, qtype), &key);
        assert_eq!(serial, 200, "{qname} {qtype} once due");
        assert!(verified >= 1, "{qname} {qtype}: no RRSIG verified");
        println!("{qname} {qtype}: serial {serial}, {verified} RRSIGs verified");
    }
}

/// A new key of `algorithm` with DNSKEY flags `flags` (257 KSK, 256 ZSK).
fn new_key(algorithm: DnssecAlgorithm, flags: u16) -> DnssecKey {
    DnssecKey::with_flags(algorithm, &DnssecKey::generate_pkcs8(algorithm).unwrap(), flags).unwrap()
}

/// [`signed_zone`] in KSK+ZSK mode: a KSK (flags 257) and a ZSK (256),
/// no standby key. Returns the zone, the KSK and the ZSK.
fn split_zone(algorithm: DnssecAlgorithm) -> (ZoneContent, DnssecKey, DnssecKey) {
    let (mut zone, ksk) = signed_zone(algorithm);
    let zsk = new_key(algorithm, 256);
    if let Some(config) = &mut zone.dnssec {
        config.zone_signing_key = Some(zsk.clone());
        config.check().unwrap();
    }
    (zone, ksk, zsk)
}

/// A `delv` trust-anchor file holding the DS of `ksk` (the only thing a
/// parent zone would hold) for example.com.
fn ds_anchor_file(dir: &Path, ksk: &DnssecKey) -> PathBuf {
    let ds = ksk.ds_record(&name("example.com."), 60).unwrap();
    // example.com. 60 IN DS <tag> <alg> <digest type> <digest>
    let fields: Vec<&str> = ds.split_whitespace().collect();
    assert_eq!(fields[3], "DS", "{ds}");
    let path = dir.join("anchors-ds.conf");
    std::fs::write(
        &path,
        format!(
            "trust-anchors {{\n  example.com. static-ds {} {} {} \"{}\";\n}};\n",
            fields[4],
            fields[5],
            fields[6],
            fields[7..].concat()
        ),
    )
    .unwrap();
    path
}

/// The key tags of the RRSIGs over `covered` in the answer to `qname`
/// `qtype` (with DO), and the DNSKEY flags of the answer's DNSKEYs.
fn rrsig_tags(addr: SocketAddr, qname: &str, qtype: RecordType, covered: RecordType) -> (Vec<u16>, Vec<u16>) {
    use fedns_dnsserver::hickory_proto::dnssec::rdata::DNSSECRData;
    use fedns_dnsserver::hickory_proto::rr::RData;
    let answer = query_udp(addr, &simple_query(qname, qtype, Some((1232, true)))).unwrap();
    let mut tags = Vec::new();
    let mut flags = Vec::new();
    for record in answer.answers.iter().chain(&answer.authorities) {
        match &record.data {
            RData::DNSSEC(DNSSECRData::RRSIG(rrsig)) if rrsig.input().type_covered == covered => {
                tags.push(rrsig.input().key_tag)
            }
            RData::DNSSEC(DNSSECRData::DNSKEY(dnskey)) => flags.push(dnskey.flags()),
            _ => {}
        }
    }
    flags.sort_unstable();
    (tags, flags)
}

/// KSK+ZSK mode: the DNSKEY RRset holds both keys and is signed by the
/// KSK alone; every other RRset (a positive answer, the SOA, the NSEC of
/// NODATA and the query-time NSEC of a missing name) by the ZSK alone.
/// `delv`, trusting only the KSK's DS, validates positive, NXDOMAIN and
/// NODATA answers; `dnssec-verify` (KSK/ZSK roles checked, no `-z`)
/// accepts the zone as AXFR sends it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ksk_zsk_zone_validates_from_the_ksk_ds() {
    for algorithm in [DnssecAlgorithm::EcdsaP256Sha256, DnssecAlgorithm::Ed25519] {
        let dir = temp_dir("dnssec-ksk-zsk");
        let (zone, ksk, zsk) = split_zone(algorithm);
        let soa_ttl = zone.soa.ttl;
        let (server, addr, store) = serve(zone).await;
        assert_eq!(
            store.load().zones()[0].ds_records,
            [ksk.ds_record(&name("example.com."), soa_ttl).unwrap()],
            "the DS is the KSK's"
        );
        let (tags, flags) = rrsig_tags(addr, "example.com.", RecordType::DNSKEY, RecordType::DNSKEY);
        assert_eq!(tags, [ksk.key_tag()], "the DNSKEY RRset is signed by the KSK only");
        assert_eq!(flags, [256, 257], "the DNSKEY RRset holds the ZSK and the KSK");
        for (qname, qtype, covered) in [
            ("mail.example.com.", RecordType::A, RecordType::A),
            ("example.com.", RecordType::SOA, RecordType::SOA),
            ("mail.example.com.", RecordType::TXT, RecordType::NSEC),
            ("mail.example.com.", RecordType::TXT, RecordType::SOA),
            ("missing.example.com.", RecordType::A, RecordType::NSEC),
            ("missing.example.com.", RecordType::A, RecordType::SOA),
        ] {
            let (tags, _) = rrsig_tags(addr, qname, qtype, covered);
            assert_eq!(
                tags,
                [zsk.key_tag()],
                "{qname} {qtype}: the {covered} RRset is signed by the ZSK"
            );
        }
        let anchors = ds_anchor_file(&dir, &ksk);
        for (qname, qtype, expect) in [
            ("example.com", "DNSKEY", "; fully validated"),
            ("example.com", "SOA", "; fully validated"),
            ("mail.example.com", "A", "; fully validated"),
            ("www.example.com", "A", "; fully validated"),
            (ROUTED, "AAAA", "fully validated"),
            ("missing.example.com", "A", "; negative response, fully validated"),
            ("b.c.example.com", "A", "; negative response, fully validated"),
            ("mail.example.com", "TXT", "; negative response, fully validated"),
            ("host.wild.example.com", "TXT", "; fully validated"),
            ("sub.example.com", "DS", "; negative response, fully validated"),
        ] {
            assert_validated(addr, &anchors, qname, qtype, expect);
        }
        let report = dnssec_verify_with(&dir, &axfr(server.tcp_addrs()[0]), &[]);
        println!("{algorithm:?} KSK+ZSK dnssec-verify: {}", report.trim());
        assert!(
            report.contains("KSKs: 1 active, 0 stand-by") && report.contains("ZSKs: 1 active, 0 stand-by"),
            "{report}"
        );
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// A ZSK rollover by pre-publication (RFC 6781 §4.1.1.1, RFC 7583 §3.2.1)
/// seen by one validating Unbound trusting the KSK's DS: ZSK1 signs with
/// ZSK2 published (standby); then ZSK2 signs with ZSK1 still published;
/// then ZSK1 is gone. Unbound answers with AD at every step, cached
/// DNSKEY RRset and all, never SERVFAIL; the AXFR verifies at every step.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zsk_rollover_by_prepublication_keeps_validating() {
    let dir = temp_dir("dnssec-zsk-roll");
    let algorithm = DnssecAlgorithm::EcdsaP256Sha256;
    let (mut zone, ksk, zsk1) = split_zone(algorithm);
    let zsk2 = new_key(algorithm, 256);
    if let Some(config) = &mut zone.dnssec {
        config.standby = vec![zsk2.clone()];
        config.check().unwrap();
    }
    let (server, addr, store) = serve(zone.clone()).await;
    let tcp = server.tcp_addrs()[0];
    let apex = name("example.com.");
    let unbound = Unbound::start_with_anchor(&dir, addr, &ksk.ds_record(&apex, 60).unwrap());
    let ask = |qname: &str, qtype: &str, status: &str, step: &str| {
        let mut last = (String::new(), false, String::new());
        for _ in 0..60 {
            last = unbound.dig(qname, qtype);
            if !last.0.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let (got, ad, text) = last;
        assert!(
            got == status && ad,
            "{step}: {qname} {qtype}: want {status} with AD:\n{text}"
        );
    };
    // Step 1: ZSK1 active, ZSK2 pre-published; Unbound caches the DNSKEY RRset.
    let step = "ZSK1 active, ZSK2 standby";
    ask("example.com", "DNSKEY", "NOERROR", step);
    ask("mail.example.com", "A", "NOERROR", step);
    ask("missing.example.com", "A", "NOERROR", step);
    assert_eq!(
        rrsig_tags(addr, "mail.example.com.", RecordType::A, RecordType::A).0,
        [zsk1.key_tag()]
    );
    assert_eq!(
        rrsig_tags(addr, "example.com.", RecordType::DNSKEY, RecordType::DNSKEY).1,
        [256, 256, 257]
    );
    let report = dnssec_verify_with(&dir, &axfr(tcp), &[]);
    assert!(report.contains("ZSKs: 1 active, 1 stand-by"), "{report}");
    // Step 2: ZSK2 active, ZSK1 kept published. Names Unbound has not
    // cached are signed by ZSK2 and validate with the cached DNSKEY RRset.
    let mut rolled = zone.clone();
    if let Some(config) = &mut rolled.dnssec {
        config.zone_signing_key = Some(zsk2.clone());
        config.standby = vec![zsk1.clone()];
        config.check().unwrap();
    }
    let serial = store.load().zones()[0].serial;
    let outcome = store.publish(vec![rolled.clone()]);
    assert!(outcome.changed && fedns_dnsserver::serial_gt(outcome.zones[0].serial, serial));
    assert_eq!(
        rrsig_tags(addr, "www.example.com.", RecordType::A, RecordType::CNAME).0,
        [zsk2.key_tag()]
    );
    let step = "ZSK2 active, ZSK1 standby";
    for (qname, qtype) in [
        ("www.example.com", "A"),
        ("example.com", "MX"),
        (ROUTED, "A"),
        ("mail.example.com", "TXT"),
        ("other-missing.example.com", "A"),
        ("mail.example.com", "A"),
    ] {
        ask(qname, qtype, "NOERROR", step);
    }
    let report = dnssec_verify_with(&dir, &axfr(tcp), &[]);
    assert!(report.contains("ZSKs: 1 active, 1 stand-by"), "{report}");
    // Step 3: ZSK1 removed (after the DNSKEY TTL and the zone's longest TTL).
    if let Some(config) = &mut rolled.dnssec {
        config.standby.clear();
    }
    assert!(store.publish(vec![rolled]).changed);
    assert_eq!(
        rrsig_tags(addr, "example.com.", RecordType::DNSKEY, RecordType::DNSKEY).1,
        [256, 257]
    );
    let step = "ZSK2 alone";
    ask("host.wild.example.com", "A", "NOERROR", step);
    ask("third-missing.example.com", "A", "NOERROR", step);
    let report = dnssec_verify_with(&dir, &axfr(tcp), &[]);
    assert!(report.contains("ZSKs: 1 active, 0 stand-by"), "{report}");
    println!("ZSK rollover: Unbound answered with AD before, during and after");
    drop(unbound);
    std::fs::remove_dir_all(&dir).ok();
}

/// `denial: NSEC`: a name that does not exist is denied by pre-signed
/// links of the zone's NSEC chain (RFC 4035 §3.1.3.2): NXDOMAIN with the
/// NSEC covering the name and the one covering the wildcard at its
/// closest encloser, validated by `delv` (before the first name, after
/// the last where the chain wraps, below an existing name) and by Unbound
/// (AD). The same question twice gets the same signature bytes (ECDSA
/// signatures are randomised: nothing was signed per query). After an
/// incremental publish adds a name, the chain follows.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nsec_chain_denies_with_presigned_links() {
    let dir = temp_dir("dnssec-nsec");
    let (mut zone, key) = signed_zone(DnssecAlgorithm::EcdsaP256Sha256);
    if let Some(config) = &mut zone.dnssec {
        config.denial = DenialOfExistence::Nsec;
    }
    let (_server, addr, store) = serve(zone.clone()).await;
    let anchors = anchor_file(&dir, &key);
    let started = std::time::Instant::now();
    let negative = "; negative response, fully validated";
    let checks = [
        ("missing.example.com", "A", negative),
        ("0.example.com", "A", negative),
        ("zzzz.example.com", "A", negative),
        ("a.b.mail.example.com", "AAAA", negative),
        ("mail.example.com", "TXT", negative),
        ("mail.example.com", "A", "; fully validated"),
        ("www.example.com", "A", "; fully validated"),
        ("host.wild.example.com", "TXT", "; fully validated"),
    ];
    for (qname, qtype, expect) in checks {
        assert_validated(addr, &anchors, qname, qtype, expect);
    }
    let ask = |qname: &str| query_udp(addr, &simple_query(qname, RecordType::A, Some((1232, true)))).unwrap();
    let first = ask("missing.example.com.");
    assert_eq!(first.metadata.response_code, ResponseCode::NXDomain, "{first:?}");
    let nsecs: Vec<String> = first
        .authorities
        .iter()
        .filter(|r| r.record_type() == RecordType::NSEC)
        .map(ToString::to_string)
        .collect();
    assert!(
        !nsecs.is_empty() && nsecs.iter().all(|n| !n.contains("\\000")),
        "chain links, not compact-denial NSECs: {nsecs:?}"
    );
    assert_eq!(verify_all(&first, &key), 1 + nsecs.len(), "every RRSIG verifies");
    assert_eq!(rrsigs(&ask("missing.example.com.")), rrsigs(&first), "signed per query");
    let unbound = Unbound::start(&dir, addr, &key);
    for qname in ["missing.example.com", "zzzz.example.com"] {
        let mut last = (String::new(), false, String::new());
        for _ in 0..60 {
            last = unbound.dig(qname, "A");
            if !last.0.is_empty() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(100));
        }
        let (status, ad, text) = last;
        assert!(
            status == "NXDOMAIN" && ad,
            "Unbound {qname}: want NXDOMAIN with AD:\n{text}"
        );
    }
    drop(unbound);
    // A new name: it answers, and its neighbours' denial follows the chain.
    zone.records.push(Record::from_rdata(
        name("missing.example.com."),
        30,
        rdata(RecordType::A, "192.0.2.99"),
    ));
    assert!(store.publish(vec![zone]).changed);
    assert_validated(addr, &anchors, "missing.example.com", "A", "; fully validated");
    for qname in ["missing0.example.com", "missinf.example.com", "zzzz.example.com"] {
        assert_validated(addr, &anchors, qname, "A", negative);
    }
    println!(
        "NSEC chain: {} delv runs and 2 Unbound answers validated in {:?}",
        checks.len() + 4,
        started.elapsed()
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// An incremental publish in a zone denying by NSEC chain re-signs only
/// the links around the changed names: the link between two unchanged
/// names keeps its signature bytes, the new name answers, and the names
/// around it are denied by the new links.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nsec_chain_follows_incremental_publishing() {
    let dir = temp_dir("dnssec-nsec-incr");
    let apex = name("example.com.");
    let (zone, key) = two_name_zone(DenialOfExistence::Nsec);
    let (_server, addr, store) = serve(zone).await;
    let anchors = anchor_file(&dir, &key);
    let ask = |qname: &str| query_udp(addr, &simple_query(qname, RecordType::A, Some((1232, true)))).unwrap();
    // The link a -> b, apart from the SOA's signature (the serial moves).
    let link = |qname: &str| -> Vec<String> {
        let message = ask(qname);
        assert_eq!(message.metadata.response_code, ResponseCode::NXDomain, "{message:?}");
        message
            .authorities
            .iter()
            .filter(|r| r.name == name("a.example.com."))
            .map(ToString::to_string)
            .collect()
    };
    let before = link("a0.example.com.");
    assert_eq!(before.len(), 2, "the NSEC at a and its RRSIG: {before:?}");
    let outcome = store
        .publish_changes(vec![fedns_dnsserver::ZoneChanges {
            apex: apex.clone(),
            names: vec![(
                name("c.example.com."),
                vec![Record::from_rdata(
                    name("c.example.com."),
                    30,
                    rdata(RecordType::A, "192.0.2.3"),
                )],
            )],
            routed: Vec::new(),
        }])
        .expect("applied incrementally");
    assert!(outcome.changed);
    assert_eq!(link("a0.example.com."), before, "an unchanged link was signed again");
    assert_validated(addr, &anchors, "c.example.com", "A", "; fully validated");
    for qname in ["a0.example.com", "b0.example.com", "d.example.com", "0.example.com"] {
        assert_validated(addr, &anchors, qname, "A", "; negative response, fully validated");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// example.com signed with a new ECDSA P-256 CSK denying by `denial`,
/// with CNAMEs whose chains end in every kind of answer: `dangling` at a
/// name of the zone that does not exist, `chain` at an owner without the
/// type asked (NODATA), `*.wc` at an owner (a wildcard CNAME), `*.wcd` at
/// a name that does not exist; a wildcard `*.wn` with only TXT (wildcard
/// NODATA) and an empty non-terminal `ent` above `deep.ent`.
fn cname_zone(denial: DenialOfExistence) -> (ZoneContent, DnssecKey) {
    let (mut zone, key) = two_name_zone(denial);
    for (owner, rtype, data) in [
        ("dangling", RecordType::CNAME, "gone.example.com."),
        ("chain", RecordType::CNAME, "a.example.com."),
        ("*.wc", RecordType::CNAME, "a.example.com."),
        ("*.wcd", RecordType::CNAME, "gone2.example.com."),
        ("*.wn", RecordType::TXT, "wildcard"),
        ("deep.ent", RecordType::A, "192.0.2.9"),
    ] {
        zone.records.push(Record::from_rdata(
            name(&format!("{owner}.example.com.")),
            30,
            rdata(rtype, data),
        ));
    }
    (zone, key)
}

/// Asks Unbound `qname qtype` until it answers `status` with AD (a secure
/// answer), within a 30-second deadline; prints the time it took.
fn unbound_secure(unbound: &Unbound, qname: &str, qtype: &str, status: &str) {
    let started = std::time::Instant::now();
    let deadline = std::time::Duration::from_secs(30);
    loop {
        let (got, ad, text) = unbound.dig(qname, qtype);
        if got == status && ad {
            println!(
                "Unbound {qname} {qtype}: {status} with AD after {:?}",
                started.elapsed()
            );
            return;
        }
        if started.elapsed() > deadline {
            panic!(
                "Unbound {qname} {qtype}: want {status} with AD within {deadline:?}, got {got} (AD {ad}) after {:?}:\n{text}",
                started.elapsed()
            );
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
    }
}

/// The NSEC records of a DO answer from `addr`, as text, with its RCODE.
fn nsecs_of(addr: SocketAddr, qname: &str, qtype: RecordType) -> (ResponseCode, Vec<String>) {
    let message = query_udp(addr, &simple_query(qname, qtype, Some((1232, true)))).unwrap();
    let nsecs = message
        .authorities
        .iter()
        .filter(|r| r.record_type() == RecordType::NSEC)
        .map(ToString::to_string)
        .collect();
    (message.metadata.response_code, nsecs)
}

/// Questions of [`cname_zone`] with the RCODE Unbound must answer them
/// with (AD) in each denial mode: (name, type, NSEC chain, compact).
const CNAME_CHECKS: [(&str, &str, &str, &str); 12] = [
    ("dangling.example.com", "A", "NXDOMAIN", "NOERROR"),
    ("gone.example.com", "A", "NXDOMAIN", "NOERROR"),
    ("chain.example.com", "AAAA", "NOERROR", "NOERROR"),
    ("chain.example.com", "A", "NOERROR", "NOERROR"),
    ("a.example.com", "AAAA", "NOERROR", "NOERROR"),
    ("host.wc.example.com", "A", "NOERROR", "NOERROR"),
    ("host.wc.example.com", "AAAA", "NOERROR", "NOERROR"),
    ("host.wcd.example.com", "A", "NXDOMAIN", "NOERROR"),
    ("host.wn.example.com", "A", "NOERROR", "NOERROR"),
    ("host.wn.example.com", "TXT", "NOERROR", "NOERROR"),
    ("ent.example.com", "A", "NOERROR", "NOERROR"),
    ("dangling.example.com", "TXT", "NXDOMAIN", "NOERROR"),
];

/// `denial: NSEC`: every denial is made of chain links, the one at the
/// end of a CNAME chain included (RFC 4035 §3.1.3): a CNAME to a name that
/// does not exist is NXDOMAIN with the NSECs covering the target and its
/// wildcard (RFC 6604 §2), NODATA carries the owner's own link, wildcard
/// NODATA the covering and the wildcard's links. No compact-denial NSEC
/// (`\000.<name>`) ever appears, and no owner has two NSEC RRsets.
/// Unbound validates every answer as secure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nsec_chain_denies_after_cnames() {
    let dir = temp_dir("dnssec-nsec-cname");
    let (zone, key) = cname_zone(DenialOfExistence::Nsec);
    let (_server, addr, _store) = serve(zone).await;
    let mut nsec_by_owner: std::collections::BTreeMap<String, std::collections::BTreeSet<String>> =
        std::collections::BTreeMap::new();
    for (qname, qtype, status, _) in CNAME_CHECKS {
        let rtype: RecordType = qtype.parse().unwrap();
        let (rcode, nsecs) = nsecs_of(addr, &format!("{qname}."), rtype);
        let want = if status == "NXDOMAIN" {
            ResponseCode::NXDomain
        } else {
            ResponseCode::NoError
        };
        assert_eq!(rcode, want, "{qname} {qtype}: {nsecs:?}");
        for nsec in nsecs {
            assert!(
                !nsec.contains("\\000"),
                "{qname} {qtype}: a compact-denial NSEC: {nsec}"
            );
            let owner = nsec.split_whitespace().next().unwrap().to_owned();
            nsec_by_owner.entry(owner).or_default().insert(nsec);
        }
        let message = query_udp(addr, &simple_query(&format!("{qname}."), rtype, Some((1232, true)))).unwrap();
        assert!(verify_all(&message, &key) > 0, "{qname} {qtype}: signed");
    }
    for (owner, sets) in &nsec_by_owner {
        assert_eq!(sets.len(), 1, "one NSEC RRset at {owner}: {sets:?}");
    }
    let unbound = Unbound::start(&dir, addr, &key);
    let started = std::time::Instant::now();
    for (qname, qtype, status, _) in CNAME_CHECKS {
        unbound_secure(&unbound, qname, qtype, status);
    }
    println!(
        "NSEC chain after CNAMEs: {} answers secure in {:?}",
        CNAME_CHECKS.len(),
        started.elapsed()
    );
    drop(unbound);
    std::fs::remove_dir_all(&dir).ok();
}

/// Compact denial (RFC 9824): the same CNAME chains, wildcard CNAMEs and
/// wildcard NODATA; a name that does not exist is NOERROR with its
/// compact-denial NSEC, at the end of a CNAME chain too. Unbound
/// validates every answer as secure.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compact_denial_after_cnames() {
    let dir = temp_dir("dnssec-compact-cname");
    let (zone, key) = cname_zone(DenialOfExistence::default());
    let (_server, addr, _store) = serve(zone).await;
    let unbound = Unbound::start(&dir, addr, &key);
    let started = std::time::Instant::now();
    for (qname, qtype, _, status) in CNAME_CHECKS {
        unbound_secure(&unbound, qname, qtype, status);
    }
    println!(
        "compact denial after CNAMEs: {} answers secure in {:?}",
        CNAME_CHECKS.len(),
        started.elapsed()
    );
    drop(unbound);
    std::fs::remove_dir_all(&dir).ok();
}

/// RFC 9824 §3.5: an explicit query for the NXNAME meta-type gets FORMERR
/// (the question echoed, no records), in compact mode with and without
/// DO and in NSEC mode, for a name that exists and one that does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nxname_query_is_formerr() {
    for denial in [DenialOfExistence::default(), DenialOfExistence::Nsec] {
        let (zone, _key) = two_name_zone(denial);
        let (_server, addr, _store) = serve(zone).await;
        for qname in ["a.example.com.", "missing.example.com.", "example.com."] {
            for edns in [Some((1232, true)), Some((1232, false)), None] {
                let response = query_udp(addr, &simple_query(qname, RecordType::Unknown(128), edns)).unwrap();
                assert_eq!(
                    response.metadata.response_code,
                    ResponseCode::FormErr,
                    "{denial:?} {qname} NXNAME {edns:?}: {response:?}"
                );
                assert_eq!(response.queries.len(), 1, "question echoed");
                assert!(response.answers.is_empty() && response.authorities.is_empty());
            }
        }
    }
}

/// A name of `len` octets in wire format (254 or 255) under example.com,
/// its first label `first` octets long (the others 63), all `a`.
fn long_name(len: usize, first: usize) -> String {
    let mut labels = vec!["a".repeat(first)];
    let mut used = 1 + first + 13; // + example.com's 13 octets
    while used < len {
        let label = (len - used - 1).min(63);
        labels.push("a".repeat(label));
        used += 1 + label;
    }
    assert_eq!(used, len, "{labels:?}");
    format!("{}.example.com.", labels.join("."))
}

/// Compact denial of the longest names (254 and 255 octets), for which
/// `\000.<qname>` would pass 255 octets: the NSEC's next name is the
/// name's immediate successor among names that can exist (RFC 4471
/// §3.1.2: a zero octet appended to the first label, or its last octet
/// incremented). The signature verifies and Unbound finds the answer
/// secure. In NSEC mode the chain denies them (NXDOMAIN, secure).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn longest_names_are_denied_securely() {
    let cases = [
        (long_name(254, 48), format!("{}\\000.", "a".repeat(48))),
        (long_name(255, 49), format!("{}b.", "a".repeat(48))),
        (long_name(254, 63), format!("{}b.", "a".repeat(62))),
    ];
    for denial in [DenialOfExistence::default(), DenialOfExistence::Nsec] {
        let dir = temp_dir("dnssec-long");
        let (zone, key) = two_name_zone(denial);
        let (_server, addr, _store) = serve(zone).await;
        let compact = denial == DenialOfExistence::default();
        for (qname, next_start) in &cases {
            let message = query_udp(addr, &simple_query(qname, RecordType::A, Some((1232, true)))).unwrap();
            let want = if compact {
                ResponseCode::NoError
            } else {
                ResponseCode::NXDomain
            };
            assert_eq!(message.metadata.response_code, want, "{denial:?} {qname}: {message:?}");
            let nsecs: Vec<String> = message
                .authorities
                .iter()
                .filter(|r| r.record_type() == RecordType::NSEC)
                .map(ToString::to_string)
                .collect();
            assert!(!nsecs.is_empty(), "{qname}: {message:?}");
            if compact {
                assert!(
                    nsecs[0].contains(&format!("NSEC {next_start}")),
                    "{qname}: next name: {nsecs:?}"
                );
            }
            assert_eq!(
                verify_all(&message, &key),
                1 + nsecs.len(),
                "{qname}: every RRSIG verifies"
            );
        }
        let unbound = Unbound::start(&dir, addr, &key);
        let status = if compact { "NOERROR" } else { "NXDOMAIN" };
        for (qname, _) in &cases {
            unbound_secure(&unbound, qname.trim_end_matches('.'), "A", status);
        }
        drop(unbound);
        std::fs::remove_dir_all(&dir).ok();
    }
}

/// `denial: NSEC` and incremental publishing: answers built earlier that
/// carry a link (an owner's NODATA, the NXDOMAIN at the end of a CNAME
/// chain) carry the new link once a name is added next to it, never the
/// old one (which would deny the new name).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn nsec_chain_negative_answers_follow_incremental_publishing() {
    let apex = name("example.com.");
    let (mut zone, key) = two_name_zone(DenialOfExistence::Nsec);
    zone.records.push(Record::from_rdata(
        name("dangling.example.com."),
        30,
        rdata(RecordType::CNAME, "gone.example.com."),
    ));
    let (_server, addr, store) = serve(zone).await;
    let nodata = nsecs_of(addr, "a.example.com.", RecordType::AAAA);
    assert_eq!(nodata.1.len(), 1, "{nodata:?}");
    assert!(nodata.1[0].contains("NSEC b.example.com."), "{nodata:?}");
    let dangling = nsecs_of(addr, "dangling.example.com.", RecordType::A);
    assert_eq!(dangling.0, ResponseCode::NXDomain, "{dangling:?}");
    assert!(
        dangling
            .1
            .iter()
            .any(|n| n.starts_with("dangling.example.com.") && n.contains("NSEC example.com.")),
        "gone sorts after dangling, the last name: {dangling:?}"
    );
    let added = |owner: &str| {
        (
            name(owner),
            vec![Record::from_rdata(name(owner), 30, rdata(RecordType::A, "192.0.2.7"))],
        )
    };
    store
        .publish_changes(vec![fedns_dnsserver::ZoneChanges {
            apex: apex.clone(),
            names: vec![added("aa.example.com."), added("gonf.example.com.")],
            routed: Vec::new(),
        }])
        .expect("applied incrementally");
    let nodata = nsecs_of(addr, "a.example.com.", RecordType::AAAA);
    assert!(nodata.1[0].contains("NSEC aa.example.com."), "the new link: {nodata:?}");
    let dangling = nsecs_of(addr, "dangling.example.com.", RecordType::A);
    assert!(
        dangling
            .1
            .iter()
            .any(|n| n.starts_with("dangling.example.com.") && n.contains("NSEC gonf.example.com.")),
        "the new covering link: {dangling:?}"
    );
    for (qname, qtype) in [
        ("a.example.com.", RecordType::AAAA),
        ("dangling.example.com.", RecordType::A),
    ] {
        let message = query_udp(addr, &simple_query(qname, qtype, Some((1232, true)))).unwrap();
        let rrsigs = message
            .authorities
            .iter()
            .filter(|r| r.record_type() == RecordType::RRSIG)
            .count();
        assert_eq!(
            verify_all(&message, &key),
            rrsigs + message.answers.len() / 2,
            "{qname}: {message:?}"
        );
    }
}
