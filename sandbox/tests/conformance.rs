//! Conformance suite: drives the emulator only through kube-rs (`Api`,
//! `watcher`, `reflector`, `Controller`) and raw HTTP through kube's
//! client. With `FEDNS_CONFORMANCE_KUBECONFIG` set, the same tests run
//! against that cluster instead (fault-injection tests then return early,
//! saying so), so the emulator can be checked against the real thing.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_sandbox::{Emulator, EmulatorConfig};
use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, Namespace, Service};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{Api, DeleteParams, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::runtime::{reflector, watcher, WatchStreamExt};
use kube::{Client, Config, ResourceExt};
use serde_json::json;

/// The cluster under test and, when emulated, its handle.
struct Target {
    client: Client,
    emulator: Option<Emulator>,
    namespace: String,
}

async fn client_for(kubeconfig: Kubeconfig) -> Client {
    let config = Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
        .await
        .expect("kubeconfig");
    Client::try_from(config).expect("client")
}

async fn target_with(config: EmulatorConfig) -> Target {
    let (client, emulator) = match std::env::var("FEDNS_CONFORMANCE_KUBECONFIG") {
        Ok(path) => (
            client_for(Kubeconfig::read_from(path).expect("read kubeconfig")).await,
            None,
        ),
        Err(_) => {
            let emulator = Emulator::start_with(config).await.expect("start emulator");
            let kubeconfig = Kubeconfig::from_yaml(&emulator.kubeconfig_yaml()).expect("parse kubeconfig");
            (client_for(kubeconfig).await, Some(emulator))
        }
    };
    let namespace = format!("conf-{}", uuid_suffix());
    let namespaces: Api<Namespace> = Api::all(client.clone());
    namespaces
        .create(
            &PostParams::default(),
            &serde_json::from_value(json!({"metadata": {"name": namespace}})).unwrap(),
        )
        .await
        .expect("create test namespace");
    Target {
        client,
        emulator,
        namespace,
    }
}

async fn target() -> Target {
    target_with(EmulatorConfig {
        bookmark_interval: Duration::from_millis(500),
        ..EmulatorConfig::default()
    })
    .await
}

impl Target {
    fn configmaps(&self) -> Api<ConfigMap> {
        Api::namespaced(self.client.clone(), &self.namespace)
    }

    async fn cleanup(self) {
        let namespaces: Api<Namespace> = Api::all(self.client.clone());
        let _ = namespaces.delete(&self.namespace, &DeleteParams::default()).await;
        if let Some(emulator) = self.emulator {
            emulator.stop();
        }
    }
}

fn uuid_suffix() -> String {
    static N: AtomicUsize = AtomicUsize::new(0);
    format!("{}-{}", std::process::id(), N.fetch_add(1, Ordering::Relaxed))
}

fn configmap(name: &str, labels: &[(&str, &str)], data: &[(&str, &str)]) -> ConfigMap {
    serde_json::from_value(json!({
        "metadata": {"name": name, "labels": labels.iter().cloned().collect::<BTreeMap<_, _>>()},
        "data": data.iter().cloned().collect::<BTreeMap<_, _>>(),
    }))
    .unwrap()
}

fn api_error(e: kube::Error) -> (u16, String) {
    match e {
        kube::Error::Api(status) => (status.code, status.reason.clone()),
        other => panic!("expected an API error, got {other:?}"),
    }
}

async fn eventually<F, Fut>(what: &str, mut check: F)
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while started.elapsed() < Duration::from_secs(30) {
        if check().await {
            println!("{what}: after {:?}", started.elapsed());
            return;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("{what}: not within 30 s");
}

#[tokio::test]
async fn discovery_and_version() {
    let t = target().await;
    let version = t.client.apiserver_version().await.unwrap();
    assert!(!version.major.is_empty() && !version.git_version.is_empty());
    let discovery = kube::discovery::Discovery::new(t.client.clone()).run().await.unwrap();
    let mut found = Vec::new();
    for group in discovery.groups() {
        for (resource, caps) in group.recommended_resources() {
            let namespaced = caps.scope == kube::discovery::Scope::Namespaced;
            found.push((format!("{}/{}", resource.group, resource.plural), namespaced));
        }
    }
    // (resource, namespaced), as kube-apiserver serves them.
    for (wanted, namespaced) in [
        ("/namespaces", false),
        ("/services", true),
        ("/endpoints", true),
        ("/nodes", false),
        ("/secrets", true),
        ("/configmaps", true),
        ("/events", true),
        ("/serviceaccounts", true),
        ("discovery.k8s.io/endpointslices", true),
        ("networking.k8s.io/ingresses", true),
        ("coordination.k8s.io/leases", true),
        ("events.k8s.io/events", true),
        ("apiextensions.k8s.io/customresourcedefinitions", false),
        ("apps/deployments", true),
        ("rbac.authorization.k8s.io/roles", true),
        ("rbac.authorization.k8s.io/rolebindings", true),
        ("rbac.authorization.k8s.io/clusterroles", false),
        ("rbac.authorization.k8s.io/clusterrolebindings", false),
    ] {
        assert!(
            found.contains(&(wanted.to_owned(), namespaced)),
            "{wanted} (namespaced: {namespaced}) missing from discovery: {found:?}"
        );
    }
    t.cleanup().await;
}

#[tokio::test]
async fn create_get_list_update_delete() {
    let t = target().await;
    let api = t.configmaps();
    let created = api
        .create(
            &PostParams::default(),
            &configmap("one", &[("app", "web")], &[("k", "v")]),
        )
        .await
        .unwrap();
    assert!(created.metadata.uid.is_some());
    assert!(created.metadata.creation_timestamp.is_some());
    let rv1: u64 = created.resource_version().unwrap().parse().unwrap();

    // generateName
    let mut generated = configmap("", &[("app", "api")], &[]);
    generated.metadata.name = None;
    generated.metadata.generate_name = Some("gen-".into());
    let generated = api.create(&PostParams::default(), &generated).await.unwrap();
    assert!(generated.name_any().starts_with("gen-") && generated.name_any().len() > 4);

    // Duplicate → 409 AlreadyExists; missing → 404 NotFound.
    let dup = api
        .create(&PostParams::default(), &configmap("one", &[], &[]))
        .await
        .unwrap_err();
    assert_eq!(api_error(dup), (409, "AlreadyExists".into()));
    let missing = api.get("nope").await.unwrap_err();
    assert_eq!(api_error(missing), (404, "NotFound".into()));

    // Update with the right version works and raises it; a stale one → 409 Conflict.
    let mut current = api.get("one").await.unwrap();
    current.data = Some([("k".to_string(), "v2".to_string())].into());
    let updated = api.replace("one", &PostParams::default(), &current).await.unwrap();
    let rv2: u64 = updated.resource_version().unwrap().parse().unwrap();
    assert!(rv2 > rv1);
    let stale = api.replace("one", &PostParams::default(), &current).await.unwrap_err();
    assert_eq!(api_error(stale), (409, "Conflict".into()));

    // Selectors.
    let names = |list: kube::core::ObjectList<ConfigMap>| {
        let mut n: Vec<String> = list
            .items
            .iter()
            .map(|c| c.name_any())
            .filter(|n| n != "kube-root-ca.crt")
            .collect();
        n.sort();
        n
    };
    assert_eq!(
        names(api.list(&ListParams::default().labels("app=web")).await.unwrap()),
        ["one"]
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("app in (web,api)"))
                .await
                .unwrap()
        )
        .len(),
        2
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().labels("app notin (web)"))
                .await
                .unwrap()
        )
        .len(),
        1
    );
    assert_eq!(
        names(api.list(&ListParams::default().labels("!app")).await.unwrap()).len(),
        0
    );
    assert_eq!(
        names(
            api.list(&ListParams::default().fields("metadata.name=one"))
                .await
                .unwrap()
        ),
        ["one"]
    );

    // Delete.
    api.delete("one", &DeleteParams::default()).await.unwrap();
    assert_eq!(api_error(api.get("one").await.unwrap_err()).0, 404);
    t.cleanup().await;
}

#[tokio::test]
async fn patches_of_every_kind() {
    let t = target().await;
    let api = t.configmaps();
    api.create(&PostParams::default(), &configmap("p", &[], &[("a", "1")]))
        .await
        .unwrap();
    let merged = api
        .patch("p", &PatchParams::default(), &Patch::Merge(json!({"data": {"b": "2"}})))
        .await
        .unwrap();
    assert_eq!(merged.data.unwrap().len(), 2);
    let json_patched = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(json!([{"op": "remove", "path": "/data/a"}])).unwrap()),
        )
        .await
        .unwrap();
    assert_eq!(json_patched.data.unwrap().keys().collect::<Vec<_>>(), ["b"]);
    let strategic = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Strategic(json!({"data": {"c": "3"}})),
        )
        .await
        .unwrap();
    assert!(strategic.data.unwrap().contains_key("c"));
    // Server-side apply: creates when missing, merges when present.
    let applied = api
        .patch(
            "applied",
            &PatchParams::apply("conformance").force(),
            &Patch::Apply(
                json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "applied"}, "data": {"x": "1"}}),
            ),
        )
        .await
        .unwrap();
    assert_eq!(applied.data.unwrap()["x"], "1");
    assert!(applied
        .metadata
        .managed_fields
        .unwrap_or_default()
        .iter()
        .any(|m| m.manager.as_deref() == Some("conformance")));
    // Bad JSON patch → an error, object unchanged.
    let bad = api
        .patch(
            "p",
            &PatchParams::default(),
            &Patch::Json::<()>(serde_json::from_value(json!([{"op": "remove", "path": "/data/missing"}])).unwrap()),
        )
        .await
        .unwrap_err();
    assert!(api_error(bad).0 >= 400);
    t.cleanup().await;
}

#[tokio::test]
async fn finalizers_delay_deletion() {
    let t = target().await;
    let api = t.configmaps();
    let mut cm = configmap("fin", &[], &[]);
    cm.metadata.finalizers = Some(vec!["fedns.io/test".into()]);
    api.create(&PostParams::default(), &cm).await.unwrap();
    api.delete("fin", &DeleteParams::default()).await.unwrap();
    let marked = api.get("fin").await.unwrap();
    assert!(marked.metadata.deletion_timestamp.is_some());
    api.patch(
        "fin",
        &PatchParams::default(),
        &Patch::Merge(json!({"metadata": {"finalizers": null}})),
    )
    .await
    .unwrap();
    assert_eq!(api_error(api.get("fin").await.unwrap_err()).0, 404);
    t.cleanup().await;
}

#[tokio::test]
async fn namespaces_must_exist() {
    let t = target().await;
    let api: Api<ConfigMap> = Api::namespaced(t.client.clone(), "does-not-exist-anywhere");
    let err = api
        .create(&PostParams::default(), &configmap("x", &[], &[]))
        .await
        .unwrap_err();
    assert_eq!(api_error(err).0, 404);
    t.cleanup().await;
}

#[tokio::test]
async fn wrong_token_is_unauthorized() {
    let t = target().await;
    let Some(emulator) = &t.emulator else {
        println!("skipped: needs the emulator's kubeconfig");
        return t.cleanup().await;
    };
    let yaml = emulator.kubeconfig_yaml().replace(emulator.token(), "wrong-token");
    let client = client_for(Kubeconfig::from_yaml(&yaml).unwrap()).await;
    let err = client.apiserver_version().await.unwrap_err();
    assert_eq!(api_error(err).0, 401);
    t.cleanup().await;
}

const WIDGET_CRD: &str = r#"
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.conformance.fedns.io
spec:
  group: conformance.fedns.io
  names: {kind: Widget, plural: widgets, singular: widget}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      subresources: {status: {}}
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              required: [size]
              properties:
                size: {type: integer, minimum: 1, maximum: 10}
                color: {type: string, enum: [red, blue], default: red}
            status:
              type: object
              properties:
                ready: {type: boolean}
"#;

#[tokio::test]
async fn custom_resources_with_schema_status_and_generation() {
    let t = target().await;
    let crds: Api<CustomResourceDefinition> = Api::all(t.client.clone());
    let crd: CustomResourceDefinition = serde_yaml_ng::from_str(WIDGET_CRD).unwrap();
    let _ = crds.create(&PostParams::default(), &crd).await;
    tokio::time::timeout(
        Duration::from_secs(30),
        kube::runtime::wait::await_condition(
            crds.clone(),
            "widgets.conformance.fedns.io",
            kube::runtime::wait::conditions::is_crd_established(),
        ),
    )
    .await
    .unwrap()
    .unwrap();
    let resource = kube::discovery::ApiResource {
        group: "conformance.fedns.io".into(),
        version: "v1".into(),
        api_version: "conformance.fedns.io/v1".into(),
        kind: "Widget".into(),
        plural: "widgets".into(),
    };
    let api: Api<kube::api::DynamicObject> = Api::namespaced_with(t.client.clone(), &t.namespace, &resource);
    let widget = |name: &str, spec: serde_json::Value| -> kube::api::DynamicObject {
        serde_json::from_value(json!({"apiVersion": "conformance.fedns.io/v1", "kind": "Widget", "metadata": {"name": name}, "spec": spec, "status": {"ready": true}})).unwrap()
    };
    // Unknown fields pruned, defaults applied, status ignored on create.
    let created = api
        .create(&PostParams::default(), &widget("w", json!({"size": 3, "unknown": "x"})))
        .await
        .unwrap();
    assert_eq!(created.data["spec"], json!({"size": 3, "color": "red"}));
    assert!(created.data.get("status").is_none_or(|s| s.is_null()));
    assert_eq!(created.metadata.generation, Some(1));
    // Invalid values: 422 with the field path.
    let err = api
        .create(
            &PostParams::default(),
            &widget("bad", json!({"size": 0, "color": "green"})),
        )
        .await
        .unwrap_err();
    match err {
        kube::Error::Api(status) => {
            assert_eq!(status.code, 422);
            assert!(
                status.message.contains("spec.size") && status.message.contains("spec.color"),
                "{}",
                status.message
            );
        }
        other => panic!("{other:?}"),
    }
    // Status only through /status, without a generation bump.
    let st = api
        .patch_status(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": true}})),
        )
        .await
        .unwrap();
    assert_eq!(st.data["status"]["ready"], true);
    assert_eq!(st.metadata.generation, Some(1));
    let main = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"ready": false}})),
        )
        .await
        .unwrap();
    assert_eq!(
        main.data["status"]["ready"], true,
        "status changes through the main resource are ignored"
    );
    let spec = api
        .patch(
            "w",
            &PatchParams::default(),
            &Patch::Merge(json!({"spec": {"size": 4}})),
        )
        .await
        .unwrap();
    assert_eq!(spec.metadata.generation, Some(2));
    // Deleting the CRD stops serving it.
    crds.delete("widgets.conformance.fedns.io", &DeleteParams::default())
        .await
        .unwrap();
    if t.emulator.is_some() {
        assert_eq!(api_error(api.list(&ListParams::default()).await.unwrap_err()).0, 404);
    }
    t.cleanup().await;
}

#[tokio::test]
async fn services_status_subresource() {
    let t = target().await;
    let api: Api<Service> = Api::namespaced(t.client.clone(), &t.namespace);
    let svc: Service = serde_json::from_value(json!({
        "metadata": {"name": "lb"},
        "spec": {"type": "LoadBalancer", "ports": [{"port": 80}]},
        "status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}},
    }))
    .unwrap();
    let created = api.create(&PostParams::default(), &svc).await.unwrap();
    let ingress = created
        .status
        .and_then(|s| s.load_balancer)
        .and_then(|l| l.ingress)
        .unwrap_or_default();
    assert!(ingress.is_empty(), "status is ignored on create");
    let patched = api
        .patch_status(
            "lb",
            &PatchParams::default(),
            &Patch::Merge(json!({"status": {"loadBalancer": {"ingress": [{"ip": "203.0.113.10"}]}}})),
        )
        .await
        .unwrap();
    assert_eq!(
        patched.status.unwrap().load_balancer.unwrap().ingress.unwrap()[0]
            .ip
            .as_deref(),
        Some("203.0.113.10")
    );
    t.cleanup().await;
}

/// Every page of a list made with `params`, following continue tokens.
async fn pages(api: &Api<ConfigMap>, mut params: ListParams) -> Vec<kube::core::ObjectList<ConfigMap>> {
    let mut out = Vec::new();
    loop {
        let page = api.list(&params).await.unwrap();
        let token = page.metadata.continue_.clone().filter(|c| !c.is_empty());
        out.push(page);
        match token {
            Some(token) => params = params.continue_token(&token),
            None => return out,
        }
    }
}

#[tokio::test]
async fn list_pages_with_limit_and_continue() {
    let t = target().await;
    let api = t.configmaps();
    for i in 0..25 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("page-{i:02}"), &[("paged", "yes")], &[]),
        )
        .await
        .unwrap();
    }
    let mut seen = Vec::new();
    for page in pages(&api, ListParams::default().labels("paged=yes").limit(10)).await {
        assert!(page.items.len() <= 10);
        seen.extend(page.items.iter().map(|c| c.name_any()));
    }
    seen.sort();
    seen.dedup();
    assert_eq!(seen.len(), 25);
    t.cleanup().await;
}

/// Without selectors a page says how many objects follow it
/// (`remainingItemCount`), and a continue token always leads to objects:
/// 20 objects in pages of 10 are two full pages, not a third empty one.
#[tokio::test]
async fn list_pages_without_selectors_count_what_follows() {
    let t = target().await;
    let api = t.configmaps();
    for i in 0..20 {
        api.create(&PostParams::default(), &configmap(&format!("rest-{i:02}"), &[], &[]))
            .await
            .unwrap();
    }
    // A real cluster's namespace may hold more (kube-root-ca.crt).
    let total = api.list(&ListParams::default()).await.unwrap().items.len();
    let mut seen = 0;
    for page in pages(&api, ListParams::default().limit(10)).await {
        assert!(!page.items.is_empty(), "a continue token led to an empty page");
        seen += page.items.len();
        if page.metadata.continue_.as_deref().is_some_and(|c| !c.is_empty()) {
            assert_eq!(page.items.len(), 10);
            assert_eq!(page.metadata.remaining_item_count, Some((total - seen) as i64));
        }
    }
    assert_eq!(seen, total);
    t.cleanup().await;
}

#[tokio::test]
async fn watch_events_and_bookmarks() {
    let t = target().await;
    let api = t.configmaps();
    let list = api.list(&ListParams::default()).await.unwrap();
    let rv = list.metadata.resource_version.unwrap();
    let mut stream = api
        .watch(&WatchParams::default().timeout(20), &rv)
        .await
        .unwrap()
        .boxed();
    api.create(&PostParams::default(), &configmap("w1", &[], &[]))
        .await
        .unwrap();
    api.patch(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({"data": {"a": "b"}})),
    )
    .await
    .unwrap();
    api.delete("w1", &DeleteParams::default()).await.unwrap();
    let mut kinds = Vec::new();
    let mut bookmarks = 0;
    let deadline = Instant::now() + Duration::from_secs(30);
    while (kinds.len() < 3 || (t.emulator.is_some() && bookmarks == 0)) && Instant::now() < deadline {
        match tokio::time::timeout(Duration::from_secs(5), stream.next()).await {
            Ok(Some(Ok(WatchEvent::Added(_)))) => kinds.push("ADDED"),
            Ok(Some(Ok(WatchEvent::Modified(_)))) => kinds.push("MODIFIED"),
            Ok(Some(Ok(WatchEvent::Deleted(_)))) => kinds.push("DELETED"),
            Ok(Some(Ok(WatchEvent::Bookmark(_)))) => bookmarks += 1,
            Ok(Some(other)) => panic!("unexpected {other:?}"),
            Ok(None) | Err(_) => break,
        }
    }
    assert_eq!(kinds, ["ADDED", "MODIFIED", "DELETED"]);
    if t.emulator.is_some() {
        assert!(bookmarks > 0, "no BOOKMARK event");
    }
    t.cleanup().await;
}

#[tokio::test]
async fn watch_from_an_expired_version_gets_410() {
    let t = target_with(EmulatorConfig {
        history_limit: 16,
        ..EmulatorConfig::default()
    })
    .await;
    if t.emulator.is_none() {
        println!("skipped: a real cluster's history is too long to expire on demand");
        return t.cleanup().await;
    }
    let api = t.configmaps();
    let old = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    for i in 0..40 {
        api.create(&PostParams::default(), &configmap(&format!("e{i}"), &[], &[]))
            .await
            .unwrap();
    }
    let mut stream = api.watch(&WatchParams::default(), &old).await.unwrap().boxed();
    match tokio::time::timeout(Duration::from_secs(10), stream.next())
        .await
        .unwrap()
    {
        Some(Ok(WatchEvent::Error(e))) => assert_eq!(e.code, 410),
        other => panic!("expected a 410 ERROR event, got {other:?}"),
    }
    // kube's watcher relists after 410 and sees everything.
    let store_objects = watcher(api.clone(), watcher::Config::default())
        .default_backoff()
        .applied_objects()
        .take(40)
        .try_collect::<Vec<_>>();
    let objects = tokio::time::timeout(Duration::from_secs(30), store_objects)
        .await
        .unwrap()
        .unwrap();
    assert_eq!(objects.len(), 40);
    t.cleanup().await;
}

#[tokio::test]
async fn streaming_lists_watcher() {
    let t = target().await;
    let api = t.configmaps();
    for i in 0..5 {
        api.create(&PostParams::default(), &configmap(&format!("s{i}"), &[("s", "1")], &[]))
            .await
            .unwrap();
    }
    // A real API server serves streaming lists only when its storage can
    // request watch progress (etcd >= 3.4.31 or 3.5.13; found by the
    // apiserver at start). On an older etcd the watch ends at once with a
    // 500 Status saying so, and kube-rs, unlike client-go, does not fall
    // back to list+watch: its watcher retries for ever. That refusal is a
    // fact of that server's etcd, not a difference in how streaming lists
    // behave, so it is recognised here, said, and the list+watch a client
    // falls back to is checked instead. Any other failure still fails.
    let probe = WatchParams::streaming_lists().labels("s=1");
    let mut events = api.watch(&probe, "0").await.unwrap().boxed();
    let first = tokio::time::timeout(Duration::from_secs(30), events.next()).await;
    let refused_for_storage = match &first {
        Ok(Some(Ok(WatchEvent::Error(status)))) => {
            println!(
                "the server refused a streaming list: {} ({})",
                status.message, status.code
            );
            assert!(
                status.code == 500 && status.message.contains("RequestWatchProgress"),
                "a streaming list refused for another reason: {status:?}"
            );
            true
        }
        Ok(Some(Ok(_))) => false,
        other => panic!("a streaming list's first event: {other:?}"),
    };
    drop(events);
    assert!(
        !refused_for_storage || t.emulator.is_none(),
        "the emulator refused a streaming list"
    );
    let config = if refused_for_storage {
        println!("streaming lists are off on this server (its etcd cannot report watch progress): checking list+watch");
        watcher::Config::default().labels("s=1")
    } else {
        watcher::Config::default().labels("s=1").streaming_lists()
    };
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), config))
        .default_backoff()
        .applied_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    eventually("streaming list delivered the initial objects", || {
        let reader = reader.clone();
        async move { reader.state().len() == 5 }
    })
    .await;
    task.abort();
    t.cleanup().await;
}

/// A reflector's store equals the server's state after 1,000 random
/// creates, updates and deletes.
#[tokio::test]
async fn reflector_matches_server_after_random_changes() {
    let t = target().await;
    let api = t.configmaps();
    let (reader, writer) = reflector::store();
    let stream = reflector(
        writer,
        watcher(api.clone(), watcher::Config::default().labels("fuzz=1")),
    )
    .default_backoff()
    .touched_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    let mut rng = 0x1234_5678_u64;
    let mut next = move || {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        rng
    };
    for _ in 0..1000 {
        let name = format!("r{}", next() % 40);
        match next() % 3 {
            0 => {
                let _ = api
                    .create(
                        &PostParams::default(),
                        &configmap(&name, &[("fuzz", "1")], &[("v", &next().to_string())]),
                    )
                    .await;
            }
            1 => {
                let _ = api
                    .patch(
                        &name,
                        &PatchParams::default(),
                        &Patch::Merge(json!({"data": {"v": next().to_string()}})),
                    )
                    .await;
            }
            _ => {
                let _ = api.delete(&name, &DeleteParams::default()).await;
            }
        }
    }
    let server_state = || async {
        let mut state: Vec<(String, String)> = api
            .list(&ListParams::default().labels("fuzz=1"))
            .await
            .unwrap()
            .items
            .iter()
            .map(|c| (c.name_any(), c.resource_version().unwrap_or_default()))
            .collect();
        state.sort();
        state
    };
    let expected = server_state().await;
    eventually("reflector store equals the server after 1,000 changes", || {
        let reader = reader.clone();
        let expected = expected.clone();
        async move {
            let mut state: Vec<(String, String)> = reader
                .state()
                .iter()
                .map(|c| (c.name_any(), c.resource_version().unwrap_or_default()))
                .collect();
            state.sort();
            state == expected
        }
    })
    .await;
    task.abort();
    t.cleanup().await;
}

/// A watcher survives the API server stopping and coming back (and its
/// watches being dropped), and loses no change made meanwhile.
#[tokio::test]
async fn watcher_survives_stop_and_restart() {
    let t = target().await;
    let Some(emulator) = t.emulator.clone() else {
        println!("skipped: cannot stop a real cluster");
        return t.cleanup().await;
    };
    let api = t.configmaps();
    let (reader, writer) = reflector::store();
    let stream = reflector(writer, watcher(api.clone(), watcher::Config::default()))
        .default_backoff()
        .touched_objects();
    let task = tokio::spawn(stream.for_each(|_| async {}));
    api.create(&PostParams::default(), &configmap("before", &[], &[]))
        .await
        .unwrap();
    eventually("watcher saw 'before'", || {
        let reader = reader.clone();
        async move { reader.state().iter().any(|c| c.name_any() == "before") }
    })
    .await;

    emulator.drop_watches();
    api.create(&PostParams::default(), &configmap("after-drop", &[], &[]))
        .await
        .unwrap();

    emulator.stop();
    // Changes while the server is unreachable, made in-process.
    let info = emulator.store().resource("", "v1", "configmaps").unwrap();
    emulator
        .store()
        .create(
            &info,
            Some(&t.namespace),
            json!({"metadata": {"name": "while-stopped"}}),
        )
        .unwrap();
    emulator.store().delete(&info, Some(&t.namespace), "before").unwrap();
    tokio::time::sleep(Duration::from_millis(300)).await;
    emulator.resume().await.unwrap();

    eventually("watcher caught up after restart", || {
        let reader = reader.clone();
        async move {
            let mut names: Vec<String> = reader.state().iter().map(|c| c.name_any()).collect();
            names.sort();
            names == ["after-drop", "while-stopped"]
        }
    })
    .await;
    task.abort();
    t.cleanup().await;
}

#[tokio::test]
async fn controller_reconciles_every_object() {
    let t = target().await;
    let api = t.configmaps();
    for i in 0..5 {
        api.create(
            &PostParams::default(),
            &configmap(&format!("c{i}"), &[("ctl", "1")], &[]),
        )
        .await
        .unwrap();
    }
    let seen = Arc::new(std::sync::Mutex::new(std::collections::BTreeSet::new()));
    let controller = {
        let seen = seen.clone();
        kube::runtime::Controller::new(api.clone(), watcher::Config::default().labels("ctl=1"))
            .run(
                move |cm: Arc<ConfigMap>, _ctx: Arc<()>| {
                    let seen = seen.clone();
                    async move {
                        seen.lock().unwrap().insert(cm.name_any());
                        Ok::<_, kube::Error>(kube::runtime::controller::Action::await_change())
                    }
                },
                |_, _: &kube::Error, _| kube::runtime::controller::Action::requeue(Duration::from_secs(1)),
                Arc::new(()),
            )
            .for_each(|_| async {})
    };
    let task = tokio::spawn(controller);
    eventually("controller reconciled all five", || {
        let seen = seen.clone();
        async move { seen.lock().unwrap().len() == 5 }
    })
    .await;
    task.abort();
    t.cleanup().await;
}

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
        Err(fedns_sandbox::SeedError::Parse { line, .. }) => assert!(line >= 1),
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
