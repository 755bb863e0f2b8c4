//! The sandbox's member side of discovery: one member-side replica per
//! member on loopback (each answering `nginx.ns.myfed.svc.cluster.local`
//! as that member's cluster DNS would, once it forwards
//! `myfed.svc.cluster.local` there), its address written to
//! `<state-dir>/<member>.dns` (one line `IP:PORT`), and the
//! `drain-endpoints` / `restore-endpoints` actions (the member's nginx
//! EndpointSlices unready / ready again).

use std::net::SocketAddr;
use std::path::Path;

use anyhow::Context;
use fedns_dnsserver::{DnsMetrics, DnsServer, ServerConfig, ZoneStore};
use fedns_providers::embedded::EmbeddedSink;

use crate::discovery::metrics::{DiscoveryAnswers, DiscoveryMetrics};
use crate::discovery::replica::ReplicaConfig;
use crate::federation::Federation;

/// The sandbox's cluster domain.
pub const CLUSTER_DOMAIN: &str = "cluster.local";

/// One member's replica: its DNS server, and the runtime its watches,
/// publishing source and discovery task run on (so stopping the replica
/// stops them all, as stopping the pod would).
pub struct MemberReplica {
    /// Member name.
    pub member: String,
    /// Where it answers (UDP and TCP).
    pub addr: SocketAddr,
    server: Option<DnsServer>,
    runtime: Option<tokio::runtime::Runtime>,
    answers: DiscoveryAnswers,
}

impl MemberReplica {
    /// The replica's answers so far by kind (`local`, `fallback`,
    /// `nxdomain`, `nodata`), as `fedns_discovery_answers_total` counts
    /// them.
    pub fn answers(&self) -> [(&'static str, u64); 4] {
        self.answers.counts()
    }

    /// Stops answering and ends every task of the replica.
    pub async fn shutdown(mut self) {
        if let Some(server) = self.server.take() {
            server.shutdown().await;
        }
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

impl Drop for MemberReplica {
    fn drop(&mut self) {
        // Not shut down (an error path): end the tasks all the same; a
        // runtime cannot be dropped in place inside another one.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

/// Starts one replica per member of `federation` on a free loopback port
/// and writes `<state-dir>/<member>.dns`.
///
/// # Errors
/// A kubeconfig cannot be read, a port bound, or a file written.
pub async fn start(federation: &Federation, namespace: &str, members: &[String]) -> anyhow::Result<Vec<MemberReplica>> {
    let state_dir = &federation.state_dir;
    let host_config = state_dir.join("host.kubeconfig");
    let mut out = Vec::new();
    for member in members {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name(format!("discovery-{member}"))
            .enable_all()
            .build()
            .with_context(|| format!("starting a runtime for {member}'s discovery replica"))?;
        let dns_metrics = DnsMetrics::new();
        // Held from here, so an error below ends the runtime (Drop).
        let mut replica = MemberReplica {
            member: member.clone(),
            addr: SocketAddr::from(([127, 0, 0, 1], 0)),
            server: None,
            runtime: Some(runtime),
            answers: DiscoveryAnswers::new(member, dns_metrics.clone()),
        };
        let store = ZoneStore::new();
        let sink = EmbeddedSink::new(store.clone());
        let config = ReplicaConfig {
            member: member.clone(),
            namespace: namespace.to_owned(),
            cluster_domain: CLUSTER_DOMAIN.into(),
            node_name: None,
            state_file: Some(state_dir.join(format!("{member}.discovery-state.json"))),
        };
        let member_config = state_dir.join(format!("{member}.kubeconfig"));
        let host_config = host_config.clone();
        // The clients and every task of the member side live on the
        // replica's runtime.
        let Some(runtime) = replica.runtime.as_ref() else {
            anyhow::bail!("{member}'s discovery replica has no runtime");
        };
        runtime
            .spawn(async move {
                let host = crate::kube_client::client(Some(&host_config)).await?;
                let member_client = crate::kube_client::client(Some(&member_config)).await?;
                crate::discovery::member_side::start(host, member_client, config, sink, DiscoveryMetrics::default());
                anyhow::Ok(())
            })
            .await
            .with_context(|| format!("starting {member}'s discovery replica"))??;
        let server = DnsServer::start(
            ServerConfig {
                listen: vec![SocketAddr::from(([127, 0, 0, 1], 0))],
                udp_workers: 1,
                ..ServerConfig::default()
            },
            store,
            dns_metrics,
        )
        .await
        .with_context(|| format!("starting {member}'s discovery replica"))?;
        let udp = server.udp_addrs()[0];
        write_address(state_dir, member, udp)?;
        tracing::info!(member = %member, addr = %udp, "member-side discovery replica answering");
        replica.addr = udp;
        replica.server = Some(server);
        out.push(replica);
    }
    Ok(out)
}

/// Writes `<state_dir>/<member>.dns`. The replica answers TCP on the UDP
/// port too (the server binds both on one port when it picks a free one).
fn write_address(state_dir: &Path, member: &str, addr: SocketAddr) -> anyhow::Result<()> {
    let path = state_dir.join(format!("{member}.dns"));
    std::fs::write(&path, format!("{addr}\n")).with_context(|| format!("writing {}", path.display()))
}

/// Sets `conditions.ready` of every endpoint of Service `ns/nginx`'s
/// EndpointSlices in `member` to `ready`. Returns what it did, one line.
///
/// # Errors
/// The member has no such slices or the emulator refused the change.
pub fn set_nginx_ready(federation: &Federation, member: &str, ready: bool) -> Result<String, String> {
    let emulator = federation.member(member).map_err(|e| e.to_string())?;
    let store = emulator.store();
    let info = store
        .resource("discovery.k8s.io", "v1", "endpointslices")
        .ok_or("EndpointSlices are not served")?;
    let filter = fedns_kube_emulator::Filter {
        namespace: Some("ns".into()),
        ..Default::default()
    };
    let list = store.list(&info, &filter, None, None).map_err(|e| e.to_string())?;
    let mut changed = 0;
    for mut slice in list["items"].as_array().cloned().unwrap_or_default() {
        if slice["metadata"]["labels"]["kubernetes.io/service-name"] != "nginx" {
            continue;
        }
        let name = slice["metadata"]["name"].as_str().unwrap_or_default().to_owned();
        for endpoint in slice["endpoints"].as_array_mut().into_iter().flatten() {
            endpoint["conditions"]["ready"] = serde_json::Value::Bool(ready);
        }
        store
            .update(&info, Some("ns"), &name, slice, fedns_kube_emulator::Target::Main)
            .map_err(|e| e.to_string())?;
        changed += 1;
    }
    if changed == 0 {
        return Err(format!("{member} has no EndpointSlice of Service ns/nginx"));
    }
    Ok(if ready {
        format!(
            "{member}: nginx endpoints ready again; its pods get the local Service (ClusterIP) for nginx.ns.myfed\n"
        )
    } else {
        format!(
            "{member}: nginx endpoints unready; its pods get a CNAME chain to the nearest healthy cluster for nginx.ns.myfed\n"
        )
    })
}
