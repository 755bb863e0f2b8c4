//! List paging: `limit`, `continue` and `remainingItemCount`.

use super::*;

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

/// On the wire, as kube-apiserver sends them: a list is `<Kind>List` and
/// each item, like each watch event's object, carries its `apiVersion`
/// and `kind` (the emulator sends its stored objects as they are, without
/// a copy: every write stores them with both).
#[tokio::test]
async fn listed_and_watched_objects_carry_api_version_and_kind() {
    let t = target().await;
    let ns = &t.namespace;
    let api = t.configmaps();
    api.create(&PostParams::default(), &configmap("typed-0", &[("typed", "yes")], &[]))
        .await
        .unwrap();
    let get = |uri: String| {
        let client = t.client.clone();
        async move {
            let request = http::Request::get(uri).body(Vec::new()).unwrap();
            let text = client.request_text(request).await.unwrap();
            text.lines()
                .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
                .collect::<Vec<_>>()
        }
    };
    let list = get(format!("/api/v1/namespaces/{ns}/configmaps?labelSelector=typed%3Dyes")).await;
    assert_eq!(list[0]["kind"], "ConfigMapList");
    assert_eq!(list[0]["apiVersion"], "v1");
    let item = &list[0]["items"][0];
    assert_eq!(
        (&item["apiVersion"], &item["kind"]),
        (&json!("v1"), &json!("ConfigMap"))
    );
    assert_eq!(item["metadata"]["name"], "typed-0");
    // The initial ADDED of a watch from "0", then the stream's end.
    let events = get(format!(
        "/api/v1/namespaces/{ns}/configmaps?watch=true&labelSelector=typed%3Dyes&resourceVersion=0&timeoutSeconds=1"
    ))
    .await;
    let added = events.iter().find(|e| e["type"] == "ADDED").expect("an ADDED event");
    let object = &added["object"];
    assert_eq!(
        (&object["apiVersion"], &object["kind"]),
        (&json!("v1"), &json!("ConfigMap"))
    );
    assert_eq!(object["metadata"]["name"], "typed-0");
    t.cleanup().await;
}
