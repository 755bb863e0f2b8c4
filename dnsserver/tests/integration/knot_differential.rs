//! Differential tests: the same zones served by fedns and by Knot DNS
//! (Debian `knot`, started here on a loopback port), the same questions
//! asked of both; RCODE, the AA/TC/RA flags and the answer and authority
//! RRsets must match. TTLs are compared too. Every remaining difference is
//! listed in `EXPECTED_DIFFERENCES` with the RFC section that allows it.

use std::net::SocketAddr;

use crate::common::*;
use fedns_dnsserver::hickory_proto::op::Message;
use fedns_dnsserver::hickory_proto::rr::RecordType;
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneStore};

#[derive(Debug, Clone, Copy, PartialEq)]
enum Via {
    Udp,
    Tcp,
}

struct Case {
    qname: &'static str,
    qtype: RecordType,
    edns: EdnsOpt,
    via: Via,
}

const fn q(qname: &'static str, qtype: RecordType) -> Case {
    Case {
        qname,
        qtype,
        edns: Some((1232, false)),
        via: Via::Udp,
    }
}
const fn plain(qname: &'static str, qtype: RecordType) -> Case {
    Case {
        qname,
        qtype,
        edns: None,
        via: Via::Udp,
    }
}
const fn tcp(qname: &'static str, qtype: RecordType) -> Case {
    Case {
        qname,
        qtype,
        edns: Some((1232, false)),
        via: Via::Tcp,
    }
}
const fn edns(qname: &'static str, qtype: RecordType, payload: u16, dnssec_ok: bool) -> Case {
    Case {
        qname,
        qtype,
        edns: Some((payload, dnssec_ok)),
        via: Via::Udp,
    }
}

fn cases() -> Vec<Case> {
    use RecordType::*;
    vec![
        // Exact matches.
        q("nginx.ns.myfed.svc.example.com.", A),
        q("nginx.ns.myfed.svc.example.com.", AAAA),
        plain("nginx.ns.myfed.svc.example.com.", A),
        q("nginx.ns.myfed.svc.us-east-1.example.com.", A),
        q("nginx.ns.myfed.svc.us-east-1a.us-east-1.example.com.", A),
        q("text.example.com.", TXT),
        q("example.com.", MX),
        q("example.com.", TXT),
        q("_http._tcp.nginx.example.com.", SRV),
        // CNAME chains inside the zone, to outside, dangling, looping.
        q("nginx.ns.myfed.svc.us-west-2.example.com.", A),
        q("nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com.", A),
        q("nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com.", AAAA),
        q("nginx.ns.myfed.svc.us-west-2a.us-west-2.example.com.", TXT),
        q("www.example.com.", A),
        q("www.example.com.", CNAME),
        q("external.example.com.", A),
        q("dangling.example.com.", A),
        q("loop1.example.com.", A),
        // NXDOMAIN and NODATA.
        q("nothing.example.com.", A),
        q("deep.nothing.example.com.", AAAA),
        q("nginx.ns.myfed.svc.example.com.", TXT),
        q("nginx.ns.myfed.svc.example.com.", MX),
        q("www.example.com.", TXT),
        q("example.org.", A),
        // Empty non-terminals.
        q("b.c.example.com.", A),
        q("c.example.com.", TXT),
        q("svc.example.com.", A),
        q("myfed.svc.example.com.", AAAA),
        // Apex.
        q("example.com.", SOA),
        q("example.com.", NS),
        q("example.org.", SOA),
        // Out of zone.
        q("example.net.", A),
        q("www.example.net.", A),
        q("com.", SOA),
        // Case: asked in mixed case, echoed as asked.
        q("NGINX.ns.MyFed.SVC.Example.COM.", A),
        q("WwW.ExAmPlE.cOm.", A),
        q("Nothing.Example.Com.", A),
        // Wildcards (RFC 4592).
        q("foo.wild.example.com.", A),
        q("foo.wild.example.com.", TXT),
        q("foo.wild.example.com.", AAAA),
        q("wild.example.com.", A),
        // Delegation.
        q("sub.example.com.", A),
        q("host.sub.example.com.", A),
        q("sub.example.com.", NS),
        // Large answers: with and without EDNS, TCP.
        plain("medium.example.com.", A),
        q("medium.example.com.", A),
        q("big.example.com.", A),
        edns("big.example.com.", A, 4096, false),
        edns("medium.example.com.", A, 512, false),
        tcp("big.example.com.", A),
        tcp("nginx.ns.myfed.svc.example.com.", A),
        tcp("nothing.example.com.", A),
        // DO bit echoed.
        edns("nginx.ns.myfed.svc.example.com.", A, 1232, true),
        // Cross-zone CNAME.
        q("cross.example.com.", A),
        q("alias.example.org.", A),
        // ANY (RFC 8482).
        q("nginx.ns.myfed.svc.example.com.", ANY),
        tcp("nginx.ns.myfed.svc.example.com.", ANY),
    ]
}

/// Differences that remain, each allowed by an RFC. (qname, qtype, what).
const EXPECTED_DIFFERENCES: &[(&str, RecordType, &str)] = &[];

fn ask(addr: SocketAddr, case: &Case, packet: &[u8]) -> Message {
    match case.via {
        Via::Udp => query_udp(addr, packet),
        Via::Tcp => query_tcp(addr, packet),
    }
    .unwrap_or_else(|e| panic!("{addr} {} {}: {e}", case.qname, case.qtype))
}

fn describe(m: &Message) -> String {
    format!(
        "rcode={:?} aa={} tc={} ra={} edns={:?}\n  answer={:#?}\n  authority={:#?}",
        m.metadata.response_code,
        m.metadata.authoritative,
        m.metadata.truncation,
        m.metadata.recursion_available,
        m.edns
            .as_ref()
            .map(|e| (e.max_payload(), e.flags().dnssec_ok, e.rcode_high())),
        rrs(&m.answers),
        rrs(&m.authorities)
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_match_knot() {
    let store = ZoneStore::new();
    let outcome = store.publish(fixture_zones());
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);
    let serials: Vec<u32> = outcome.zones.iter().map(|z| z.serial).collect();
    let zones: Vec<_> = fixture_zones()
        .into_iter()
        .map(|z| {
            let serial = outcome
                .zones
                .iter()
                .find(|s| s.apex == z.apex.to_ascii())
                .unwrap()
                .serial;
            (z, serial)
        })
        .collect();
    assert_eq!(serials.len(), 2);
    let knot = tokio::task::spawn_blocking(move || Knot::start(&zones)).await.unwrap();
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let ours = server.udp_addrs()[0];
    let knot_addr = knot.addr;

    let report = tokio::task::spawn_blocking(move || {
        let mut failures = Vec::new();
        let cases = cases();
        assert!(cases.len() >= 40);
        for case in &cases {
            let packet = simple_query(case.qname, case.qtype, case.edns);
            let a = ask(ours, case, &packet);
            let b = ask(knot_addr, case, &packet);
            let same = a.metadata.response_code == b.metadata.response_code
                && a.metadata.authoritative == b.metadata.authoritative
                && a.metadata.truncation == b.metadata.truncation
                && a.metadata.recursion_available == b.metadata.recursion_available
                && a.edns.is_some() == b.edns.is_some()
                && a.edns.as_ref().map(|e| e.flags().dnssec_ok) == b.edns.as_ref().map(|e| e.flags().dnssec_ok)
                && rrs(&a.answers) == rrs(&b.answers)
                && rrs(&a.authorities) == rrs(&b.authorities)
                && a.queries
                    .iter()
                    .map(|q| q.name.to_ascii())
                    .eq(b.queries.iter().map(|q| q.name.to_ascii()))
                && a.queries.first().map(|q| q.name.to_ascii()).as_deref() == Some(case.qname)
                && a.metadata.id == b.metadata.id;
            let expected = EXPECTED_DIFFERENCES
                .iter()
                .any(|(n, t, _)| n.eq_ignore_ascii_case(case.qname) && *t == case.qtype);
            if !same && !expected {
                failures.push(format!(
                    "{} {} {:?} {:?}\n fedns: {}\n knot:  {}",
                    case.qname,
                    case.qtype,
                    case.via,
                    case.edns,
                    describe(&a),
                    describe(&b)
                ));
            }
        }
        println!("compared {} questions with Knot DNS", cases.len());
        failures
    })
    .await
    .unwrap();
    server.shutdown().await;
    drop(knot);
    assert!(
        report.is_empty(),
        "{} differences:\n{}",
        report.len(),
        report.join("\n\n")
    );
}

/// Requests a client library would not send: odd opcodes and counts,
/// EDNS errors, other classes. Compared on RCODE, flags and whether the
/// question and OPT are echoed.
fn raw_cases() -> Vec<(&'static str, Vec<u8>)> {
    let base = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, Some((1232, false)));
    let plain = simple_query("nginx.ns.myfed.svc.example.com.", RecordType::A, None);
    let mut cases = Vec::new();

    let mut status = plain.clone();
    status[2] = (status[2] & 0x87) | (2 << 3); // opcode STATUS
    cases.push(("opcode STATUS", status));

    let mut iquery = plain.clone();
    iquery[2] = (iquery[2] & 0x87) | (1 << 3); // opcode IQUERY (obsolete, RFC 3425)
    cases.push(("opcode IQUERY", iquery));

    let mut no_question = plain[..12].to_vec();
    no_question[5] = 0;
    cases.push(("QDCOUNT 0", no_question));

    let mut two = plain.clone();
    two[5] = 2;
    two.extend_from_slice(&plain[12..]);
    cases.push(("QDCOUNT 2", two));

    let mut badvers = base.clone();
    let opt = badvers.len() - 11;
    badvers[opt + 6] = 1; // EDNS version 1
    cases.push(("EDNS version 1", badvers));

    let mut two_opts = base.clone();
    two_opts[11] = 2;
    two_opts.extend_from_slice(&base[base.len() - 11..]);
    cases.push(("two OPT RRs", two_opts));

    let mut cut = plain.clone();
    cut.truncate(20);
    cases.push(("question cut short", cut));

    let mut chaos = simple_query("version.bind.", RecordType::TXT, None);
    let n = chaos.len();
    chaos[n - 1] = 3; // class CH
    cases.push(("class CH", chaos));

    let mut small_payload = base.clone();
    let opt = small_payload.len() - 11;
    small_payload[opt + 3] = 0;
    small_payload[opt + 4] = 100; // advertises 100 octets: treated as 512
    cases.push(("EDNS payload 100", small_payload));

    cases
}

fn flags_of(bytes: &[u8]) -> String {
    match Message::from_vec(bytes) {
        Ok(m) => format!(
            "rcode={:?}(high {:?}) aa={} tc={} rd={} qd={} an={} ns={} edns={}",
            m.metadata.response_code,
            m.edns.as_ref().map(|e| e.rcode_high()),
            m.metadata.authoritative,
            m.metadata.truncation,
            m.metadata.recursion_desired,
            m.queries.len(),
            m.answers.len(),
            m.authorities.len(),
            m.edns.is_some()
        ),
        Err(_) => format!("undecodable header={:02x?}", &bytes[..bytes.len().min(12)]),
    }
}

/// Where fedns answers odd requests differently from Knot 3.2, on purpose:
/// (case, what fedns sends, why).
const RAW_DIFFERENCES: &[(&str, &str, &str)] = &[
    (
        "QDCOUNT 2",
        "rcode=FormErr",
        "Knot drops it; RFC 1035 §4.1.1 defines FORMERR for a query the server cannot interpret, \
         and a 12-octet FORMERR amplifies nothing",
    ),
    (
        "question cut short",
        "rcode=FormErr",
        "Knot drops it; FORMERR as above (RFC 1035 §4.1.1), header only since no question can be echoed",
    ),
    (
        "class CH",
        "rcode=Refused",
        "Knot answers version.bind; RFC 4892 §2 makes server-identity answers optional and fedns \
         serves only class IN, so it refuses and tells no version",
    ),
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn odd_requests_match_knot() {
    let store = ZoneStore::new();
    let outcome = store.publish(fixture_zones());
    let zones: Vec<_> = fixture_zones()
        .into_iter()
        .map(|z| {
            let serial = outcome
                .zones
                .iter()
                .find(|s| s.apex == z.apex.to_ascii())
                .unwrap()
                .serial;
            (z, serial)
        })
        .collect();
    let knot = tokio::task::spawn_blocking(move || Knot::start(&zones)).await.unwrap();
    let config = ServerConfig {
        listen: vec!["127.0.0.1:0".parse().unwrap()],
        udp_workers: 1,
        ..ServerConfig::default()
    };
    let server = DnsServer::start(config, store, DnsMetrics::new()).await.unwrap();
    let ours = server.udp_addrs()[0];
    let knot_addr = knot.addr;
    let failures = tokio::task::spawn_blocking(move || {
        let mut failures = Vec::new();
        for (what, packet) in raw_cases() {
            let a = query_udp_raw(ours, &packet).map(|b| flags_of(&b));
            let b = query_udp_raw(knot_addr, &packet).map(|b| flags_of(&b));
            let (a, b) = (format!("{a:?}"), format!("{b:?}"));
            println!("{what}: fedns {a} | knot {b}");
            if let Some((_, ours_expected, _why)) = RAW_DIFFERENCES.iter().find(|(w, _, _)| *w == what) {
                if !a.contains(ours_expected) {
                    failures.push(format!("{what}: expected fedns to give {ours_expected}, got {a}"));
                }
                continue;
            }
            if a != b {
                failures.push(format!("{what}:\n fedns: {a}\n knot:  {b}"));
            }
        }
        failures
    })
    .await
    .unwrap();
    server.shutdown().await;
    drop(knot);
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
