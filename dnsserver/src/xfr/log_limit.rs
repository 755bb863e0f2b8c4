//! Log lines about unauthenticated traffic, rate limited: a refused zone
//! transfer or a request with a bad TSIG comes from any source address a
//! sender cares to spoof over UDP, so writing one line per request lets
//! anyone fill the disk (20,000 datagrams wrote 9,681 lines). Each kind of
//! line is written at most [`PER_SECOND`] times a second; the next line
//! written says how many were left out before it (`suppressed`).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{SystemTime, UNIX_EPOCH};

/// Lines of one kind written per second, at most.
pub(crate) const PER_SECOND: u64 = 10;

/// The limit of one kind of line.
#[derive(Debug)]
pub(crate) struct LogLimit {
    /// The current second in the upper 32 bits, lines written in it in the
    /// lower 32.
    window: AtomicU64,
    /// Lines left out since the last one written.
    suppressed: AtomicU64,
}

impl LogLimit {
    /// A limit with nothing written yet.
    pub(crate) const fn new() -> LogLimit {
        LogLimit {
            window: AtomicU64::new(0),
            suppressed: AtomicU64::new(0),
        }
    }

    /// Whether a line may be written now: `Some(n)` with the number of
    /// lines left out since the last one written (to log with it), or
    /// None (leave it out; it is counted).
    pub(crate) fn allow(&self) -> Option<u64> {
        let second = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs()) & 0xFFFF_FFFF;
        self.allow_at(second)
    }

    fn allow_at(&self, second: u64) -> Option<u64> {
        let mut current = self.window.load(Ordering::Relaxed);
        loop {
            let (at, count) = (current >> 32, current & 0xFFFF_FFFF);
            let count = if at == second { count + 1 } else { 1 };
            if count > PER_SECOND {
                self.suppressed.fetch_add(1, Ordering::Relaxed);
                return None;
            }
            match self
                .window
                .compare_exchange_weak(current, second << 32 | count, Ordering::Relaxed, Ordering::Relaxed)
            {
                Ok(_) => return Some(self.suppressed.swap(0, Ordering::Relaxed)),
                Err(seen) => current = seen,
            }
        }
    }
}

/// "zone transfer refused" lines.
pub(crate) static TRANSFER_REFUSED: LogLimit = LogLimit::new();

/// "TSIG verification failed" lines.
pub(crate) static TSIG_FAILED: LogLimit = LogLimit::new();

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_ten_lines_a_second_and_the_next_says_how_many_were_left_out() {
        let limit = LogLimit::new();
        let written: Vec<Option<u64>> = (0..20_000).map(|_| limit.allow_at(7)).collect();
        assert_eq!(written.iter().filter(|w| w.is_some()).count(), PER_SECOND as usize);
        assert!(written[..10].iter().all(|w| *w == Some(0)));
        assert_eq!(limit.allow_at(8), Some(20_000 - PER_SECOND), "the summary");
        assert_eq!(limit.allow_at(8), Some(0));
    }
}
