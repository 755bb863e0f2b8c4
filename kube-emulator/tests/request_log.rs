//! The opt-in request log ([`Emulator::record_requests`]) through a real
//! client: what kube-rs asked for is what the log holds.

use fedns_kube_emulator::Emulator;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, ListParams};

#[tokio::test]
async fn an_emulator_logs_what_a_client_asks() {
    let emulator = Emulator::start().await.unwrap();
    emulator.record_requests(true);
    let kubeconfig = kube::config::Kubeconfig::from_yaml(&emulator.kubeconfig_yaml()).unwrap();
    let config = kube::Config::from_custom_kubeconfig(kubeconfig, &Default::default())
        .await
        .unwrap();
    let client = kube::Client::try_from(config).unwrap();
    let secrets: Api<Secret> = Api::namespaced(client, "default");
    secrets
        .list(&ListParams::default().fields("metadata.name=s-kubeconfig"))
        .await
        .unwrap();
    let logged = emulator.requests();
    let list = logged
        .iter()
        .find(|r| r.path == "/api/v1/namespaces/default/secrets")
        .expect("the list is logged");
    assert_eq!(list.method, "GET");
    assert_eq!(
        list.param("fieldSelector").as_deref(),
        Some("metadata.name=s-kubeconfig")
    );
    emulator.stop();
}
