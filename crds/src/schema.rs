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

/// `spec.healthCheck.quorum`: `Majority`, `Unanimous`, `AnyOne` (or the
/// older spellings `Any`, `All`, still admitted as their aliases) or a
/// count of vantage points 1..=100 (Kubernetes' int-or-string, as
/// `maxUnavailable`).
///
/// A structural schema allows no `type` (nor any other keyword but a bare
/// `type: integer` / `type: string` pair) inside the `anyOf` of an
/// int-or-string node (apiextensions-apiserver `ValidateStructural`), and
/// kube's schema rewriter strips even that pair's types, so there is no
/// `anyOf`: the extension alone says "integer or string" and the
/// constraints sit on the node itself: the API server's validator
/// applies `minimum`/`maximum` only to an integer value and `pattern` only
/// to a string value, so `0`, `101`, `"50%"` and `"lots"` are refused at
/// admission. The controller validates again on read ([`crate::Quorum`]).
pub(crate) fn quorum(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "minimum": 1,
        "maximum": 100,
        "pattern": "^(Majority|Unanimous|AnyOne|Any|All)$"
    })
}

/// `spec.minHealthy.addresses` / `endpoints`: a count 1..=10000 or a
/// percentage `"1%"`..`"100%"` (int-or-string, constrained as
/// [`quorum`] is, for the same structural-schema reasons).
pub(crate) fn threshold(generator: &mut schemars::SchemaGenerator) -> schemars::Schema {
    let _ = generator;
    schemars::json_schema!({
        "x-kubernetes-int-or-string": true,
        "minimum": 1,
        "maximum": 10000,
        "pattern": "^(100|[1-9][0-9]?)%$"
    })
}
