//! Helpers the `#[schemars(...)]` attributes of the CRD types share.

/// `format: uri` plus an `http(s)://` pattern, for `MemberCluster.spec.apiEndpoint`.
pub(crate) fn api_endpoint(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({
        "type": "string",
        "format": "uri",
        "pattern": "^https?://[^\\s/$.?#].[^\\s]*$",
        "minLength": 1,
        "maxLength": 2048,
    })
}

/// A base64 string (`format: byte`), as Kubernetes writes PEM bundles.
pub(crate) fn base64(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({ "type": "string", "format": "byte" })
}

/// `spec.healthCheck.quorum`: `Majority`, `Any`, `All` or a count of
/// vantage points (Kubernetes' int-or-string, as `maxUnavailable`).
pub(crate) fn quorum(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "anyOf": [
            { "type": "integer", "minimum": 1, "maximum": 100 },
            { "type": "string", "enum": ["Majority", "Any", "All"] }
        ]
    })
}
