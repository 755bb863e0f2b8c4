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
    /// An Ingress's rule hosts.
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
        let kind = if t.route_kind.is_some() {
            RecordKind::Route
        } else if t.kind == "Ingress" {
            RecordKind::Ingress
        } else {
            RecordKind::Service
        };
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
