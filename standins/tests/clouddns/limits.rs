//! Quotas and per-change limits, injected faults, HTTPS, concurrent writers, a type swap in one change.

use super::*;

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
