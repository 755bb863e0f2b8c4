//! The clap types of the `fedns` command line: [`Cli`] and its subcommands
//! in `command.rs`, one file of arguments per subcommand, and the
//! providers' flags `fedns controller` and `fedns sandbox` share. Every
//! type is named at `crate::cli`.

mod agent;
mod command;
mod controller;
mod crds;
mod discovery_config;
mod dns_server;
mod docs;
mod explain;
mod join;
mod providers;
mod sandbox;
mod webhook_provider;

pub use agent::AgentArgs;
pub use command::{Cli, Command};
pub use controller::{ControllerArgs, InventoryArgs, SourceArgs};
pub use crds::CrdsArgs;
pub use discovery_config::DiscoveryConfigArgs;
pub use dns_server::{DnsServerArgs, MemberSideArgs, RrlArgs, SnapshotArgs};
pub use docs::{DocsArgs, Document};
pub use explain::{ExplainArgs, ExplainOutput};
pub use join::JoinArgs;
pub use providers::{EtcdArgs, GoogleArgs, Provider, Route53Args, WebhookArgs, ZoneVisibility};
pub use sandbox::{SandboxAction, SandboxArgs};
pub use webhook_provider::WebhookProviderArgs;

// Defined beside the logging it configures (which sits below the command
// line); named here with the other argument types.
pub use crate::logging::LogFormat;
