//! Argo CD clusters with `awsAuthConfig`: fedns makes the EKS tokens in
//! process, and member c's emulator checks them as an EKS API server and
//! STS would (`fedns_sandbox::EksAuthenticator`). No request leaves
//! loopback: instance metadata is off, the AWS files are the test's own,
//! and STS is moto's.

use std::process::{Command, Stdio};

use crate::common::{free_port, temp_dir, Process};
use crate::member_sources::{setup_with_env, wait_event, wait_global, GLOBAL};
use fedns_controller::federation::{Engine, Federation, ARGOCD_NAMESPACE};
use fedns_sandbox::{AwsKey, EksAuthenticator};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, Patch, PatchParams};
use serde_json::json;

const ALL: &str = "203.0.113.1,203.0.113.2,203.0.113.3";
const ACCOUNT: &str = "123456789012";

/// An AWS environment of the test's own: `credentials` as the shared
/// credentials file, no configuration file, no instance metadata.
fn aws_env(dir: &std::path::Path, credentials: &str) -> Vec<(String, String)> {
    let file = dir.join("credentials");
    std::fs::write(&file, credentials).unwrap();
    vec![
        ("AWS_SHARED_CREDENTIALS_FILE".into(), file.display().to_string()),
        ("AWS_CONFIG_FILE".into(), dir.join("no-config").display().to_string()),
        ("AWS_EC2_METADATA_DISABLED".into(), "true".into()),
        ("AWS_REGION".into(), "eu-west-1".into()),
    ]
}

fn borrowed(env: &[(String, String)]) -> Vec<(&str, &str)> {
    env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect()
}

/// a and b with tokens, c with `awsAuthConfig` (`aws`).
fn register(f: &Federation, aws: serde_json::Value) {
    f.register_engine(Engine::Argocd, "a", json!({})).unwrap();
    f.register_engine(Engine::Argocd, "b", json!({})).unwrap();
    f.register_engine(
        Engine::Argocd,
        "c",
        json!({"stringData": {"config": {"awsAuthConfig": aws}}}),
    )
    .unwrap();
}

/// c's `awsAuthConfig` replaced by `aws` (the rest of its config kept).
async fn set_aws_auth(host: &kube::Client, aws: serde_json::Value) {
    let secrets: Api<Secret> = Api::namespaced(host.clone(), ARGOCD_NAMESPACE);
    let secret = secrets.get("cluster-c").await.unwrap();
    let data = secret.data.unwrap_or_default();
    let mut config: serde_json::Value = serde_json::from_slice(&data["config"].0).unwrap();
    config["awsAuthConfig"] = aws;
    secrets
        .patch(
            "cluster-c",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"config": config.to_string()}})),
        )
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_eks_clusters_join_with_tokens_made_in_process() {
    let dir = temp_dir("eks-static");
    let env = aws_env(
        &dir,
        "[default]\naws_access_key_id = AKIAFEDNSTEST0000001\naws_secret_access_key = fedns-test-secret\n",
    );
    let s = setup_with_env(Engine::Argocd, &[], &borrowed(&env), |f| {
        f.member("c").unwrap().accept_eks_tokens(EksAuthenticator {
            cluster_id: "c".into(),
            keys: vec![AwsKey {
                access_key_id: "AKIAFEDNSTEST0000001".into(),
                secret_access_key: "fedns-test-secret".into(),
                arn: format!("arn:aws:iam::{ACCOUNT}:user/argocd"),
            }],
            ..EksAuthenticator::default()
        });
        register(f, json!({"clusterName": "c"}));
    })
    .await;
    wait_global(&s, "c joins with an EKS token", ALL).await;

    // Signed for another cluster: STS would not match the signature.
    set_aws_auth(&s.host, json!({"clusterName": "other"})).await;
    wait_global(&s, "c out: its token is for another cluster", "203.0.113.1,203.0.113.2").await;
    set_aws_auth(&s.host, json!({"clusterName": "c"})).await;
    wait_global(&s, "c back", ALL).await;

    // A profile that is not in the credentials file: no token, c out.
    set_aws_auth(&s.host, json!({"clusterName": "c", "profile": "missing"})).await;
    wait_global(&s, "c out: no credentials for its profile", "203.0.113.1,203.0.113.2").await;
    wait_event(
        &s.host,
        "cluster-c",
        "awsAuthConfig of EKS cluster \"c\": no AWS credentials",
    )
    .await;
    assert!(
        crate::common::dig(s.dns_port, GLOBAL, "A", false).contains(&"203.0.113.1".to_owned()),
        "the others keep answering"
    );
    s.federation.stop();
}

/// moto on a loopback port (`target/venv/bin/moto_server`, installed by
/// `scripts/test.sh`), as STS.
fn moto() -> (Process, String) {
    let binary = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/venv/bin/moto_server");
    let port = free_port();
    let child = Command::new(&binary)
        .args(["-H", "127.0.0.1", "-p", &port.to_string()])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap_or_else(|e| panic!("{}: {e} (scripts/test.sh installs moto[server])", binary.display()));
    let started = std::time::Instant::now();
    while std::net::TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed().as_secs() < 30,
            "moto_server did not start within 30 s"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    (Process::new(child), format!("http://127.0.0.1:{port}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_eks_clusters_join_through_a_profile_and_an_assumed_role() {
    let (_moto, sts) = moto();
    let dir = temp_dir("eks-role");
    let mut env = aws_env(
        &dir,
        "[fleet]\naws_access_key_id = AKIAFEDNSFLEET000001\naws_secret_access_key = fleet-secret\n",
    );
    env.push(("AWS_ENDPOINT_URL_STS".into(), sts.clone()));
    let role = format!("arn:aws:iam::{ACCOUNT}:role/argocd-eks");
    let s = setup_with_env(Engine::Argocd, &[], &borrowed(&env), |f| {
        // Only the assumed role may in: the profile's own key is unknown
        // to this cluster, moto knows the role session's.
        f.member("c").unwrap().accept_eks_tokens(EksAuthenticator {
            cluster_id: "c".into(),
            moto_url: Some(sts.clone()),
            allowed_arns: vec![format!("arn:aws:sts::{ACCOUNT}:assumed-role/argocd-eks/fedns")],
            ..EksAuthenticator::default()
        });
        register(f, json!({"clusterName": "c", "roleARN": role, "profile": "fleet"}));
    })
    .await;
    wait_global(&s, "c joins as the assumed role", ALL).await;

    // Without the role, the profile's key is not let in.
    set_aws_auth(&s.host, json!({"clusterName": "c", "profile": "fleet"})).await;
    wait_global(&s, "c out: the profile's own identity", "203.0.113.1,203.0.113.2").await;
    s.federation.stop();
}
