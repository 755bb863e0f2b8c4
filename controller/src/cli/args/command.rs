//! The command line itself: [`Cli`] and its subcommands ([`Command`]).

use clap::{Parser, Subcommand};

use super::agent::AgentArgs;
use super::controller::ControllerArgs;
use super::crds::CrdsArgs;
use super::discovery_config::DiscoveryConfigArgs;
use super::dns_server::DnsServerArgs;
use super::docs::DocsArgs;
use super::explain::ExplainArgs;
use super::join::JoinArgs;
use super::sandbox::SandboxArgs;
use super::webhook_provider::WebhookProviderArgs;
use crate::logging::LogFormat;

/// fedns: global DNS and cross-cluster service discovery for Kubernetes federations.
#[derive(Debug, Parser)]
#[command(name = "fedns", version)]
pub struct Cli {
    /// Log line format on standard error. The level comes from `RUST_LOG`
    /// (default `info,kube_client=off`), e.g. `RUST_LOG=fedns=debug,kube=warn`.
    #[arg(long, global = true, value_enum, default_value_t = LogFormat::Text)]
    pub log_format: LogFormat,

    /// What to run.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Run the controller (member health, records, DNSEndpoints, publishing).
    Controller(Box<ControllerArgs>),
    /// Run only the embedded authoritative DNS server.
    DnsServer(DnsServerArgs),
    /// Print the CustomResourceDefinitions as multi-document YAML.
    Crds(CrdsArgs),
    /// Register a member cluster with the federation.
    Join(JoinArgs),
    /// Run a whole federation on this machine (emulated clusters, controller, DNS).
    Sandbox(SandboxArgs),
    /// Explain why each cluster is or is not behind a published name.
    Explain(ExplainArgs),
    /// Print the cluster DNS forwarding (CoreDNS, kube-dns, dnsmasq) a
    /// member needs for discovery of `nginx.ns.myfed` from its pods.
    DiscoveryConfig(DiscoveryConfigArgs),
    /// Probe the federation's load balancers from inside a member cluster
    /// (a vantage point) and report what it sees to the controller.
    Agent(AgentArgs),
    /// Serve fedns's zones as an external-dns webhook provider: an
    /// unmodified external-dns (`--provider=webhook`) publishes into the
    /// federation's DNS through it.
    WebhookProvider(WebhookProviderArgs),
    /// Print a reference document generated from this binary (hidden: it
    /// keeps `docs/` current).
    #[command(hide = true)]
    Docs(DocsArgs),
}

impl Command {
    /// The subcommand as typed, for messages.
    pub fn name(&self) -> &'static str {
        match self {
            Command::Controller(_) => "controller",
            Command::DnsServer(_) => "dns-server",
            Command::Crds(_) => "crds",
            Command::Join(_) => "join",
            Command::Sandbox(_) => "sandbox",
            Command::Explain(_) => "explain",
            Command::DiscoveryConfig(_) => "discovery-config",
            Command::Agent(_) => "agent",
            Command::WebhookProvider(_) => "webhook-provider",
            Command::Docs(_) => "docs",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cli::args::controller::SourceArgs;
    use crate::cli::args::providers::{GoogleArgs, Provider, Route53Args, WebhookArgs, ZoneVisibility};
    use clap::Parser;

    #[test]
    fn route53_defaults_match_the_command_line() {
        let cli = Cli::try_parse_from(["fedns", "controller"]).expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.route53, Route53Args::default());
        assert_eq!(args.sources, SourceArgs::default());
        let cli = Cli::try_parse_from([
            "fedns",
            "controller",
            "--provider",
            "route53",
            "--provider",
            "embedded",
            "--route53-zone-id",
            "Z1,Z2",
            "--route53-rps",
            "2.5",
        ])
        .expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.provider, vec![Provider::Route53, Provider::Embedded]);
        assert_eq!(args.route53.zone_ids, vec!["Z1", "Z2"]);
        assert_eq!(args.route53.requests_per_second, 2.5);
    }

    #[test]
    fn webhook_flags_and_defaults_match_the_command_line() {
        let cli = Cli::try_parse_from(["fedns", "controller"]).expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.webhook, WebhookArgs::default());
        let cli = Cli::try_parse_from([
            "fedns",
            "controller",
            "--provider",
            "webhook",
            "--webhook-url",
            "http://127.0.0.1:8888",
            "--webhook-url",
            "http://127.0.0.1:8889",
            "--webhook-max-endpoints-per-request",
            "50",
        ])
        .expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.provider, vec![Provider::Webhook]);
        assert_eq!(args.webhook.urls, ["http://127.0.0.1:8888", "http://127.0.0.1:8889"]);
        assert_eq!(args.webhook.max_endpoints_per_request, 50);
    }

    #[test]
    fn clouddns_flags_and_defaults_match_the_command_line() {
        let cli = Cli::try_parse_from(["fedns", "controller"]).expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.google, GoogleArgs::default());
        let cli = Cli::try_parse_from([
            "fedns",
            "controller",
            "--provider",
            "google",
            "--google-zone",
            "zone-a,zone-b",
            "--google-zone",
            "zone-c",
            "--google-project",
            "p",
            "--google-zone-visibility",
            "private",
            "--google-batch-change-size",
            "200",
        ])
        .expect("parses");
        let Command::Controller(args) = cli.command else {
            panic!("not the controller")
        };
        assert_eq!(args.provider, vec![Provider::GoogleClouddns]);
        assert_eq!(args.google.zones, vec!["zone-a", "zone-b", "zone-c"]);
        assert_eq!(args.google.project.as_deref(), Some("p"));
        assert_eq!(args.google.zone_visibility, Some(ZoneVisibility::Private));
        assert_eq!(args.google.batch_change_size, 200);
        assert!(Cli::try_parse_from(["fedns", "controller", "--provider", "google-clouddns"]).is_ok());
    }
}
