//! The query path: parsing a request and answering it from a snapshot
//! ([`answer`]), the invariants every response satisfies ([`check`]), and
//! response rate limiting ([`rrl`]). Routed names and ECS client tables
//! are part of the snapshot (`zone/routing.rs`); here they are only read.
//!
//! May call `zone/` and `metrics`; never `xfr/` or `net/`: requests for
//! transfers and TSIG-signed requests are handed back to the caller
//! (`Deferred`), which passes them to `xfr/`.

#[cfg(test)]
mod alloc_check;
pub mod answer;
pub(crate) mod check;
#[cfg(test)]
mod incremental_check;
#[cfg(test)]
mod pending_tests;
pub(crate) mod rrl;
#[cfg(test)]
mod saved_check;
