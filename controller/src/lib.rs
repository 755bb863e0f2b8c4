//! # fedns-controller
//!
//! The `fedns` binary's library: the controller, which turns the Services
//! and Ingresses of healthy member clusters into DNSEndpoint objects, and
//! the command line that runs it and the other subcommands.
//!
//! | module | job |
//! |---|---|
//! | [`cli`] | the clap types and one module per subcommand (`controller`, `dns-server`, `crds`, `join`, `sandbox`, `explain`, `discovery-config`, `agent`); each wires the parts below together and runs them |
//! | [`federation`] | an emulated federation on loopback, for `fedns sandbox` and the tests |
//! | [`discovery`] | the member-side replica: discovery zones for pods inside a member (`fedns dns-server --member-cluster`) |
//! | [`records`] | the ServiceDNSRecord and IngressDNSRecord reconcilers, the DNSEndpoint builder, the load balancer host name resolver, `--auto-records` |
//! | [`dataplane`] | data-plane health, decided in one place: probes of the load balancer addresses, the agents' reports ([`dataplane::agent_reports`]), the vantage point quorum, failover/failback delays |
//! | [`members`] | the member registry: per MemberCluster a client, watches of its Services, EndpointSlices, Ingresses and Nodes, a health prober, and the MemberCluster status |
//! | [`http`] | `/metrics`, `/healthz`, `/readyz`, `/debug/explain` |
//! | [`metrics`], [`queue`], [`events`], [`kube_client`], [`logging`] | the controller's metrics; the record work queue; Kubernetes Events whose note is the latest one (kube's recorder keeps the first); a host-cluster client from a kubeconfig; tracing setup |
//!
//! Publishing (DNSEndpoints into the embedded DNS server, Route53 or
//! CoreDNS's etcd) is `fedns-providers`' pipeline; `cli::controller` starts
//! it beside the reconcilers. Calls go down the table: `cli` may use
//! everything, `records` reads `members` and `dataplane`, `dataplane` reads
//! `members` (to talk to the agents), `members` only queues work on the
//! record [`queue`], and the leaf modules call none of the folders
//! (`tests/tests/layout.rs` in `fedns-e2e` checks it).

pub mod cli;
pub mod dataplane;
pub mod discovery;
pub mod events;
pub mod federation;
pub mod http;
pub mod kube_client;
pub mod logging;
pub mod members;
pub mod metrics;
pub mod queue;
pub mod records;
