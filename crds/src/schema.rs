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
