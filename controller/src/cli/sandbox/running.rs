//! A running sandbox ([`Running`]): what it runs, and how it prints its
//! first screen, waits and stops.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use tokio::sync::Notify;

use super::control::CONTROL_FILE;
use super::discovery;
use crate::federation::{Engine, Federation};

/// A running sandbox.
pub struct Running {
    /// The clusters.
    pub federation: Federation,
    /// Where DNS answers.
    pub dns_addr: SocketAddr,
    /// The control endpoint.
    pub control_addr: SocketAddr,
    /// Each member's load balancer (its HTTP responder's address), with the
    /// built-in seed; empty with `--members-from`.
    pub load_balancers: BTreeMap<String, SocketAddr>,
    /// `--engine`.
    pub engine: Option<Engine>,
    /// The members in seed order (the first screen picks from it).
    pub(super) order: Vec<String>,
    /// Seeded documents of kinds the emulators do not serve.
    pub(super) skipped: Vec<String>,
    /// Where log lines go, unless `--verbose`.
    pub(super) log_file: Option<PathBuf>,
    /// The load balancers are probed (the built-in seed's healthCheck).
    pub(super) probed: bool,
    /// Lets the change lines start once the first screen is printed.
    pub(super) intro_printed: Arc<Notify>,
    pub(super) stop: Arc<Notify>,
    /// The controller's outcome, sent when it has stopped and its runtime
    /// (every task it spawned) is gone.
    pub(super) controller: Option<tokio::sync::oneshot::Receiver<anyhow::Result<()>>>,
    pub(super) tasks: Vec<tokio::task::JoinHandle<()>>,
    /// The Cloud DNS stand-in (`--provider google-clouddns`).
    pub clouddns: Option<fedns_standins::clouddns::CloudDns>,
    /// The external-dns webhook provider stand-in (`--provider webhook`).
    pub webhook: Option<Arc<fedns_standins::webhook_provider::WebhookProvider>>,
    /// `fedns webhook-provider`'s URL, into which a stand-in external-dns
    /// pushed a record (`--provider webhook`).
    pub webhook_provider: Option<String>,
    /// Each member's discovery replica (`<state-dir>/<member>.dns`).
    pub discovery: Vec<discovery::MemberReplica>,
    /// Each member's `fedns agent` (a vantage point), with the built-in
    /// seed.
    pub agents: Vec<crate::cli::agent::Agent>,
}

/// Where to look at what the google-clouddns provider published.
pub fn clouddns_lines(dns: &fedns_standins::clouddns::CloudDns) -> String {
    let rrsets = format!("{}/managedZones/{CLOUDDNS_ZONE}/rrsets", dns.base_url(CLOUDDNS_PROJECT));
    format!(
        "\nCloud DNS stand-in (--provider google-clouddns): managed zone {CLOUDDNS_ZONE} (example.com.) in project {CLOUDDNS_PROJECT}\n  \
         curl -s -H 'Authorization: Bearer {}' {rrsets}\n\n",
        dns.token()
    )
}

/// Where to look at what the webhook provider published, and at what a
/// stand-in external-dns pushed into `fedns webhook-provider`.
pub fn webhook_lines(
    provider: &fedns_standins::webhook_provider::WebhookProvider,
    fedns_provider: Option<&str>,
    dns: std::net::SocketAddr,
) -> String {
    let mut out = format!(
        "\nexternal-dns webhook provider stand-in (--provider webhook): example.com, TTLs raised to 60 s by its adjustendpoints\n  \
         curl -s -H 'Accept: {}' {}/records\n",
        fedns_standins::webhook_provider::MEDIA_TYPE,
        provider.url()
    );
    if let Some(url) = fedns_provider {
        out.push_str(&format!(
            "fedns webhook-provider at {url}: a stand-in external-dns pushed {} (DNSEndpoint ns/external-dns-sandbox)\n  \
             dig @{} -p {} +short {} A\n",
            EXTERNAL_DNS_NAME,
            dns.ip(),
            dns.port(),
            EXTERNAL_DNS_NAME
        ));
    }
    out.push('\n');
    out
}

/// The name the sandbox's stand-in external-dns publishes through
/// `fedns webhook-provider` (`--provider webhook`), and its address
/// (answer data only: nothing is contacted).
pub(super) const EXTERNAL_DNS_NAME: &str = "legacy.example.com";
pub(super) const EXTERNAL_DNS_ADDRESS: &str = "192.0.2.80";

/// Project and managed zone of the Cloud DNS stand-in (`--provider
/// google-clouddns`).
pub(super) const CLOUDDNS_PROJECT: &str = "fedns-sandbox";

pub(super) const CLOUDDNS_ZONE: &str = "example-com";

impl Running {
    /// Prints the first screen, then lets the change lines follow.
    pub fn print_intro(&self) {
        print!("{}", self.screen());
        if let Some(dns) = &self.clouddns {
            print!("{}", clouddns_lines(dns));
        }
        if let Some(provider) = &self.webhook {
            print!(
                "{}",
                webhook_lines(provider, self.webhook_provider.as_deref(), self.dns_addr)
            );
        }
        self.intro_printed.notify_one();
    }

    /// Runs until Ctrl-C (or SIGTERM), then stops everything. A controller
    /// that stops on its own stops the sandbox, with its error.
    ///
    /// # Errors
    /// The controller stopped (e.g. a port it needs is taken).
    pub async fn run_until_stopped(mut self) -> anyhow::Result<()> {
        let Some(mut controller) = self.controller.take() else {
            return Ok(());
        };
        let stopped = tokio::select! {
            () = crate::http::shutdown_signal() => None,
            result = &mut controller => Some(result),
        };
        let outcome = match stopped {
            None => {
                self.controller = Some(controller);
                Ok(())
            }
            Some(Ok(Ok(()))) => Err(anyhow::anyhow!("the controller stopped")),
            Some(Ok(Err(e))) => Err(e.context("the controller stopped")),
            Some(Err(e)) => Err(anyhow::anyhow!("the controller stopped: {e}")),
        };
        self.shutdown().await;
        outcome
    }

    /// Stops the controller, the emulators and the control endpoint.
    pub async fn shutdown(self) {
        self.stop.notify_one();
        if let Some(controller) = self.controller {
            match tokio::time::timeout(std::time::Duration::from_secs(10), controller).await {
                Ok(Ok(Err(e))) => eprintln!("fedns sandbox: the controller stopped with an error: {e:#}"),
                Err(_) => eprintln!("fedns sandbox: the controller did not stop within 10 s"),
                _ => {}
            }
        }
        for task in self.tasks {
            task.abort();
        }
        for replica in self.discovery {
            replica.shutdown().await;
        }
        self.federation.stop();
        let _ = std::fs::remove_file(self.federation.state_dir.join(CONTROL_FILE));
        println!("fedns sandbox stopped");
    }
}
