//! `fedns discovery-config CLUSTER`: prints the forwarding a member's
//! cluster DNS needs so its pods resolve `nginx.ns.myfed`
//! (docs/discovery.md). `fedns join --discovery-server`
//! prints the same for the member it registers.

use anyhow::Context;
use fedns_api::Domain;
use kube::api::{Api, ListParams};
use kube::ResourceExt;

use crate::cli::DiscoveryConfigArgs;
use crate::discovery::forward::forward_config;

/// The Domain names (federations) of the host's controller namespace.
///
/// # Errors
/// The host cannot be reached or Domains cannot be listed.
pub async fn federations(host: kube::Client, namespace: &str) -> anyhow::Result<Vec<String>> {
    let domains: Api<Domain> = Api::namespaced(host, namespace);
    let list = domains
        .list(&ListParams::default())
        .await
        .with_context(|| format!("listing Domains in {namespace}"))?;
    Ok(list.items.iter().map(|d| d.name_any()).collect())
}

/// The text printed for member `cluster`.
pub fn text(cluster: &str, federations: &[String], cluster_domain: &str, server: &str) -> String {
    format!(
        "# fedns discovery for member {cluster}: its pods resolve S.N.F (F = {}) through the member-side \
         replica at {server}.\n# Add ONE of these to the member's cluster DNS.\n{}",
        federations.join(", "),
        forward_config(federations, cluster_domain, server)
    )
}

/// Prints the configuration.
///
/// # Errors
/// No federation given and the host's Domains cannot be listed, or none exist.
pub async fn run(args: &DiscoveryConfigArgs) -> anyhow::Result<()> {
    let federations = if args.federation.is_empty() {
        let host = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
        federations(host, &args.namespace).await?
    } else {
        args.federation.clone()
    };
    anyhow::ensure!(
        !federations.is_empty(),
        "no Domain in namespace {}: nothing to forward (give --federation NAME)",
        args.namespace
    );
    print!(
        "{}",
        text(&args.cluster, &federations, &args.cluster_domain, &args.server)
    );
    Ok(())
}
