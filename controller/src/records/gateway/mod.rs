//! Gateway API routes as records: the attachment rules that decide what a
//! route serves in one member ([`attach`]; the hostname intersection is
//! [`fedns_api::gateway`], shared with the emulator's Gateway controller).

pub mod attach;
