//! Kubernetes `Status` errors (apimachinery `metav1.Status`), as the real
//! API server sends them: `{"kind":"Status","status":"Failure","reason":…,"code":…}`.

use serde_json::{json, Value};

/// An API error: HTTP code, `reason`, message and optional causes.
#[derive(Debug, Clone, PartialEq)]
pub struct ApiError {
    /// HTTP status code.
    pub code: u16,
    /// `Status.reason`, e.g. `NotFound`.
    pub reason: &'static str,
    /// Human-readable message.
    pub message: String,
    /// `details` (name, group, kind, causes), if any.
    pub details: Option<Value>,
}

impl ApiError {
    fn new(code: u16, reason: &'static str, message: impl Into<String>) -> Self {
        ApiError {
            code,
            reason,
            message: message.into(),
            details: None,
        }
    }

    /// 400 BadRequest.
    pub fn bad_request(message: impl Into<String>) -> Self {
        Self::new(400, "BadRequest", message)
    }
    /// 401 Unauthorized.
    pub fn unauthorized() -> Self {
        Self::new(401, "Unauthorized", "Unauthorized")
    }
    /// 404 NotFound for an object.
    pub fn not_found(group: &str, plural: &str, name: &str) -> Self {
        let resource = if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        };
        let mut e = Self::new(404, "NotFound", format!("{resource} \"{name}\" not found"));
        e.details = Some(json!({"name": name, "group": group, "kind": plural}));
        e
    }
    /// 404 NotFound for a path no resource serves.
    pub fn no_route(path: &str) -> Self {
        Self::new(
            404,
            "NotFound",
            format!("the server could not find the requested resource ({path})"),
        )
    }
    /// 405 MethodNotAllowed.
    pub fn method_not_allowed(message: impl Into<String>) -> Self {
        Self::new(405, "MethodNotAllowed", message)
    }
    /// 409 AlreadyExists.
    pub fn already_exists(group: &str, plural: &str, name: &str) -> Self {
        let resource = if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        };
        let mut e = Self::new(409, "AlreadyExists", format!("{resource} \"{name}\" already exists"));
        e.details = Some(json!({"name": name, "group": group, "kind": plural}));
        e
    }
    /// 409 Conflict (stale resourceVersion).
    pub fn conflict(group: &str, plural: &str, name: &str) -> Self {
        let resource = if group.is_empty() {
            plural.to_owned()
        } else {
            format!("{plural}.{group}")
        };
        let mut e = Self::new(
            409,
            "Conflict",
            format!(
                "Operation cannot be fulfilled on {resource} \"{name}\": the object has been modified; \
                 please apply your changes to the latest version and try again"
            ),
        );
        e.details = Some(json!({"name": name, "group": group, "kind": plural}));
        e
    }
    /// 410 Gone / Expired (resourceVersion older than the history).
    pub fn expired(message: impl Into<String>) -> Self {
        Self::new(410, "Expired", message)
    }
    /// 413 RequestEntityTooLarge.
    pub fn too_large(limit: usize) -> Self {
        Self::new(
            413,
            "RequestEntityTooLarge",
            format!("request body is larger than {limit} bytes"),
        )
    }
    /// 415 UnsupportedMediaType.
    pub fn unsupported_media_type(content_type: &str) -> Self {
        Self::new(415, "UnsupportedMediaType", format!("the body of the request was in an unknown format - accepted media types include: application/json, application/merge-patch+json, application/json-patch+json, application/strategic-merge-patch+json, application/apply-patch+yaml (got {content_type:?})"))
    }
    /// 422 Invalid with field causes `(field path, message)`.
    pub fn invalid(kind: &str, name: &str, causes: Vec<(String, String)>) -> Self {
        let summary: Vec<String> = causes.iter().map(|(f, m)| format!("{f}: {m}")).collect();
        let mut e = Self::new(
            422,
            "Invalid",
            format!("{kind} \"{name}\" is invalid: {}", summary.join(", ")),
        );
        e.details = Some(json!({
            "name": name,
            "kind": kind,
            "causes": causes.iter().map(|(f, m)| json!({"reason": "FieldValueInvalid", "message": m, "field": f})).collect::<Vec<_>>(),
        }));
        e
    }
    /// 500 InternalError.
    pub fn internal(message: impl Into<String>) -> Self {
        Self::new(500, "InternalError", message)
    }
    /// 503 ServiceUnavailable (injected faults).
    pub fn unavailable(message: impl Into<String>) -> Self {
        Self::new(503, "ServiceUnavailable", message)
    }

    /// The `Status` object.
    pub fn to_status(&self) -> Value {
        let mut status = json!({
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        });
        if let Some(details) = &self.details {
            status["details"] = details.clone();
        }
        status
    }
}

impl std::fmt::Display for ApiError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}: {}", self.code, self.reason, self.message)
    }
}

impl std::error::Error for ApiError {}

/// A successful `Status` (e.g. after deletecollection).
pub fn success_status() -> Value {
    json!({"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success"})
}
