//! `fedns dns-server` against an emulated host cluster: it serves the
//! Domains and DNSEndpoints there, reports status, follows changes, and
//! keeps answering while the API server is down.

use std::time::Duration;

use crate::common::*;
use fedns_api::DNSEndpoint;
use fedns_kube_emulator::Emulator;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde_json::json;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serves_the_host_cluster_and_survives_its_outage() {
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system", "ns"]).await;
    let domains = create_myfed_domain(
        &client,
        json!({"domain": "example.com", "nameServers": ["ns1.example.com"]}),
    )
    .await;
    let endpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), "ns");
    endpoints
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
                "metadata": {"name": "service-nginx"},
                "spec": {"endpoints": [
                    {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
                    {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "AAAA", "targets": ["2001:db8::10"]},
                    {"dnsName": "elsewhere.example.org", "recordType": "A", "targets": ["203.0.113.99"]},
                    {"dnsName": "bad.example.com", "recordType": "A", "targets": ["not-an-ip"]},
                ]},
            }))
            .unwrap(),
        )
        .await
        .unwrap();

    let dir = temp_dir("dns-server");
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let metrics_port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics_port}"),
        "--udp-workers",
        "1",
    ]);

    let name = "nginx.ns.myfed.svc.example.com";
    eventually("dns-server answers from the host cluster", || {
        dig(port, name, "A", false) == ["198.51.100.20", "203.0.113.10"]
    })
    .await;
    assert_eq!(dig(port, name, "AAAA", true), ["2001:db8::10"]);
    assert_eq!(dig_status(port, "bad.example.com", "A"), "NXDOMAIN");
    assert_eq!(dig_status(port, "elsewhere.example.org", "A"), "REFUSED");

    // Status and Events reported back.
    let endpoints_for_status = endpoints.clone();
    let mut status_ok = false;
    for _ in 0..300 {
        let current = endpoints_for_status.get("service-nginx").await.unwrap();
        if let Some(status) = current.status {
            if let Some(c) = fedns_api::conditions::get(&status.conditions, "embedded/Published") {
                assert_eq!(c.status, "False");
                assert!(
                    c.message.contains("outside every Domain") && c.message.contains("not-an-ip"),
                    "{}",
                    c.message
                );
                assert_eq!(status.observed_generation, current.metadata.generation);
                status_ok = true;
                break;
            }
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(status_ok, "DNSEndpoint status was not written");
    let domain = domains.get("myfed").await.unwrap();
    let domain_status = domain.status.unwrap();
    assert!(domain_status.serial.is_some_and(|s| s > 0));
    assert!(fedns_api::conditions::is_true(&domain_status.conditions, "Ready"));
    let events: Api<k8s_openapi::api::events::v1::Event> = Api::namespaced(client.clone(), "ns");
    let listed = events.list(&Default::default()).await.unwrap();
    assert!(
        listed.items.iter().any(|e| e.reason.as_deref() == Some("InvalidInput")),
        "no Warning Event for the invalid endpoints"
    );

    // A change is followed.
    endpoints
        .patch(
            "service-nginx",
            &PatchParams::default(),
            &Patch::Json::<()>(
                serde_json::from_value(json!([
                    {"op": "replace", "path": "/spec/endpoints/0/targets", "value": ["203.0.113.11"]}
                ]))
                .unwrap(),
            ),
        )
        .await
        .unwrap();
    eventually("dns-server follows a DNSEndpoint change", || {
        dig(port, name, "A", false) == ["203.0.113.11"]
    })
    .await;

    // The API server goes away: answers stay; when it returns, changes made
    // meanwhile are picked up.
    host.stop();
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(
        dig(port, name, "A", false),
        ["203.0.113.11"],
        "last snapshot served while the host is down"
    );
    let info = host
        .store()
        .resource("multiclusterdns.fedns.io", "v1alpha1", "dnsendpoints")
        .unwrap();
    host.store()
        .patch(
            &info,
            Some("ns"),
            "service-nginx",
            fedns_kube_emulator::PatchKind::Json,
            json!([{"op": "replace", "path": "/spec/endpoints/0/targets", "value": ["203.0.113.12"]}]),
            None,
            fedns_kube_emulator::Target::Main,
        )
        .unwrap();
    host.resume().await.unwrap();
    eventually("dns-server resumes after the host cluster returns", || {
        dig(port, name, "A", false) == ["203.0.113.12"]
    })
    .await;

    // Health and metrics.
    assert_eq!(
        http_get(&format!("http://127.0.0.1:{metrics_port}/readyz")).await.0,
        200
    );
    let (code, body) = http_get(&format!("http://127.0.0.1:{metrics_port}/metrics")).await;
    assert_eq!(code, 200);
    for metric in [
        "fedns_dns_queries_total{transport=\"udp\",qtype=\"A\",rcode=\"NOERROR\"}",
        "rcode=\"NXDOMAIN\"",
        "rcode=\"REFUSED\"",
        "fedns_dns_answer_duration_seconds_bucket",
        "fedns_dns_zone_serial{zone=\"example.com.\"}",
        "fedns_dns_zone_rrsets{zone=\"example.com.\"}",
        "fedns_dns_snapshot_updates_total",
    ] {
        assert!(body.contains(metric), "{metric} missing from /metrics:\n{body}");
    }
    host.stop();
}

/// The reported `embedded/Published` condition of a DNSEndpoint: (status,
/// reason, message), waiting up to 30 s for it to be written.
async fn published_condition(api: &Api<DNSEndpoint>, name: &str, status: &str) -> (String, String) {
    let started = std::time::Instant::now();
    loop {
        let current = api.get(name).await.unwrap();
        let condition = current
            .status
            .as_ref()
            .and_then(|s| fedns_api::conditions::get(&s.conditions, "embedded/Published").cloned());
        if let Some(c) = condition.filter(|c| c.status == status) {
            println!("{name}: embedded/Published={status} after {:?}", started.elapsed());
            return (c.reason, c.message);
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{name}: no embedded/Published={status} within 30 s"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn dns_endpoint(name: &str, endpoints: serde_json::Value) -> DNSEndpoint {
    serde_json::from_value(json!({
        "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
        "metadata": {"name": name},
        "spec": {"endpoints": endpoints},
    }))
    .unwrap()
}

/// One name, one owner: a DNSEndpoint in another namespace naming a
/// published service name is refused (`NotAllowed`) and the answer stays;
/// a newer claim from the same namespace is a `Conflict` naming the
/// holder; when the holder is deleted, the next oldest claim takes over.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_name_has_one_owner_across_namespaces() {
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system", "shop", "evil"]).await;
    create_myfed_domain(&client, json!({"domain": "example.com"})).await;
    let web = "web.shop.myfed.svc.example.com";
    let shop: Api<DNSEndpoint> = Api::namespaced(client.clone(), "shop");
    let evil: Api<DNSEndpoint> = Api::namespaced(client.clone(), "evil");
    shop.create(
        &PostParams::default(),
        &dns_endpoint(
            "service-web",
            json!([{"dnsName": web, "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10"]}]),
        ),
    )
    .await
    .unwrap();

    let dir = temp_dir("one-owner");
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("the holder's name is served", || {
        dig(port, web, "A", false) == ["203.0.113.10"]
    })
    .await;

    // creationTimestamp has whole seconds: make the later claims later.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    evil.create(
        &PostParams::default(),
        &dns_endpoint(
            "grab",
            json!([
                {"dnsName": web, "recordType": "A", "recordTTL": 5, "targets": ["192.0.2.66"]},
                {"dnsName": "promo.example.com", "recordType": "A", "targets": ["192.0.2.67"]},
            ]),
        ),
    )
    .await
    .unwrap();
    shop.create(
        &PostParams::default(),
        &dns_endpoint(
            "late",
            json!([{"dnsName": web, "recordType": "AAAA", "targets": ["2001:db8::66"]}]),
        ),
    )
    .await
    .unwrap();
    eventually("the hijacker's own name is served", || {
        dig(port, "promo.example.com", "A", false) == ["192.0.2.67"]
    })
    .await;
    assert_eq!(
        dig(port, web, "A", false),
        ["203.0.113.10"],
        "the hijack changed the answer"
    );
    assert!(dig(port, web, "AAAA", false).is_empty(), "a newer claim was merged");

    let (reason, message) = published_condition(&evil, "grab", "False").await;
    assert_eq!(reason, "NotAllowed", "{message}");
    assert!(message.contains("namespace shop"), "{message}");
    let (reason, message) = published_condition(&shop, "late", "False").await;
    assert_eq!(reason, "Conflict", "{message}");
    assert!(message.contains("shop/service-web"), "{message}");
    published_condition(&shop, "service-web", "True").await;

    // The holder goes: the next oldest claim (shop/late) takes over; the
    // other namespace still may not.
    shop.delete("service-web", &Default::default()).await.unwrap();
    eventually("the next oldest claim takes over", || {
        dig(port, web, "AAAA", false) == ["2001:db8::66"]
    })
    .await;
    assert!(
        dig(port, web, "A", false).is_empty(),
        "{:?}",
        dig(port, web, "A", false)
    );
    published_condition(&shop, "late", "True").await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `fedns dns-server --manifests`: objects carry no creationTimestamp, so
/// the claim of the first namespace/name holds a name; a Namespace in the
/// manifests gives the labels a Domain's allowedNamespaces selector reads.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_follow_the_one_owner_rule_by_namespace_and_name() {
    let dir = temp_dir("one-owner-manifests");
    let file = dir.join("zone.yaml");
    write(
        &file,
        r#"
apiVersion: v1
kind: Namespace
metadata: {name: team-a, labels: {fedns.io/publish: "true"}}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  allowedNamespaces:
    from: Selector
    selector: {matchLabels: {fedns.io/publish: "true"}}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: z-first, namespace: team-a}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.1]}]}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: a-second, namespace: team-a}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.2]}, {dnsName: api.example.com, recordType: A, targets: [203.0.113.3]}]}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: other, namespace: team-b}
spec: {endpoints: [{dnsName: team-b.example.com, recordType: A, targets: [203.0.113.4]}]}
"#,
    );
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--manifests",
        file.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("the manifests are served", || {
        dig(port, "api.example.com", "A", false) == ["203.0.113.3"]
    })
    .await;
    assert_eq!(
        dig(port, "www.example.com", "A", false),
        ["203.0.113.2"],
        "team-a/a-second sorts before team-a/z-first and holds the name"
    );
    assert_eq!(
        dig_status(port, "team-b.example.com", "A"),
        "NXDOMAIN",
        "team-b does not match the Domain's selector"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// TXT targets: a quoted target is presentation form, so the
/// embedded server answers `"v=spf1 ..."` without the quotes inside the
/// data, and a DKIM value in two quoted strings keeps both strings.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn txt_targets_are_read_as_external_dns_writes_them() {
    let dir = temp_dir("txt-targets");
    let file = dir.join("zone.yaml");
    let dkim_first = "p".repeat(255);
    let dkim_rest = "q".repeat(150);
    write(
        &file,
        &format!(
            r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {{name: myfed, namespace: fedns-system}}
spec: {{domain: example.com}}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {{name: mail, namespace: mail}}
spec:
  endpoints:
    - {{dnsName: spf.example.com, recordType: TXT, targets: ['"v=spf1 -all"']}}
    - {{dnsName: sel._domainkey.example.com, recordType: TXT, targets: ['"{dkim_first}" "{dkim_rest}"']}}
    - {{dnsName: plain.example.com, recordType: TXT, targets: ['say "hi"']}}
"#
        ),
    );
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--manifests",
        file.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("TXT served", || !dig(port, "spf.example.com", "TXT", false).is_empty()).await;
    assert_eq!(dig(port, "spf.example.com", "TXT", false), ["\"v=spf1 -all\""]);
    assert_eq!(
        dig(port, "sel._domainkey.example.com", "TXT", true),
        [format!("\"{dkim_first}\" \"{dkim_rest}\"")]
    );
    assert_eq!(dig(port, "plain.example.com", "TXT", false), ["\"say \\\"hi\\\"\""]);
    let _ = std::fs::remove_dir_all(dir);
}

/// `dig` output of a zone transfer with `-y KEY` (kdig's form), or
/// without a key when `key` is empty.
fn dig_axfr(port: u16, zone: &str, key: &str, source: &str) -> String {
    let mut command = std::process::Command::new("dig");
    command.args([
        "+time=2",
        "+tries=1",
        "-p",
        &port.to_string(),
        "@127.0.0.1",
        "-b",
        source,
        zone,
        "AXFR",
    ]);
    if !key.is_empty() {
        command.args(["-y", key]);
    }
    let out = command.output().expect("dig");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

const TSIG_SECRET: &str = "8d5SuWbmNUB0+k4cZ7lbqqeIOg3e1ARWaa0N+e+lMEo=";

/// Zone transfers: `spec.transfer` with `--manifests` and `--tsig-key-file`: a
/// signed AXFR from an allowed address gets the zone, signed (dig checks
/// it); unsigned, from elsewhere or with another secret it does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_transfers_with_a_tsig_key_file() {
    let dir = temp_dir("transfer-manifests");
    let file = dir.join("zone.yaml");
    write(
        &file,
        r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  transfer:
    allow: [127.0.0.1/32]
    tsigKeys: [{name: xfr.example.com, secretRef: {name: unused-with-a-key-file}}]
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: www, namespace: fedns-system}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.1]}]}
"#,
    );
    let keys = dir.join("tsig.keys");
    write(
        &keys,
        &format!("# the key the secondaries share\nhmac-sha256:xfr.example.com:{TSIG_SECRET}\n"),
    );
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--manifests",
        file.to_str().unwrap(),
        "--tsig-key-file",
        keys.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("the manifests are served", || {
        dig(port, "www.example.com", "A", false) == ["203.0.113.1"]
    })
    .await;
    let key = format!("hmac-sha256:xfr.example.com:{TSIG_SECRET}");
    let out = dig_axfr(port, "example.com", &key, "127.0.0.1");
    assert!(
        out.contains("www.example.com.") && out.contains("TSIG") && !out.contains("failed"),
        "{out}"
    );
    assert!(!out.contains("Transfer failed"), "{out}");
    let out = dig_axfr(port, "example.com", "", "127.0.0.1");
    assert!(out.contains("Transfer failed") && !out.contains("203.0.113.1"), "{out}");
    let out = dig_axfr(port, "example.com", &key, "127.0.0.2");
    assert!(!out.contains("203.0.113.1"), "{out}");
    let other = "hmac-sha256:xfr.example.com:AAAAuWbmNUB0+k4cZ7lbqqeIOg3e1ARWaa0N+e+lAAA=";
    let out = dig_axfr(port, "example.com", other, "127.0.0.1");
    assert!(!out.contains("203.0.113.1"), "{out}");
    let _ = std::fs::remove_dir_all(dir);
}

/// Zone transfers: the TSIG key comes from a Secret in the Domain's namespace;
/// without the Secret, transfers stay off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn zone_transfer_keys_come_from_secrets() {
    use fedns_api::k8s_openapi::api::core::v1::Secret;
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system"]).await;
    let domains = create_myfed_domain(
        &client,
        json!({"domain": "example.com", "transfer": {
            "allow": ["127.0.0.0/8"],
            "tsigKeys": [{"name": "xfr.example.com", "algorithm": "hmac-sha256", "secretRef": {"name": "xfr-key"}}],
        }}),
    )
    .await;
    let dir = temp_dir("transfer-secrets");
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("the zone is served", || {
        dig_status(port, "example.com", "SOA") == "NOERROR"
    })
    .await;
    let key = format!("hmac-sha256:xfr.example.com:{TSIG_SECRET}");
    // No Secret yet: no transfer.
    let out = dig_axfr(port, "example.com", &key, "127.0.0.1");
    assert!(out.contains("Transfer failed") || out.contains("BADKEY"), "{out}");
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "fedns-system");
    secrets
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": "xfr-key"},
                "data": {"secret": base64_of(TSIG_SECRET)},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    // A change to the Domain makes the source read the Secret now (it
    // also looks again every minute).
    domains
        .patch(
            "myfed",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"nameServers": ["ns1.example.com"]}})),
        )
        .await
        .unwrap();
    eventually("a signed AXFR gets the zone", || {
        let out = dig_axfr(port, "example.com", &key, "127.0.0.1");
        out.contains("IN\tSOA") && !out.contains("Transfer failed")
    })
    .await;
    let _ = std::fs::remove_dir_all(dir);
}

fn base64_of(text: &str) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(text)
}

/// A clean `dns-server --manifests` start says nothing is wrong: no WARN
/// line (it once warned that the files' serial "reached this replica after
/// its instant", 57 years late: a record with no instant is never late).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clean_manifests_start_logs_no_warning() {
    let dir = temp_dir("clean-start");
    let file = dir.join("zone.yaml");
    write(
        &file,
        r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: www, namespace: fedns-system}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.1]}]}
"#,
    );
    let port = free_port();
    let log = dir.join("dns-server.log");
    let child = std::process::Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args([
            "dns-server",
            "--manifests",
            file.to_str().unwrap(),
            "--udp-workers",
            "1",
            "--listen",
        ])
        .arg(format!("127.0.0.1:{port}"))
        .env("RUST_LOG", "info")
        .stdout(std::fs::File::create(dir.join("stdout.log")).unwrap())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let server = Process::logged(child, "fedns dns-server", log.clone());
    eventually("the manifests are served", || {
        dig(port, "www.example.com", "A", false) == ["203.0.113.1"]
    })
    .await;
    drop(server);
    let text = std::fs::read_to_string(&log).unwrap() + &std::fs::read_to_string(dir.join("stdout.log")).unwrap();
    let warnings: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("WARN") || l.contains("ERROR"))
        .collect();
    assert!(warnings.is_empty(), "a clean start warned:\n{}", warnings.join("\n"));
    assert!(text.contains("serving the files' serial"), "the log: {text}");
    let _ = std::fs::remove_dir_all(dir);
}

/// `--shutdown-drain`: on SIGTERM a DNS server turns not-ready at once
/// and keeps answering until the drain ends, then exits (deploy/ runs its
/// replicas with 10 s, so that the endpoint removal reaches kube-proxy
/// before the listeners close).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_drains_before_the_listeners_close() {
    const DRAIN: Duration = Duration::from_secs(3);
    let dir = temp_dir("drain");
    let file = dir.join("zone.yaml");
    write(
        &file,
        r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: www, namespace: team-a}
spec: {endpoints: [{dnsName: www.example.com, recordType: A, targets: [203.0.113.1]}]}
"#,
    );
    let (port, metrics) = (free_port(), free_port());
    let mut server = spawn_fedns(&[
        "dns-server",
        "--manifests",
        file.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--metrics-addr",
        &format!("127.0.0.1:{metrics}"),
        "--udp-workers",
        "1",
        "--shutdown-drain",
        "3",
    ]);
    eventually("the manifests are served", || {
        dig(port, "www.example.com", "A", false) == ["203.0.113.1"]
    })
    .await;
    let readyz = format!("http://127.0.0.1:{metrics}/readyz");
    assert_eq!(http_get(&readyz).await.0, 200);
    let status = std::process::Command::new("kill")
        .args(["-TERM", &server.child.id().to_string()])
        .status()
        .unwrap();
    assert!(status.success());
    let started = std::time::Instant::now();
    let mut not_ready = None;
    while started.elapsed() < DRAIN {
        if http_get(&readyz).await.0 == 503 {
            not_ready = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let not_ready = not_ready.expect("/readyz answers 503 within the drain");
    let (udp, tcp) = (
        dig(port, "www.example.com", "A", false),
        dig(port, "www.example.com", "A", true),
    );
    let answered_at = started.elapsed();
    assert!(answered_at < DRAIN, "asked within the drain: {answered_at:?}");
    assert_eq!(udp, ["203.0.113.1"], "UDP answered while draining");
    assert_eq!(tcp, ["203.0.113.1"], "TCP answered while draining");
    let mut exited = None;
    while started.elapsed() < Duration::from_secs(30) {
        if server.child.try_wait().unwrap().is_some() {
            exited = Some(started.elapsed());
            break;
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let exited = exited.expect("exits after the drain");
    println!("SIGTERM: not ready after {not_ready:?}, answered UDP and TCP at {answered_at:?}, exited after {exited:?} (drain {DRAIN:?})");
    assert!(exited >= DRAIN, "exited before the drain ended: {exited:?}");
    let _ = std::fs::remove_dir_all(dir);
}

/// A hostile tenant against the embedded server: namespace `mallory`, with
/// rights in its own namespace only, publishes at, above, below and beside
/// namespace `shop`'s names (an NS above its service name, certificate
/// challenges for it and for the apex, a wildcard, the name server's
/// address, names below shop's `www`, a forged registry TXT). Every answer
/// dig gets for those names is the same before and after, byte for byte,
/// and every DNSEndpoint of mallory's says why it is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hostile_tenant_changes_no_answer_of_the_embedded_server() {
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system", "shop", "mallory"]).await;
    create_myfed_domain(&client, json!({"domain": "example.com"})).await;
    let web = "web.shop.myfed.svc.example.com";
    let shop: Api<DNSEndpoint> = Api::namespaced(client.clone(), "shop");
    let mallory: Api<DNSEndpoint> = Api::namespaced(client.clone(), "mallory");
    shop.create(
        &PostParams::default(),
        &dns_endpoint(
            "service-web",
            json!([
                {"dnsName": web, "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10"]},
                {"dnsName": "www.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.11"]},
            ]),
        ),
    )
    .await
    .unwrap();
    let dir = temp_dir("hostile-tenant");
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    eventually("the victim's names are served", || {
        dig(port, web, "A", false) == ["203.0.113.10"] && dig(port, "www.example.com", "A", false) == ["203.0.113.11"]
    })
    .await;
    let queries = [
        (web, "A"),
        (web, "NS"),
        ("_acme-challenge.web.shop.myfed.svc.example.com", "TXT"),
        ("evil.web.shop.myfed.svc.example.com", "A"),
        ("shop.myfed.svc.example.com", "NS"),
        ("example.com", "TXT"),
        ("example.com", "MX"),
        ("_acme-challenge.example.com", "TXT"),
        ("ns1.example.com", "A"),
        ("anything.example.com", "A"),
        ("sub.example.com", "NS"),
        ("www.example.com", "A"),
        ("_acme-challenge.www.example.com", "TXT"),
        ("evil.www.example.com", "A"),
        ("a-www.example.com", "TXT"),
    ];
    let snapshot = || -> Vec<String> {
        queries
            .iter()
            .map(|(name, t)| {
                format!(
                    "{name} {t}: {} {:?}",
                    dig_status(port, name, t),
                    dig(port, name, t, false)
                )
            })
            .collect()
    };
    let before = snapshot();

    // creationTimestamp has whole seconds: make mallory's claims newer.
    tokio::time::sleep(Duration::from_millis(1100)).await;
    mallory
        .create(
            &PostParams::default(),
            &dns_endpoint(
                "attack",
                json!([
                    {"dnsName": "shop.myfed.svc.example.com", "recordType": "NS", "targets": ["ns.attacker.test"]},
                    {"dnsName": "_acme-challenge.web.shop.myfed.svc.example.com", "recordType": "TXT", "targets": ["forged"]},
                    {"dnsName": "evil.web.shop.myfed.svc.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "example.com", "recordType": "TXT", "targets": ["v=spf1 +all"]},
                    {"dnsName": "example.com", "recordType": "MX", "targets": ["10 mail.attacker.test"]},
                    {"dnsName": "_acme-challenge.example.com", "recordType": "TXT", "targets": ["forged"]},
                    {"dnsName": "ns1.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "*.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "sub.example.com", "recordType": "NS", "targets": ["ns.attacker.test"]},
                    {"dnsName": "www.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "_acme-challenge.www.example.com", "recordType": "TXT", "targets": ["forged"]},
                    {"dnsName": "evil.www.example.com", "recordType": "A", "targets": ["192.0.2.66"]},
                    {"dnsName": "a-www.example.com", "recordType": "TXT",
                     "targets": ["heritage=external-dns,external-dns/owner=fedns,external-dns/resource=crd/shop/service-web"]},
                ]),
            ),
        )
        .await
        .unwrap();
    mallory
        .create(
            &PostParams::default(),
            &dns_endpoint(
                "own",
                json!([{"dnsName": "promo.example.com", "recordType": "A", "targets": ["192.0.2.67"]}]),
            ),
        )
        .await
        .unwrap();
    eventually("mallory's own name is served (its objects were read)", || {
        dig(port, "promo.example.com", "A", false) == ["192.0.2.67"]
    })
    .await;
    let (reason, message) = published_condition(&mallory, "attack", "False").await;
    println!("refused: {reason}: {message}");
    assert!(reason == "NotAllowed" || reason == "Conflict", "{reason}");
    for needle in [
        "service name of namespace shop",
        "the zone apex",
        "a wildcard",
        "a delegation",
        "a name server of the zone",
        "held by DNSEndpoint shop/service-web",
        "ownership registry value",
    ] {
        assert!(message.contains(needle), "the condition names {needle:?}: {message}");
    }
    published_condition(&shop, "service-web", "True").await;
    let after = snapshot();
    for (b, a) in before.iter().zip(&after) {
        println!("{a}");
        assert_eq!(a, b, "an answer changed");
    }
    let _ = std::fs::remove_dir_all(dir);
}
