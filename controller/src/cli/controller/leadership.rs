//! Leader election: only the leader writes; every replica serves DNS.
//! With `--leader-elect` a campaign on the Lease `fedns-controller`
//! publishes leadership as it changes; without it this replica is always
//! the leader. On shutdown ([`Leadership::step_down`]) the replica stops
//! renewing and writing, then hands the Lease back.

use std::sync::Arc;
use std::time::Duration;

use anyhow::Context;
use kube_lease_manager::LeaseManager;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use crate::cli::ControllerArgs;

/// This replica's identity and leadership.
pub(super) struct Leadership {
    /// `POD_NAME`, else `fedns-<pid>`: the Lease holder's and the event
    /// reporter's instance.
    pub(super) identity: String,
    /// Whether this replica leads (writes).
    pub(super) leader: watch::Receiver<bool>,
    // Kept to the end: the shutdown steps leadership down before handing
    // the Lease back, and a dropped sender would end every `changed()`
    // loop (the periodic resync's among them).
    leader_tx: Arc<watch::Sender<bool>>,
    /// With `--leader-elect`: the Lease's manager and the campaign.
    lease: Option<(Arc<LeaseManager>, JoinHandle<()>)>,
}

/// Starts the campaign for the Lease (with `--leader-elect`).
///
/// # Errors
/// The Lease cannot be set up.
pub(super) async fn leader_election(args: &ControllerArgs, host: &kube::Client) -> anyhow::Result<Leadership> {
    let namespace = &args.namespace;
    let identity = std::env::var("POD_NAME").unwrap_or_else(|_| format!("fedns-{}", std::process::id()));
    let (leader_tx, leader) = watch::channel(!args.leader_elect);
    let leader_tx = Arc::new(leader_tx);
    let lease = if args.leader_elect {
        let manager = kube_lease_manager::LeaseManagerBuilder::new(host.clone(), "fedns-controller")
            .with_namespace(namespace)
            .with_identity(&identity)
            .with_duration(15)
            .with_grace(5)
            .build()
            .await
            .context("setting up leader election (Lease fedns-controller)")?;
        let manager = Arc::new(manager);
        let campaign = {
            let manager = manager.clone();
            let leader_tx = leader_tx.clone();
            tokio::spawn(async move {
                loop {
                    match manager.changed().await {
                        Ok(is_leader) => {
                            set_leader(&leader_tx, is_leader);
                        }
                        Err(e) => {
                            // Lost contact: stop writing until the lease is confirmed again.
                            set_leader(&leader_tx, false);
                            tracing::warn!(error = %e, "leader election: cannot reach the Lease; retrying");
                            tokio::time::sleep(Duration::from_secs(1)).await;
                        }
                    }
                }
            })
        };
        Some((manager, campaign))
    } else {
        None // always leader
    };
    Ok(Leadership {
        identity,
        leader,
        leader_tx,
        lease,
    })
}

impl Leadership {
    /// With `--leader-elect`: stops the campaign and writing, and releases
    /// the Lease (5 s at most). The sender stays until `self` is dropped.
    pub(super) async fn step_down(&mut self) {
        if let Some((manager, campaign)) = self.lease.take() {
            // Stop renewing and stop writing, then hand the lease back so
            // another replica takes over at once instead of after the lease
            // duration, while this one still answers DNS through the drain.
            campaign.abort();
            set_leader(&self.leader_tx, false);
            match tokio::time::timeout(Duration::from_secs(5), manager.release()).await {
                Ok(Ok(())) => tracing::info!("lease released"),
                Ok(Err(e)) => tracing::warn!(error = %e, "lease not released"),
                Err(_) => tracing::warn!("lease not released within 5 s"),
            }
        }
    }
}

/// Publishes leadership, waking watchers only when it actually changes.
fn set_leader(leader: &watch::Sender<bool>, is_leader: bool) {
    leader.send_if_modified(|current| std::mem::replace(current, is_leader) != is_leader);
}
