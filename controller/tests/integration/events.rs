//! Events whose note is the latest one: kube's recorder would fold a new
//! message about the same object and reason into the earlier Event and
//! keep the earlier message.

use crate::common::*;
use fedns_controller::events::Recorder;
use fedns_kube_emulator::Emulator;
use k8s_openapi::api::core::v1::{ConfigMap, ObjectReference};
use k8s_openapi::api::events::v1::Event as K8sEvent;
use kube::api::{Api, PostParams};
use kube::runtime::events::{Event, EventType, Reporter};

fn event(note: &str) -> Event {
    Event {
        type_: EventType::Warning,
        reason: "AuthFailed".into(),
        note: Some(note.into()),
        action: "Connect".into(),
        secondary: None,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_new_note_is_a_new_event_and_a_repeat_counts_on_its_own() {
    let emulator = Emulator::start().await.expect("emulator");
    let client = client_of(&emulator).await;
    let configmaps: Api<ConfigMap> = Api::namespaced(client.clone(), "default");
    let object = configmaps
        .create(
            &PostParams::default(),
            &serde_json::from_value(serde_json::json!({"metadata": {"name": "member"}})).unwrap(),
        )
        .await
        .unwrap();
    let reference = ObjectReference {
        api_version: Some("v1".into()),
        kind: Some("ConfigMap".into()),
        namespace: Some("default".into()),
        name: Some("member".into()),
        uid: object.metadata.uid.clone(),
        ..Default::default()
    };
    let recorder = Recorder::new(
        client.clone(),
        Reporter {
            controller: "fedns-test".into(),
            instance: None,
        },
    );
    recorder
        .publish(&event("Secret not read yet"), &reference)
        .await
        .unwrap();
    recorder
        .publish(&event("does not parse as a kubeconfig"), &reference)
        .await
        .unwrap();
    recorder
        .publish(&event("does not parse as a kubeconfig"), &reference)
        .await
        .unwrap();

    let events: Api<K8sEvent> = Api::namespaced(client, "default");
    let mut seen: Vec<(String, i32)> = events
        .list(&Default::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .map(|e| (e.note.unwrap_or_default(), e.series.map_or(1, |s| s.count)))
        .collect();
    seen.sort();
    assert_eq!(
        seen,
        [
            ("Secret not read yet".to_owned(), 1),
            ("does not parse as a kubeconfig".to_owned(), 2),
        ]
    );
}
