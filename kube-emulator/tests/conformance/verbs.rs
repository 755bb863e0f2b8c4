//! Discovery, the verbs (create, get, list, update, patch, delete), finalizers, namespaces, tokens, custom resources and status subresources.

use super::*;

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
