//! The size check before a DNSEndpoint write: an object the API server
//! would refuse is never sent.
//!
//! Why report instead of split: a DNSEndpoint is external-dns's format,
//! one object per record (`service-<name>`, `ingress-<name>`) owned by the
//! record. Splitting it into several objects would change that contract for
//! every reader (external-dns, `fedns explain`, deletion by name), and the
//! only split that keeps a big name whole (one name per object) does not
//! help when one name alone is too big; splitting one name's targets across
//! objects is not merged by external-dns, whose planner keeps one of the
//! endpoints that share a name and type and drops the others' targets. So
//! the record says it in its `Ready` condition and a Warning Event, the
//! previous DNSEndpoint stays (its names keep what they served), and every
//! other record keeps publishing.

/// Default largest DNSEndpoint the controller writes, in bytes of its JSON
/// (`--max-object-bytes`): 1.5 MiB, etcd's default `--max-request-bytes`
/// (1,572,864 bytes; etcd's "request is too large" error), which is what
/// bounds an object stored through kube-apiserver (whose own request body
/// limit, 3 MiB, is larger). See the Kubernetes docs on etcd and kube-apiserver
/// `--max-request-bytes`.
pub const DEFAULT_MAX_OBJECT_BYTES: usize = 1_572_864;

/// Bytes kept free under the limit for what the API server adds to the
/// object it stores: `metadata.managedFields`, uid, resourceVersion,
/// timestamps, and the status the publishers write (conditions).
pub const SERVER_ADDED_BYTES: usize = 16 * 1024;

/// A DNSEndpoint over the limit, not written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TooLarge {
    /// `namespace/name` of the DNSEndpoint.
    pub endpoint: String,
    /// Size of the object as it would be sent, in bytes of JSON.
    pub bytes: usize,
    /// The limit it was checked against (`--max-object-bytes`), in bytes.
    pub limit: usize,
    /// Endpoints (names × types) in it.
    pub endpoints: usize,
    /// Targets in it, all endpoints together.
    pub targets: usize,
    /// The API server's refusal, when it was sent (it fitted the limit
    /// but the server's own limit is lower) and refused for its size.
    pub refused: Option<String>,
}

impl TooLarge {
    /// The `Ready` condition's message and the Event's note.
    pub fn message(&self) -> String {
        if let Some(refusal) = &self.refused {
            return format!(
                "DNSEndpoint {} ({} bytes, {} endpoints, {} targets) was refused by the API server for its size \
                 ({refusal}): not written; its names keep what they served before. Fewer hosts or load balancer \
                 addresses make it fit; lower --max-object-bytes so such objects are not sent.",
                self.endpoint, self.bytes, self.endpoints, self.targets
            );
        }
        format!(
            "DNSEndpoint {} would be {} bytes ({} endpoints, {} targets), over the {}-byte object limit \
             (--max-object-bytes, less {} bytes the API server adds): not written; its names keep what \
             they served before. Fewer hosts or load balancer addresses make it fit.",
            self.endpoint, self.bytes, self.endpoints, self.targets, self.limit, SERVER_ADDED_BYTES
        )
    }
}

/// Checks `object` (the DNSEndpoint as it would be sent) against `limit`
/// bytes, less [`SERVER_ADDED_BYTES`]. `endpoint` is `namespace/name`.
///
/// # Errors
/// [`TooLarge`] when it does not fit.
pub fn check(
    endpoint: &str,
    object: &serde_json::Value,
    spec: &fedns_api::DNSEndpointSpec,
    limit: usize,
) -> Result<usize, TooLarge> {
    let bytes = serde_json::to_vec(object).map_or(usize::MAX, |v| v.len());
    if bytes.saturating_add(SERVER_ADDED_BYTES) <= limit {
        return Ok(bytes);
    }
    Err(TooLarge {
        endpoint: endpoint.to_owned(),
        bytes,
        limit,
        endpoints: spec.endpoints.len(),
        targets: spec.endpoints.iter().map(|e| e.targets.len()).sum(),
        refused: None,
    })
}

/// Whether the API server refused a write for its size: 413
/// RequestEntityTooLarge (kube-apiserver's body limit, 3 MiB), or etcd's
/// "request is too large" passed through (its `--max-request-bytes`).
/// Returns the server's message then.
pub fn refusal(error: &kube::Error) -> Option<String> {
    match error {
        kube::Error::Api(status)
            if status.code == 413
                || status.reason == "RequestEntityTooLarge"
                || status.message.contains("request is too large") =>
        {
            Some(format!("{} {}: {}", status.code, status.reason, status.message))
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn spec(targets: usize) -> fedns_api::DNSEndpointSpec {
        serde_json::from_value(json!({"endpoints": [{
            "dnsName": "web.ns.myfed.svc.example.com", "recordType": "A",
            "targets": (0..targets).map(|i| format!("10.0.{}.{}", i / 256, i % 256)).collect::<Vec<_>>(),
        }]}))
        .unwrap()
    }

    #[test]
    fn fits_under_the_limit_less_what_the_server_adds() {
        let small = spec(10);
        let object = json!({"spec": small});
        let bytes = serde_json::to_vec(&object).unwrap().len();
        assert_eq!(
            check("ns/service-web", &object, &small, bytes + SERVER_ADDED_BYTES),
            Ok(bytes)
        );
        let too_large = check("ns/service-web", &object, &small, bytes + SERVER_ADDED_BYTES - 1).unwrap_err();
        assert_eq!(
            (too_large.bytes, too_large.endpoints, too_large.targets),
            (bytes, 1, 10)
        );
    }

    #[test]
    fn the_servers_size_refusals_are_recognised() {
        let api = |code: u16, reason: &str, message: &str| {
            kube::Error::Api(Box::new(kube::core::Status::failure(message, reason).with_code(code)))
        };
        let refused = refusal(&api(413, "RequestEntityTooLarge", "limit is 3145728")).unwrap();
        assert!(refused.contains("413"), "{refused}");
        assert!(refusal(&api(500, "InternalError", "etcdserver: request is too large")).is_some());
        assert!(refusal(&api(409, "Conflict", "the object has been modified")).is_none());
        let mut too_large = check("ns/service-web", &json!({"spec": spec(1)}), &spec(1), 0).unwrap_err();
        too_large.refused = Some(refused);
        assert!(
            too_large.message().contains("refused by the API server"),
            "{}",
            too_large.message()
        );
    }

    #[test]
    fn the_default_limit_refuses_an_endpoint_etcd_would_refuse() {
        // 120,000 IPv4 targets: about 1.7 MB of JSON.
        let big = spec(120_000);
        let object = json!({"spec": big});
        let too_large = check("ns/service-web", &object, &big, DEFAULT_MAX_OBJECT_BYTES).unwrap_err();
        assert!(too_large.bytes > DEFAULT_MAX_OBJECT_BYTES, "{}", too_large.bytes);
        let message = too_large.message();
        assert!(
            message.contains("ns/service-web") && message.contains("not written"),
            "{message}"
        );
        assert!(check(
            "ns/service-web",
            &json!({"spec": spec(1000)}),
            &spec(1000),
            DEFAULT_MAX_OBJECT_BYTES
        )
        .is_ok());
    }
}
