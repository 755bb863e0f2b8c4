//! Raw requests a client would not send, injected faults, seeding, deletecollection and watch timeouts, kubectl with the kubeconfig.

use super::*;

/// Raw requests a client library would not send.
#[tokio::test]
async fn bad_requests_get_status_errors() {
    let t = target().await;
    let ns = &t.namespace;
    let send = |method: &str, path: String, content_type: &str, body: Vec<u8>| {
        let client = t.client.clone();
        let request = http::Request::builder()
            .method(method)
            .uri(path)
            .header("content-type", content_type)
            .body(body)
            .unwrap();
        async move {
            let response = client.send(request.map(kube::client::Body::from)).await.unwrap();
            let code = response.status().as_u16();
            let body = response.into_body().collect_bytes().await.unwrap();
            let status: serde_json::Value = serde_json::from_slice(&body).unwrap_or(json!({}));
            (code, status)
        }
    };
    let (code, status) = send(
        "POST",
        format!("/api/v1/namespaces/{ns}/configmaps"),
        "application/json",
        b"{not json".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    assert_eq!(status["kind"], "Status");
    let (code, _) = send(
        "GET",
        "/apis/nothing.example.com/v1/things".into(),
        "application/json",
        vec![],
    )
    .await;
    assert_eq!(code, 404);
    let (code, _) = send(
        "PATCH",
        format!("/api/v1/namespaces/{ns}/configmaps/x"),
        "text/plain",
        b"{}".to_vec(),
    )
    .await;
    assert_eq!(code, 415);
    if t.emulator.is_some() {
        let big = format!(
            "{{\"metadata\":{{\"name\":\"big\"}},\"data\":{{\"x\":\"{}\"}}}}",
            "a".repeat(4 * 1024 * 1024)
        );
        let (code, _) = send(
            "POST",
            format!("/api/v1/namespaces/{ns}/configmaps"),
            "application/json",
            big.into_bytes(),
        )
        .await;
        assert_eq!(code, 413);
    }
    // Malformed YAML in a server-side apply body.
    let (code, _) = send(
        "PATCH",
        format!("/api/v1/namespaces/{ns}/configmaps/y?fieldManager=t"),
        "application/apply-patch+yaml",
        b"metadata: {name: [unclosed\n".to_vec(),
    )
    .await;
    assert_eq!(code, 400);
    // A watch client that disconnects mid-stream leaves the server healthy.
    for _ in 0..5 {
        let api = t.configmaps();
        let mut stream = api.watch(&WatchParams::default(), "0").await.unwrap().boxed();
        api.create(
            &PostParams::default(),
            &configmap(&format!("dc-{}", uuid_suffix()), &[], &[]),
        )
        .await
        .unwrap();
        let _ = tokio::time::timeout(Duration::from_secs(2), stream.next()).await;
        drop(stream);
    }
    assert!(t.client.apiserver_version().await.is_ok());
    t.cleanup().await;
}

#[tokio::test]
async fn injected_faults() {
    let t = target().await;
    let Some(emulator) = t.emulator.clone() else {
        println!("skipped: faults are injected into the emulator only");
        return t.cleanup().await;
    };
    // kube's client retries 503s by default; this one must see each.
    let mut config = Config::from_custom_kubeconfig(
        Kubeconfig::from_yaml(&emulator.kubeconfig_yaml()).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    config.default_retry = false;
    let api: Api<ConfigMap> = Api::namespaced(Client::try_from(config).unwrap(), &t.namespace);
    emulator.set_error_rate(1.0);
    let err = api.list(&ListParams::default()).await.unwrap_err();
    assert_eq!(api_error(err).0, 503);
    emulator.set_error_rate(0.5);
    let mut failures = 0;
    for _ in 0..20 {
        if api.list(&ListParams::default()).await.is_err() {
            failures += 1;
        }
    }
    assert!((5..=15).contains(&failures), "{failures} of 20 failed at rate 0.5");
    emulator.set_error_rate(0.0);

    emulator.set_latency(Duration::from_millis(300));
    let started = Instant::now();
    api.list(&ListParams::default()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(300));
    emulator.set_latency(Duration::ZERO);

    emulator.set_hang(true);
    let hung = tokio::time::timeout(Duration::from_millis(500), api.list(&ListParams::default())).await;
    assert!(hung.is_err(), "a hung server must not answer");
    emulator.set_hang(false);
    api.list(&ListParams::default()).await.unwrap();

    emulator.stop();
    let refused = tokio::time::timeout(Duration::from_secs(5), api.list(&ListParams::default()))
        .await
        .unwrap();
    assert!(refused.is_err());
    emulator.resume().await.unwrap();
    api.list(&ListParams::default()).await.unwrap();
    t.cleanup().await;
}

#[tokio::test]
async fn seeding_from_yaml() {
    let Some(emulator) = Some(Emulator::start().await.unwrap()) else {
        return;
    };
    let report = emulator
        .seed_yaml(
            "inline.yaml",
            r#"
apiVersion: v1
kind: List
items:
  - apiVersion: v1
    kind: Service
    metadata: {name: nginx, namespace: ns, resourceVersion: "999", uid: old}
    spec: {type: LoadBalancer, ports: [{port: 80}]}
    status: {loadBalancer: {ingress: [{ip: 203.0.113.10}]}}
  - apiVersion: example.com/v1
    kind: Unknown
    metadata: {name: u}
---
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}
"#,
        )
        .unwrap();
    assert_eq!(report.applied, 2);
    assert_eq!(report.skipped.len(), 1);
    let client = client_for(Kubeconfig::from_yaml(&emulator.kubeconfig_yaml()).unwrap()).await;
    let svc: Service = Api::namespaced(client.clone(), "ns").get("nginx").await.unwrap();
    assert_eq!(
        svc.status.unwrap().load_balancer.unwrap().ingress.unwrap()[0]
            .ip
            .as_deref(),
        Some("203.0.113.10")
    );
    assert_ne!(svc.metadata.uid.as_deref(), Some("old"));
    let bad = emulator.seed_yaml("broken.yaml", "apiVersion: v1\nkind: Service\nmetadata: {name: [oops\n");
    match bad {
        Err(fedns_kube_emulator::SeedError::Parse { line, .. }) => assert!(line >= 1),
        other => panic!("{other:?}"),
    }
    emulator.stop();
}

#[tokio::test]
async fn deletecollection_and_watch_timeout() {
    let t = target().await;
    let api = t.configmaps();
    for i in 0..6 {
        let tier = if i % 2 == 0 { "a" } else { "b" };
        api.create(
            &PostParams::default(),
            &configmap(&format!("dc{i}"), &[("tier", tier)], &[]),
        )
        .await
        .unwrap();
    }
    api.delete_collection(&DeleteParams::default(), &ListParams::default().labels("tier=a"))
        .await
        .unwrap();
    let left: Vec<String> = api
        .list(&ListParams::default().labels("tier"))
        .await
        .unwrap()
        .items
        .iter()
        .map(|c| c.name_any())
        .collect();
    assert_eq!(left.len(), 3);
    assert!(
        left.iter().all(|n| ["dc1", "dc3", "dc5"].contains(&n.as_str())),
        "{left:?}"
    );
    // timeoutSeconds ends the stream.
    let rv = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    let started = Instant::now();
    let stream = api.watch(&WatchParams::default().timeout(1), &rv).await.unwrap();
    let events: Vec<_> = tokio::time::timeout(Duration::from_secs(20), stream.collect::<Vec<_>>())
        .await
        .unwrap();
    // Only BOOKMARKs (kube asks for them) may arrive before the stream ends.
    assert!(
        events.iter().all(|e| matches!(e, Ok(WatchEvent::Bookmark(_)))),
        "{events:?}"
    );
    assert!(started.elapsed() < Duration::from_secs(15));
    t.cleanup().await;
}

/// kubectl, with the emulator's kubeconfig: server-side apply, get, patch,
/// delete. (`kubectl create` of built-in kinds sends protobuf, which the
/// emulator does not speak: it answers 415.)
#[tokio::test]
async fn kubectl_works_with_the_kubeconfig() {
    let t = target().await;
    let Some(emulator) = &t.emulator else {
        println!("skipped: kubectl is exercised against the emulator only");
        return t.cleanup().await;
    };
    let path = std::env::temp_dir().join(format!("fedns-kubectl-{}.yaml", uuid_suffix()));
    emulator.write_kubeconfig(&path).unwrap();
    let ns = t.namespace.clone();
    let run = move |args: Vec<String>| {
        let path = path.clone();
        async move {
            let out = tokio::process::Command::new("kubectl")
                .arg("--kubeconfig")
                .arg(&path)
                .args(&args)
                .output()
                .await
                .expect("kubectl must be installed (./scripts/test.sh installs Debian's kubernetes-client)");
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            assert!(
                out.status.success(),
                "kubectl {args:?}: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            stdout
        }
    };
    let a = |s: &str| s.split_whitespace().map(str::to_owned).collect::<Vec<_>>();
    let manifest = std::env::temp_dir().join(format!("fedns-kubectl-{}.json", uuid_suffix()));
    std::fs::write(
        &manifest,
        json!({"apiVersion": "v1", "kind": "List", "items": [
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k1", "namespace": ns}, "data": {"a": "b"}},
            {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "k2", "namespace": ns}, "data": {"x": "1"}},
        ]})
        .to_string(),
    )
    .unwrap();
    // With validation on (kubectl's default): the emulator's OpenAPI
    // document has no schemas, so kubectl finds nothing to check.
    run(vec![
        "apply".into(),
        "--server-side".into(),
        "-f".into(),
        manifest.display().to_string(),
    ])
    .await;
    let json = run(a(&format!("-n {ns} get configmap k1 -o json"))).await;
    let value: serde_json::Value = serde_json::from_str(&json).unwrap();
    assert_eq!(value["data"]["a"], "b");
    run(vec![
        "-n".into(),
        ns.clone(),
        "patch".into(),
        "configmap".into(),
        "k2".into(),
        "--type=merge".into(),
        "-p".into(),
        r#"{"data":{"x":"2"}}"#.into(),
    ])
    .await;
    let k2: serde_json::Value =
        serde_json::from_str(&run(a(&format!("-n {ns} get configmap k2 -o json"))).await).unwrap();
    assert_eq!(k2["data"]["x"], "2");
    let names = run(a(&format!("-n {ns} get configmaps -o name"))).await;
    assert!(
        names.contains("configmap/k1") && names.contains("configmap/k2"),
        "{names}"
    );
    run(a(&format!("-n {ns} delete configmap k1"))).await;
    assert!(!run(a(&format!("-n {ns} get configmaps -o name")))
        .await
        .contains("configmap/k1"));
    let _ = std::fs::remove_file(manifest);
    t.cleanup().await;
}
