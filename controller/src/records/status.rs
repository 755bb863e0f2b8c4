//! A record's conditions (`Ready`, `InputValid`) and its status write.

use fedns_api::conditions;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::api::{Patch, PatchParams};
use kube::Resource;
use serde_json::json;

use super::model::BuildProblem;

/// Health conditions on top of [`set_record_conditions`]: `Ready=False`
/// reason `AllUnhealthy` while the last-known set is served, and
/// `ServingLastKnown` (with a `healthCheck`) naming the clusters kept from
/// their last-known addresses. Returns whether anything changed.
#[allow(clippy::too_many_arguments)]
pub(super) fn set_health_conditions(
    conditions_list: &mut Vec<Condition>,
    has_check: bool,
    all_unhealthy: bool,
    fallback: Option<&str>,
    served: usize,
    last_known: &[String],
    generation: Option<i64>,
) -> bool {
    let mut changed = false;
    if let Some(fallback) = fallback {
        changed |= conditions::set(
            conditions_list,
            conditions::READY,
            false,
            conditions::SERVING_FALLBACK,
            &format!("no cluster counts healthy; answering spec.fallbackTarget: {fallback}"),
            generation,
        );
    }
    if all_unhealthy {
        changed |= conditions::set(
            conditions_list,
            conditions::READY,
            false,
            conditions::ALL_UNHEALTHY,
            &format!(
                "health would remove every cluster; serving the last-known addresses of {served} cluster(s) (whenAllUnhealthy: ServeLastKnown)"
            ),
            generation,
        );
    }
    if has_check || conditions::get(conditions_list, conditions::SERVING_LAST_KNOWN).is_some() {
        changed |= if last_known.is_empty() {
            conditions::set(
                conditions_list,
                conditions::SERVING_LAST_KNOWN,
                false,
                "MembersReachable",
                "every served cluster's API server answers",
                generation,
            )
        } else {
            conditions::set(
                conditions_list,
                conditions::SERVING_LAST_KNOWN,
                true,
                "APIServerUnreachable",
                &format!(
                    "API server unreachable, load balancers passing their probes: {}",
                    last_known.join(", ")
                ),
                generation,
            )
        };
    }
    changed
}

/// Condition saying whether every input value was usable.
pub const INPUT_VALID: &str = "InputValid";

/// A record's `Ready` (from how many healthy shards it has, or `False`
/// reason `ObjectTooLarge` with `too_large` as message when its
/// DNSEndpoint was not written for its size) and `InputValid` (from the
/// problems building its endpoints); returns whether either changed.
pub(super) fn set_record_conditions(
    conditions_list: &mut Vec<Condition>,
    healthy: usize,
    none_message: &str,
    problems: &[BuildProblem],
    too_large: Option<&str>,
    generation: Option<i64>,
) -> bool {
    set_record_conditions_refusing(
        conditions_list,
        healthy,
        none_message,
        problems,
        false,
        too_large,
        generation,
    )
}

/// [`set_record_conditions`]; with `not_allowed`, `InputValid` has reason
/// `NotAllowed` (some of `problems` is a name the record may not publish,
/// such as a `dnsPrefix` landing on another namespace's service name).
pub(super) fn set_record_conditions_refusing(
    conditions_list: &mut Vec<Condition>,
    healthy: usize,
    none_message: &str,
    problems: &[BuildProblem],
    not_allowed: bool,
    too_large: Option<&str>,
    generation: Option<i64>,
) -> bool {
    let changed = if let Some(message) = too_large {
        set_too_large(conditions_list, message, generation)
    } else if healthy == 0 {
        conditions::set(
            conditions_list,
            conditions::READY,
            false,
            conditions::NO_HEALTHY_ENDPOINTS,
            none_message,
            generation,
        )
    } else {
        conditions::set(
            conditions_list,
            conditions::READY,
            true,
            "Published",
            &format!("{healthy} healthy cluster(s)"),
            generation,
        )
    };
    changed | set_input_condition(conditions_list, problems, not_allowed, generation)
}

/// `Ready=False` reason `ObjectTooLarge`: the DNSEndpoint was not written
/// (it outranks the health reasons: none of them is published either).
pub(super) fn set_too_large(conditions_list: &mut Vec<Condition>, message: &str, generation: Option<i64>) -> bool {
    conditions::set(
        conditions_list,
        conditions::READY,
        false,
        conditions::OBJECT_TOO_LARGE,
        message,
        generation,
    )
}

fn set_input_condition(
    conditions_list: &mut Vec<Condition>,
    problems: &[BuildProblem],
    not_allowed: bool,
    generation: Option<i64>,
) -> bool {
    if problems.is_empty() {
        conditions::set(
            conditions_list,
            INPUT_VALID,
            true,
            "AllInputsValid",
            "every load balancer value is usable",
            generation,
        )
    } else {
        let messages: Vec<String> = problems.iter().map(|p| p.message.clone()).collect();
        let reason = match not_allowed {
            true => conditions::NOT_ALLOWED,
            false => conditions::INVALID_INPUT,
        };
        conditions::set(
            conditions_list,
            INPUT_VALID,
            false,
            reason,
            &messages.join("; "),
            generation,
        )
    }
}

/// Merge-patches record `namespace/name`'s status with `status`.
///
/// # Errors
/// The API server's (e.g. 404 when the record went, 409 never: a merge
/// patch carries no resourceVersion).
pub(super) async fn patch_status<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    status: serde_json::Value,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()>,
{
    // A JSON merge patch leaves out what it omits: a list that became
    // empty (serialised as absent) is sent as null, which removes it.
    // Without this a record whose last cluster left kept it in
    // `status.dns` (found by the RouteDNSRecord test).
    let mut status = status;
    if let Some(fields) = status.as_object_mut() {
        for list in ["dns", "probes"] {
            fields.entry(list).or_insert(serde_json::Value::Null);
        }
    }
    patch_unread::<K>(
        client,
        namespace,
        name,
        Some("status"),
        &PatchParams::default(),
        &Patch::Merge(&json!({"status": status})),
    )
    .await
}

/// Patches `namespace/name` (its `subresource` when given) without reading
/// the object the API server answers with: a record's status or a
/// DNSEndpoint with 50 members' shards is about 10 KB of JSON, and
/// decoding each answer cost as much as the write (a Gateway change
/// writes 2,000 of each).
///
/// # Errors
/// The request cannot be built, or the API server's error (a
/// `kube::Error::Api` as `Api::patch` gives).
pub(super) async fn patch_unread<K>(
    client: &kube::Client,
    namespace: &str,
    name: &str,
    subresource: Option<&str>,
    params: &PatchParams,
    patch: &Patch<impl serde::Serialize>,
) -> Result<(), kube::Error>
where
    K: Resource<DynamicType = ()>,
{
    let request = kube::core::Request::new(K::url_path(&(), Some(namespace)));
    let mut request = match subresource {
        Some(subresource) => request.patch_subresource(subresource, name, params, patch),
        None => request.patch(name, params, patch),
    }
    .map_err(kube::Error::BuildRequest)?;
    request.extensions_mut().insert("patch");
    client.request_text(request).await.map(drop)
}
