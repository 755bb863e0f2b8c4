//! Control-plane health: one prober per member (GET `/readyz` of its API
//! server, with the MemberCluster's period, timeout and thresholds, and
//! its watch streams as a second signal) that sets the member's health,
//! queues every record when it changes, and writes the Ready condition.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_api::conditions;
use fedns_api::MemberCluster;
use kube::runtime::events::EventType;
use kube::{Client, ResourceExt};

use super::eks_token::EksTokenError;
use super::member::{Health, Member};
use super::registry::Registry;

impl Registry {
    pub(super) async fn probe_loop(
        self: Arc<Self>,
        member: std::sync::Weak<Member>,
        client: Client,
        cluster: MemberCluster,
        persisted_ready: bool,
    ) {
        let name = cluster.name_any();
        let mut ready = persisted_ready;
        let (mut successes, mut failures) = (0u32, 0u32);
        let mut version: Option<String> = cluster.status.as_ref().and_then(|s| s.kubernetes_version.clone());
        let mut spec_changed = match member.upgrade() {
            Some(member) => member.settings.subscribe(),
            None => return,
        };
        let mut last = (None::<Health>, None::<(Option<String>, Vec<String>)>, false);
        let mut last_write = Instant::now() - Duration::from_secs(3600);
        let mut was_leader = false;
        loop {
            let Some(member) = member.upgrade() else { return };
            // Seen here: a change after this wakes the sleep below.
            let settings = spec_changed.borrow_and_update().clone();
            let started = Instant::now();
            let mut outcome = probe(&client, settings.timeout).await;
            self.metrics.observe_probe(&name, started.elapsed());
            let window = settings.period + Duration::from_secs(3);
            if outcome.is_ok() && member.all_watches_failing(window) {
                outcome = Err((
                    conditions::CLUSTER_NOT_REACHABLE,
                    "every watch stream of this cluster is failing".to_owned(),
                ));
            }
            match &outcome {
                Ok(()) => {
                    successes += 1;
                    failures = 0;
                    if !ready && successes >= settings.success_threshold {
                        ready = true;
                    }
                    if version.is_none() {
                        version = client.apiserver_version().await.ok().map(|v| v.git_version);
                    }
                }
                Err(_) => {
                    failures += 1;
                    successes = 0;
                    if ready && failures >= settings.failure_threshold {
                        ready = false;
                    }
                }
            }
            let health = match (&outcome, ready, settings.cordoned) {
                (_, _, true) => Health {
                    ready: false,
                    reason: conditions::CORDONED.into(),
                    message: "spec.cordoned is true: drained from DNS".into(),
                },
                (Ok(()), true, false) => Health {
                    ready: true,
                    reason: conditions::CLUSTER_READY.into(),
                    message: "/readyz answers ok".into(),
                },
                (Ok(()), false, false) => Health {
                    ready: false,
                    reason: conditions::CLUSTER_NOT_READY.into(),
                    message: format!(
                        "{successes} of {} successful probes needed to become Ready",
                        settings.success_threshold
                    ),
                },
                (Err((reason, message)), _, false) => Health {
                    ready: ready && !settings.cordoned,
                    reason: if ready {
                        conditions::CLUSTER_READY.into()
                    } else {
                        (*reason).into()
                    },
                    message: if ready {
                        format!(
                            "probe failed ({failures} of {} before not Ready): {message}",
                            settings.failure_threshold
                        )
                    } else {
                        message.clone()
                    },
                },
            };
            let healthy = health.ready;
            let topology = member.topology();
            let changed_health = member.healthy.swap(healthy, Ordering::Relaxed) != healthy;
            if changed_health {
                tracing::info!(member = %name, ready = healthy, reason = %health.reason, "{}", health.message);
                self.queue.push_all();
                self.update_member_gauges();
            }
            let topology_changed = last.1.as_ref() != Some(&topology);
            if topology_changed && last.1.is_some() {
                self.queue.push_all();
            }
            let leader = self.is_leader();
            let health_changed =
                last.0.as_ref().map(|h| (&h.ready, &h.reason)) != Some((&health.ready, &health.reason));
            let due = last_write.elapsed() >= Duration::from_secs(10);
            let writes = leader || self.is_engine_member(&name);
            if writes && (health_changed || topology_changed || due || !was_leader || last.2 != version.is_some()) {
                if let Some(current) = self.current_cluster(&name).await {
                    if health_changed && last.0.is_some() {
                        let kind = if health.ready {
                            EventType::Normal
                        } else {
                            EventType::Warning
                        };
                        self.event(&current, kind, &health.reason, &health.message).await;
                    }
                    self.write_status(&current, &health, Some(topology.clone()), version.clone(), false)
                        .await;
                    last_write = Instant::now();
                }
            }
            was_leader = leader;
            last = (Some(health), Some(topology), version.is_some());
            drop(member);
            let elapsed = started.elapsed();
            tokio::select! {
                () = tokio::time::sleep(settings.period.saturating_sub(elapsed)) => {}
                // A spec change (cordon, thresholds) shows in the Ready
                // condition and its Event now, not a period later.
                changed = spec_changed.changed() => if changed.is_err() { return },
            }
        }
    }
}

/// GET /readyz (falling back to /healthz where /readyz is unknown) with a
/// timeout. Errors: (condition reason, message).
async fn probe(client: &Client, timeout: Duration) -> Result<(), (&'static str, String)> {
    for path in ["/readyz", "/healthz"] {
        let request = http::Request::get(path)
            .body(Vec::new())
            .map_err(|e| (conditions::CLUSTER_NOT_READY, e.to_string()))?;
        match tokio::time::timeout(timeout, client.request_text(request)).await {
            Err(_) => {
                return Err((
                    conditions::CLUSTER_NOT_REACHABLE,
                    format!("GET {path} timed out after {timeout:?}"),
                ))
            }
            Ok(Ok(_)) => return Ok(()),
            Ok(Err(kube::Error::Api(status))) if status.code == 404 && path == "/readyz" => continue,
            Ok(Err(kube::Error::Api(status))) if status.code == 401 || status.code == 403 => {
                return Err((
                    conditions::AUTH_FAILED,
                    format!("GET {path}: {} {}", status.code, status.message),
                ))
            }
            Ok(Err(kube::Error::Api(status))) => {
                return Err((
                    conditions::CLUSTER_NOT_READY,
                    format!("GET {path}: {} {}", status.code, status.message),
                ))
            }
            Ok(Err(kube::Error::Service(e))) if e.downcast_ref::<EksTokenError>().is_some() => {
                return Err((conditions::AUTH_FAILED, format!("GET {path}: {e}")))
            }
            Ok(Err(e)) => return Err((conditions::CLUSTER_NOT_REACHABLE, format!("GET {path}: {e}"))),
        }
    }
    Err((
        conditions::CLUSTER_NOT_READY,
        "neither /readyz nor /healthz is served".into(),
    ))
}
