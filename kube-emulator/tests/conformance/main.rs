//! Conformance suite: drives the emulator only through kube-rs (`Api`,
//! `watcher`, `reflector`, `Controller`) and raw HTTP through kube's
//! client. With `FEDNS_CONFORMANCE_KUBECONFIG` set, the same tests run
//! against that cluster instead (fault-injection tests then return early,
//! saying so), so the emulator can be checked against the real thing.

mod lists;
mod requests;
mod verbs;
mod watches;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_kube_emulator::{Emulator, EmulatorConfig};
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
