//! moto's Route53 API (`pip install 'moto[server]'`), run as
//! `moto_server -H 127.0.0.1 -p <free port>` for one test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use aws_sdk_route53::config::{BehaviorVersion, Credentials, Region};
use aws_sdk_route53::Client;

use crate::free_port;

/// The access key id moto accepts (any works; this one says what it is).
pub const ACCESS_KEY: &str = "testing";
/// The secret moto accepts.
pub const SECRET_KEY: &str = "testing";

fn moto_server_binary() -> PathBuf {
    if let Some(path) = std::env::var_os("FEDNS_MOTO_SERVER") {
        return path.into();
    }
    let venv = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/moto_server");
    if venv.exists() {
        return venv;
    }
    if let Some(path) = std::env::var_os("PATH")
        .iter()
        .flat_map(std::env::split_paths)
        .map(|dir| dir.join("moto_server"))
        .find(|p| p.exists())
    {
        return path;
    }
    panic!("moto_server not found: ./scripts/test.sh installs moto[server] into target/venv");
}

/// A moto server on a loopback port, killed on drop.
pub struct Moto {
    port: u16,
    child: Child,
}

impl Moto {
    /// Starts moto and waits (30 s at most) until it answers.
    pub fn start() -> Moto {
        let port = free_port();
        let child = Command::new(moto_server_binary())
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start moto_server");
        let moto = Moto { port, child };
        let deadline = Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(Instant::now() < deadline, "moto_server did not start within 30 s");
            std::thread::sleep(Duration::from_millis(50));
        }
        moto
    }

    /// Its endpoint URL.
    pub fn url(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A Route53 client for `endpoint` with moto's credentials and no retries:
/// the test's own hand, to set up zones and read them back.
pub fn client(endpoint: &str) -> Client {
    let config = aws_sdk_route53::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new(ACCESS_KEY, SECRET_KEY, None, None, "moto"))
        .endpoint_url(endpoint)
        .http_client(aws_smithy_http_client::Builder::new().build_http())
        .build();
    Client::from_conf(config)
}

/// Creates a hosted zone named `name`; returns its id (without `/hostedzone/`).
pub async fn create_zone(client: &Client, name: &str) -> String {
    let response = client
        .create_hosted_zone()
        .name(name)
        .caller_reference(format!("fedns-test-{name}-{}", free_port()))
        .send()
        .await
        .expect("create hosted zone");
    let id = response.hosted_zone().expect("a hosted zone").id();
    id.trim_start_matches("/hostedzone/").to_owned()
}

/// Creates RRsets of one value each, TTL 300, as another tool would:
/// `(name, type, value in Route53's form)`.
pub async fn create_records(client: &Client, zone_id: &str, records: &[(&str, &str, &str)]) {
    use aws_sdk_route53::types::{Change, ChangeAction, ChangeBatch, ResourceRecord, ResourceRecordSet, RrType};
    let mut changes = Vec::new();
    for (name, t, value) in records {
        let rrset = ResourceRecordSet::builder()
            .name(*name)
            .r#type(RrType::from(*t))
            .ttl(300)
            .resource_records(ResourceRecord::builder().value(*value).build().expect("a record"))
            .build()
            .expect("an RRset");
        changes.push(
            Change::builder()
                .action(ChangeAction::Create)
                .resource_record_set(rrset)
                .build()
                .expect("a change"),
        );
    }
    client
        .change_resource_record_sets()
        .hosted_zone_id(zone_id)
        .change_batch(
            ChangeBatch::builder()
                .set_changes(Some(changes))
                .build()
                .expect("a batch"),
        )
        .send()
        .await
        .expect("create records");
}

/// Every RRset of a zone as (name without trailing dot, type, TTL, sorted
/// values; an ALIAS as `ALIAS <dns name> <zone id>`), sorted.
pub async fn records(client: &Client, zone_id: &str) -> Vec<(String, String, i64, Vec<String>)> {
    let mut out = Vec::new();
    let mut start: Option<(String, Option<aws_sdk_route53::types::RrType>)> = None;
    loop {
        let mut request = client.list_resource_record_sets().hosted_zone_id(zone_id);
        if let Some((name, t)) = &start {
            request = request.start_record_name(name).set_start_record_type(t.clone());
        }
        let response = request.send().await.expect("list records");
        for rrset in response.resource_record_sets() {
            let mut values: Vec<String> = match rrset.alias_target() {
                Some(alias) => vec![format!("ALIAS {} {}", alias.dns_name(), alias.hosted_zone_id())],
                None => rrset.resource_records().iter().map(|r| r.value().to_owned()).collect(),
            };
            values.sort();
            out.push((
                rrset.name().trim_end_matches('.').replace("\\052", "*"),
                rrset.r#type().as_str().to_owned(),
                rrset.ttl().unwrap_or(0),
                values,
            ));
        }
        match response.next_record_name() {
            Some(next) if response.is_truncated() => {
                start = Some((next.to_owned(), response.next_record_type().cloned()));
            }
            _ => break,
        }
    }
    out.sort();
    out
}
