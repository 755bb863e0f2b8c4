//! `fedns join`: registers a member cluster in the host cluster from the
//! member's kubeconfig: a Secret with its bearer token (or, for any other
//! authentication, the whole kubeconfig of that context) and a
//! MemberCluster pointing at its API server.

use anyhow::Context;
use base64::Engine;
use kube::api::{Api, Patch, PatchParams};
use kube::config::{KubeConfigOptions, Kubeconfig};
use serde_json::json;

use crate::cli::JoinArgs;

const FIELD_MANAGER: &str = "fedns-join";

/// Runs `fedns join`.
///
/// # Errors
/// An unreadable kubeconfig, an invalid cluster name, or the host
/// rejecting the objects.
pub async fn run(args: &JoinArgs) -> anyhow::Result<()> {
    fedns_api::names::validate_label(&args.name).with_context(|| format!("cluster name {:?}", args.name))?;
    let member = Kubeconfig::read_from(&args.member_kubeconfig)
        .with_context(|| format!("reading {}", args.member_kubeconfig.display()))?;
    let context_name = args
        .member_context
        .clone()
        .or_else(|| member.current_context.clone())
        .context("the member kubeconfig has no current-context; pass --member-context")?;
    let context = member
        .contexts
        .iter()
        .find(|c| c.name == context_name)
        .and_then(|c| c.context.clone())
        .with_context(|| format!("context {context_name} not found in the member kubeconfig"))?;
    let cluster = member
        .clusters
        .iter()
        .find(|c| c.name == context.cluster)
        .and_then(|c| c.cluster.clone())
        .with_context(|| format!("cluster {} not found in the member kubeconfig", context.cluster))?;
    let server = cluster
        .server
        .clone()
        .context("the member cluster entry has no server")?;
    let user = context
        .user
        .as_ref()
        .and_then(|u| member.auth_infos.iter().find(|a| &a.name == u))
        .and_then(|a| a.auth_info.clone());
    let mut token = user.as_ref().and_then(|u| u.token.clone());

    // Check the member answers with these credentials before registering it.
    let options = KubeConfigOptions {
        context: Some(context_name.clone()),
        ..KubeConfigOptions::default()
    };
    let mut config = kube::Config::from_custom_kubeconfig(member.clone(), &options).await?;
    if let Some(account) = &args.service_account {
        let admin = kube::Client::try_from(config.clone())?;
        let account_token = service_account_token(&admin, account).await?;
        config.auth_info = kube::config::AuthInfo {
            token: Some(account_token.clone()),
            ..kube::config::AuthInfo::default()
        };
        token = Some(account_token);
    }
    let client = kube::Client::try_from(config)?;
    match client.apiserver_version().await {
        Ok(v) => println!("member {} at {server} answers: Kubernetes {}", args.name, v.git_version),
        Err(e) if args.skip_check => eprintln!("warning: member {} at {server} does not answer: {e}", args.name),
        Err(e) => anyhow::bail!(
            "member {} at {server} does not answer ({e}); fix the kubeconfig or pass --skip-check",
            args.name
        ),
    }
    if let Some(account) = &args.service_account {
        // The account's rights, as the controller will use them.
        let services: Api<k8s_openapi::api::core::v1::Service> = Api::all(client.clone());
        services
            .list(&kube::api::ListParams::default().limit(1))
            .await
            .with_context(|| {
                format!(
                    "ServiceAccount {account} cannot list Services in member {}: is deploy/member applied there?",
                    args.name
                )
            })?;
        println!(
            "member {}: ServiceAccount {account} can read what fedns reads",
            args.name
        );
    }

    let secret_name = format!("{}-credentials", args.name);
    let string_data = match token {
        Some(token) => {
            use secrecy::ExposeSecret;
            json!({"token": token.expose_secret()})
        }
        None => {
            // Not a bearer token: keep this one context's kubeconfig.
            let mut minimal = member.clone();
            minimal.contexts.retain(|c| c.name == context_name);
            minimal.clusters.retain(|c| c.name == context.cluster);
            minimal.auth_infos.retain(|a| Some(&a.name) == context.user.as_ref());
            minimal.current_context = Some(context_name.clone());
            json!({"kubeconfig": serde_yaml_ng::to_string(&minimal)?})
        }
    };
    let ca_bundle = match (&cluster.certificate_authority_data, &cluster.certificate_authority) {
        (Some(data), _) => Some(data.clone()),
        (None, Some(path)) => Some(
            base64::engine::general_purpose::STANDARD
                .encode(std::fs::read(path).with_context(|| format!("reading certificate-authority {path}"))?),
        ),
        (None, None) => None,
    };
    let mut spec = json!({
        "apiEndpoint": server,
        "secretRef": {"name": secret_name},
        "insecureSkipTLSVerify": args.insecure_skip_tls_verify || cluster.insecure_skip_tls_verify.unwrap_or(false),
    });
    if let Some(ca) = ca_bundle {
        spec["caBundle"] = json!(ca);
    }
    if let Some(region) = &args.region {
        spec["region"] = json!(region);
    }
    if !args.zone.is_empty() {
        spec["zones"] = json!(args.zone);
    }

    let host = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let params = PatchParams::apply(FIELD_MANAGER).force();
    let secrets: Api<k8s_openapi::api::core::v1::Secret> = Api::namespaced(host.clone(), &args.namespace);
    secrets
        .patch(
            &secret_name,
            &params,
            &Patch::Apply(json!({
                "apiVersion": "v1", "kind": "Secret",
                "metadata": {"name": secret_name, "namespace": args.namespace, "labels": {"app.kubernetes.io/managed-by": "fedns"}},
                "type": "Opaque",
                "stringData": string_data,
            })),
        )
        .await
        .with_context(|| format!("writing Secret {}/{secret_name}", args.namespace))?;
    let clusters: Api<fedns_api::MemberCluster> = Api::namespaced(host.clone(), &args.namespace);
    clusters
        .patch(
            &args.name,
            &params,
            &Patch::Apply(json!({
                "apiVersion": "core.fedns.io/v1alpha1", "kind": "MemberCluster",
                "metadata": {"name": args.name, "namespace": args.namespace},
                "spec": spec,
            })),
        )
        .await
        .with_context(|| format!("writing MemberCluster {}/{}", args.namespace, args.name))?;
    println!(
        "joined: MemberCluster {}/{} (credentials in Secret {secret_name})",
        args.namespace, args.name
    );
    print_discovery_config(host, args).await;
    Ok(())
}

/// How long `--service-account` waits for the token controller to fill in
/// the account's token Secret.
const TOKEN_WAIT: std::time::Duration = std::time::Duration::from_secs(30);

/// The token of ServiceAccount `account` (`NAMESPACE/NAME`) in the member:
/// the `data.token` of a Secret of type `kubernetes.io/service-account-token`
/// annotated `kubernetes.io/service-account.name: NAME` in NAMESPACE (as
/// deploy/member creates it), read with `admin`.
///
/// # Errors
/// A malformed `account`, no such Secret (deploy/member not applied), or
/// no token in it after [`TOKEN_WAIT`].
async fn service_account_token(admin: &kube::Client, account: &str) -> anyhow::Result<secrecy::SecretString> {
    use k8s_openapi::api::core::v1::Secret;
    let (namespace, name) = account
        .split_once('/')
        .filter(|(ns, name)| !ns.is_empty() && !name.is_empty())
        .with_context(|| format!("--service-account {account:?}: expected NAMESPACE/NAME"))?;
    let secrets: Api<Secret> = Api::namespaced(admin.clone(), namespace);
    let started = std::time::Instant::now();
    loop {
        let list = secrets
            .list(&kube::api::ListParams::default())
            .await
            .with_context(|| format!("listing token Secrets in the member's namespace {namespace}"))?;
        let mine: Vec<&Secret> = list
            .items
            .iter()
            .filter(|s| s.type_.as_deref() == Some("kubernetes.io/service-account-token"))
            .filter(|s| {
                s.metadata
                    .annotations
                    .as_ref()
                    .and_then(|a| a.get("kubernetes.io/service-account.name"))
                    .is_some_and(|n| n == name)
            })
            .collect();
        if mine.is_empty() {
            anyhow::bail!(
                "no token Secret for ServiceAccount {account} in the member: apply deploy/member there first \
                 (kubectl apply --server-side -k deploy/member)"
            );
        }
        let token = mine
            .iter()
            .filter_map(|s| s.data.as_ref()?.get("token"))
            .find_map(|t| String::from_utf8(t.0.clone()).ok().filter(|t| !t.is_empty()));
        if let Some(token) = token {
            return Ok(secrecy::SecretString::from(token));
        }
        if started.elapsed() >= TOKEN_WAIT {
            anyhow::bail!(
                "the token Secret of ServiceAccount {account} has no token after {TOKEN_WAIT:?}: \
                 does the member's kube-controller-manager run the token controller?"
            );
        }
        tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    }
}

/// Prints the member's cluster DNS forwarding for discovery (with
/// `--discovery-server`), else how to get it.
async fn print_discovery_config(host: kube::Client, args: &JoinArgs) {
    let Some(server) = &args.discovery_server else {
        println!(
            "discovery: deploy deploy/member-discovery/ in the member, then `fedns discovery-config {} --server <its ClusterIP>` prints the cluster DNS forwarding",
            args.name
        );
        return;
    };
    match crate::cli::discovery_config::federations(host, &args.namespace).await {
        Ok(federations) if !federations.is_empty() => print!(
            "{}",
            crate::cli::discovery_config::text(&args.name, &federations, &args.cluster_domain, server)
        ),
        Ok(_) => println!(
            "discovery: no Domain yet; run `fedns discovery-config {}` once there is one",
            args.name
        ),
        Err(e) => eprintln!("warning: discovery configuration not printed: {e:#}"),
    }
}
