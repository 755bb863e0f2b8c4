//! # fedns-controller
//!
//! The `fedns` binary's library: the controller, which turns the Services
//! and Ingresses of healthy member clusters into DNSEndpoint objects, and
//! the command line that runs it and the other subcommands.
//!
//! | module | job |
//! |---|---|
//! | [`cli`] | the clap types and one module per subcommand (`controller`, `dns-server`, `crds`, `join`, `sandbox`, `explain`, `discovery-config`, `agent`); each wires the parts below together and runs them |
//! | [`members`] | the member registry: per MemberCluster a client, watches of its Services, EndpointSlices, Ingresses and Nodes, a health prober, and the MemberCluster status |
//! | [`records`] | the ServiceDNSRecord and IngressDNSRecord reconcilers, the DNSEndpoint builder, the work queue, the load balancer host name resolver |
//! | [`dataplane`] | data-plane probes of the load balancer addresses, vantage point quorum, failover/failback delays |
//! | [`vantage`] | the controller's side of the `fedns agent`s: target lists to the members, their reports back |
//! | [`discovery`] | the member-side replica: discovery zones for pods inside a member (`fedns dns-server --member-cluster`) |
//! | [`metrics`], [`http`] | the controller's metrics; `/metrics`, `/healthz`, `/readyz` |
//! | [`kube_client`], [`logging`] | a host-cluster client from a kubeconfig; tracing setup |
//! | [`federation`] | an emulated federation on loopback, for `fedns sandbox` and the tests |
//!
//! Publishing (DNSEndpoints into the embedded DNS server, Route53 or
//! CoreDNS's etcd) is `fedns-providers`' pipeline; `cli::controller` starts
//! it beside the reconcilers. Calls go down the table: `cli` may use
//! everything, `records` reads `members`, `members` only queues work on
//! the record [`queue`], and the leaf modules call none of the folders.

pub mod cli;
pub mod dataplane;
pub mod discovery;
pub mod federation;
pub mod http;
pub mod kube_client;
pub mod logging;
pub mod members;
pub mod metrics;
pub mod queue;
pub mod records;
