//! Changes: record sets and routing policies read back, pending then done, atomicity, 412, 409 and 404.

use super::*;

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
