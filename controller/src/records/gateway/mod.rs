//! Gateway API routes as records: the hostname intersection
//! ([`hostnames`]) and the attachment rules that decide what a route
//! serves in one member ([`attach`]).

pub mod attach;
pub mod hostnames;
