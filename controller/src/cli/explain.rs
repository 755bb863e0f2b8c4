//! `fedns explain NAME`: why each cluster is or is not behind a published
//! name, read from the host cluster (the same view the controller serves
//! read-only at `/debug/explain?name=` on its metrics port, which adds its
//! member caches' endpoint readiness).

use anyhow::Context;
use fedns_api::{DNSEndpoint, Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, ServiceDNSRecord};
use kube::api::{Api, ListParams};

use crate::cli::{ExplainArgs, ExplainOutput};
use crate::records::explain::{explain, explain_routing, render};

/// Runs `fedns explain`.
///
/// # Errors
/// The host cluster cannot be reached or listed.
pub async fn run(args: &ExplainArgs) -> anyhow::Result<()> {
    let client = crate::kube_client::client(args.kubeconfig.as_deref()).await?;
    if let Some(member) = &args.from_cluster {
        return from_cluster(args, client, member).await;
    }
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
    let routes = Api::<RouteDNSRecord>::all(client.clone())
        .list(&list)
        .await
        .context("listing RouteDNSRecords")?
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
        &routes,
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

/// `fedns explain NAME --from-cluster MEMBER`: the member's discovery
/// answer, then (for a CNAME) the explanation of its target as every
/// client gets it.
async fn from_cluster(args: &ExplainArgs, host: kube::Client, member: &str) -> anyhow::Result<()> {
    use crate::discovery::answer::Inputs;
    use crate::discovery::explain::{explain_from_cluster_owned, render as render_from, FromClusterAnswer};
    use crate::discovery::replica::{federation_view, member_view, record_view};
    use fedns_api::k8s_openapi::api::core::v1::{Node, Secret, Service};
    use fedns_api::k8s_openapi::api::discovery::v1::EndpointSlice;

    let list = ListParams::default();
    let domains = Api::<Domain>::namespaced(host.clone(), &args.namespace)
        .list(&list)
        .await
        .with_context(|| format!("listing Domains in {}", args.namespace))?
        .items;
    let records = Api::<ServiceDNSRecord>::all(host.clone())
        .list(&list)
        .await
        .context("listing ServiceDNSRecords")?
        .items;
    let members_api = Api::<MemberCluster>::namespaced(host.clone(), &args.namespace);
    let registered = members_api
        .get_opt(member)
        .await
        .with_context(|| format!("reading MemberCluster {}/{member}", args.namespace))?;
    let member_client = match (&args.member_kubeconfig, &registered) {
        (Some(path), _) => crate::kube_client::client(Some(path)).await?,
        (None, Some(cluster)) => {
            let secret = match &cluster.spec.secret_ref {
                Some(reference) => Api::<Secret>::namespaced(host.clone(), &args.namespace)
                    .get_opt(&reference.name)
                    .await
                    .with_context(|| format!("reading Secret {}/{}", args.namespace, reference.name))?,
                None => None,
            };
            // What the Secret names runs or is read on this machine only
            // when the user allowed that command here (--allow-exec-plugin).
            let policy = crate::members::CredentialPolicy {
                exec_plugins: args.allow_exec_plugin.iter().cloned().collect(),
                argocd_aws_auth: false,
            };
            crate::members::client::Connection::from_member_cluster(&cluster.spec, secret.as_ref())
                .map_err(anyhow::Error::msg)?
                .build(&policy)
                .await
                .map_err(|e| {
                    anyhow::anyhow!(
                        "{} ({}); pass --member-kubeconfig to connect with your own",
                        e.message,
                        e.reason
                    )
                })
                .with_context(|| format!("connecting to member {member}"))?
        }
        (None, None) => anyhow::bail!(
            "no MemberCluster {}/{member} to connect through: pass --member-kubeconfig",
            args.namespace
        ),
    };
    let services = Api::<Service>::all(member_client.clone())
        .list(&list)
        .await
        .with_context(|| format!("listing Services in {member}"))?
        .items;
    let slices = Api::<EndpointSlice>::all(member_client.clone())
        .list(&list)
        .await
        .with_context(|| format!("listing EndpointSlices in {member}"))?
        .items;
    let node_zone = match &args.node {
        Some(node) => {
            let node = std::sync::Arc::new(
                Api::<Node>::all(member_client)
                    .get(node)
                    .await
                    .with_context(|| format!("reading Node {node} in {member}"))?,
            );
            crate::members::effective_topology(&None, &[], std::slice::from_ref(&node))
                .1
                .into_iter()
                .next()
        }
        None => None,
    };
    let inputs = Inputs {
        cluster_domain: args.cluster_domain.clone(),
        federations: domains.iter().map(federation_view).collect(),
        records: records.iter().map(record_view).collect(),
        member: registered.as_ref().map(member_view),
        node_zone,
        services: crate::discovery::local::local_services(&services, &slices),
    };
    // The discovery zones' ownership rules, as the replicas apply them:
    // the Domains' allowedNamespaces (namespace labels for a selector)
    // and the records' ages.
    let selector = domains.iter().any(|d| {
        d.spec
            .allowed_namespaces
            .as_ref()
            .is_some_and(|a| a.from == fedns_api::NamespacesFrom::Selector)
    });
    let mut labels = fedns_providers::plan::ownership::NamespaceLabels::new();
    if selector {
        let namespaces = Api::<k8s_openapi::api::core::v1::Namespace>::all(host.clone())
            .list(&Default::default())
            .await
            .context("listing Namespaces (a Domain admits namespaces by selector)")?;
        for namespace in namespaces {
            labels.insert(
                namespace.metadata.name.unwrap_or_default(),
                namespace.metadata.labels.unwrap_or_default(),
            );
        }
    }
    let ownership = crate::discovery::ownership::Ownership::from_objects(&domains, &records, labels);
    let explanation =
        explain_from_cluster_owned(&args.name, member, &inputs, &ownership).map_err(anyhow::Error::msg)?;
    // A CNAME's target, as every client gets it.
    let then = match &explanation.answer {
        FromClusterAnswer::Fallback { target, .. } => {
            let endpoints = Api::<DNSEndpoint>::all(host.clone())
                .list(&list)
                .await
                .context("listing DNSEndpoints")?
                .items;
            let ingresses = Api::<IngressDNSRecord>::all(host.clone())
                .list(&list)
                .await
                .context("listing IngressDNSRecords")?
                .items;
            let members = members_api.list(&list).await.context("listing MemberClusters")?.items;
            let mut target_explanation = explain(
                target,
                &endpoints,
                &records,
                &ingresses,
                &[],
                &members,
                &|_, _, _, _| None,
            );
            target_explanation.routing = explain_routing(target, &domains, &endpoints, args.client_subnet, None);
            Some(target_explanation)
        }
        _ => None,
    };
    match args.output {
        ExplainOutput::Text => {
            print!("{}", render_from(&explanation));
            if let Some(then) = &then {
                for line in render(then).lines() {
                    println!("    {line}");
                }
            }
        }
        ExplainOutput::Json => {
            let json = serde_json::json!({ "fromCluster": explanation, "target": then });
            println!("{}", serde_json::to_string_pretty(&json)?);
        }
    }
    Ok(())
}
