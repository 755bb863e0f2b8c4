//! The Cloud DNS stand-in, driven through real HTTP on loopback with
//! hyper's client, as a provider would drive Cloud DNS.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use fedns_sandbox::clouddns::{CloudDns, CloudDnsConfig, Fault, Quota, RecordSet, Visibility};
use http_body_util::{BodyExt, Full};
use serde_json::{json, Value};
use tokio::io::{AsyncRead, AsyncWrite};
use tokio::net::TcpStream;

const PROJECT: &str = "fedns-test";
const TOKEN: &str = "test-token";

async fn start() -> CloudDns {
    start_with(CloudDnsConfig {
        tokens: vec![TOKEN.into()],
        change_delay: Duration::from_millis(300),
        ..CloudDnsConfig::default()
    })
    .await
}

async fn start_with(config: CloudDnsConfig) -> CloudDns {
    let dns = CloudDns::start(config).await.expect("start");
    dns.create_zone(PROJECT, "example", "example.com.", Visibility::Public)
        .expect("zone");
    dns
}

async fn send<S: AsyncRead + AsyncWrite + Unpin + Send + 'static>(
    stream: S,
    method: &str,
    uri: &str,
    token: Option<&str>,
    body: Option<&Value>,
) -> (u16, Value) {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let mut request = http::Request::builder()
        .method(method)
        .uri(uri)
        .header("host", "dns.googleapis.com");
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let bytes = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    if body.is_some() {
        request = request.header("content-type", "application/json");
    }
    let response = sender
        .send_request(request.body(Full::new(Bytes::from(bytes))).unwrap())
        .await
        .expect("request");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    let value = serde_json::from_slice(&body).unwrap_or_else(|_| json!(String::from_utf8_lossy(&body)));
    (status, value)
}

/// A GET of the zone list with one raw header.
async fn send_with_header(stream: TcpStream, name: &str, value: &str) -> (u16, Value) {
    let (mut sender, connection) = hyper::client::conn::http1::handshake(hyper_util::rt::TokioIo::new(stream))
        .await
        .expect("handshake");
    tokio::spawn(connection);
    let request = http::Request::builder()
        .uri(format!("/dns/v1/projects/{PROJECT}/managedZones"))
        .header("host", "dns.googleapis.com")
        .header(name, value)
        .body(Full::new(Bytes::new()))
        .unwrap();
    let response = sender.send_request(request).await.expect("request");
    let status = response.status().as_u16();
    let body = response.into_body().collect().await.expect("body").to_bytes();
    (status, serde_json::from_slice(&body).expect("JSON"))
}

/// One call with `token`; `path` is below `/dns/v1/projects/{PROJECT}`
/// unless it starts with `/dns/`.
async fn call_as(dns: &CloudDns, token: Option<&str>, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let uri = if path.starts_with("/dns/") {
        path.to_owned()
    } else {
        format!("/dns/v1/projects/{PROJECT}{path}")
    };
    let tcp = TcpStream::connect(dns.addr()).await.expect("connect");
    send(tcp, method, &uri, token, body).await
}

async fn call(dns: &CloudDns, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    call_as(dns, Some(TOKEN), method, path, body).await
}

async fn change(dns: &CloudDns, additions: Value, deletions: Value) -> (u16, Value) {
    call(
        dns,
        "POST",
        "/managedZones/example/changes",
        Some(&json!({"additions": additions, "deletions": deletions})),
    )
    .await
}

fn a(name: &str, ttl: u32, ips: &[&str]) -> Value {
    json!({"name": name, "type": "A", "ttl": ttl, "rrdatas": ips})
}

/// Asserts Google's error envelope with `code`, `reason`, `status`, and
/// returns its message.
fn expect_error(result: &(u16, Value), code: u16, reason: &str, status: &str) -> String {
    let (got, body) = result;
    assert_eq!(*got, code, "{body}");
    let error = &body["error"];
    assert_eq!(error["code"], code, "{body}");
    assert_eq!(error["status"], status, "{body}");
    assert_eq!(error["errors"][0]["domain"], "global", "{body}");
    assert_eq!(error["errors"][0]["reason"], reason, "{body}");
    assert_eq!(error["errors"][0]["message"], error["message"], "{body}");
    error["message"].as_str().unwrap().to_owned()
}

/// All pages of a list, with `maxResults`.
async fn all_pages(dns: &CloudDns, path: &str, field: &str, max: usize) -> (Vec<Value>, usize) {
    let mut items = Vec::new();
    let mut token: Option<String> = None;
    let mut pages = 0;
    loop {
        let separator = if path.contains('?') { '&' } else { '?' };
        let mut uri = format!("{path}{separator}maxResults={max}");
        if let Some(t) = &token {
            uri.push_str(&format!("&pageToken={t}"));
        }
        let (status, body) = call(dns, "GET", &uri, None).await;
        assert_eq!(status, 200, "{body}");
        let page = body[field].as_array().cloned().unwrap_or_default();
        assert!(page.len() <= max);
        items.extend(page);
        pages += 1;
        match body["nextPageToken"].as_str() {
            Some(t) => token = Some(t.to_owned()),
            None => return (items, pages),
        }
    }
}

#[tokio::test]
async fn clouddns_token_required() {
    let dns = start().await;
    let missing = call_as(&dns, None, "GET", "/managedZones", None).await;
    let message = expect_error(&missing, 401, "required", "UNAUTHENTICATED");
    assert!(
        message.contains("missing required authentication credential"),
        "{message}"
    );
    let wrong = call_as(&dns, Some("not-the-token"), "GET", "/managedZones", None).await;
    expect_error(&wrong, 401, "authError", "UNAUTHENTICATED");
    let tcp = TcpStream::connect(dns.addr()).await.unwrap();
    let (status, body) = send_with_header(tcp, "authorization", &format!("Basic {TOKEN}")).await;
    expect_error(&(status, body), 401, "authError", "UNAUTHENTICATED");
    // A failed call changes nothing and is not a change.
    let denied = call_as(
        &dns,
        None,
        "POST",
        "/managedZones/example/changes",
        Some(&json!({"additions": [a("x.example.com.", 60, &["192.0.2.1"])]})),
    )
    .await;
    assert_eq!(denied.0, 401);
    assert_eq!(dns.record_sets(PROJECT, "example").unwrap().len(), 2);
    let ok = call(&dns, "GET", "/managedZones", None).await;
    assert_eq!(ok.0, 200, "{}", ok.1);
    assert_eq!(ok.1["kind"], "dns#managedZonesListResponse");
}

#[tokio::test]
async fn clouddns_zones_list_by_dns_name_with_paging() {
    let dns = start().await;
    for i in 0..6 {
        dns.create_zone(
            PROJECT,
            &format!("zone-{i}"),
            &format!("z{}.example.org.", i % 3),
            Visibility::Public,
        )
        .unwrap();
    }
    let private = dns
        .create_zone(PROJECT, "internal", "corp.internal.", Visibility::Private)
        .unwrap();
    assert_eq!(private.name_servers, ["ns-gcp-private.googledomains.com."]);
    let (zones, pages) = all_pages(&dns, "/managedZones", "managedZones", 3).await;
    assert_eq!(zones.len(), 8);
    assert_eq!(pages, 3);
    let mut names: Vec<&str> = zones.iter().map(|z| z["name"].as_str().unwrap()).collect();
    names.sort_unstable();
    names.dedup();
    assert_eq!(names.len(), 8, "no zone twice across pages");

    let (filtered, _) = all_pages(&dns, "/managedZones?dnsName=z1.example.org.", "managedZones", 1).await;
    let filtered: Vec<&str> = filtered.iter().map(|z| z["name"].as_str().unwrap()).collect();
    assert_eq!(filtered, ["zone-1", "zone-4"]);

    let (status, zone) = call(&dns, "GET", "/managedZones/example", None).await;
    assert_eq!(status, 200);
    assert_eq!(zone["kind"], "dns#managedZone");
    assert_eq!(zone["dnsName"], "example.com.");
    assert_eq!(zone["visibility"], "public");
    assert_eq!(zone["nameServers"][0], "ns-cloud-a1.googledomains.com.");
    // By numeric id too.
    let by_id = call(
        &dns,
        "GET",
        &format!("/managedZones/{}", zone["id"].as_str().unwrap()),
        None,
    )
    .await;
    assert_eq!(by_id.1["name"], "example");
    let (_, internal) = call(&dns, "GET", "/managedZones/internal", None).await;
    assert_eq!(internal["visibility"], "private");

    let apex = dns.record_sets(PROJECT, "example").unwrap();
    assert_eq!(apex.len(), 2);
    assert_eq!(apex[0].rtype, "NS");
    assert_eq!(apex[0].rrdatas.len(), 4);
    assert_eq!(
        apex[1].rrdatas,
        ["ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 1 21600 3600 259200 300"]
    );

    let missing = call(&dns, "GET", "/managedZones/nope", None).await;
    let message = expect_error(&missing, 404, "notFound", "NOT_FOUND");
    assert!(message.contains("'nope'"), "{message}");
    let no_project = call(&dns, "GET", "/dns/v1/projects/other/managedZones", None).await;
    expect_error(&no_project, 404, "notFound", "NOT_FOUND");
    let bad_token = call(&dns, "GET", "/managedZones?pageToken=%25%25", None).await;
    expect_error(&bad_token, 400, "invalid", "INVALID_ARGUMENT");
}

#[tokio::test]
async fn clouddns_rrsets_paging_and_filters() {
    let dns = start().await;
    let additions: Vec<Value> = (0..23)
        .map(|i| a(&format!("h{i:02}.example.com."), 60, &["192.0.2.1"]))
        .chain([json!({"name": "h05.example.com.", "type": "TXT", "ttl": 60, "rrdatas": ["\"x\""]})])
        .collect();
    let (status, body) = change(&dns, json!(additions), json!([])).await;
    assert_eq!(status, 200, "{body}");
    let (all, pages) = all_pages(&dns, "/managedZones/example/rrsets", "rrsets", 7).await;
    assert_eq!(all.len(), 26, "23 A, 1 TXT, apex NS and SOA");
    assert_eq!(pages, 4);
    let stored: Vec<Value> = dns
        .record_sets(PROJECT, "example")
        .unwrap()
        .iter()
        .map(RecordSet::to_json)
        .collect();
    assert_eq!(all, stored, "pages, in order, are the zone");

    let (_, by_name) = call(&dns, "GET", "/managedZones/example/rrsets?name=h05.example.com.", None).await;
    assert_eq!(by_name["kind"], "dns#resourceRecordSetsListResponse");
    assert_eq!(by_name["rrsets"].as_array().unwrap().len(), 2);
    let (_, by_type) = call(
        &dns,
        "GET",
        "/managedZones/example/rrsets?name=h05.example.com.&type=TXT",
        None,
    )
    .await;
    assert_eq!(by_type["rrsets"].as_array().unwrap().len(), 1);
    assert_eq!(by_type["rrsets"][0]["rrdatas"][0], "\"x\"");
    let (_, none) = call(
        &dns,
        "GET",
        "/managedZones/example/rrsets?name=nothing.example.com.",
        None,
    )
    .await;
    assert!(none["rrsets"].as_array().unwrap().is_empty());
    assert!(none.get("nextPageToken").is_none());
    let type_alone = call(&dns, "GET", "/managedZones/example/rrsets?type=A", None).await;
    expect_error(&type_alone, 400, "invalid", "INVALID_ARGUMENT");
    let (status, one) = call(&dns, "GET", "/managedZones/example/rrsets/h07.example.com./A", None).await;
    assert_eq!(status, 200);
    assert_eq!(one["rrdatas"], json!(["192.0.2.1"]));
    let bad_max = call(&dns, "GET", "/managedZones/example/rrsets?maxResults=-1", None).await;
    expect_error(&bad_max, 400, "invalid", "INVALID_ARGUMENT");
}

fn policy_sets() -> Vec<Value> {
    vec![
        json!({"name": "wrr.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "wrr": {"items": [
                {"weight": 3.0, "rrdatas": ["192.0.2.10"]},
                {"weight": 1.0, "rrdatas": ["192.0.2.11", "192.0.2.12"]}
            ]}
        }}),
        json!({"name": "geo.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "geo": {"enableFencing": true, "items": [
                {"location": "europe-west1", "rrdatas": ["192.0.2.20"]},
                {"location": "us-east1", "rrdatas": ["192.0.2.21"]}
            ]}
        }}),
        json!({"name": "pb.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "primaryBackup": {
                "primaryTargets": {"externalEndpoints": ["192.0.2.30"]},
                "backupGeoTargets": {"items": [{"location": "us-east1", "rrdatas": ["192.0.2.31"]}]},
                "trickleTraffic": 0.1
            },
            "healthCheck": "https://www.googleapis.com/compute/v1/projects/fedns-test/global/healthChecks/hc"
        }}),
    ]
}

#[tokio::test]
async fn clouddns_change_records_and_routing_policies_read_back_exactly() {
    let dns = start().await;
    let mut sent = vec![
        a("www.example.com.", 300, &["192.0.2.1", "192.0.2.2"]),
        json!({"name": "www.example.com.", "type": "AAAA", "ttl": 300, "rrdatas": ["2001:db8::1"]}),
        json!({"name": "alias.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["lb.example.net."]}),
        json!({"name": "www.example.com.", "type": "TXT", "ttl": 300,
               "rrdatas": ["\"heritage=external-dns,external-dns/owner=x\""]}),
        json!({"name": "multi.example.com.", "type": "TXT", "ttl": 300,
               "rrdatas": ["\"part one\" \"part \\\"two\\\"\""]}),
        json!({"name": "*.wild.example.com.", "type": "A", "ttl": 300, "rrdatas": ["192.0.2.9"]}),
        json!({"name": "example.com.", "type": "MX", "ttl": 300, "rrdatas": ["10 mail.example.com."]}),
    ];
    sent.extend(policy_sets());
    let (status, response) = change(&dns, json!(sent), json!([])).await;
    assert_eq!(status, 200, "{response}");
    assert_eq!(response["kind"], "dns#change");
    assert_eq!(response["status"], "pending");
    assert_eq!(response["id"], "1", "change 0 created the zone");
    assert!(response["startTime"].as_str().unwrap().ends_with('Z'));
    assert!(response["deletions"].as_array().unwrap().is_empty());
    for (i, set) in sent.iter().enumerate() {
        let mut expected = set.clone();
        expected["kind"] = json!("dns#resourceRecordSet");
        assert_eq!(response["additions"][i], expected, "change echoes addition {i}");
        let name = set["name"].as_str().unwrap();
        let rtype = set["type"].as_str().unwrap();
        let (_, listed) = call(
            &dns,
            "GET",
            &format!("/managedZones/example/rrsets?name={name}&type={rtype}"),
            None,
        )
        .await;
        assert_eq!(listed["rrsets"], json!([expected]), "read back {name} {rtype}");
        assert!(listed["rrsets"][0].get("rrdatas").is_none() || set.get("routingPolicy").is_none());
    }
    // Deleting a routed record set needs its policy exactly (kinds aside).
    let mut wrr = policy_sets()[0].clone();
    wrr["routingPolicy"]["wrr"]["items"][0]["weight"] = json!(2.0);
    let stale = change(&dns, json!([]), json!([wrr])).await;
    expect_error(&stale, 412, "conditionNotMet", "FAILED_PRECONDITION");
    let mut wrr = policy_sets()[0].clone();
    wrr["kind"] = json!("dns#resourceRecordSet");
    wrr["routingPolicy"]["kind"] = json!("dns#rRSetRoutingPolicy");
    let (status, body) = change(&dns, json!([]), json!([wrr])).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn clouddns_change_pending_then_done() {
    let dns = start().await;
    dns.set_change_delay(Duration::from_secs(2));
    let (status, created) = change(&dns, json!([a("p.example.com.", 60, &["192.0.2.1"])]), json!([])).await;
    assert_eq!(status, 200, "{created}");
    assert_eq!(created["status"], "pending");
    let id = created["id"].as_str().unwrap().to_owned();
    // The record set is listed at once; the change is pending.
    let (_, listed) = call(&dns, "GET", "/managedZones/example/rrsets?name=p.example.com.", None).await;
    assert_eq!(listed["rrsets"].as_array().unwrap().len(), 1);
    let started = Instant::now();
    let deadline = started + Duration::from_secs(30);
    loop {
        let (status, got) = call(&dns, "GET", &format!("/managedZones/example/changes/{id}"), None).await;
        assert_eq!(status, 200, "{got}");
        assert_eq!(got["additions"], created["additions"]);
        if got["status"] == "done" {
            break;
        }
        assert_eq!(got["status"], "pending");
        assert!(Instant::now() < deadline, "change still pending after 30 s");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    println!("change {id} done after {:?}", started.elapsed());
    let (_, list) = call(&dns, "GET", "/managedZones/example/changes", None).await;
    assert_eq!(list["kind"], "dns#changesListResponse");
    let ids: Vec<&str> = list["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["0", &id]);
    let (_, descending) = call(
        &dns,
        "GET",
        "/managedZones/example/changes?sortOrder=descending&maxResults=1",
        None,
    )
    .await;
    assert_eq!(descending["changes"][0]["id"], id.as_str());
    assert!(descending["nextPageToken"].is_string());
    let missing = call(&dns, "GET", "/managedZones/example/changes/999", None).await;
    expect_error(&missing, 404, "notFound", "NOT_FOUND");
    assert_eq!(
        dns.changes(PROJECT, "example")
            .unwrap()
            .iter()
            .filter(|c| c.from_api)
            .count(),
        1
    );
}

#[tokio::test]
async fn clouddns_change_is_atomic() {
    let dns = start().await;
    let (status, body) = change(&dns, json!([a("keep.example.com.", 60, &["192.0.2.1"])]), json!([])).await;
    assert_eq!(status, 200, "{body}");
    let before = dns.record_sets(PROJECT, "example").unwrap();
    let changes_before = dns.changes(PROJECT, "example").unwrap().len();

    // Good deletion and additions, one deletion of a missing record set.
    let result = change(
        &dns,
        json!([
            a("new1.example.com.", 60, &["192.0.2.2"]),
            a("new2.example.com.", 60, &["192.0.2.3"])
        ]),
        json!([
            a("keep.example.com.", 60, &["192.0.2.1"]),
            a("ghost.example.com.", 60, &["192.0.2.4"])
        ]),
    )
    .await;
    let message = expect_error(&result, 404, "notFound", "NOT_FOUND");
    assert_eq!(
        message,
        "The 'entity.change.deletions[1]' resource named 'ghost.example.com. (A)' does not exist."
    );
    // A bad addition after good deletions.
    let result = change(
        &dns,
        json!([
            a("new1.example.com.", 60, &["192.0.2.2"]),
            a("new2.example.com.", 60, &["300.0.0.1"])
        ]),
        json!([a("keep.example.com.", 60, &["192.0.2.1"])]),
    )
    .await;
    let message = expect_error(&result, 400, "invalid", "INVALID_ARGUMENT");
    assert!(message.contains("entity.change.additions[1].rrdata[0]"), "{message}");
    // A stale deletion after a good one.
    dns.write_record_set(
        PROJECT,
        "example",
        RecordSet::new("other.example.com.", "A", 60, &["192.0.2.7"]),
    )
    .unwrap();
    let before_stale = dns.record_sets(PROJECT, "example").unwrap();
    let result = change(
        &dns,
        json!([]),
        json!([
            a("keep.example.com.", 60, &["192.0.2.1"]),
            a("other.example.com.", 60, &["192.0.2.8"])
        ]),
    )
    .await;
    expect_error(&result, 412, "conditionNotMet", "FAILED_PRECONDITION");
    assert_eq!(
        dns.record_sets(PROJECT, "example").unwrap(),
        before_stale,
        "nothing applied"
    );
    assert_eq!(before_stale.len(), before.len() + 1);
    assert_eq!(
        dns.changes(PROJECT, "example").unwrap().len(),
        changes_before + 1,
        "only the other writer's change was recorded"
    );
}

#[tokio::test]
async fn clouddns_stale_deletion_after_another_writer_is_412() {
    let dns = start().await;
    let ours = a("cas.example.com.", 60, &["192.0.2.1"]);
    assert_eq!(change(&dns, json!([ours.clone()]), json!([])).await.0, 200);
    // Another writer changes it behind our back.
    dns.write_record_set(
        PROJECT,
        "example",
        RecordSet::new("cas.example.com.", "A", 60, &["198.51.100.1"]),
    )
    .unwrap();
    let replace = change(&dns, json!([a("cas.example.com.", 60, &["192.0.2.2"])]), json!([ours])).await;
    let message = expect_error(&replace, 412, "conditionNotMet", "FAILED_PRECONDITION");
    assert_eq!(message, "Precondition not met for 'entity.change.deletions[0]'");
    let stored = dns.record_sets(PROJECT, "example").unwrap();
    let cas = stored.iter().find(|s| s.name == "cas.example.com.").unwrap();
    assert_eq!(cas.rrdatas, ["198.51.100.1"], "the other writer's data stays");
    // A TTL difference alone is stale too.
    let ttl = change(&dns, json!([]), json!([a("cas.example.com.", 300, &["198.51.100.1"])])).await;
    expect_error(&ttl, 412, "conditionNotMet", "FAILED_PRECONDITION");
    // Re-read and retry: accepted (rrdatas in another order still match).
    dns.write_record_set(
        PROJECT,
        "example",
        RecordSet::new("cas.example.com.", "A", 60, &["198.51.100.1", "198.51.100.2"]),
    )
    .unwrap();
    let (_, current) = call(
        &dns,
        "GET",
        "/managedZones/example/rrsets?name=cas.example.com.&type=A",
        None,
    )
    .await;
    let mut current = current["rrsets"][0].clone();
    current["rrdatas"] = json!(["198.51.100.2", "198.51.100.1"]);
    let retry = change(
        &dns,
        json!([a("cas.example.com.", 60, &["192.0.2.2"])]),
        json!([current]),
    )
    .await;
    assert_eq!(retry.0, 200, "{}", retry.1);
    // The other writer cannot store what Cloud DNS would refuse.
    let refused = dns
        .write_record_set(
            PROJECT,
            "example",
            RecordSet::new("cas.example.org.", "A", 60, &["192.0.2.1"]),
        )
        .unwrap_err();
    assert_eq!((refused.code, refused.reason), (400, "invalid"));
    // Deleted behind our back: 404.
    dns.delete_record_set(PROJECT, "example", "cas.example.com.", "A")
        .unwrap()
        .unwrap();
    let gone = change(&dns, json!([]), json!([a("cas.example.com.", 60, &["192.0.2.2"])])).await;
    expect_error(&gone, 404, "notFound", "NOT_FOUND");
}

#[tokio::test]
async fn clouddns_addition_of_existing_is_409() {
    let dns = start().await;
    assert_eq!(
        change(&dns, json!([a("dup.example.com.", 60, &["192.0.2.1"])]), json!([]))
            .await
            .0,
        200
    );
    let again = change(&dns, json!([a("dup.example.com.", 60, &["192.0.2.1"])]), json!([])).await;
    let message = expect_error(&again, 409, "alreadyExists", "ALREADY_EXISTS");
    assert_eq!(
        message,
        "The resource 'entity.change.additions[0]' named 'dup.example.com. (A)' already exists"
    );
    let apex_soa = change(
        &dns,
        json!([{"name": "example.com.", "type": "SOA", "ttl": 300,
                "rrdatas": ["ns-cloud-a1.googledomains.com. cloud-dns-hostmaster.google.com. 2 21600 3600 259200 300"]}]),
        json!([]),
    )
    .await;
    expect_error(&apex_soa, 409, "alreadyExists", "ALREADY_EXISTS");
}

#[tokio::test]
async fn clouddns_unknown_zone_and_record_set_are_404() {
    let dns = start().await;
    let zone = call(
        &dns,
        "POST",
        "/managedZones/missing/changes",
        Some(&json!({"additions": [a("x.example.com.", 60, &["192.0.2.1"])]})),
    )
    .await;
    let message = expect_error(&zone, 404, "notFound", "NOT_FOUND");
    assert_eq!(
        message,
        "The 'parameters.managedZone' resource named 'missing' does not exist."
    );
    expect_error(
        &call(&dns, "GET", "/managedZones/missing/rrsets", None).await,
        404,
        "notFound",
        "NOT_FOUND",
    );
    expect_error(
        &call(&dns, "GET", "/managedZones/missing/changes", None).await,
        404,
        "notFound",
        "NOT_FOUND",
    );
    let rrset = call(&dns, "GET", "/managedZones/example/rrsets/none.example.com./A", None).await;
    expect_error(&rrset, 404, "notFound", "NOT_FOUND");
    let deletion = change(&dns, json!([]), json!([a("none.example.com.", 60, &["192.0.2.1"])])).await;
    expect_error(&deletion, 404, "notFound", "NOT_FOUND");
    let project = call(
        &dns,
        "POST",
        "/dns/v1/projects/elsewhere/managedZones/example/changes",
        Some(&json!({"additions": [a("x.example.com.", 60, &["192.0.2.1"])]})),
    )
    .await;
    let message = expect_error(&project, 404, "notFound", "NOT_FOUND");
    assert!(message.contains("parameters.project"), "{message}");
    // Zone creation over REST is not offered.
    let create = call(
        &dns,
        "POST",
        "/managedZones",
        Some(&json!({"name": "z", "dnsName": "z.com."})),
    )
    .await;
    assert_eq!(create.0, 501, "{}", create.1);
}

#[tokio::test]
async fn clouddns_invalid_changes_are_400() {
    let dns = start().await;
    assert_eq!(
        change(&dns, json!([a("taken.example.com.", 60, &["192.0.2.1"])]), json!([]))
            .await
            .0,
        200
    );
    let too_long_txt = format!("\"{}\"", "x".repeat(256));
    let cases: Vec<(&str, Value, Value, &str, &str)> = vec![
        (
            "outside the zone",
            json!([a("www.example.org.", 60, &["192.0.2.1"])]),
            json!([]),
            "invalid",
            "additions[0]",
        ),
        (
            "suffix is not a parent",
            json!([a("badexample.com.", 60, &["192.0.2.1"])]),
            json!([]),
            "invalid",
            "additions[0]",
        ),
        (
            "not absolute",
            json!([a("www.example.com", 60, &["192.0.2.1"])]),
            json!([]),
            "invalid",
            "additions[0].name",
        ),
        (
            "bad label",
            json!([a("a..example.com.", 60, &["192.0.2.1"])]),
            json!([]),
            "invalid",
            "additions[0].name",
        ),
        (
            "unknown type",
            json!([{"name": "x.example.com.", "type": "XYZ", "ttl": 60, "rrdatas": ["1"]}]),
            json!([]),
            "invalid",
            "additions[0].type",
        ),
        (
            "A with AAAA data",
            json!([a("x.example.com.", 60, &["2001:db8::1"])]),
            json!([]),
            "invalid",
            "additions[0].rrdata[0]",
        ),
        (
            "AAAA with A data",
            json!([{"name": "x.example.com.", "type": "AAAA", "ttl": 60, "rrdatas": ["192.0.2.1"]}]),
            json!([]),
            "invalid",
            "additions[0].rrdata[0]",
        ),
        (
            "CNAME not absolute",
            json!([{"name": "c.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["a b"]}]),
            json!([]),
            "invalid",
            "additions[0].rrdata[0]",
        ),
        (
            "two CNAME rrdatas",
            json!([{"name": "c.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["a.example.net.", "b.example.net."]}]),
            json!([]),
            "invalid",
            "additions[0].rrdata",
        ),
        (
            "unterminated TXT",
            json!([{"name": "t.example.com.", "type": "TXT", "ttl": 60, "rrdatas": ["\"open"]}]),
            json!([]),
            "invalid",
            "additions[0].rrdata[0]",
        ),
        (
            "TXT string over 255",
            json!([{"name": "t.example.com.", "type": "TXT", "ttl": 60, "rrdatas": [too_long_txt]}]),
            json!([]),
            "invalid",
            "additions[0].rrdata[0]",
        ),
        (
            "duplicate rrdata",
            json!([a("x.example.com.", 60, &["192.0.2.1", "192.0.2.1"])]),
            json!([]),
            "invalid",
            "additions[0].rrdata[1]",
        ),
        (
            "empty rrdatas",
            json!([a("x.example.com.", 60, &[])]),
            json!([]),
            "required",
            "additions[0].rrdata",
        ),
        (
            "no ttl",
            json!([{"name": "x.example.com.", "type": "A", "rrdatas": ["192.0.2.1"]}]),
            json!([]),
            "required",
            "additions[0].ttl",
        ),
        (
            "negative ttl",
            json!([{"name": "x.example.com.", "type": "A", "ttl": -1, "rrdatas": ["192.0.2.1"]}]),
            json!([]),
            "invalid",
            "additions[0].ttl",
        ),
        (
            "ttl over 2^31-1",
            json!([{"name": "x.example.com.", "type": "A", "ttl": 2_147_483_648_i64, "rrdatas": ["192.0.2.1"]}]),
            json!([]),
            "invalid",
            "additions[0].ttl",
        ),
        (
            "rrdatas and routingPolicy",
            json!([{"name": "x.example.com.", "type": "A", "ttl": 60, "rrdatas": ["192.0.2.1"],
            "routingPolicy": {"wrr": {"items": [{"weight": 1, "rrdatas": ["192.0.2.2"]}]}}}]),
            json!([]),
            "invalid",
            "additions[0]",
        ),
        (
            "two policies",
            json!([{"name": "x.example.com.", "type": "A", "ttl": 60,
            "routingPolicy": {"wrr": {"items": [{"weight": 1, "rrdatas": ["192.0.2.2"]}]},
                              "geo": {"items": [{"location": "us-east1", "rrdatas": ["192.0.2.2"]}]}}}]),
            json!([]),
            "invalid",
            "additions[0].routingPolicy",
        ),
        (
            "negative weight",
            json!([{"name": "x.example.com.", "type": "A", "ttl": 60,
            "routingPolicy": {"wrr": {"items": [{"weight": -1, "rrdatas": ["192.0.2.2"]}]}}}]),
            json!([]),
            "invalid",
            "additions[0].routingPolicy.wrr.items[0].weight",
        ),
        (
            "geo item data of wrong type",
            json!([{"name": "x.example.com.", "type": "A", "ttl": 60,
            "routingPolicy": {"geo": {"items": [{"location": "us-east1", "rrdatas": ["2001:db8::1"]}]}}}]),
            json!([]),
            "invalid",
            "additions[0].routingPolicy.geo.items[0].rrdatas[0]",
        ),
        (
            "CNAME beside A in one change",
            json!([a("mix.example.com.", 60, &["192.0.2.1"]),
            {"name": "mix.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["t.example.net."]}]),
            json!([]),
            "invalid",
            "CNAME",
        ),
        (
            "CNAME beside an existing A",
            json!([{"name": "taken.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["t.example.net."]}]),
            json!([]),
            "invalid",
            "CNAME",
        ),
        (
            "same name and type twice",
            json!([
                a("x.example.com.", 60, &["192.0.2.1"]),
                a("x.example.com.", 60, &["192.0.2.2"])
            ]),
            json!([]),
            "invalid",
            "additions[1]",
        ),
        (
            "apex NS deleted without replacement",
            json!([]),
            json!([{"name": "example.com.", "type": "NS", "ttl": 21600, "rrdatas":
            ["ns-cloud-a1.googledomains.com.", "ns-cloud-a2.googledomains.com.", "ns-cloud-a3.googledomains.com.", "ns-cloud-a4.googledomains.com."]}]),
            "invalid",
            "NS",
        ),
        (
            "SOA below the apex",
            json!([{"name": "sub.example.com.", "type": "SOA", "ttl": 60, "rrdatas":
            ["ns1.example.com. hostmaster.example.com. 1 2 3 4 5"]}]),
            json!([]),
            "invalid",
            "SOA",
        ),
        ("empty change", json!([]), json!([]), "required", "entity.change"),
    ];
    let before = dns.record_sets(PROJECT, "example").unwrap();
    for (what, additions, deletions, reason, needle) in cases {
        let result = change(&dns, additions, deletions).await;
        let message = expect_error(&result, 400, reason, "INVALID_ARGUMENT");
        assert!(message.contains(needle), "{what}: {message}");
    }
    let not_json = call(&dns, "POST", "/managedZones/example/changes", Some(&json!("x"))).await;
    assert_eq!(not_json.0, 400);
    assert_eq!(
        dns.record_sets(PROJECT, "example").unwrap(),
        before,
        "no 400 wrote anything"
    );

    // Replacing the apex NS within one change is allowed.
    let ns = dns.record_sets(PROJECT, "example").unwrap()[0].clone();
    let mut replaced = ns.to_json();
    replaced["ttl"] = json!(3600);
    let (status, body) = change(&dns, json!([replaced]), json!([ns.to_json()])).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn clouddns_record_set_quota_is_403() {
    let dns = start_with(CloudDnsConfig {
        tokens: vec![TOKEN.into()],
        quota: Quota {
            rrsets_per_managed_zone: 5,
            ..Quota::default()
        },
        ..CloudDnsConfig::default()
    })
    .await;
    let three: Vec<Value> = (0..3)
        .map(|i| a(&format!("q{i}.example.com."), 60, &["192.0.2.1"]))
        .collect();
    assert_eq!(change(&dns, json!(three), json!([])).await.0, 200);
    let over = change(&dns, json!([a("q9.example.com.", 60, &["192.0.2.1"])]), json!([])).await;
    let message = expect_error(&over, 403, "quotaExceeded", "PERMISSION_DENIED");
    assert!(message.starts_with("The change would exceed quota for"), "{message}");
    // Replacing within the quota still works.
    let swap = change(
        &dns,
        json!([a("q9.example.com.", 60, &["192.0.2.1"])]),
        json!([a("q0.example.com.", 60, &["192.0.2.1"])]),
    )
    .await;
    assert_eq!(swap.0, 200, "{}", swap.1);
    let (_, project) = call(&dns, "GET", "", None).await;
    assert_eq!(project["quota"]["rrsetsPerManagedZone"], 5);
    assert_eq!(project["quota"]["rrsetAdditionsPerChange"], 1000);
}

#[tokio::test]
async fn clouddns_per_change_limits() {
    let dns = start().await;
    let many = |n: usize| -> Vec<Value> {
        (0..n)
            .map(|i| a(&format!("l{i}.example.com."), 60, &["192.0.2.1"]))
            .collect()
    };
    let over = change(&dns, json!(many(1001)), json!([])).await;
    let message = expect_error(&over, 403, "quotaExceeded", "PERMISSION_DENIED");
    assert_eq!(message, "The change would exceed quota for additions per change.");
    assert_eq!(dns.record_sets(PROJECT, "example").unwrap().len(), 2);
    let (status, body) = change(&dns, json!(many(1000)), json!([])).await;
    assert_eq!(status, 200, "{}", body["error"]);
    let deletions = change(&dns, json!([]), json!(many(1001))).await;
    let message = expect_error(&deletions, 403, "quotaExceeded", "PERMISSION_DENIED");
    assert_eq!(message, "The change would exceed quota for deletions per change.");
    // Every exceeded quota is listed.
    let both = change(&dns, json!(many(1001)), json!(many(1001))).await;
    expect_error(&both, 403, "quotaExceeded", "PERMISSION_DENIED");
    let errors = both.1["error"]["errors"].as_array().unwrap();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert_eq!(
        errors[1]["message"],
        "The change would exceed quota for deletions per change."
    );
    assert_eq!(errors[1]["reason"], "quotaExceeded");
    // 500 TXT record sets of 2 × 250 octets: over 100,000 octets.
    let big: Vec<Value> = (0..500)
        .map(|i| {
            let s = format!("\"{}\" \"{}\"", "a".repeat(250), "b".repeat(250));
            json!({"name": format!("big{i}.example.com."), "type": "TXT", "ttl": 60, "rrdatas": [s]})
        })
        .collect();
    let size = change(&dns, json!(big), json!([])).await;
    let message = expect_error(&size, 403, "quotaExceeded", "PERMISSION_DENIED");
    assert_eq!(
        message,
        "The change would exceed quota for total rrdata size per change."
    );
    let ips: Vec<String> = (0..101).map(|i| format!("10.0.{}.{}", i / 200, i % 200)).collect();
    let ips: Vec<&str> = ips.iter().map(String::as_str).collect();
    let wide = change(&dns, json!([a("wide.example.com.", 60, &ips)]), json!([])).await;
    expect_error(&wide, 403, "quotaExceeded", "PERMISSION_DENIED");
}

#[tokio::test]
async fn clouddns_injected_429_and_503_then_success() {
    let dns = start().await;
    dns.fail_next(Fault::RateLimited, 1);
    dns.fail_next(Fault::Unavailable, 1);
    dns.fail_next(Fault::Internal, 1);
    let body = json!([a("retry.example.com.", 60, &["192.0.2.1"])]);
    let first = change(&dns, body.clone(), json!([])).await;
    expect_error(&first, 429, "rateLimitExceeded", "RESOURCE_EXHAUSTED");
    let second = change(&dns, body.clone(), json!([])).await;
    expect_error(&second, 503, "backendError", "UNAVAILABLE");
    let third = change(&dns, body.clone(), json!([])).await;
    expect_error(&third, 500, "backendError", "INTERNAL");
    assert_eq!(
        dns.record_sets(PROJECT, "example").unwrap().len(),
        2,
        "failed calls wrote nothing"
    );
    let fourth = change(&dns, body.clone(), json!([])).await;
    assert_eq!(fourth.0, 200, "{}", fourth.1);

    // A rate: half the calls fail, evenly; a retrying client gets through.
    dns.set_fault_rate(Fault::Unavailable, 0.5);
    let started = Instant::now();
    let mut failures = 0;
    let mut successes = 0;
    while successes < 5 {
        assert!(started.elapsed() < Duration::from_secs(30), "no progress in 30 s");
        match call(&dns, "GET", "/managedZones/example", None).await {
            (200, _) => successes += 1,
            other => {
                expect_error(&other, 503, "backendError", "UNAVAILABLE");
                failures += 1;
            }
        }
    }
    println!("5 successes, {failures} injected 503s, in {:?}", started.elapsed());
    assert!((3..=7).contains(&failures), "{failures}");
    dns.clear_faults();
    dns.set_latency(Duration::from_millis(100));
    let timed = Instant::now();
    assert_eq!(call(&dns, "GET", "/managedZones/example", None).await.0, 200);
    println!("with 100 ms latency the call took {:?}", timed.elapsed());
    assert!(timed.elapsed() >= Duration::from_millis(100));
}

#[tokio::test]
async fn clouddns_https_with_generated_ca() {
    use rustls::pki_types::pem::PemObject as _;
    let dns = start_with(CloudDnsConfig {
        tokens: vec![TOKEN.into()],
        tls: true,
        ..CloudDnsConfig::default()
    })
    .await;
    assert!(dns.url().starts_with("https://127.0.0.1:"));
    let mut roots = rustls::RootCertStore::empty();
    roots
        .add(rustls::pki_types::CertificateDer::from_pem_slice(dns.ca_pem().unwrap().as_bytes()).unwrap())
        .unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let tcp = TcpStream::connect(dns.addr()).await.unwrap();
    let server_name = rustls::pki_types::ServerName::try_from("127.0.0.1").unwrap();
    let tls = connector.connect(server_name, tcp).await.expect("TLS handshake");
    let (status, body) = send(
        tls,
        "GET",
        &format!("/dns/v1/projects/{PROJECT}/managedZones/example"),
        Some(TOKEN),
        None,
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["dnsName"], "example.com.");
}

#[tokio::test]
async fn clouddns_concurrent_replacements_one_wins() {
    let dns = start().await;
    let old = a("race.example.com.", 60, &["192.0.2.1"]);
    assert_eq!(change(&dns, json!([old.clone()]), json!([])).await.0, 200);
    let mut writers = Vec::new();
    for i in 0..8 {
        let dns = dns.clone();
        let old = old.clone();
        writers.push(tokio::spawn(async move {
            change(
                &dns,
                json!([a("race.example.com.", 60, &[&format!("198.51.100.{i}")])]),
                json!([old]),
            )
            .await
        }));
    }
    let mut won = 0;
    for writer in writers {
        let result = writer.await.unwrap();
        if result.0 == 200 {
            won += 1;
        } else {
            expect_error(&result, 412, "conditionNotMet", "FAILED_PRECONDITION");
        }
    }
    assert_eq!(won, 1, "exactly one compare-and-swap wins");
    let race: Vec<RecordSet> = dns
        .record_sets(PROJECT, "example")
        .unwrap()
        .into_iter()
        .filter(|s| s.name == "race.example.com.")
        .collect();
    assert_eq!(race.len(), 1);
    assert!(race[0].rrdatas[0].starts_with("198.51.100."));
}

#[tokio::test]
async fn clouddns_type_swap_in_one_change() {
    let dns = start().await;
    let old = a("swap.example.com.", 60, &["192.0.2.1"]);
    assert_eq!(change(&dns, json!([old.clone()]), json!([])).await.0, 200);
    let cname = json!({"name": "swap.example.com.", "type": "CNAME", "ttl": 60, "rrdatas": ["lb.example.net."]});
    let (status, body) = change(&dns, json!([cname.clone()]), json!([old.clone()])).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = change(&dns, json!([old]), json!([cname])).await;
    assert_eq!(status, 200, "{body}");
    // Names are stored in lower case and found by either case.
    let upper = a("MiXeD.Example.COM.", 60, &["192.0.2.5"]);
    assert_eq!(change(&dns, json!([upper]), json!([])).await.0, 200);
    let (_, listed) = call(
        &dns,
        "GET",
        "/managedZones/example/rrsets?name=MIXED.example.com.",
        None,
    )
    .await;
    assert_eq!(listed["rrsets"][0]["name"], "mixed.example.com.");
}

/// Google's JSON leaves out fields at their default value (`weight: 0`,
/// `trickleTraffic: 0`, `enableFencing: false`): the stand-in answers so,
/// and a deletion spelled either way matches.
#[tokio::test]
async fn clouddns_routing_policies_read_back_without_default_values() {
    let dns = start().await;
    let hc = "https://www.googleapis.com/compute/v1/projects/fedns-test/global/healthChecks/hc";
    let sent = vec![
        json!({"name": "wrr.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "wrr": {"items": [
                {"weight": 0.0, "rrdatas": ["192.0.2.10"]},
                {"weight": 2.0, "rrdatas": ["192.0.2.11"]}
            ]}
        }}),
        json!({"name": "geo.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "geo": {"enableFencing": false, "items": [{"location": "europe-west1", "rrdatas": ["192.0.2.20"]}]}
        }}),
        json!({"name": "pb.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "primaryBackup": {
                "primaryTargets": {"externalEndpoints": ["192.0.2.30"]},
                "backupGeoTargets": {"items": [{"location": "us-east1", "rrdatas": ["192.0.2.31"]}]},
                "trickleTraffic": 0.0
            },
            "healthCheck": hc
        }}),
    ];
    let (status, body) = change(&dns, json!(sent), json!([])).await;
    assert_eq!(status, 200, "{body}");
    assert!(
        body["additions"][0]["routingPolicy"]["wrr"]["items"][0]
            .get("weight")
            .is_none(),
        "{body}"
    );
    let (_, listed) = call(&dns, "GET", "/managedZones/example/rrsets", None).await;
    let find = |name: &str| {
        listed["rrsets"]
            .as_array()
            .unwrap()
            .iter()
            .find(|s| s["name"] == name)
            .cloned()
            .unwrap()
    };
    let wrr = find("wrr.example.com.");
    assert_eq!(
        wrr["routingPolicy"]["wrr"]["items"],
        json!([{"rrdatas": ["192.0.2.10"]}, {"weight": 2.0, "rrdatas": ["192.0.2.11"]}])
    );
    let geo = find("geo.example.com.");
    assert!(geo["routingPolicy"]["geo"].get("enableFencing").is_none(), "{geo}");
    let pb = find("pb.example.com.");
    assert!(
        pb["routingPolicy"]["primaryBackup"].get("trickleTraffic").is_none(),
        "{pb}"
    );
    assert_eq!(pb["routingPolicy"]["healthCheck"], hc);
    // Deleting what was read (defaults left out) and what was sent
    // (defaults given) both match.
    let (status, body) = change(&dns, json!([]), json!([wrr, geo])).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = change(&dns, json!([]), json!([sent[2]])).await;
    assert_eq!(status, 200, "{body}");
}

/// `healthCheck` is the full URL of a Compute Engine health check (global
/// or regional); the short `projects/…` path is refused, and a public
/// zone's `primaryBackup` with external endpoints needs one.
#[tokio::test]
async fn clouddns_health_checks_are_full_urls() {
    let dns = start().await;
    dns.create_zone(PROJECT, "internal", "internal.example.", Visibility::Private)
        .expect("zone");
    let pb = |name: &str, check: Option<&str>| {
        let mut set = json!({"name": name, "type": "A", "ttl": 30, "routingPolicy": {
            "primaryBackup": {
                "primaryTargets": {"externalEndpoints": ["192.0.2.30"]},
                "backupGeoTargets": {"items": [{"location": "us-east1", "rrdatas": ["192.0.2.31"]}]}
            }
        }});
        if let Some(check) = check {
            set["routingPolicy"]["healthCheck"] = json!(check);
        }
        set
    };
    for short in [
        "projects/fedns-test/global/healthChecks/hc",
        "hc",
        "https://www.googleapis.com/compute/v1/projects/fedns-test/healthChecks/hc",
        "https://www.googleapis.com/compute/v1/projects/fedns-test/regions/europe-west5/healthChecks/hc",
    ] {
        let refused = change(&dns, json!([pb("pb.example.com.", Some(short))]), json!([])).await;
        let message = expect_error(&refused, 400, "invalid", "INVALID_ARGUMENT");
        assert!(message.contains("additions[0].routingPolicy.healthCheck"), "{message}");
    }
    let no_check = change(&dns, json!([pb("pb.example.com.", None)]), json!([])).await;
    let message = expect_error(&no_check, 400, "invalid", "INVALID_ARGUMENT");
    assert!(message.contains("needs a health check"), "{message}");
    for (i, full) in [
        "https://www.googleapis.com/compute/v1/projects/fedns-test/global/healthChecks/hc",
        "https://www.googleapis.com/compute/v1/projects/fedns-test/regions/europe-west4/healthChecks/hc",
    ]
    .into_iter()
    .enumerate()
    {
        let (status, body) = change(&dns, json!([pb(&format!("pb{i}.example.com."), Some(full))]), json!([])).await;
        assert_eq!(status, 200, "{full}: {body}");
    }
    // A private zone takes a policy without one.
    let (status, body) = call(
        &dns,
        "POST",
        "/managedZones/internal/changes",
        Some(&json!({"additions": [pb("pb.internal.example.", None)]})),
    )
    .await;
    assert_eq!(status, 200, "{body}");
}

/// Routing policy locations are Google Cloud regions; a name shaped like
/// one that is none (`europe-west5`) is an invalid argument.
#[tokio::test]
async fn clouddns_geo_locations_must_be_google_cloud_regions() {
    let dns = start().await;
    let geo = |location: &str| {
        json!({"name": "geo.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
            "geo": {"items": [
                {"location": "europe-west1", "rrdatas": ["192.0.2.1"]},
                {"location": location, "rrdatas": ["192.0.2.2"]}
            ]}
        }})
    };
    for unknown in ["europe-west5", "us-east-1", "mars-north1"] {
        let refused = change(&dns, json!([geo(unknown)]), json!([])).await;
        let message = expect_error(&refused, 400, "invalid", "INVALID_ARGUMENT");
        assert!(
            message.contains("routingPolicy.geo.items[1].location") && message.contains(unknown),
            "{message}"
        );
    }
    let backup = json!({"name": "pb.example.com.", "type": "A", "ttl": 30, "routingPolicy": {
        "primaryBackup": {
            "primaryTargets": {"externalEndpoints": ["192.0.2.30"]},
            "backupGeoTargets": {"items": [{"location": "europe-west5", "rrdatas": ["192.0.2.31"]}]}
        },
        "healthCheck": "https://www.googleapis.com/compute/v1/projects/fedns-test/global/healthChecks/hc"
    }});
    let refused = change(&dns, json!([backup]), json!([])).await;
    let message = expect_error(&refused, 400, "invalid", "INVALID_ARGUMENT");
    assert!(message.contains("backupGeoTargets.items[0].location"), "{message}");
    let (status, body) = change(&dns, json!([geo("europe-west4")]), json!([])).await;
    assert_eq!(status, 200, "{body}");
}
