//! Authentication and the read paths: zones and record sets, filters, paging.

use super::*;

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
