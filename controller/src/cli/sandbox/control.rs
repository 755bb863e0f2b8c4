//! The control endpoint of a running sandbox (`fedns sandbox fail|recover|
//! cordon|uncordon|break-lb|fix-lb|…`): the server side and the client the
//! actions use.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;

use anyhow::Context;
use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::routing::post;
use axum::Router;
use fedns_standins::responder::Responder;
use serde_json::json;

use super::discovery;
use super::seed::{
    CONTROLLER_PROBE_SOURCE, NAMESPACE, PROBE_FAILURE_THRESHOLD, PROBE_PERIOD_SECONDS, PROBE_SUCCESS_THRESHOLD,
};
use crate::federation::{Engine, Federation};

/// File in the state dir holding the control endpoint's address.
pub(super) const CONTROL_FILE: &str = "control.addr";

/// What the control endpoint acts on.
pub(super) struct Control {
    pub(super) federation: Federation,
    pub(super) responders: BTreeMap<String, Arc<Responder>>,
    pub(super) engine: Option<Engine>,
    /// A record probes the responders (not with --engine).
    pub(super) probed: bool,
}

pub(super) async fn serve_control(control: Control) -> anyhow::Result<(SocketAddr, tokio::task::JoinHandle<()>)> {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let addr = listener.local_addr()?;
    let app = Router::new()
        .route("/{action}/{cluster}", post(handle_control))
        .with_state(Arc::new(control));
    let task = tokio::spawn(async move {
        if let Err(e) = axum::serve(listener, app).await {
            tracing::error!(error = %e, "sandbox control endpoint stopped");
        }
    });
    Ok((addr, task))
}

pub(super) async fn handle_control(
    State(control): State<Arc<Control>>,
    UrlPath((action, cluster)): UrlPath<(String, String)>,
) -> (StatusCode, String) {
    let federation = &control.federation;
    let Ok(member) = federation.member(&cluster) else {
        let known: Vec<&String> = federation.members.keys().collect();
        return (
            StatusCode::NOT_FOUND,
            format!("no member cluster {cluster}; the sandbox has {known:?}\n"),
        );
    };
    let result = match action.as_str() {
        "fail" => {
            member.stop();
            Ok(if !control.probed {
                format!("{cluster}: API server stopped; it leaves DNS after the health check notices (about 3 s)\n")
            } else {
                format!(
                    "{cluster}: API server stopped; nginx keeps its addresses while its load balancer passes \
                     (static stability); shop.example.com (no healthCheck) drops them in about 3 s, \
                     unless no cluster would be left\n"
                )
            })
        }
        "break-lb" | "fix-lb" => match control.responders.get(&cluster) {
            None => Err(format!(
                "{cluster} has no sandbox load balancer (only the built-in seed has them)"
            )),
            Some(_) if !control.probed => Err(format!(
                "with --engine no record probes the load balancers (generated records have no healthCheck), \
                 so {action} would change nothing in DNS; use fail/recover"
            )),
            Some(responder) if action == "break-lb" => {
                responder.stop();
                Ok(format!(
                    "{cluster}: load balancer {} stopped (connections refused); it leaves nginx's names after \
                     {PROBE_FAILURE_THRESHOLD} failed probes {PROBE_PERIOD_SECONDS} s apart (within {} s)\n",
                    responder.address(),
                    PROBE_PERIOD_SECONDS * PROBE_FAILURE_THRESHOLD + 1
                ))
            }
            Some(responder) => responder
                .resume()
                .await
                .map(|()| {
                    format!(
                        "{cluster}: load balancer {} answering again; it returns after {PROBE_SUCCESS_THRESHOLD} passing probe\n",
                        responder.address()
                    )
                })
                .map_err(|e| format!("{cluster}: load balancer {}: {e}", responder.address())),
        },
        "isolate" | "heal" => match control.responders.get(&cluster) {
            None => Err(format!(
                "{cluster} has no sandbox load balancer (only the built-in seed has them)"
            )),
            Some(_) if !control.probed => Err(format!(
                "with --engine no record probes the load balancers, so {action} would change nothing in DNS"
            )),
            Some(responder) if action == "isolate" => {
                responder.refuse(CONTROLLER_PROBE_SOURCE);
                Ok(format!(
                    "{cluster}: load balancer {} refuses the controller's probes (from {CONTROLLER_PROBE_SOURCE}) and \
                     serves the agents; it stays in DNS (three of four vantage points, the members' agents, reach it): \
                     fedns explain nginx.ns.myfed.svc.example.com shows the disagreement\n",
                    responder.address()
                ))
            }
            Some(responder) => {
                responder.admit(CONTROLLER_PROBE_SOURCE);
                Ok(format!(
                    "{cluster}: load balancer {} serves the controller's probes again\n",
                    responder.address()
                ))
            }
        },
        "recover" => member
            .resume()
            .await
            .map(|_| format!("{cluster}: API server serving again; it returns after 2 successful probes\n"))
            .map_err(|e| e.to_string()),
        "drain-endpoints" | "restore-endpoints" => {
            discovery::set_nginx_ready(federation, &cluster, action == "restore-endpoints")
        }
        "cordon" | "uncordon" if control.engine.is_some() => Err(format!(
            "{action} sets a MemberCluster's spec.cordoned; with --engine the members are the engine's clusters, \
             which fedns never writes (use fail/recover)"
        )),
        "cordon" | "uncordon" => {
            let cordoned = action == "cordon";
            let store = federation.host.store();
            match store.resource("core.fedns.io", "v1alpha1", "memberclusters") {
                Some(info) => store
                    .patch(
                        &info,
                        Some(NAMESPACE),
                        &cluster,
                        fedns_kube_emulator::PatchKind::Merge,
                        json!({"spec": {"cordoned": cordoned}}),
                        None,
                        fedns_kube_emulator::Target::Main,
                    )
                    .map(|_| format!("{cluster}: spec.cordoned = {cordoned}\n"))
                    .map_err(|e| e.to_string()),
                None => Err("the MemberCluster CRD is not installed".into()),
            }
        }
        other => Err(format!(
            "unknown action {other}; use fail, recover, cordon, uncordon, break-lb, fix-lb, drain-endpoints or restore-endpoints"
        )),
    };
    match result {
        Ok(message) => {
            print!("{message}");
            (StatusCode::OK, message)
        }
        Err(message) => (StatusCode::BAD_REQUEST, format!("{message}\n")),
    }
}

/// Sends `action` for `cluster` to the sandbox running with `state_dir`.
///
/// # Errors
/// No sandbox runs there, or it refused the request.
pub async fn control(state_dir: &Path, action: &str, cluster: &str) -> anyhow::Result<()> {
    use http_body_util::BodyExt;
    let file = state_dir.join(CONTROL_FILE);
    let addr = std::fs::read_to_string(&file).with_context(|| {
        format!(
            "no running sandbox found ({} is missing; start one with `fedns sandbox`)",
            file.display()
        )
    })?;
    let uri: http::Uri = format!("http://{}/{action}/{cluster}", addr.trim()).parse()?;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    let request = http::Request::post(uri).body(http_body_util::Empty::new())?;
    let response = client
        .request(request)
        .await
        .with_context(|| format!("the sandbox at {} does not answer (is it still running?)", addr.trim()))?;
    let status = response.status();
    let body = response.into_body().collect().await?.to_bytes();
    let text = String::from_utf8_lossy(&body);
    anyhow::ensure!(status.is_success(), "{}", text.trim());
    print!("{text}");
    Ok(())
}
