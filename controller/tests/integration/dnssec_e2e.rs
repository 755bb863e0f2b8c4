//! `fedns dns-server` signing a Domain with `spec.dnssec`: against an
//! emulated host cluster it creates the key Secret, reports the DS record
//! in the Domain's status (and `fedns explain` prints it), and BIND's
//! `delv` validates its answers from that DS alone; with `--manifests --dnssec-key-dir` the key is a file
//! made once and kept across restarts.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use fedns_api::{DNSEndpoint, Domain};
use fedns_kube_emulator::Emulator;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, PostParams};
use serde_json::json;

/// A `delv` trust-anchor file with `ds` (`example.com. 30 IN DS 1 13 2 HEX`)
/// as the static DS of its owner.
fn anchors_from_ds(dir: &Path, ds: &str) -> std::path::PathBuf {
    let fields: Vec<&str> = ds.split_whitespace().collect();
    let (owner, tag, algorithm, digest_type, digest) =
        (fields[0], fields[4], fields[5], fields[6], fields[7..].join(""));
    let path = dir.join("anchors.conf");
    write(
        &path,
        &format!("trust-anchors {{\n  {owner} static-ds {tag} {algorithm} {digest_type} \"{digest}\";\n}};\n"),
    );
    path
}

fn delv(port: u16, anchors: &Path, name: &str, rtype: &str) -> String {
    let out = Command::new("delv")
        .args(["@127.0.0.1", "-p", &port.to_string(), "-a"])
        .arg(anchors)
        .args(["+root=example.com", name, rtype])
        .output()
        .expect("delv (Debian bind9-dnsutils) must be installed");
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

fn assert_validates(port: u16, anchors: &Path, name: &str, rtype: &str, expect: &str) {
    let out = delv(port, anchors, name, rtype);
    assert!(out.contains(expect), "delv {name} {rtype}: expected {expect:?}:\n{out}");
}

/// An emulated host cluster holding the Domain `fedns-system/myfed` for
/// example.com (name server ns1.example.com) with `dnssec` as its
/// `spec.dnssec`, the Secrets `secrets` (made first) and the DNSEndpoint
/// `ns/<endpoint>` with `endpoints`, and `fedns dns-server` watching it
/// on a loopback port.
struct SignedHost {
    _host: Emulator,
    client: kube::Client,
    dir: std::path::PathBuf,
    kubeconfig: std::path::PathBuf,
    port: u16,
    _server: Process,
}

async fn signed_host(
    tag: &str,
    dnssec: serde_json::Value,
    secrets: Vec<Secret>,
    endpoint: &str,
    endpoints: serde_json::Value,
) -> SignedHost {
    let host = Emulator::start().await.unwrap();
    let client = client_of(&host).await;
    install_crds(&client, &["fedns-system", "ns"]).await;
    let secret_api: Api<Secret> = Api::namespaced(client.clone(), "fedns-system");
    for secret in secrets {
        secret_api.create(&PostParams::default(), &secret).await.unwrap();
    }
    create_myfed_domain(
        &client,
        json!({"domain": "example.com", "nameServers": ["ns1.example.com"], "dnssec": dnssec}),
    )
    .await;
    let dnsendpoints: Api<DNSEndpoint> = Api::namespaced(client.clone(), "ns");
    dnsendpoints
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({
                "apiVersion": "multiclusterdns.fedns.io/v1alpha1", "kind": "DNSEndpoint",
                "metadata": {"name": endpoint},
                "spec": {"endpoints": endpoints},
            }))
            .unwrap(),
        )
        .await
        .unwrap();
    let dir = temp_dir(tag);
    let kubeconfig = dir.join("host.yaml");
    host.write_kubeconfig(&kubeconfig).unwrap();
    let port = free_port();
    let server = spawn_fedns(&[
        "dns-server",
        "--kubeconfig",
        kubeconfig.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    SignedHost {
        _host: host,
        client,
        dir,
        kubeconfig,
        port,
        _server: server,
    }
}

/// The first DS record in the Domain's status, waited for up to 30 s.
async fn status_ds(domains: &Api<Domain>) -> String {
    let started = std::time::Instant::now();
    while started.elapsed() < std::time::Duration::from_secs(30) {
        let domain = domains.get("myfed").await.unwrap();
        if let Some(ds) = domain.status.and_then(|s| s.ds_records.first().cloned()) {
            println!("DS in status after {:?}: {ds}", started.elapsed());
            return ds;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    panic!("status.dsRecords not written within 30 s");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn signs_with_a_key_secret_it_creates_and_reports_the_ds() {
    let setup = signed_host(
        "dnssec-e2e",
        json!({"enabled": true}),
        Vec::new(),
        "service-nginx",
        json!([
            {"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10", "198.51.100.20"]},
            {"dnsName": "www.example.com", "recordType": "CNAME", "targets": ["nginx.ns.myfed.svc.example.com"]},
        ]),
    )
    .await;
    let (client, dir, kubeconfig, port) = (&setup.client, &setup.dir, &setup.kubeconfig, setup.port);
    let domains: Api<Domain> = Api::namespaced(client.clone(), "fedns-system");
    eventually("the signed zone is served", || {
        dig(port, "nginx.ns.myfed.svc.example.com", "A", false).len() == 2
    })
    .await;
    // The DS in the Domain's status.
    let ds = status_ds(&domains).await;
    assert!(
        ds.starts_with("example.com.") && ds.contains(" DS ") && ds.contains(" 13 2 "),
        "{ds}"
    );
    // The key Secret it made.
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "fedns-system");
    let secret = secrets.get("myfed-dnssec").await.unwrap();
    assert!(secret.data.unwrap().contains_key("key.pkcs8"));
    // `fedns explain` prints it too.
    let explain = Command::new(env!("CARGO_BIN_EXE_fedns"))
        .args(["explain", "nginx.ns.myfed.svc.example.com", "--kubeconfig"])
        .arg(kubeconfig)
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&explain.stdout);
    assert!(
        text.contains(&format!("DS for the parent zone: {ds}")),
        "fedns explain:\n{text}"
    );
    let anchors = anchors_from_ds(dir, &ds);
    assert_validates(
        port,
        &anchors,
        "nginx.ns.myfed.svc.example.com",
        "A",
        "; fully validated",
    );
    assert_validates(port, &anchors, "www.example.com", "A", "; fully validated");
    assert_validates(
        port,
        &anchors,
        "nothing.example.com",
        "A",
        "; negative response, fully validated",
    );
    std::fs::remove_dir_all(dir).ok();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_mode_keeps_its_key_file() {
    let dir = temp_dir("dnssec-manifests");
    let manifests = dir.join("zone.yaml");
    write(
        &manifests,
        r#"apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  dnssec: {enabled: true, algorithm: ED25519}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: web, namespace: ns}
spec:
  endpoints:
    - {dnsName: web.example.com, recordType: A, targets: [192.0.2.10]}
"#,
    );
    let keys = dir.join("keys");
    let dnskey = |port: u16| dig(port, "example.com", "DNSKEY", false);
    let mut seen = Vec::new();
    for round in 0..2 {
        let port = free_port();
        let _server = spawn_fedns(&[
            "dns-server",
            "--manifests",
            manifests.to_str().unwrap(),
            "--dnssec-key-dir",
            keys.to_str().unwrap(),
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--udp-workers",
            "1",
        ]);
        eventually("the signed zone is served", || !dnskey(port).is_empty()).await;
        let key = dnskey(port);
        assert!(key[0].starts_with("257 3 15 "), "{key:?}");
        // The DNSKEY as a trust anchor.
        let anchors = dir.join("anchors.conf");
        let fields: Vec<&str> = key[0].split_whitespace().collect();
        write(
            &anchors,
            &format!(
                "trust-anchors {{\n  example.com. static-key 257 3 15 \"{}\";\n}};\n",
                fields[3..].join("")
            ),
        );
        assert_validates(port, &anchors, "web.example.com", "A", "; fully validated");
        seen.push(key);
        println!(
            "round {round}: key file kept: {}",
            keys.join("example.com.15.pkcs8").exists()
        );
    }
    assert_eq!(seen[0], seen[1], "the key changed across restarts");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(keys.join("example.com.15.pkcs8"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// `keyMode: KSK+ZSK` against the emulated host cluster: the Secret made
/// holds `ksk.pkcs8` and `zsk.pkcs8`, the DNSKEY RRset both keys (flags
/// 257 and 256), the DS in the status is the KSK's and `delv` validates
/// from it alone (positive and compact-denial answers).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ksk_zsk_mode_creates_both_keys_and_validates_from_the_ds() {
    let setup = signed_host(
        "dnssec-ksk-zsk-e2e",
        json!({"enabled": true, "keyMode": "KSK+ZSK"}),
        Vec::new(),
        "web",
        json!([{"dnsName": "web.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10"]}]),
    )
    .await;
    let (client, dir, port) = (&setup.client, &setup.dir, setup.port);
    let domains: Api<Domain> = Api::namespaced(client.clone(), "fedns-system");
    eventually("both keys are published", || {
        dig(port, "example.com", "DNSKEY", false).len() == 2
    })
    .await;
    let flags: Vec<String> = dig(port, "example.com", "DNSKEY", false)
        .iter()
        .map(|k| k.split_whitespace().next().unwrap_or_default().to_owned())
        .collect();
    assert_eq!(flags, ["256", "257"]);
    let ds = status_ds(&domains).await;
    let secrets: Api<Secret> = Api::namespaced(client.clone(), "fedns-system");
    let data = secrets.get("myfed-dnssec").await.unwrap().data.unwrap();
    let mut names: Vec<&String> = data.keys().collect();
    names.sort();
    assert_eq!(names, ["ksk.pkcs8", "zsk.pkcs8"]);
    let anchors = anchors_from_ds(dir, &ds);
    assert_validates(port, &anchors, "example.com", "DNSKEY", "; fully validated");
    assert_validates(port, &anchors, "web.example.com", "A", "; fully validated");
    assert_validates(
        port,
        &anchors,
        "nothing.example.com",
        "A",
        "; negative response, fully validated",
    );
    assert_validates(
        port,
        &anchors,
        "web.example.com",
        "TXT",
        "; negative response, fully validated",
    );
    std::fs::remove_dir_all(dir).ok();
}

/// `--manifests --dnssec-key-dir` in KSK+ZSK mode: `<zone>.15.ksk.pkcs8`
/// and `<zone>.15.zsk.pkcs8` are made; a standby ZSK file put beside them
/// is published (three DNSKEYs) and the zone still validates.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn manifests_mode_ksk_zsk_key_files_and_standby() {
    let dir = temp_dir("dnssec-manifests-ksk-zsk");
    let manifests = dir.join("zone.yaml");
    write(
        &manifests,
        r#"apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec:
  domain: example.com
  dnssec: {enabled: true, algorithm: ED25519, keyMode: KSK+ZSK}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: DNSEndpoint
metadata: {name: web, namespace: ns}
spec:
  endpoints:
    - {dnsName: web.example.com, recordType: A, targets: [192.0.2.10]}
"#,
    );
    let keys = dir.join("keys");
    std::fs::create_dir_all(&keys).unwrap();
    let algorithm = fedns_dnsserver::DnssecAlgorithm::Ed25519;
    std::fs::write(
        keys.join("example.com.15.standby-zsk-next.pkcs8"),
        fedns_dnsserver::DnssecKey::generate_pkcs8(algorithm).unwrap(),
    )
    .unwrap();
    let port = free_port();
    let _server = spawn_fedns(&[
        "dns-server",
        "--manifests",
        manifests.to_str().unwrap(),
        "--dnssec-key-dir",
        keys.to_str().unwrap(),
        "--listen",
        &format!("127.0.0.1:{port}"),
        "--udp-workers",
        "1",
    ]);
    let dnskey = || dig(port, "example.com", "DNSKEY", false);
    eventually("the signed zone is served", || dnskey().len() == 3).await;
    let keys_served = dnskey();
    let flags: Vec<&str> = keys_served
        .iter()
        .map(|k| k.split_whitespace().next().unwrap_or_default())
        .collect();
    assert_eq!(flags, ["256", "256", "257"], "{keys_served:?}");
    for file in ["example.com.15.ksk.pkcs8", "example.com.15.zsk.pkcs8"] {
        assert!(keys.join(file).exists(), "{file} not made");
    }
    assert!(!keys.join("example.com.15.pkcs8").exists());
    // The KSK's DNSKEY as the trust anchor.
    let ksk = keys_served.iter().find(|k| k.starts_with("257 ")).unwrap();
    let fields: Vec<&str> = ksk.split_whitespace().collect();
    let anchors = dir.join("anchors.conf");
    write(
        &anchors,
        &format!(
            "trust-anchors {{\n  example.com. static-key 257 3 15 \"{}\";\n}};\n",
            fields[3..].join("")
        ),
    );
    assert_validates(port, &anchors, "web.example.com", "A", "; fully validated");
    assert_validates(
        port,
        &anchors,
        "nothing.example.com",
        "A",
        "; negative response, fully validated",
    );
    std::fs::remove_dir_all(&dir).ok();
}

/// A key Secret that lacks the key mode's keys: the zone is served
/// unsigned, the Domain says why (condition `DNSSEC` False,
/// `SigningFailed`, naming the Secret and the missing data key, never key
/// bytes) with a Warning Event; pointed at a Secret it may create, the
/// zone is signed and the condition turns True with the DS.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_key_secret_without_keys_is_reported_on_the_domain() {
    use fedns_api::conditions;
    use k8s_openapi::api::events::v1::Event;
    use std::collections::BTreeMap;

    let wrong = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("wrong-keys".into()),
            ..Default::default()
        },
        string_data: Some(BTreeMap::from([("notes.txt".to_owned(), "not a key".to_owned())])),
        ..Default::default()
    };
    let setup = signed_host(
        "dnssec-e2e-bad-secret",
        json!({"enabled": true, "keySecret": "wrong-keys"}),
        vec![wrong],
        "service-nginx",
        json!([{"dnsName": "nginx.ns.myfed.svc.example.com", "recordType": "A", "recordTTL": 30, "targets": ["203.0.113.10"]}]),
    )
    .await;
    let (client, dir, port) = (&setup.client, &setup.dir, setup.port);
    let domains: Api<Domain> = Api::namespaced(client.clone(), "fedns-system");
    eventually("the zone is served (unsigned)", || {
        dig(port, "nginx.ns.myfed.svc.example.com", "A", false).len() == 1
    })
    .await;
    let condition = |domain: &Domain| {
        domain
            .status
            .as_ref()
            .and_then(|s| s.conditions.iter().find(|c| c.type_ == conditions::DNSSEC).cloned())
    };
    let started = std::time::Instant::now();
    let failed = loop {
        let domain = domains.get("myfed").await.unwrap();
        if let Some(c) = condition(&domain).filter(|c| c.status == "False" && c.reason == conditions::SIGNING_FAILED) {
            break c;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no DNSSEC condition: {:?}",
            domain.status
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    println!("DNSSEC False after {:?}: {}", started.elapsed(), failed.message);
    assert!(
        failed.message.contains("wrong-keys") && failed.message.contains("key.pkcs8"),
        "{}",
        failed.message
    );
    let domain = domains.get("myfed").await.unwrap();
    assert!(
        domain.status.as_ref().is_some_and(|s| s.ds_records.is_empty()),
        "no DS while unsigned"
    );
    // Served unsigned: no RRSIG with DO.
    let signed = Command::new("dig")
        .args(["+dnssec", "+time=2", "+tries=1", "-p", &port.to_string(), "@127.0.0.1"])
        .args(["nginx.ns.myfed.svc.example.com", "A"])
        .output()
        .unwrap();
    assert!(!String::from_utf8_lossy(&signed.stdout).contains("RRSIG"));
    let started = std::time::Instant::now();
    loop {
        let events: Api<Event> = Api::namespaced(client.clone(), "fedns-system");
        let list = events.list(&Default::default()).await.unwrap();
        let found = list.items.iter().any(|e| {
            e.regarding.as_ref().and_then(|r| r.name.as_deref()) == Some("myfed")
                && e.reason.as_deref() == Some(conditions::SIGNING_FAILED)
                && e.type_.as_deref() == Some("Warning")
        });
        if found {
            break;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "no SigningFailed Event"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // A Secret it may create: signed, condition True with the DS.
    domains
        .patch(
            "myfed",
            &kube::api::PatchParams::default(),
            &kube::api::Patch::Merge(json!({"spec": {"dnssec": {"keySecret": "myfed-keys"}}})),
        )
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let signed = loop {
        let domain = domains.get("myfed").await.unwrap();
        if let Some(c) = condition(&domain).filter(|c| c.status == "True") {
            break c;
        }
        assert!(
            started.elapsed() < std::time::Duration::from_secs(30),
            "not signed: {:?}",
            domain.status
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    };
    println!("DNSSEC True after {:?}: {}", started.elapsed(), signed.message);
    assert_eq!(signed.reason, "Signed");
    assert!(signed.message.contains(" DS "), "{}", signed.message);
    std::fs::remove_dir_all(dir).ok();
}
