//! Errors in Google's JSON envelope:
//! `{"error":{"code","message","errors":[{"domain","reason","message"}],"status"}}`.

use serde_json::{json, Value};

/// One error as the real API reports it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoogleError {
    /// HTTP status code.
    pub code: u16,
    /// `errors[0].reason` (`notFound`, `invalid`, `conditionNotMet`, …).
    pub reason: &'static str,
    /// Human-readable message (also `errors[0].message`).
    pub message: String,
    /// `errors[0].location` and `locationType`, for authentication errors.
    pub location: Option<(&'static str, &'static str)>,
    /// Further `errors[]` items (reason, message), when one request broke
    /// several rules at once (the per-change quotas are reported together).
    pub more: Vec<(&'static str, String)>,
}

impl std::fmt::Display for GoogleError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for GoogleError {}

impl GoogleError {
    /// An error with `code`, `reason` and `message`.
    pub fn new(code: u16, reason: &'static str, message: impl Into<String>) -> GoogleError {
        GoogleError {
            code,
            reason,
            message: message.into(),
            location: None,
            more: Vec::new(),
        }
    }

    /// 400 `invalid`: `Invalid value for 'FIELD': 'VALUE'`.
    pub fn invalid_value(field: &str, value: &str) -> GoogleError {
        GoogleError::new(400, "invalid", format!("Invalid value for '{field}': '{value}'"))
    }

    /// 400 `invalid` with a free message.
    pub fn invalid(message: impl Into<String>) -> GoogleError {
        GoogleError::new(400, "invalid", message)
    }

    /// 400 `required`: `The 'FIELD' parameter is required but was missing.`
    pub fn required(field: &str) -> GoogleError {
        GoogleError::new(
            400,
            "required",
            format!("The '{field}' parameter is required but was missing."),
        )
    }

    /// 404 `notFound`: `The 'FIELD' resource named 'NAME' does not exist.`
    pub fn not_found(field: &str, name: &str) -> GoogleError {
        GoogleError::new(
            404,
            "notFound",
            format!("The '{field}' resource named '{name}' does not exist."),
        )
    }

    /// 403 `quotaExceeded`: `The change would exceed quota for WHAT.`
    pub fn quota(what: &str) -> GoogleError {
        GoogleError::new(
            403,
            "quotaExceeded",
            format!("The change would exceed quota for {what}."),
        )
    }

    /// The canonical status string Google puts beside an HTTP code.
    pub fn status(&self) -> &'static str {
        match self.code {
            400 => "INVALID_ARGUMENT",
            401 => "UNAUTHENTICATED",
            403 => "PERMISSION_DENIED",
            404 => "NOT_FOUND",
            409 => "ALREADY_EXISTS",
            412 => "FAILED_PRECONDITION",
            429 => "RESOURCE_EXHAUSTED",
            501 => "UNIMPLEMENTED",
            503 => "UNAVAILABLE",
            504 => "DEADLINE_EXCEEDED",
            _ => "INTERNAL",
        }
    }

    /// The JSON body.
    pub fn to_json(&self) -> Value {
        let mut item = json!({"domain": "global", "reason": self.reason, "message": self.message});
        if let Some((location, kind)) = self.location {
            item["location"] = json!(location);
            item["locationType"] = json!(kind);
        }
        let mut items = vec![item];
        items.extend(
            self.more
                .iter()
                .map(|(reason, message)| json!({"domain": "global", "reason": reason, "message": message})),
        );
        json!({"error": {
            "code": self.code,
            "message": self.message,
            "errors": items,
            "status": self.status(),
        }})
    }
}
