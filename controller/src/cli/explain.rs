//! `fedns explain NAME`: why each cluster is or is not behind a published
//! name, read from the host cluster (the same view the controller serves
//! read-only at `/debug/explain?name=` on its metrics port, which adds its
//! member caches' endpoint readiness).

use anyhow::Context;
use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, ServiceDNSRecord};
use kube::api::{Api, ListParams};

use crate::cli::{ExplainArgs, ExplainOutput};
use crate::records::explain::{explain, explain_routing, render};

/// Runs `fedns explain`.
///
/// # Errors
/// The host cluster cannot be reached or listed.
pub async fn run(args: &ExplainArgs) -> anyhow::Result<()> {
    let client = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    let list = ListParams::default();
    let endpoints = Api::<DNSEndpoint>::all(client.clone())
        .list(&list)
        .await
        .context("listing DNSEndpoints")?
        .items;
    let services = Api::<ServiceDNSRecord>::all(client.clone())
        .list(&list)
        .await
        .context("listing ServiceDNSRecords")?
        .items;
    let ingresses = Api::<IngressDNSRecord>::all(client.clone())
        .list(&list)
        .await
        .context("listing IngressDNSRecords")?
        .items;
    let domains = Api::<Domain>::namespaced(client.clone(), &args.namespace)
        .list(&list)
        .await
        .with_context(|| format!("listing Domains in {}", args.namespace))?
        .items;
    let members = Api::<MemberCluster>::namespaced(client, &args.namespace)
        .list(&list)
        .await
        .with_context(|| format!("listing MemberClusters in {}", args.namespace))?
        .items;
    let mut explanation = explain(
        &args.name,
        &endpoints,
        &services,
        &ingresses,
        &members,
        &|_, _, _, _| None,
    );
    let geo = match &args.geoip_db {
        Some(path) => Some(std::sync::Arc::new(
            fedns_dnsserver::GeoIpDb::open(path).map_err(anyhow::Error::msg)?,
        )),
        None => None,
    };
    explanation.ds_records = crate::records::explain::ds_records_for(&args.name, &domains);
    explanation.routing = explain_routing(&args.name, &domains, &endpoints, args.client_subnet, geo);
    if args.client_subnet.is_some() && explanation.routing.is_none() {
        eprintln!("{}: no traffic policy; every client gets the same answer", args.name);
    }
    match args.output {
        ExplainOutput::Text => print!("{}", render(&explanation)),
        ExplainOutput::Json => println!("{}", serde_json::to_string_pretty(&explanation)?),
    }
    Ok(())
}
