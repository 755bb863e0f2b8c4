//! The sandbox's first screen, as a value: what it started and what to try,
//! computed from the federation it runs (its members and their topology,
//! the Domains and records in the host, or the templates `--auto-records`
//! makes them from), never from the built-in example's names, so every
//! hint works whatever was seeded.
//!
//! Members are picked in seed order so that the hints touch different
//! clusters where there are enough: `cordon` the first member serving the
//! Service, `fail` (and the region and zone names, and `break-lb`) the
//! second, the client subnet and the live change the third (wrapping around
//! when there are fewer; the live change never on the cordoned member when
//! there is another, or it would not show).

mod compose;
mod survey;
mod text;

pub use text::{Line, Screen, Try};
