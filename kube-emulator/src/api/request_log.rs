//! An opt-in log of the requests one emulator received (method, path and
//! query), so that a test can assert what a client asked for, not only
//! what it ended up with: e.g. that a controller never listed objects it
//! has no business reading. Off by default, so a long-running `fedns
//! sandbox` does not grow it.

use std::sync::Mutex;

/// One request as received (before faults and authentication).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LoggedRequest {
    /// `GET`, `POST`, ...
    pub method: String,
    /// The URL path, e.g. `/api/v1/namespaces/fleet/secrets`.
    pub path: String,
    /// The raw (still percent-encoded) query, empty when there is none.
    pub query: String,
}

impl LoggedRequest {
    /// The decoded value of query parameter `key` (e.g. `fieldSelector`).
    pub fn param(&self, key: &str) -> Option<String> {
        form_urlencoded::parse(self.query.as_bytes())
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.into_owned())
    }
}

/// The log: `None` while not recording.
#[derive(Debug, Default)]
pub struct RequestLog(Mutex<Option<Vec<LoggedRequest>>>);

impl RequestLog {
    /// Starts (keeping what was logged) or stops (dropping it) recording.
    pub fn set_recording(&self, on: bool) {
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        match (on, log.is_some()) {
            (true, false) => *log = Some(Vec::new()),
            (false, _) => *log = None,
            (true, true) => {}
        }
    }

    /// Logs a request, if recording.
    pub fn record(&self, method: &str, path: &str, query: Option<&str>) {
        let mut log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(log) = log.as_mut() {
            log.push(LoggedRequest {
                method: method.to_owned(),
                path: path.to_owned(),
                query: query.unwrap_or_default().to_owned(),
            });
        }
    }

    /// What was logged so far, oldest first.
    pub fn snapshot(&self) -> Vec<LoggedRequest> {
        let log = self.0.lock().unwrap_or_else(|e| e.into_inner());
        log.clone().unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_only_while_on() {
        let log = RequestLog::default();
        log.record("GET", "/api", None);
        assert!(log.snapshot().is_empty(), "off by default");
        log.set_recording(true);
        log.record(
            "GET",
            "/api/v1/secrets",
            Some("fieldSelector=metadata.name%3Dx&watch=true"),
        );
        log.set_recording(true);
        let logged = log.snapshot();
        assert_eq!(logged.len(), 1, "turning it on again keeps the log");
        assert_eq!(logged[0].path, "/api/v1/secrets");
        assert_eq!(logged[0].param("fieldSelector").as_deref(), Some("metadata.name=x"));
        assert_eq!(logged[0].param("watch").as_deref(), Some("true"));
        assert_eq!(logged[0].param("labelSelector"), None);
        log.set_recording(false);
        log.record("GET", "/api", None);
        assert!(log.snapshot().is_empty());
    }
}
