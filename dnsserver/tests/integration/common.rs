//! Test helpers: a fixture zone, Knot DNS started on loopback with the same
//! records, our server, and a raw DNS client built on hickory-proto.

#![allow(dead_code)] // each test module uses a different subset

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use fedns_dnsserver::hickory_proto::op::{Edns, Message, MessageType, OpCode, Query};
use fedns_dnsserver::hickory_proto::rr::{Name, RData, Record, RecordType};
use fedns_dnsserver::{SoaFields, ZoneContent};

pub fn name(s: &str) -> Name {
    Name::from_ascii(s).unwrap()
}

pub fn rdata(rtype: RecordType, s: &str) -> RData {
    RData::try_from_str(rtype, s).unwrap_or_else(|e| panic!("{rtype} {s}: {e}"))
}

fn zone(apex: &str, records: &[(&str, u32, RecordType, &str)]) -> ZoneContent {
    let apex_name = name(apex);
    let mut zone = ZoneContent::new(apex_name.clone());
    zone.soa = SoaFields {
        mname: name(&format!("ns1.{apex}")),
        rname: name(&format!("hostmaster.{apex}")),
        refresh: 3600,
        retry: 600,
        expire: 1_209_600,
        minimum: 30,
        ttl: 60,
    };
    zone.name_servers = vec![name(&format!("ns1.{apex}")), name(&format!("ns2.{apex}"))];
    for (owner, ttl, rtype, data) in records {
        let owner = if owner.is_empty() {
            apex.to_owned()
        } else {
            format!("{owner}.{apex}")
        };
        zone.records
            .push(Record::from_rdata(name(&owner), *ttl, rdata(*rtype, data)));
    }
    zone
}

/// The fixture: two zones exercising every answer path.
pub fn fixture_zones() -> Vec<ZoneContent> {
    use RecordType::*;
    let g = "nginx.ns.myfed.svc.example.com.";
    let mut records: Vec<(String, u32, RecordType, String)> = vec![
        ("ns1".into(), 60, A, "192.0.2.1".into()),
        ("ns2".into(), 60, A, "192.0.2.2".into()),
        ("ns2".into(), 60, AAAA, "2001:db8::2".into()),
        ("".into(), 300, MX, "10 mail.example.com.".into()),
        ("mail".into(), 300, A, "192.0.2.25".into()),
        ("".into(), 300, TXT, "\"v=spf1 -all\"".into()),
        ("nginx.ns.myfed.svc".into(), 30, A, "203.0.113.10".into()),
        ("nginx.ns.myfed.svc".into(), 30, A, "198.51.100.20".into()),
        ("nginx.ns.myfed.svc".into(), 30, A, "203.0.113.11".into()),
        ("nginx.ns.myfed.svc".into(), 30, AAAA, "2001:db8::10".into()),
        ("nginx.ns.myfed.svc.us-east-1".into(), 30, A, "203.0.113.10".into()),
        ("nginx.ns.myfed.svc.us-east-1".into(), 30, A, "203.0.113.11".into()),
        (
            "nginx.ns.myfed.svc.us-east-1a.us-east-1".into(),
            30,
            A,
            "203.0.113.10".into(),
        ),
        ("nginx.ns.myfed.svc.us-west-2".into(), 30, CNAME, g.into()),
        (
            "nginx.ns.myfed.svc.us-west-2a.us-west-2".into(),
            30,
            CNAME,
            "nginx.ns.myfed.svc.us-west-2.example.com.".into(),
        ),
        ("www".into(), 30, CNAME, g.into()),
        ("external".into(), 30, CNAME, "target.example.net.".into()),
        ("dangling".into(), 30, CNAME, "missing.example.com.".into()),
        ("loop1".into(), 30, CNAME, "loop2.example.com.".into()),
        ("loop2".into(), 30, CNAME, "loop1.example.com.".into()),
        ("_http._tcp.nginx".into(), 30, SRV, "0 50 80 mail.example.com.".into()),
        ("a.b.c".into(), 30, A, "192.0.2.50".into()),
        ("*.wild".into(), 30, A, "192.0.2.60".into()),
        ("*.wild".into(), 30, TXT, "\"wildcard\"".into()),
        ("sub".into(), 3600, NS, "ns.sub.example.com.".into()),
        ("ns.sub".into(), 3600, A, "192.0.2.53".into()),
        ("cross".into(), 30, CNAME, "host.example.org.".into()),
        ("text".into(), 30, TXT, "\"hello world\" \"second string\"".into()),
    ];
    // 40 A records: about 700 octets, over 512 but under 1232.
    for i in 0..40 {
        records.push(("medium".into(), 30, A, format!("198.51.100.{}", i + 1)));
    }
    // 100 A records: about 1.7 KB, over 1232.
    for i in 0..100 {
        records.push(("big".into(), 30, A, format!("203.0.113.{}", i + 1)));
    }
    let records: Vec<(&str, u32, RecordType, &str)> = records
        .iter()
        .map(|(o, t, r, d)| (o.as_str(), *t, *r, d.as_str()))
        .collect();
    vec![
        zone("example.com.", &records),
        zone(
            "example.org.",
            &[("host", 30, A, "192.0.2.80"), ("alias", 30, CNAME, "www.example.com.")],
        ),
    ]
}

/// The zone as a master file (RFC 1035 §5) Knot reads.
pub fn zone_file(zone: &ZoneContent, serial: u32) -> String {
    let s = &zone.soa;
    let mut out = format!(
        "{} {} IN SOA {} {} {} {} {} {} {}\n",
        zone.apex, s.ttl, s.mname, s.rname, serial, s.refresh, s.retry, s.expire, s.minimum
    );
    for ns in &zone.name_servers {
        out.push_str(&format!("{} {} IN NS {}\n", zone.apex, s.ttl, ns));
    }
    for record in &zone.records {
        match &record.data {
            // hickory prints TXT strings unquoted; a master file needs quotes.
            RData::TXT(txt) => {
                let strings: Vec<String> = txt
                    .txt_data
                    .iter()
                    .map(|s| format!("\"{}\"", String::from_utf8_lossy(s)))
                    .collect();
                out.push_str(&format!(
                    "{} {} IN TXT {}\n",
                    record.name,
                    record.ttl,
                    strings.join(" ")
                ));
            }
            _ => out.push_str(&format!("{record}\n")),
        }
    }
    out
}

/// A loopback port free for UDP and TCP, never handed to another test of
/// this process ([`fedns_loopback::ports::free_loopback_port`]).
pub fn free_port() -> u16 {
    fedns_loopback::ports::free_loopback_port().expect("a free loopback port")
}

pub fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("fedns-{tag}-{}-{}", std::process::id(), free_port()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn find_binary(name: &str) -> PathBuf {
    for dir in ["/usr/sbin", "/usr/bin", "/usr/local/sbin", "/usr/local/bin"] {
        let path = Path::new(dir).join(name);
        if path.exists() {
            return path;
        }
    }
    panic!("{name} not found: install Debian package 'knot' (./scripts/test.sh does)");
}

/// knotd serving `zones` on a loopback port; killed on drop.
pub struct Knot {
    pub addr: SocketAddr,
    child: Child,
    dir: PathBuf,
}

impl Knot {
    pub fn start(zones: &[(ZoneContent, u32)]) -> Knot {
        let dir = temp_dir("knot");
        let port = free_port();
        let mut conf = format!(
            "server:\n  listen: 127.0.0.1@{port}\n  rundir: {d}\n  udp-workers: 1\n  tcp-workers: 1\n  background-workers: 1\n\
             control:\n  listen: {d}/knot.sock\n\
             database:\n  storage: {d}\n\
             log:\n  - target: stderr\n    any: error\n\
             template:\n  - id: default\n    storage: {d}\n    semantic-checks: off\n    zonefile-load: whole\n    journal-content: none\n\
             zone:\n",
            d = dir.display()
        );
        for (zone, serial) in zones {
            let apex = zone.apex.to_ascii();
            let file = dir.join(format!("{apex}zone"));
            std::fs::write(&file, zone_file(zone, *serial)).unwrap();
            conf.push_str(&format!("  - domain: {apex}\n    file: {}\n", file.display()));
        }
        let conf_path = dir.join("knot.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let child = Command::new(find_binary("knotd"))
            .arg("-c")
            .arg(&conf_path)
            .stdout(Stdio::null())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("start knotd");
        let addr = SocketAddr::from(([127, 0, 0, 1], port));
        let knot = Knot { addr, child, dir };
        // Ready when the apex SOA answers.
        let apex = zones[0].0.apex.to_ascii();
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Ok(m) = query_udp(addr, &simple_query(&apex, RecordType::SOA, None)) {
                if !m.answers.is_empty() {
                    break;
                }
            }
            assert!(Instant::now() < deadline, "knotd did not start serving within 20 s");
            std::thread::sleep(Duration::from_millis(100));
        }
        knot
    }
}

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// EDNS settings of a test query: (UDP payload, DO bit).
pub type EdnsOpt = Option<(u16, bool)>;

pub fn simple_query(qname: &str, qtype: RecordType, edns: EdnsOpt) -> Vec<u8> {
    let mut message = Message::new(0x1234, MessageType::Query, OpCode::Query);
    message.metadata.recursion_desired = true;
    message.add_query(Query::query(Name::from_ascii(qname).unwrap(), qtype));
    if let Some((payload, dnssec_ok)) = edns {
        let mut e = Edns::new();
        e.set_max_payload(payload);
        e.set_dnssec_ok(dnssec_ok);
        message.set_edns(e);
    }
    message.to_vec().unwrap()
}

pub fn query_udp_raw(addr: SocketAddr, packet: &[u8]) -> std::io::Result<Vec<u8>> {
    let socket = UdpSocket::bind("127.0.0.1:0")?;
    socket.set_read_timeout(Some(Duration::from_secs(2)))?;
    socket.send_to(packet, addr)?;
    let mut buf = vec![0u8; 65_535];
    let (len, _) = socket.recv_from(&mut buf)?;
    buf.truncate(len);
    Ok(buf)
}

pub fn query_udp(addr: SocketAddr, packet: &[u8]) -> std::io::Result<Message> {
    let bytes = query_udp_raw(addr, packet)?;
    Message::from_vec(&bytes).map_err(|e| std::io::Error::other(e.to_string()))
}

pub fn query_tcp_raw(addr: SocketAddr, packet: &[u8]) -> std::io::Result<Vec<u8>> {
    let mut stream = TcpStream::connect(addr)?;
    stream.set_read_timeout(Some(Duration::from_secs(2)))?;
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(packet);
    stream.write_all(&framed)?;
    let mut len = [0u8; 2];
    stream.read_exact(&mut len)?;
    let mut buf = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut buf)?;
    Ok(buf)
}

pub fn query_tcp(addr: SocketAddr, packet: &[u8]) -> std::io::Result<Message> {
    let bytes = query_tcp_raw(addr, packet)?;
    Message::from_vec(&bytes).map_err(|e| std::io::Error::other(e.to_string()))
}

/// A section as a sorted list of "name ttl class type rdata", names lower-cased.
pub fn rrs(records: &[Record]) -> Vec<String> {
    let mut lines: Vec<String> = records
        .iter()
        .filter(|r| r.record_type() != RecordType::OPT)
        .map(|r| {
            let mut r = r.clone();
            r.name = r.name.to_lowercase();
            r.to_string().to_lowercase()
        })
        .collect();
    lines.sort();
    lines
}
