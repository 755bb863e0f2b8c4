//! Routing policies: default values left out, health check URLs, Google Cloud regions.

use super::*;

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
