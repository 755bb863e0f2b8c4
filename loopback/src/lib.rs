//! # fedns-loopback: serving on loopback, for the test world
//!
//! The plumbing below the Kubernetes API emulator (`fedns-kube-emulator`)
//! and the stand-ins (`fedns-standins`), which knows neither: one
//! accepted connection served over HTTP/1 or HTTP/2 with optional TLS,
//! and the accept loop that stops with its server ([`serve`]); a CA
//! generated per server and a certificate for `127.0.0.1`, `::1` and
//! `localhost` ([`tls`]); loopback ports free for TCP and UDP, never
//! handed out twice in one process ([`ports`]). Nothing here binds beyond
//! loopback.

pub mod ports;
pub mod serve;
pub mod tls;
