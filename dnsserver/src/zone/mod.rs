//! The zone model, below everything else: what the publishing pipeline
//! hands over ([`content`]), the build-time tree of names and RRsets
//! ([`tree`], [`rdatas`]) and the answer algorithm over it ([`resolve`]),
//! routed names and client tables ([`routing`]), wire rendering
//! ([`render`]), the immutable pre-rendered [`snapshot`], and the
//! [`store`] that publishes snapshots, assigns serials and keeps each
//! zone's versions and journal for transfers ([`version`], [`tsig_key`]).
//!
//! Calls no other folder of the crate (not `query/`, `xfr/`, `net/`, nor
//! `metrics`): every layer above may use it.

pub(crate) mod content;
pub(crate) mod dnssec;
pub(crate) mod nsec_chain;
pub(crate) mod rdatas;
pub(crate) mod render;
pub(crate) mod resolve;
pub(crate) mod routing;
pub(crate) mod serials;
pub(crate) mod signing_key;
pub(crate) mod snapshot;
pub(crate) mod store;
pub(crate) mod tree;
pub(crate) mod tsig_key;
pub(crate) mod version;
