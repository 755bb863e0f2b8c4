//! Changes Cloud DNS refuses as invalid (400), field by field.

use super::*;

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
