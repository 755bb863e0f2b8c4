//! Condition types and reasons shared by the controller and the
//! publishers, and [`set`], which updates a `status.conditions` list the
//! way the Kubernetes API conventions ask (`lastTransitionTime` changes
//! only when `status` flips).

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};

/// The `Ready` condition type.
pub const READY: &str = "Ready";
/// Suffix of the per-provider publishing condition: `<provider>/Published`,
/// e.g. `embedded/Published` (a prefixed type, as the conventions allow).
pub const PUBLISHED: &str = "Published";

/// MemberCluster: the API server answers its health probes.
pub const CLUSTER_READY: &str = "ClusterReady";
/// MemberCluster: the API server cannot be reached.
pub const CLUSTER_NOT_REACHABLE: &str = "ClusterNotReachable";
/// MemberCluster: reachable, but its readiness probe fails.
pub const CLUSTER_NOT_READY: &str = "ClusterNotReady";
/// MemberCluster: `spec.cordoned` is true.
pub const CORDONED: &str = "Cordoned";
/// MemberCluster: credentials were rejected or could not be built.
pub const AUTH_FAILED: &str = "AuthFailed";

/// Record: `spec.domainRef` names no Domain.
pub const DOMAIN_NOT_FOUND: &str = "DomainNotFound";
/// Record: no healthy cluster has an address for it.
pub const NO_HEALTHY_ENDPOINTS: &str = "NoHealthyEndpoints";
/// Record: health would remove every cluster; the last-known addresses
/// are served (`spec.whenAllUnhealthy: ServeLastKnown`).
pub const ALL_UNHEALTHY: &str = "AllUnhealthy";
/// Record: no cluster counts healthy, and `spec.fallbackTarget` answers
/// (its clusters, or a CNAME to its name).
pub const SERVING_FALLBACK: &str = "ServingFallback";
/// Record condition type: some clusters are served from their last-known
/// addresses because their API server cannot be reached while their load
/// balancers pass their probes (static stability).
pub const SERVING_LAST_KNOWN: &str = "ServingLastKnown";
/// Record or DNSEndpoint: a value was skipped because it is invalid.
pub const INVALID_INPUT: &str = "InvalidInput";
/// Reason: the record's DNSEndpoint would exceed the API server's object
/// size limit, so it was not written.
pub const OBJECT_TOO_LARGE: &str = "ObjectTooLarge";
/// DNSEndpoint: a desired record collides with one fedns does not own,
/// or an older DNSEndpoint already holds the name.
pub const CONFLICT: &str = "Conflict";
/// DNSEndpoint: its namespace may not publish the name (the Domain's
/// `allowedNamespaces`, or a service name of another namespace).
pub const NOT_ALLOWED: &str = "NotAllowed";

/// Domain condition type: `spec.clientRegions` and `spec.geoRegions` are
/// all usable (False: which entries were left out, and why).
pub const CLIENT_REGIONS_VALID: &str = "ClientRegionsValid";
/// Domain condition type: every name server inside the zone has addresses
/// (`spec.nameServerAddresses`) and every entry there is used (False:
/// which are missing or left out; secondaries cannot load such a zone).
pub const NAME_SERVER_ADDRESSES: &str = "NameServerAddresses";
/// Domain `NameServerAddresses` reason: a name server inside the zone has
/// no addresses.
pub const MISSING_ADDRESSES: &str = "MissingAddresses";
/// Domain condition type (only when `spec.dnssec.enabled`): the embedded
/// server signs the zone (True, reason `Signed`, with the DS for the
/// parent), or why it serves it unsigned (False, reason
/// [`SIGNING_FAILED`] or `NotSigned` before the first publish).
pub const DNSSEC: &str = "DNSSEC";
/// Domain `DNSSEC` reason: the zone cannot be signed (a key Secret that is
/// missing or lacks the key mode's keys, a key of another algorithm, an
/// invalid `spec.dnssec`) and is served unsigned.
pub const SIGNING_FAILED: &str = "SigningFailed";
/// Domain: `spec.geoRegions` is set but no GeoIP database could be read.
pub const GEOIP_UNAVAILABLE: &str = "GeoIPUnavailable";
/// `<provider>/Published` reason: the provider cannot express a record's
/// traffic policy and publishes every healthy cluster instead (`All`).
pub const POLICY_DOWNGRADED: &str = "PolicyDowngraded";

/// The condition type of `provider`'s publishing state.
pub fn published_type(provider: &str) -> String {
    format!("{provider}/{PUBLISHED}")
}

/// Sets condition `type_` in `conditions`; returns whether anything but
/// the timestamp changed. `lastTransitionTime` is now when the status
/// flips (or the condition is new), else kept.
pub fn set(
    conditions: &mut Vec<Condition>,
    type_: &str,
    status: bool,
    reason: &str,
    message: &str,
    observed_generation: Option<i64>,
) -> bool {
    let status = if status { "True" } else { "False" };
    let message: String = message.chars().take(32 * 1024).collect();
    match conditions.iter_mut().find(|c| c.type_ == type_) {
        Some(existing) => {
            let changed = existing.status != status
                || existing.reason != reason
                || existing.message != message
                || existing.observed_generation != observed_generation;
            if existing.status != status {
                existing.last_transition_time = now();
            }
            existing.status = status.to_owned();
            existing.reason = reason.to_owned();
            existing.message = message;
            existing.observed_generation = observed_generation;
            changed
        }
        None => {
            conditions.push(Condition {
                type_: type_.to_owned(),
                status: status.to_owned(),
                reason: reason.to_owned(),
                message,
                observed_generation,
                last_transition_time: now(),
            });
            true
        }
    }
}

/// Finds condition `type_`.
pub fn get<'a>(conditions: &'a [Condition], type_: &str) -> Option<&'a Condition> {
    conditions.iter().find(|c| c.type_ == type_)
}

/// Is condition `type_` present with status `True`?
pub fn is_true(conditions: &[Condition], type_: &str) -> bool {
    get(conditions, type_).is_some_and(|c| c.status == "True")
}

fn now() -> Time {
    Time(jiff::Timestamp::now())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn transition_time_moves_only_when_status_flips() {
        let mut conditions = Vec::new();
        assert!(set(&mut conditions, READY, true, "A", "m", Some(1)));
        let first = conditions[0].last_transition_time.clone();
        assert!(!set(&mut conditions, READY, true, "A", "m", Some(1)));
        assert!(set(&mut conditions, READY, true, "B", "other", Some(2)));
        assert_eq!(conditions[0].last_transition_time, first);
        std::thread::sleep(std::time::Duration::from_millis(2));
        assert!(set(&mut conditions, READY, false, "B", "other", Some(2)));
        assert_ne!(conditions[0].last_transition_time, first);
        assert!(!is_true(&conditions, READY));
        assert_eq!(published_type("embedded"), "embedded/Published");
    }
}
