//! Zone transfers: AXFR and IXFR answered from a zone's versions and
//! journal ([`transfer`]), NOTIFY to secondaries ([`notify`]), and TSIG
//! signing and verification ([`tsig`]). Off the query path; may allocate
//! freely.
//!
//! May call `zone/` (the store, snapshots, zone versions and the journal
//! the store keeps, TSIG keys), `query/` (answering SOA queries inside a
//! transfer exchange) and `metrics`; never `net/`.

pub mod check;
pub(crate) mod log_limit;
pub(crate) mod notify;
pub(crate) mod transfer;
pub(crate) mod tsig;
