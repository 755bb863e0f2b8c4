//! What records the templates ask for ([`wanted`]) and what to do about
//! the records that exist ([`plan`]): no I/O, so every rule of
//! `--auto-records` is tested here.

use std::collections::{BTreeMap, BTreeSet};

use fedns_api::names;
use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use serde_json::{json, Value};

/// Annotation naming the Domain (its metadata.name) to publish under.
pub const DOMAIN_ANNOTATION: &str = "multiclusterdns.fedns.io/domain";

/// Annotation giving the record TTL in seconds.
pub const TTL_ANNOTATION: &str = "multiclusterdns.fedns.io/ttl";

/// Annotation giving the record's `dnsPrefix`.
pub const PREFIX_ANNOTATION: &str = "multiclusterdns.fedns.io/dns-prefix";

/// Annotation on a route giving its record's `spec.hosts`, comma-separated
/// (needed on TCPRoute and UDPRoute, which carry no hostnames).
pub const HOSTS_ANNOTATION: &str = "multiclusterdns.fedns.io/hosts";

/// Label marking what fedns generated (and alone may change or delete).
pub const MANAGED_BY_LABEL: &str = "app.kubernetes.io/managed-by";

/// Value of [`MANAGED_BY_LABEL`] on generated records.
pub const MANAGED_BY: &str = "fedns";

/// Annotation on a generated record naming its source, `<Kind>/<namespace>/<name>`.
pub const GENERATED_FROM_ANNOTATION: &str = "fedns.io/generated-from";

/// What kind of record a source makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum RecordKind {
    /// ServiceDNSRecord.
    Service,
    /// IngressDNSRecord.
    Ingress,
    /// RouteDNSRecord.
    Route,
}

impl RecordKind {
    pub(super) fn kind(self) -> &'static str {
        match self {
            RecordKind::Service => "ServiceDNSRecord",
            RecordKind::Ingress => "IngressDNSRecord",
            RecordKind::Route => "RouteDNSRecord",
        }
    }
}

/// One annotated source object, reduced to what a record needs.
#[derive(Debug, Clone)]
pub struct Template {
    /// `Service`, `Ingress`, `FederatedService`, `ServiceExport`, a route
    /// kind (`HTTPRoute`…) or a kubefed federated route kind.
    pub kind: &'static str,
    /// Its apiVersion.
    pub api_version: &'static str,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// uid (for the owner reference).
    pub uid: Option<String>,
    /// Annotations that carry the request.
    pub annotations: BTreeMap<String, String>,
    /// An Ingress's rule hosts; a route's `spec.hostnames` (what
    /// [`admit`] checks of a member's route).
    pub hosts: Vec<String>,
    /// A route's kind (the record is a RouteDNSRecord).
    pub route_kind: Option<fedns_api::RouteKind>,
    /// Lives in the host (gets an owner reference), else in the Karmada
    /// control plane (index 1 of the recorders).
    pub in_host: bool,
}

impl Template {
    pub(super) fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.api_version.to_owned()),
            kind: Some(self.kind.to_owned()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: self.uid.clone(),
            ..ObjectReference::default()
        }
    }

    pub(super) fn id(&self) -> String {
        format!("{}/{}/{}", self.kind, self.namespace, self.name)
    }

    /// The kind of record it makes.
    pub fn record_kind(&self) -> RecordKind {
        if self.route_kind.is_some() {
            RecordKind::Route
        } else if self.kind == "Ingress" {
            RecordKind::Ingress
        } else {
            RecordKind::Service
        }
    }
}

/// A record fedns should hold.
#[derive(Debug, Clone, PartialEq)]
pub struct Wanted {
    /// Kind of record.
    pub kind: RecordKind,
    /// Namespace (the source's).
    pub namespace: String,
    /// Name (the source's).
    pub name: String,
    /// `spec` of the record.
    pub spec: Value,
    /// Owner reference (sources in the host).
    pub owner: Option<OwnerReference>,
    /// `<Kind>/<namespace>/<name>` of the source.
    pub source: String,
}

/// A problem with a source, for a Warning Event on it.
#[derive(Debug, Clone, PartialEq)]
pub struct Problem {
    /// The source's id (`<Kind>/<namespace>/<name>`).
    pub source: String,
    /// Event reason.
    pub reason: &'static str,
    /// Message.
    pub message: String,
}

// The MemberCluster condition lives with the members' status (written
// there; `members` sits below `records`).
pub use crate::members::{AUTO_RECORDS_NOT_ALLOWED as NOT_ALLOWED, AUTO_RECORDS_REFUSED as REFUSED_CONDITION};

/// How many refusals [`REFUSED_CONDITION`]'s message lists.
pub const REFUSALS_LISTED: usize = 5;

/// A template read in a member cluster (an annotated route or
/// ServiceExport), and which member holds it.
#[derive(Debug, Clone)]
pub struct FromMember {
    /// The member's name.
    pub member: String,
    /// The template. A route's `hosts` are its `spec.hostnames`.
    pub template: Template,
}

/// A member's template that makes no record: the member does not allow it
/// (`spec.autoRecords` of its MemberCluster).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Refusal {
    /// The member holding the template.
    pub member: String,
    /// Its kind.
    pub kind: &'static str,
    /// Its namespace.
    pub namespace: String,
    /// Its name.
    pub name: String,
    /// Why it is refused.
    pub reason: String,
}

impl std::fmt::Display for Refusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} {}/{}: {}", self.kind, self.namespace, self.name, self.reason)
    }
}

/// Where a route of a member's template is held: every member with a
/// route of that kind, namespace and name (annotated or not), and its
/// `spec.hostnames`. The RouteDNSRecord follows all of them.
pub type RouteCopies<'a> = dyn Fn(fedns_api::RouteKind, &str, &str) -> Vec<(String, Vec<String>)> + 'a;

/// The host names in a template's `multiclusterdns.fedns.io/hosts`
/// annotation, normalised (lower case, no trailing dot).
fn annotated_hosts(t: &Template) -> Vec<String> {
    t.annotations
        .get(HOSTS_ANNOTATION)
        .map(|h| {
            h.split(',')
                .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                .filter(|h| !h.is_empty())
                .collect()
        })
        .unwrap_or_default()
}

/// The templates of `from_members` their members allow, and the others
/// with why: a member's template makes a record only when the member's
/// MemberCluster allows it (`spec.autoRecords`, given by member in
/// `allowances`; absent: nothing): its namespace is listed, and every
/// name the record would publish (a route's hosts annotation, else the
/// route's hostnames; a ServiceExport's `dns-prefix` name in its Domain's
/// zone, `zones` giving each Domain's) is inside the allowed host names.
/// A route is followed in every member holding it ([`RouteCopies`]), so
/// each of them must allow it too. A template whose record is one of
/// `made_by_host` (made from a template in the host or an engine's control
/// plane, which needs no allowance: that record follows every member's
/// copy by the operator's choice) is kept: it adds nothing to that record.
/// Templates that ask for no record (no Domain annotation and no
/// `default_domain`) are kept as they are (they make none).
pub fn admit(
    from_members: Vec<FromMember>,
    made_by_host: &BTreeSet<(RecordKind, String, String)>,
    allowances: &BTreeMap<String, Option<fedns_api::member_cluster::AutoRecordsAllowance>>,
    zones: &BTreeMap<String, String>,
    default_domain: Option<&str>,
    copies: &RouteCopies<'_>,
) -> (Vec<Template>, Vec<Refusal>) {
    let mut kept = Vec::new();
    let mut refused = Vec::new();
    for FromMember { member, template: t } in from_members {
        let domain = t
            .annotations
            .get(DOMAIN_ANNOTATION)
            .map(|d| d.trim().to_owned())
            .or_else(|| default_domain.map(str::to_owned));
        let asks = domain.as_ref().is_some_and(|d| !d.is_empty());
        let key = (t.record_kind(), t.namespace.clone(), t.name.clone());
        if !asks || made_by_host.contains(&key) {
            kept.push(t);
            continue;
        }
        match refusal(
            &member,
            &t,
            domain.as_deref().unwrap_or_default(),
            allowances,
            zones,
            copies,
        ) {
            None => kept.push(t),
            Some(reason) => refused.push(Refusal {
                member,
                kind: t.kind,
                namespace: t.namespace.clone(),
                name: t.name.clone(),
                reason,
            }),
        }
    }
    refused.sort();
    refused.dedup();
    (kept, refused)
}

/// Why member `member` does not allow template `t` (of Domain `domain`),
/// or `None`.
fn refusal(
    member: &str,
    t: &Template,
    domain: &str,
    allowances: &BTreeMap<String, Option<fedns_api::member_cluster::AutoRecordsAllowance>>,
    zones: &BTreeMap<String, String>,
    copies: &RouteCopies<'_>,
) -> Option<String> {
    // Whether `in_member`'s allowance admits `t`'s namespace and `names`.
    let check = |in_member: &str, names: &[String]| -> Result<(), String> {
        let Some(Some(allowance)) = allowances.get(in_member) else {
            return Err(format!(
                "MemberCluster {in_member} allows no automatic records (no spec.autoRecords)"
            ));
        };
        if !allowance.allows_namespace(&t.namespace) {
            return Err(format!(
                "namespace {} is not in spec.autoRecords.namespaces of MemberCluster {in_member}",
                t.namespace
            ));
        }
        let outside: Vec<&String> = names.iter().filter(|n| !allowance.allows_hostname(n)).collect();
        if !outside.is_empty() {
            return Err(format!(
                "{outside:?} not inside spec.autoRecords.hostnames of MemberCluster {in_member}"
            ));
        }
        Ok(())
    };
    if let Some(route_kind) = t.route_kind {
        let annotated = annotated_hosts(t);
        // Names a copy publishes: the hosts annotation (the record's
        // spec.hosts) bounds every copy; without it each copy's hostnames.
        let names_of = |hostnames: &[String]| -> Result<Vec<String>, String> {
            if !annotated.is_empty() {
                return Ok(annotated.clone());
            }
            if !route_kind.has_hostnames() {
                // No record without the annotation: wanted() says why.
                return Ok(Vec::new());
            }
            if hostnames.is_empty() {
                return Err(format!(
                    "the route names no hostname, so its record would publish every name of its Gateways' listeners; \
                     annotation {HOSTS_ANNOTATION} names the hosts"
                ));
            }
            Ok(hostnames
                .iter()
                .map(|h| h.trim_end_matches('.').to_ascii_lowercase())
                .collect())
        };
        let own = match names_of(&t.hosts) {
            Ok(names) => names,
            Err(e) => return Some(e),
        };
        if let Err(e) = check(member, &own) {
            return Some(e);
        }
        for (other, hostnames) in copies(route_kind, &t.namespace, &t.name) {
            if other == member {
                continue;
            }
            let names = names_of(&hostnames).map_err(|e| format!("its copy in member {other}: {e}"));
            let result =
                names.and_then(|names| check(&other, &names).map_err(|e| format!("its copy in member {other}: {e}")));
            if let Err(e) = result {
                return Some(format!("{e} (the record would follow that copy too)"));
            }
        }
        return None;
    }
    let mut names = Vec::new();
    if let Some(prefix) = t.annotations.get(PREFIX_ANNOTATION) {
        let prefix = prefix.trim().trim_end_matches('.');
        if names::validate_hostname(prefix).is_ok() {
            match zones.get(domain) {
                Some(zone) => names.push(format!("{}.{}", prefix.to_ascii_lowercase(), zone.trim_end_matches('.').to_ascii_lowercase())),
                None => {
                    return Some(format!(
                        "Domain {domain} is not known, so its {PREFIX_ANNOTATION} name cannot be checked against spec.autoRecords.hostnames"
                    ))
                }
            }
        }
    }
    check(member, &names).err()
}

/// The records `templates` ask for, and problems found on the way.
/// `domains` are the Domains' names; `default_domain` is
/// `--auto-records-domain`. The first template giving a record name wins.
pub fn wanted(
    templates: &[Template],
    domains: &BTreeSet<String>,
    default_domain: Option<&str>,
) -> (Vec<Wanted>, Vec<Problem>) {
    let mut out: BTreeMap<(RecordKind, String, String), Wanted> = BTreeMap::new();
    let mut problems = Vec::new();
    for t in templates {
        let Some(domain) = t
            .annotations
            .get(DOMAIN_ANNOTATION)
            .map(|d| d.trim().to_owned())
            .or_else(|| default_domain.map(str::to_owned))
        else {
            continue;
        };
        let problem = |reason: &'static str, message: String| Problem {
            source: t.id(),
            reason,
            message,
        };
        if domain.is_empty() {
            problems.push(problem(
                "InvalidAnnotation",
                format!("annotation {DOMAIN_ANNOTATION} is empty; no record made"),
            ));
            continue;
        }
        if !domains.contains(&domain) {
            problems.push(problem(
                "DomainNotFound",
                format!("Domain {domain} ({DOMAIN_ANNOTATION}) does not exist; the record is made and publishes once it does"),
            ));
        }
        let mut spec = serde_json::Map::new();
        let kind = t.record_kind();
        match kind {
            RecordKind::Route => {
                let route_kind = t.route_kind.unwrap_or_default();
                spec.insert("routeKind".into(), json!(route_kind.as_str()));
                let hosts: Vec<String> = t
                    .annotations
                    .get(HOSTS_ANNOTATION)
                    .map(|h| {
                        h.split(',')
                            .map(|h| h.trim().trim_end_matches('.').to_ascii_lowercase())
                            .filter(|h| !h.is_empty())
                            .collect()
                    })
                    .unwrap_or_default();
                let bad: Vec<&String> = hosts.iter().filter(|h| names::validate_hostname(h).is_err()).collect();
                if !bad.is_empty() {
                    problems.push(problem(
                        "InvalidAnnotation",
                        format!("annotation {HOSTS_ANNOTATION}: {bad:?} are not DNS names; no RouteDNSRecord made"),
                    ));
                    continue;
                }
                if hosts.is_empty() && !route_kind.has_hostnames() {
                    problems.push(problem(
                        "InvalidAnnotation",
                        format!("a {} carries no hostnames: annotation {HOSTS_ANNOTATION} names them; no RouteDNSRecord made", route_kind.as_str()),
                    ));
                    continue;
                }
                if !hosts.is_empty() {
                    spec.insert("hosts".into(), json!(hosts));
                }
            }
            RecordKind::Service => {
                spec.insert("domainRef".into(), json!(domain));
            }
            RecordKind::Ingress => {
                let hosts: Vec<&String> = t
                    .hosts
                    .iter()
                    .filter(|h| !h.starts_with('*') && names::validate_hostname(h).is_ok())
                    .collect();
                if hosts.is_empty() {
                    problems.push(problem(
                        "InvalidAnnotation",
                        "the Ingress has no rule with a host name; no IngressDNSRecord made".into(),
                    ));
                    continue;
                }
                spec.insert("hosts".into(), json!(hosts));
            }
        }
        if let Some(ttl) = t.annotations.get(TTL_ANNOTATION) {
            match ttl.trim().parse::<i64>() {
                Ok(v) if (1..=86400).contains(&v) => {
                    spec.insert("recordTTL".into(), json!(v));
                }
                _ => problems.push(problem(
                    "InvalidAnnotation",
                    format!("annotation {TTL_ANNOTATION} {ttl:?} is not a number of seconds in 1..86400; the default TTL is used"),
                )),
            }
        }
        if let Some(prefix) = t.annotations.get(PREFIX_ANNOTATION) {
            let prefix = prefix.trim().trim_end_matches('.');
            if kind != RecordKind::Service {
                problems.push(problem(
                    "InvalidAnnotation",
                    format!("annotation {PREFIX_ANNOTATION} applies to Services only; ignored"),
                ));
            } else if names::validate_hostname(prefix).is_ok() {
                spec.insert("dnsPrefix".into(), json!(prefix));
            } else {
                problems.push(problem(
                    "InvalidAnnotation",
                    format!("annotation {PREFIX_ANNOTATION} {prefix:?} is not a DNS name; ignored"),
                ));
            }
        }
        let key = (kind, t.namespace.clone(), t.name.clone());
        if let Some(first) = out.get(&key) {
            if first.source == t.id() {
                // The same object in another cluster (a Service exported
                // by several members, a route's copies): one record.
                continue;
            }
            problems.push(problem(
                "RecordExists",
                format!(
                    "{} {}/{} is already made from {}; this source is ignored",
                    kind.kind(),
                    t.namespace,
                    t.name,
                    first.source
                ),
            ));
            continue;
        }
        let owner = match (t.in_host, &t.uid) {
            (true, Some(uid)) => Some(OwnerReference {
                api_version: t.api_version.to_owned(),
                kind: t.kind.to_owned(),
                name: t.name.clone(),
                uid: uid.clone(),
                controller: Some(false),
                block_owner_deletion: Some(false),
            }),
            _ => None,
        };
        out.insert(
            key,
            Wanted {
                kind,
                namespace: t.namespace.clone(),
                name: t.name.clone(),
                spec: Value::Object(spec),
                owner,
                source: t.id(),
            },
        );
    }
    (out.into_values().collect(), problems)
}

/// An existing record, as far as the plan needs it.
#[derive(Debug, Clone)]
pub struct Existing {
    /// Kind.
    pub kind: RecordKind,
    /// Namespace.
    pub namespace: String,
    /// Name.
    pub name: String,
    /// Labelled `app.kubernetes.io/managed-by: fedns`.
    pub generated: bool,
    /// Its spec as JSON.
    pub spec: Value,
    /// Its owner references.
    pub owners: Vec<OwnerReference>,
    /// Its `fedns.io/generated-from` annotation.
    pub generated_from: Option<String>,
}

/// One write.
#[derive(Debug, Clone, PartialEq)]
pub enum Action {
    /// Create the record.
    Create(Wanted),
    /// Change a generated record.
    Update(Wanted),
    /// Delete a generated record whose source went.
    Delete(RecordKind, String, String),
    /// A record of that name exists and fedns did not make it: left alone.
    Clash(Wanted),
}

/// The writes that take `existing` to `wanted`. Records fedns did not
/// generate are never in a Delete or Update.
pub fn plan(wanted: &[Wanted], existing: &[Existing]) -> Vec<Action> {
    let index: BTreeMap<(RecordKind, &str, &str), &Existing> = existing
        .iter()
        .map(|e| ((e.kind, e.namespace.as_str(), e.name.as_str()), e))
        .collect();
    let mut actions = Vec::new();
    let mut kept: BTreeSet<(RecordKind, &str, &str)> = BTreeSet::new();
    for w in wanted {
        let key = (w.kind, w.namespace.as_str(), w.name.as_str());
        kept.insert(key);
        match index.get(&key) {
            None => actions.push(Action::Create(w.clone())),
            Some(e) if !e.generated => actions.push(Action::Clash(w.clone())),
            Some(e) => {
                let spec_differs = w
                    .spec
                    .as_object()
                    .is_some_and(|want| want.iter().any(|(k, v)| e.spec.get(k) != Some(v)))
                    // A route's hosts annotation removed: back to every hostname.
                    || (w.kind == RecordKind::Route
                        && w.spec.get("hosts").is_none()
                        && e.spec.get("hosts").is_some_and(|h| h.as_array().is_some_and(|a| !a.is_empty())));
                let owner_differs = w
                    .owner
                    .as_ref()
                    .is_some_and(|o| !e.owners.iter().any(|x| x.uid == o.uid));
                if spec_differs || owner_differs {
                    actions.push(Action::Update(w.clone()));
                }
            }
        }
    }
    for e in existing {
        if e.generated && !kept.contains(&(e.kind, e.namespace.as_str(), e.name.as_str())) {
            actions.push(Action::Delete(e.kind, e.namespace.clone(), e.name.clone()));
        }
    }
    actions
}

#[cfg(test)]
mod tests {
    use super::*;

    fn template(kind: &'static str, name: &str, annotations: &[(&str, &str)]) -> Template {
        Template {
            kind,
            api_version: "v1",
            namespace: "ns".into(),
            name: name.into(),
            uid: Some(format!("uid-{name}")),
            annotations: annotations.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect(),
            hosts: vec!["shop.example.com".into(), "*.example.com".into()],
            route_kind: None,
            in_host: true,
        }
    }

    fn route(kind: fedns_api::RouteKind, name: &str, annotations: &[(&str, &str)]) -> Template {
        Template {
            kind: kind.as_str(),
            api_version: "gateway.networking.k8s.io/v1",
            hosts: Vec::new(),
            route_kind: Some(kind),
            ..template("Service", name, annotations)
        }
    }

    #[test]
    fn annotated_routes_become_route_records() {
        use fedns_api::RouteKind;
        let templates = vec![
            route(
                RouteKind::HTTPRoute,
                "web",
                &[(DOMAIN_ANNOTATION, "myfed"), (TTL_ANNOTATION, "30")],
            ),
            route(
                RouteKind::TCPRoute,
                "db",
                &[
                    (DOMAIN_ANNOTATION, "myfed"),
                    (HOSTS_ANNOTATION, "db.example.com, DB2.example.com."),
                ],
            ),
            // No hostnames and no annotation naming them: a problem.
            route(RouteKind::UDPRoute, "dns", &[(DOMAIN_ANNOTATION, "myfed")]),
            route(
                RouteKind::TLSRoute,
                "bad",
                &[(DOMAIN_ANNOTATION, "myfed"), (HOSTS_ANNOTATION, "not a name")],
            ),
            route(RouteKind::GRPCRoute, "plain", &[]),
            // A dns-prefix on a route is ignored, with a problem.
            route(
                RouteKind::GRPCRoute,
                "api",
                &[(DOMAIN_ANNOTATION, "myfed"), (PREFIX_ANNOTATION, "x")],
            ),
        ];
        let (wanted, problems) = wanted(&templates, &domains(), None);
        let specs: Vec<(&str, &Value)> = wanted.iter().map(|w| (w.name.as_str(), &w.spec)).collect();
        assert_eq!(
            specs,
            vec![
                ("api", &json!({"routeKind": "GRPCRoute"})),
                (
                    "db",
                    &json!({"routeKind": "TCPRoute", "hosts": ["db.example.com", "db2.example.com"]})
                ),
                ("web", &json!({"routeKind": "HTTPRoute", "recordTTL": 30})),
            ]
        );
        assert!(wanted.iter().all(|w| w.kind == RecordKind::Route));
        assert_eq!(wanted[2].source, "HTTPRoute/ns/web");
        let messages: Vec<(&str, &str)> = problems
            .iter()
            .map(|p| (p.source.as_str(), p.message.as_str()))
            .collect();
        assert_eq!(messages.len(), 3, "{messages:?}");
        assert!(
            messages[0].0 == "UDPRoute/ns/dns" && messages[0].1.contains(HOSTS_ANNOTATION),
            "{messages:?}"
        );
        assert!(
            messages[1].0 == "TLSRoute/ns/bad" && messages[1].1.contains("not a name"),
            "{messages:?}"
        );
        assert!(
            messages[2].0 == "GRPCRoute/ns/api" && messages[2].1.contains("Services only"),
            "{messages:?}"
        );
    }

    #[test]
    fn a_route_and_its_copies_make_one_record_the_first_source_owning_it() {
        let in_host = route(fedns_api::RouteKind::HTTPRoute, "web", &[(DOMAIN_ANNOTATION, "myfed")]);
        let member_copy = Template {
            in_host: false,
            uid: Some("uid-in-member".into()),
            ..in_host.clone()
        };
        let (wanted, problems) = wanted(&[in_host, member_copy.clone(), member_copy], &domains(), None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(wanted.len(), 1);
        assert_eq!(wanted[0].owner.as_ref().unwrap().uid, "uid-web");
    }

    #[test]
    fn a_removed_hosts_annotation_updates_the_route_record() {
        let (wanted, _) = wanted(
            &[route(
                fedns_api::RouteKind::HTTPRoute,
                "web",
                &[(DOMAIN_ANNOTATION, "myfed")],
            )],
            &domains(),
            None,
        );
        let existing = Existing {
            kind: RecordKind::Route,
            namespace: "ns".into(),
            name: "web".into(),
            generated: true,
            spec: json!({"routeKind": "HTTPRoute", "hosts": ["web.example.com"], "recordTTL": 300}),
            owners: vec![wanted[0].owner.clone().unwrap()],
            generated_from: Some("HTTPRoute/ns/web".into()),
        };
        assert!(matches!(&plan(&wanted, &[existing])[0], Action::Update(_)));
    }

    fn domains() -> BTreeSet<String> {
        ["myfed".to_owned()].into()
    }

    use fedns_api::member_cluster::AutoRecordsAllowance;

    /// An annotated HTTPRoute `namespace/name` in member `member` with
    /// `hostnames`.
    fn member_route(member: &str, namespace: &str, name: &str, hostnames: &[&str], hosts: Option<&str>) -> FromMember {
        let mut annotations = vec![(DOMAIN_ANNOTATION, "myfed")];
        if let Some(hosts) = hosts {
            annotations.push((HOSTS_ANNOTATION, hosts));
        }
        let mut template = route(fedns_api::RouteKind::HTTPRoute, name, &annotations);
        template.namespace = namespace.into();
        template.hosts = hostnames.iter().map(|h| (*h).to_owned()).collect();
        template.in_host = false;
        template.uid = None;
        FromMember {
            member: member.into(),
            template,
        }
    }

    fn allow(namespaces: &[&str], hostnames: &[&str]) -> Option<AutoRecordsAllowance> {
        Some(AutoRecordsAllowance {
            namespaces: namespaces.iter().map(|n| (*n).to_owned()).collect(),
            hostnames: hostnames.iter().map(|h| (*h).to_owned()).collect(),
        })
    }

    fn zones() -> BTreeMap<String, String> {
        [("myfed".to_owned(), "example.com".to_owned())].into()
    }

    /// Only the copies `from_members` hold (each member's route of that
    /// kind, namespace and name).
    fn copies_of(
        from_members: &[FromMember],
    ) -> impl Fn(fedns_api::RouteKind, &str, &str) -> Vec<(String, Vec<String>)> + '_ {
        move |kind, namespace, name| {
            from_members
                .iter()
                .filter(|f| {
                    f.template.route_kind == Some(kind) && f.template.namespace == namespace && f.template.name == name
                })
                .map(|f| (f.member.clone(), f.template.hosts.clone()))
                .collect()
        }
    }

    fn admitted_and_refused(
        from_members: Vec<FromMember>,
        allowances: &BTreeMap<String, Option<AutoRecordsAllowance>>,
    ) -> (Vec<String>, Vec<Refusal>) {
        let copies = from_members.clone();
        let copies = copies_of(&copies);
        let (kept, refused) = admit(from_members, &BTreeSet::new(), allowances, &zones(), None, &copies);
        (kept.iter().map(|t| t.id()).collect(), refused)
    }

    #[test]
    fn a_members_route_makes_no_record_without_an_allowance() {
        let wildcard = member_route("a", "mallory", "grab", &["*.example.com"], None);
        let allowances = [("a".to_owned(), None)].into();
        let (kept, refused) = admitted_and_refused(vec![wildcard.clone()], &allowances);
        assert!(kept.is_empty(), "{kept:?}");
        assert_eq!(refused.len(), 1);
        assert_eq!(
            (
                refused[0].member.as_str(),
                refused[0].kind,
                refused[0].namespace.as_str(),
                refused[0].name.as_str()
            ),
            ("a", "HTTPRoute", "mallory", "grab")
        );
        assert!(
            refused[0].reason.contains("no spec.autoRecords"),
            "{}",
            refused[0].reason
        );
        // A member the allowances do not even know: refused the same way.
        let (kept, refused) = admitted_and_refused(vec![wildcard], &BTreeMap::new());
        assert!(kept.is_empty() && refused.len() == 1, "{kept:?} {refused:?}");
    }

    #[test]
    fn a_members_route_makes_a_record_only_inside_its_allowance() {
        let allowances: BTreeMap<String, Option<AutoRecordsAllowance>> = [(
            "a".to_owned(),
            allow(&["mallory"], &["www.mallory.example.com", "*.apps.example.com"]),
        )]
        .into();
        let (kept, refused) = admitted_and_refused(
            vec![
                // The wildcard reaches beyond the allowance.
                member_route("a", "mallory", "grab", &["*.example.com"], None),
                member_route("a", "mallory", "www", &["www.mallory.example.com"], None),
                member_route(
                    "a",
                    "mallory",
                    "apps",
                    &["*.apps.example.com", "x.apps.example.com"],
                    None,
                ),
                // The hosts annotation bounds the record: it is what counts.
                member_route(
                    "a",
                    "mallory",
                    "narrowed",
                    &["*.example.com"],
                    Some("shop.www.mallory.example.com"),
                ),
                member_route(
                    "a",
                    "mallory",
                    "beyond",
                    &["www.mallory.example.com"],
                    Some("example.com"),
                ),
                // No hostname: every name of the Gateway's listeners.
                member_route("a", "mallory", "bare", &[], None),
                // Another namespace.
                member_route("a", "team", "web", &["www.mallory.example.com"], None),
            ],
            &allowances,
        );
        assert_eq!(
            kept,
            [
                "HTTPRoute/mallory/www",
                "HTTPRoute/mallory/apps",
                "HTTPRoute/mallory/narrowed"
            ]
        );
        let reasons: BTreeMap<&str, &str> = refused.iter().map(|r| (r.name.as_str(), r.reason.as_str())).collect();
        assert_eq!(reasons.len(), 4, "{reasons:?}");
        assert!(
            reasons["grab"].contains("\"*.example.com\"") && reasons["grab"].contains("hostnames"),
            "{reasons:?}"
        );
        assert!(reasons["beyond"].contains("\"example.com\""), "{reasons:?}");
        assert!(reasons["bare"].contains(HOSTS_ANNOTATION), "{reasons:?}");
        assert!(reasons["web"].contains("namespace team"), "{reasons:?}");
        // And wanted() makes records of the kept ones only.
        let templates: Vec<Template> = ["www", "grab"]
            .iter()
            .map(|n| member_route("a", "mallory", n, &["*.example.com"], None).template)
            .collect();
        let (_, refused) = admit(
            templates
                .iter()
                .cloned()
                .map(|template| FromMember {
                    member: "a".into(),
                    template,
                })
                .collect(),
            &BTreeSet::new(),
            &allowances,
            &zones(),
            None,
            &|_, _, _| Vec::new(),
        );
        assert_eq!(refused.len(), 2, "both name *.example.com");
    }

    #[test]
    fn every_member_holding_a_route_must_allow_it() {
        let allowances: BTreeMap<String, Option<AutoRecordsAllowance>> = [
            ("a".to_owned(), allow(&["mallory"], &["www.mallory.example.com"])),
            ("b".to_owned(), None),
        ]
        .into();
        // The same route in b, annotated or not, would add b's hostnames.
        let (kept, refused) = admitted_and_refused(
            vec![
                member_route("a", "mallory", "web", &["www.mallory.example.com"], None),
                member_route("b", "mallory", "web", &["*.example.com"], None),
            ],
            &allowances,
        );
        assert!(kept.is_empty(), "{kept:?}");
        let of_a = refused.iter().find(|r| r.member == "a").unwrap();
        assert!(of_a.reason.contains("its copy in member b"), "{}", of_a.reason);
        // b allows it with the same names: one record.
        let allowances: BTreeMap<String, Option<AutoRecordsAllowance>> = [
            ("a".to_owned(), allow(&["mallory"], &["www.mallory.example.com"])),
            ("b".to_owned(), allow(&["mallory"], &["mallory.example.com"])),
        ]
        .into();
        let both = vec![
            member_route("a", "mallory", "web", &["www.mallory.example.com"], None),
            member_route("b", "mallory", "web", &["www.mallory.example.com"], None),
        ];
        let copies = copies_of(&both);
        let (kept, refused) = admit(both.clone(), &BTreeSet::new(), &allowances, &zones(), None, &copies);
        assert!(refused.is_empty(), "{refused:?}");
        let (wanted, problems) = wanted(&kept, &domains(), None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(wanted.len(), 1, "one record for the route and its copy");
    }

    #[test]
    fn a_members_service_export_needs_its_namespace_and_its_prefix_name_allowed() {
        let export = |namespace: &str, name: &str, prefix: Option<&str>| {
            let mut annotations = vec![(DOMAIN_ANNOTATION, "myfed")];
            if let Some(prefix) = prefix {
                annotations.push((PREFIX_ANNOTATION, prefix));
            }
            let mut template = template("ServiceExport", name, &annotations);
            template.namespace = namespace.into();
            template.in_host = false;
            template.hosts = Vec::new();
            FromMember {
                member: "a".into(),
                template,
            }
        };
        let allowances: BTreeMap<String, Option<AutoRecordsAllowance>> =
            [("a".to_owned(), allow(&["shop"], &["www.example.com"]))].into();
        let (kept, refused) = admitted_and_refused(
            vec![
                export("shop", "api", None),
                export("shop", "front", Some("www")),
                export("shop", "grab", Some("mail")),
                export("mallory", "api", None),
            ],
            &allowances,
        );
        assert_eq!(kept, ["ServiceExport/shop/api", "ServiceExport/shop/front"]);
        let reasons: Vec<(&str, &str)> = refused
            .iter()
            .map(|r| (r.namespace.as_str(), r.reason.as_str()))
            .collect();
        assert_eq!(reasons.len(), 2, "{reasons:?}");
        assert!(
            reasons
                .iter()
                .any(|(ns, r)| *ns == "shop" && r.contains("mail.example.com")),
            "{reasons:?}"
        );
        assert!(
            reasons
                .iter()
                .any(|(ns, r)| *ns == "mallory" && r.contains("namespace mallory")),
            "{reasons:?}"
        );
        // A prefix whose Domain is not known cannot be checked: refused.
        let (kept, refused) = admit(
            vec![export("shop", "front", Some("www"))],
            &BTreeSet::new(),
            &allowances,
            &BTreeMap::new(),
            None,
            &|_, _, _| Vec::new(),
        );
        assert!(kept.is_empty());
        assert!(refused[0].reason.contains("not known"), "{refused:?}");
    }

    #[test]
    fn host_templates_and_templates_asking_nothing_need_no_allowance() {
        let copy = member_route("a", "mallory", "web", &["*.example.com"], None);
        let mut unannotated = member_route("a", "mallory", "plain", &["*.example.com"], None);
        unannotated.template.annotations.clear();
        // The record mallory/web is made from a template in the host (a
        // kubefed FederatedHTTPRoute, say): the member's copy adds nothing.
        let made_by_host: BTreeSet<(RecordKind, String, String)> =
            [(RecordKind::Route, "mallory".to_owned(), "web".to_owned())].into();
        let (kept, refused) = admit(
            vec![copy, unannotated.clone()],
            &made_by_host,
            &BTreeMap::new(),
            &zones(),
            None,
            &|_, _, _| Vec::new(),
        );
        assert!(refused.is_empty(), "{refused:?}");
        assert_eq!(kept.len(), 2);
        // With --auto-records-domain even an unannotated one asks.
        let (kept, refused) = admit(
            vec![unannotated],
            &BTreeSet::new(),
            &BTreeMap::new(),
            &zones(),
            Some("myfed"),
            &|_, _, _| Vec::new(),
        );
        assert!(kept.is_empty() && refused.len() == 1, "{kept:?} {refused:?}");
    }

    #[test]
    fn annotated_templates_become_records() {
        let templates = vec![
            template(
                "Service",
                "nginx",
                &[
                    (DOMAIN_ANNOTATION, "myfed"),
                    (TTL_ANNOTATION, "60"),
                    (PREFIX_ANNOTATION, "www"),
                ],
            ),
            template("Service", "plain", &[]),
            template("Ingress", "shop", &[(DOMAIN_ANNOTATION, "myfed")]),
        ];
        let (wanted, problems) = wanted(&templates, &domains(), None);
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(wanted.len(), 2);
        let service = wanted.iter().find(|w| w.kind == RecordKind::Service).unwrap();
        assert_eq!(
            service.spec,
            json!({"domainRef": "myfed", "recordTTL": 60, "dnsPrefix": "www"})
        );
        assert_eq!(service.owner.as_ref().unwrap().uid, "uid-nginx");
        let ingress = wanted.iter().find(|w| w.kind == RecordKind::Ingress).unwrap();
        assert_eq!(ingress.spec, json!({"hosts": ["shop.example.com"]}));
    }

    #[test]
    fn bad_annotations_are_problems_not_failures() {
        let templates = vec![
            template("Service", "a", &[(DOMAIN_ANNOTATION, "missing")]),
            template(
                "Service",
                "b",
                &[(DOMAIN_ANNOTATION, "myfed"), (TTL_ANNOTATION, "forever")],
            ),
            template(
                "Service",
                "c",
                &[(DOMAIN_ANNOTATION, "myfed"), (PREFIX_ANNOTATION, "not a name")],
            ),
        ];
        let (wanted, problems) = wanted(&templates, &domains(), None);
        assert_eq!(wanted.len(), 3, "records are still made");
        let reasons: Vec<&str> = problems.iter().map(|p| p.reason).collect();
        assert_eq!(
            reasons,
            vec!["DomainNotFound", "InvalidAnnotation", "InvalidAnnotation"]
        );
        assert!(wanted[1].spec.get("recordTTL").is_none());
    }

    #[test]
    fn one_record_for_a_service_exported_by_several_members() {
        let mut export = template("ServiceExport", "nginx", &[]);
        export.in_host = false;
        export.uid = None;
        let (wanted, problems) = wanted(&[export.clone(), export], &domains(), Some("myfed"));
        assert!(problems.is_empty(), "{problems:?}");
        assert_eq!(wanted.len(), 1);
        assert!(wanted[0].owner.is_none(), "a member's object owns nothing in the host");
    }

    #[test]
    fn default_domain_applies_to_unannotated_templates() {
        let (wanted, _) = wanted(&[template("Service", "x", &[])], &domains(), Some("myfed"));
        assert_eq!(wanted.len(), 1);
    }

    #[test]
    fn plan_never_touches_records_fedns_did_not_make() {
        let (wanted, _) = wanted(
            &[template("Service", "nginx", &[(DOMAIN_ANNOTATION, "myfed")])],
            &domains(),
            None,
        );
        let hand = Existing {
            kind: RecordKind::Service,
            namespace: "ns".into(),
            name: "nginx".into(),
            generated: false,
            spec: json!({"domainRef": "other"}),
            owners: Vec::new(),
            generated_from: None,
        };
        let stale_hand = Existing {
            name: "old".into(),
            ..hand.clone()
        };
        let stale_generated = Existing {
            name: "gone".into(),
            generated: true,
            ..hand.clone()
        };
        let actions = plan(&wanted, &[hand, stale_hand, stale_generated]);
        assert_eq!(actions.len(), 2);
        assert!(matches!(&actions[0], Action::Clash(w) if w.name == "nginx"));
        assert_eq!(
            actions[1],
            Action::Delete(RecordKind::Service, "ns".into(), "gone".into())
        );
    }

    #[test]
    fn plan_updates_a_changed_generated_record_only() {
        let (wanted, _) = wanted(
            &[template(
                "Service",
                "nginx",
                &[(DOMAIN_ANNOTATION, "myfed"), (TTL_ANNOTATION, "60")],
            )],
            &domains(),
            None,
        );
        let mut existing = Existing {
            kind: RecordKind::Service,
            namespace: "ns".into(),
            name: "nginx".into(),
            generated: true,
            spec: json!({"domainRef": "myfed", "recordTTL": 60, "allowServiceWithoutEndpoints": false}),
            owners: vec![wanted[0].owner.clone().unwrap()],
            generated_from: Some("Service/ns/nginx".into()),
        };
        assert!(plan(&wanted, &[existing.clone()]).is_empty());
        existing.spec["recordTTL"] = json!(30);
        assert!(matches!(&plan(&wanted, &[existing])[0], Action::Update(_)));
    }
}
