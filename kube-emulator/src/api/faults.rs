//! Fault injection switches of one emulator.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::watch;

/// Switches read by every request.
#[derive(Debug)]
pub struct Faults {
    /// Requests hang (accepted, never answered) while true.
    pub hang: watch::Sender<bool>,
    /// Share of requests answered 503, in millionths.
    pub error_ppm: AtomicU64,
    /// Added latency per request, in microseconds.
    pub latency_us: AtomicU64,
    /// Bumped to end every open watch stream.
    pub watch_epoch: watch::Sender<u64>,
    /// Requests seen, for the deterministic error pattern.
    pub requests: AtomicU64,
}

impl Default for Faults {
    fn default() -> Self {
        Faults {
            hang: watch::channel(false).0,
            error_ppm: AtomicU64::new(0),
            latency_us: AtomicU64::new(0),
            watch_epoch: watch::channel(0).0,
            requests: AtomicU64::new(0),
        }
    }
}

impl Faults {
    /// Applies latency and hanging; returns true when this request must
    /// fail with 503.
    pub async fn before_request(&self) -> bool {
        let latency = self.latency_us.load(Ordering::Relaxed);
        if latency > 0 {
            tokio::time::sleep(Duration::from_micros(latency)).await;
        }
        let mut hang = self.hang.subscribe();
        while *hang.borrow_and_update() {
            if hang.changed().await.is_err() {
                break;
            }
        }
        let ppm = self.error_ppm.load(Ordering::Relaxed);
        if ppm == 0 {
            return false;
        }
        // Spread failures evenly (a Weyl sequence), so a rate of 0.5 fails
        // every other request rather than in random runs.
        let n = self.requests.fetch_add(1, Ordering::Relaxed);
        let position = n.wrapping_mul(618_034) % 1_000_000;
        position < ppm
    }
}
