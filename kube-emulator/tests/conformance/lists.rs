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
