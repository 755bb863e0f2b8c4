//! Argo CD clusters with `awsAuthConfig`: fedns makes the EKS tokens in
//! process (only with `--allow-argocd-aws-auth`, only for EKS endpoints),
//! and member c's emulator checks them as an EKS API server and STS would
//! (`fedns_standins::EksAuthenticator`). No request leaves loopback:
//! instance metadata is off, the AWS files are the test's own, STS is
//! moto's, and c's EKS host name is reached through a loopback CONNECT
//! proxy (Argo CD's `proxyUrl`) that tunnels it to c's emulator.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU16, Ordering};
use std::sync::Arc;

use crate::common::{free_port, temp_dir, Process};
use crate::member_sources::{setup_with_env, wait_event, wait_global, GLOBAL};
use fedns_controller::federation::{Engine, Federation, ARGOCD_NAMESPACE};
use fedns_standins::{AwsKey, EksAuthenticator};
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

/// c's server: an EKS endpoint's name, which only [`eks_route`] resolves.
const EKS_SERVER: &str = "https://0123456789abcdef.gr7.eu-west-1.eks.amazonaws.com";

/// A CONNECT proxy on loopback standing in for the route to EKS: a tunnel
/// to `<name>.eks.amazonaws.com:443` goes to 127.0.0.1:`port` (member c's
/// emulator, set once it runs); any other target is refused. Returns
/// its URL.
async fn eks_route(port: Arc<AtomicU16>) -> String {
    use http_body_util::Empty;
    use hyper::service::service_fn;
    use hyper_util::rt::TokioIo;

    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else { return };
            let port = port.clone();
            tokio::spawn(async move {
                let service = service_fn(move |request: hyper::Request<hyper::body::Incoming>| {
                    let port = port.load(Ordering::Relaxed);
                    async move {
                        let target = request.uri().authority().map(|a| a.to_string()).unwrap_or_default();
                        let eks = target
                            .strip_suffix(":443")
                            .is_some_and(|host| host.ends_with(".eks.amazonaws.com"));
                        let status = if request.method() != hyper::Method::CONNECT || !eks || port == 0 {
                            hyper::StatusCode::FORBIDDEN
                        } else {
                            tokio::spawn(async move {
                                let Ok(upgraded) = hyper::upgrade::on(request).await else {
                                    return;
                                };
                                let Ok(mut server) = tokio::net::TcpStream::connect(("127.0.0.1", port)).await else {
                                    return;
                                };
                                let _ = tokio::io::copy_bidirectional(&mut TokioIo::new(upgraded), &mut server).await;
                            });
                            hyper::StatusCode::OK
                        };
                        let mut response = hyper::Response::new(Empty::<bytes::Bytes>::new());
                        *response.status_mut() = status;
                        Ok::<_, std::convert::Infallible>(response)
                    }
                });
                let _ = hyper::server::conn::http1::Builder::new()
                    .serve_connection(TokioIo::new(tcp), service)
                    .with_upgrades()
                    .await;
            });
        }
    });
    url
}

/// a and b with tokens, c with `awsAuthConfig` (`aws`) at [`EKS_SERVER`]
/// through `route` (its certificate checked for `localhost`, a name the
/// emulator's has).
fn register(f: &Federation, aws: serde_json::Value, route: &str, c_port: &AtomicU16) {
    f.register_engine(Engine::Argocd, "a", json!({})).unwrap();
    f.register_engine(Engine::Argocd, "b", json!({})).unwrap();
    let c = f.member("c").unwrap();
    c_port.store(c.addr().port(), Ordering::Relaxed);
    f.register_engine(
        Engine::Argocd,
        "c",
        json!({"stringData": {"server": EKS_SERVER, "config": {"awsAuthConfig": aws, "proxyUrl": route,
            "tlsClientConfig": {"serverName": "localhost"}}}}),
    )
    .unwrap();
}

/// c's server replaced by `server`.
async fn set_server(host: &kube::Client, server: &str) {
    let secrets: Api<Secret> = Api::namespaced(host.clone(), ARGOCD_NAMESPACE);
    secrets
        .patch(
            "cluster-c",
            &PatchParams::default(),
            &Patch::Merge(json!({"stringData": {"server": server}})),
        )
        .await
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
    let c_port = Arc::new(AtomicU16::new(0));
    let route = eks_route(c_port.clone()).await;
    let s = setup_with_env(Engine::Argocd, &["--allow-argocd-aws-auth"], &borrowed(&env), |f| {
        f.member("c")
            .unwrap()
            .add_token_authenticator(std::sync::Arc::new(EksAuthenticator {
                cluster_id: "c".into(),
                keys: vec![AwsKey {
                    access_key_id: "AKIAFEDNSTEST0000001".into(),
                    secret_access_key: "fedns-test-secret".into(),
                    arn: format!("arn:aws:iam::{ACCOUNT}:user/argocd"),
                }],
                ..EksAuthenticator::default()
            }));
        register(f, json!({"clusterName": "c"}), &route, &c_port);
    })
    .await;
    wait_global(&s, "c joins with an EKS token", ALL).await;

    // Issue #57: EKS tokens go to EKS endpoints only, even with the flag.
    set_server(&s.host, &s.federation.member("c").unwrap().url()).await;
    wait_global(&s, "c out: its server is no EKS endpoint", "203.0.113.1,203.0.113.2").await;
    wait_event(&s.host, "cluster-c", "is not an EKS endpoint").await;
    set_server(&s.host, EKS_SERVER).await;
    wait_global(&s, "c back", ALL).await;

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
    let c_port = Arc::new(AtomicU16::new(0));
    let route = eks_route(c_port.clone()).await;
    let s = setup_with_env(Engine::Argocd, &["--allow-argocd-aws-auth"], &borrowed(&env), |f| {
        // Only the assumed role may in: the profile's own key is unknown
        // to this cluster, moto knows the role session's.
        f.member("c")
            .unwrap()
            .add_token_authenticator(std::sync::Arc::new(EksAuthenticator {
                cluster_id: "c".into(),
                moto_url: Some(sts.clone()),
                allowed_arns: vec![format!("arn:aws:sts::{ACCOUNT}:assumed-role/argocd-eks/fedns")],
                ..EksAuthenticator::default()
            }));
        register(
            f,
            json!({"clusterName": "c", "roleARN": role, "profile": "fleet"}),
            &route,
            &c_port,
        );
    })
    .await;
    wait_global(&s, "c joins as the assumed role", ALL).await;

    // Without the role, the profile's key is not let in.
    set_aws_auth(&s.host, json!({"clusterName": "c", "profile": "fleet"})).await;
    wait_global(&s, "c out: the profile's own identity", "203.0.113.1,203.0.113.2").await;
    s.federation.stop();
}

/// Issue #57: without `--allow-argocd-aws-auth`, a Secret's
/// `awsAuthConfig` makes no token: c is refused, its Event saying why,
/// while a and b (bearer tokens) are published.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn argocd_aws_auth_is_refused_without_the_flag() {
    let dir = temp_dir("eks-refused");
    let env = aws_env(
        &dir,
        "[default]\naws_access_key_id = AKIAFEDNSTEST0000001\naws_secret_access_key = fedns-test-secret\n",
    );
    let c_port = Arc::new(AtomicU16::new(0));
    let route = eks_route(c_port.clone()).await;
    let s = setup_with_env(Engine::Argocd, &[], &borrowed(&env), |f| {
        f.member("c")
            .unwrap()
            .add_token_authenticator(std::sync::Arc::new(EksAuthenticator {
                cluster_id: "c".into(),
                keys: vec![AwsKey {
                    access_key_id: "AKIAFEDNSTEST0000001".into(),
                    secret_access_key: "fedns-test-secret".into(),
                    arn: format!("arn:aws:iam::{ACCOUNT}:user/argocd"),
                }],
                ..EksAuthenticator::default()
            }));
        register(f, json!({"clusterName": "c"}), &route, &c_port);
    })
    .await;
    wait_global(&s, "a and b in, c refused", "203.0.113.1,203.0.113.2").await;
    wait_event(&s.host, "cluster-c", "only when started with --allow-argocd-aws-auth").await;
    s.federation.stop();
}
