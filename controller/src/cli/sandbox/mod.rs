//! `fedns sandbox`: a whole federation on this machine. A host cluster and
//! member clusters (Kubernetes API emulators on loopback), seeded from
//! `examples/sandbox/` (compiled in) or from a user's exported cluster
//! state (`--members-from`), the controller and the embedded DNS server in
//! this process, one printed line per published DNS change, and a local
//! control endpoint for `fedns sandbox fail|recover|cordon|uncordon` and
//! `break-lb|fix-lb`.
//!
//! The terminal is for people: the first screen ([`screen`]: what runs and
//! what to try, computed from the federation it runs), the change lines,
//! and errors that stop the sandbox (on standard error). Log lines go to
//! `<state-dir>/sandbox.log` (`--verbose`: standard error).
//!
//! With the built-in seed, each member's Service load balancer is an HTTP
//! responder on a loopback address of its own (127.0.10.1-3, one port), and
//! the seeded ServiceDNSRecord probes them (`spec.healthCheck`), so both
//! failure modes show: an API server down (`fail`) keeps the cluster in DNS
//! while its load balancer passes; a load balancer down (`break-lb`) takes it
//! out. Probes never leave 127.0.0.0/8: the seeded IngressDNSRecord (TEST-NET
//! addresses) has no health check, and neither has anything `--members-from`
//! generates.

//! | file | what |
//! |---|---|
//! | `start.rs` | starting everything; `fedns sandbox ACTION` dispatch |
//! | `seed.rs` | the built-in seed and its constants, or `--members-from` |
//! | `running.rs` | [`Running`]: the first screen, waiting, stopping |
//! | [`screen`] | the first screen's text |
//! | `changes.rs` | the change printer |
//! | `control.rs` | the control endpoint and its client ([`control`]) |
//! | [`discovery`] | each member's discovery replica |

mod changes;
mod control;
pub mod discovery;
mod running;
pub mod screen;
mod seed;
mod start;

pub use control::control;
pub use running::{clouddns_lines, webhook_lines, Running};
pub use seed::AGENT_NAMESPACE;
pub use start::{run, start, LOG_FILE};
