//! The transports: UDP worker loops ([`udp`]), the TCP listener and its
//! connection registry ([`tcp`]), and the server that starts them and the
//! NOTIFY task ([`server`]).
//!
//! The top layer: may call `zone/`, `query/`, `xfr/` and `metrics`;
//! nothing in the crate calls it but `lib.rs`'s re-exports.

pub(crate) mod server;
pub(crate) mod tcp;
pub(crate) mod udp;
