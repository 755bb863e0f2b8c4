//! Automatic records (`--auto-records`): ServiceDNSRecords and
//! IngressDNSRecords made from what the user already has, instead of by
//! hand (kubefed's way):
//! * a Service or Ingress *template* (the object a propagation engine
//!   copies to members) annotated `multiclusterdns.fedns.io/domain: <Domain>`,
//!   in the host, or in the Karmada control plane when that is another
//!   API server (`--karmada-kubeconfig`);
//! * a kubefed `FederatedService` (`types.kubefed.io/v1beta1`) annotated
//!   the same way (on itself or on `spec.template`);
//! * an MCS `ServiceExport` (`multicluster.x-k8s.io/v1alpha1`) in any member
//!   whose Service of that name is of type LoadBalancer; its Domain from the
//!   same annotation on the ServiceExport, else `--auto-records-domain`.
//!   Several members exporting one Service make one record. While a
//!   member's ServiceExports are not listed yet, no record made from a
//!   ServiceExport is deleted.
//!
//! Optional annotations: `multiclusterdns.fedns.io/ttl` (seconds,
//! 1..86400) and `multiclusterdns.fedns.io/dns-prefix`. An Ingress gives its
//! `spec.rules[].host` names.
//!
//! Every generated record is labelled `app.kubernetes.io/managed-by: fedns`
//! and annotated `fedns.io/generated-from: <Kind>/<namespace>/<name>`; a
//! source in the host is its owner (garbage collection removes the record
//! with it). Only labelled records are ever changed or deleted: a record of
//! the same name written by someone else is left alone and the source gets
//! a Warning Event `RecordExists`. A generated record whose source is gone
//! (or lost its annotation) is deleted.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::events::Recorder;
use fedns_api::names;
use fedns_api::{Domain, IngressDNSRecord, ServiceDNSRecord};
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use k8s_openapi::api::networking::v1::Ingress;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::Store;
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};

/// Annotation naming the Domain (its metadata.name) to publish under.
pub const DOMAIN_ANNOTATION: &str = "multiclusterdns.fedns.io/domain";
/// Annotation giving the record TTL in seconds.
pub const TTL_ANNOTATION: &str = "multiclusterdns.fedns.io/ttl";
/// Annotation giving the record's `dnsPrefix`.
pub const PREFIX_ANNOTATION: &str = "multiclusterdns.fedns.io/dns-prefix";
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
}

impl RecordKind {
    fn kind(self) -> &'static str {
        match self {
            RecordKind::Service => "ServiceDNSRecord",
            RecordKind::Ingress => "IngressDNSRecord",
        }
    }
}

/// One annotated source object, reduced to what a record needs.
#[derive(Debug, Clone)]
pub struct Template {
    /// `Service`, `Ingress` or `FederatedService`.
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
    /// Lives in the host (gets an owner reference), else in the Karmada
    /// control plane (index 1 of the recorders).
    pub in_host: bool,
}

impl Template {
    fn reference(&self) -> ObjectReference {
        ObjectReference {
            api_version: Some(self.api_version.to_owned()),
            kind: Some(self.kind.to_owned()),
            namespace: Some(self.namespace.clone()),
            name: Some(self.name.clone()),
            uid: self.uid.clone(),
            ..ObjectReference::default()
        }
    }

    fn id(&self) -> String {
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
        let kind = if t.kind == "Ingress" {
            RecordKind::Ingress
        } else {
            RecordKind::Service
        };
        match kind {
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
            if kind == RecordKind::Ingress {
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
            if t.kind == "ServiceExport" && first.source == t.id() {
                // The same Service exported by another member: one record.
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
                    .is_some_and(|want| want.iter().any(|(k, v)| e.spec.get(k) != Some(v)));
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

/// Where templates come from: one cluster's Services and Ingresses (and
/// FederatedServices in the host when kubefed is read).
#[derive(Clone)]
pub struct TemplateSource {
    /// Services.
    pub services: Store<Service>,
    /// Ingresses.
    pub ingresses: Store<Ingress>,
    /// kubefed FederatedServices.
    pub federated_services: Option<Store<DynamicObject>>,
    /// In the host (owner references), else another API server.
    pub in_host: bool,
    /// Events on its objects.
    pub recorder: Recorder,
}

/// The auto-records loop's inputs.
pub struct AutoRecords {
    /// Host client (records are written there).
    pub host: Client,
    /// Template sources: the host first.
    pub sources: Vec<TemplateSource>,
    /// ServiceDNSRecords.
    pub services: Store<ServiceDNSRecord>,
    /// IngressDNSRecords.
    pub ingresses: Store<IngressDNSRecord>,
    /// Domains.
    pub domains: Store<Domain>,
    /// `--auto-records-domain`.
    pub default_domain: Option<String>,
    /// Leadership (only the leader writes).
    pub leader: watch::Receiver<bool>,
    /// Members (their ServiceExports and Services); `None`: none read.
    pub registry: Option<Arc<crate::members::Registry>>,
}

fn annotations_of(meta: &kube::api::ObjectMeta) -> BTreeMap<String, String> {
    meta.annotations
        .iter()
        .flatten()
        .filter(|(k, _)| k.starts_with("multiclusterdns.fedns.io/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

/// Every annotated template of `source`.
fn templates_of(source: &TemplateSource) -> Vec<Template> {
    let mut out = Vec::new();
    for s in source.services.state() {
        out.push(Template {
            kind: "Service",
            api_version: "v1",
            namespace: s.namespace().unwrap_or_default(),
            name: s.name_any(),
            uid: s.uid(),
            annotations: annotations_of(&s.metadata),
            hosts: Vec::new(),
            in_host: source.in_host,
        });
    }
    for i in source.ingresses.state() {
        let hosts = i
            .spec
            .as_ref()
            .and_then(|s| s.rules.as_ref())
            .map(|rules| rules.iter().filter_map(|r| r.host.clone()).collect())
            .unwrap_or_default();
        out.push(Template {
            kind: "Ingress",
            api_version: "networking.k8s.io/v1",
            namespace: i.namespace().unwrap_or_default(),
            name: i.name_any(),
            uid: i.uid(),
            annotations: annotations_of(&i.metadata),
            hosts,
            in_host: source.in_host,
        });
    }
    for f in source.federated_services.iter().flat_map(|s| s.state()) {
        // The annotation may sit on the FederatedService or on its template.
        let mut annotations = annotations_of(&f.metadata);
        if let Some(Value::Object(template)) = f.data.pointer("/spec/template/metadata/annotations") {
            for (k, v) in template {
                if let (true, Some(v)) = (k.starts_with("multiclusterdns.fedns.io/"), v.as_str()) {
                    annotations.entry(k.clone()).or_insert_with(|| v.to_owned());
                }
            }
        }
        out.push(Template {
            kind: "FederatedService",
            api_version: "types.kubefed.io/v1beta1",
            namespace: f.namespace().unwrap_or_default(),
            name: f.name_any(),
            uid: f.uid(),
            annotations,
            hosts: Vec::new(),
            in_host: source.in_host,
        });
    }
    out
}

/// Every member's ServiceExports whose Service is a LoadBalancer, as
/// templates, and whether every member's ServiceExports have been listed.
fn member_exports(registry: &crate::members::Registry) -> (Vec<Template>, bool) {
    let mut out = Vec::new();
    let mut listed = true;
    for member in registry.members() {
        let Some((exports, synced)) = &member.service_exports else {
            continue;
        };
        listed &= synced.load(std::sync::atomic::Ordering::Relaxed);
        for export in exports.state() {
            let namespace = export.namespace().unwrap_or_default();
            let name = export.name_any();
            let load_balancer = member
                .services
                .get(&namespace, &name)
                .is_some_and(|s| s.is_load_balancer_type);
            if !load_balancer {
                tracing::debug!(member = %member.name, "ServiceExport {namespace}/{name}: no LoadBalancer Service of that name; no record");
                continue;
            }
            out.push(Template {
                kind: "ServiceExport",
                api_version: "multicluster.x-k8s.io/v1alpha1",
                namespace,
                name,
                uid: None,
                annotations: annotations_of(&export.metadata),
                hosts: Vec::new(),
                in_host: false,
            });
        }
    }
    (out, listed)
}

fn existing_of(services: &Store<ServiceDNSRecord>, ingresses: &Store<IngressDNSRecord>) -> Vec<Existing> {
    let generated =
        |labels: &BTreeMap<String, String>| labels.get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY);
    let mut out: Vec<Existing> = services
        .state()
        .iter()
        .map(|r| Existing {
            kind: RecordKind::Service,
            namespace: r.namespace().unwrap_or_default(),
            name: r.name_any(),
            generated: generated(r.labels()),
            spec: serde_json::to_value(&r.spec).unwrap_or_default(),
            owners: r.owner_references().to_vec(),
            generated_from: r.annotations().get(GENERATED_FROM_ANNOTATION).cloned(),
        })
        .collect();
    out.extend(ingresses.state().iter().map(|r| Existing {
        kind: RecordKind::Ingress,
        namespace: r.namespace().unwrap_or_default(),
        name: r.name_any(),
        generated: generated(r.labels()),
        spec: serde_json::to_value(&r.spec).unwrap_or_default(),
        owners: r.owner_references().to_vec(),
        generated_from: r.annotations().get(GENERATED_FROM_ANNOTATION).cloned(),
    }));
    out
}

impl AutoRecords {
    /// Makes, changes and deletes generated records whenever a source,
    /// record or Domain changes (`changed`), and every `resync`.
    pub async fn run(self, changed: Arc<Notify>, resync: Duration) {
        // Nothing is deleted before every cache has listed once (stores
        // shared with other waiters: see `store_ready`).
        use fedns_providers::source::ready::store_ready;
        for source in &self.sources {
            store_ready(&source.services).await;
            store_ready(&source.ingresses).await;
            if let Some(f) = &source.federated_services {
                store_ready(f).await;
            }
        }
        store_ready(&self.services).await;
        store_ready(&self.ingresses).await;
        store_ready(&self.domains).await;
        tracing::info!("auto-records: caches ready");
        let mut reported: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        loop {
            if *self.leader.borrow() {
                self.pass(&mut reported).await;
            }
            let _ = tokio::time::timeout(resync, changed.notified()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn pass(&self, reported: &mut BTreeMap<String, BTreeSet<String>>) {
        let mut templates = Vec::new();
        let mut recorder_of: BTreeMap<String, (Recorder, ObjectReference)> = BTreeMap::new();
        for source in &self.sources {
            for t in templates_of(source) {
                recorder_of.insert(t.id(), (source.recorder.clone(), t.reference()));
                templates.push(t);
            }
        }
        let exports_listed = match &self.registry {
            Some(registry) => {
                let (exports, listed) = member_exports(registry);
                templates.extend(exports);
                listed
            }
            None => true,
        };
        let domains: BTreeSet<String> = self.domains.state().iter().map(|d| d.name_any()).collect();
        let (wanted, mut problems) = wanted(&templates, &domains, self.default_domain.as_deref());
        let existing = existing_of(&self.services, &self.ingresses);
        let mut actions = plan(&wanted, &existing);
        if !exports_listed {
            // A member's ServiceExports are not known yet: keep what they made.
            let from_exports: BTreeSet<(RecordKind, &str, &str)> = existing
                .iter()
                .filter(|e| {
                    e.generated_from
                        .as_deref()
                        .is_some_and(|g| g.starts_with("ServiceExport/"))
                })
                .map(|e| (e.kind, e.namespace.as_str(), e.name.as_str()))
                .collect();
            actions.retain(
                |a| !matches!(a, Action::Delete(k, ns, n) if from_exports.contains(&(*k, ns.as_str(), n.as_str()))),
            );
        }
        for action in actions {
            match action {
                Action::Create(w) => {
                    if let Err(e) = self.create(&w).await {
                        problems.push(Problem {
                            source: w.source.clone(),
                            reason: "RecordNotWritten",
                            message: format!("cannot create {} {}/{}: {e}", w.kind.kind(), w.namespace, w.name),
                        });
                    } else {
                        tracing::info!(source = %w.source, "auto-records: created {} {}/{}", w.kind.kind(), w.namespace, w.name);
                    }
                }
                Action::Update(w) => {
                    if let Err(e) = self.update(&w).await {
                        tracing::warn!(source = %w.source, error = %e, "auto-records: cannot update {} {}/{}", w.kind.kind(), w.namespace, w.name);
                    }
                }
                Action::Delete(kind, namespace, name) => {
                    let result = match kind {
                        RecordKind::Service => Api::<ServiceDNSRecord>::namespaced(self.host.clone(), &namespace)
                            .delete(&name, &DeleteParams::default())
                            .await
                            .map(|_| ()),
                        RecordKind::Ingress => Api::<IngressDNSRecord>::namespaced(self.host.clone(), &namespace)
                            .delete(&name, &DeleteParams::default())
                            .await
                            .map(|_| ()),
                    };
                    match result {
                        Ok(()) => {
                            tracing::info!("auto-records: deleted {} {namespace}/{name}: its source is gone", kind.kind());
                        }
                        Err(kube::Error::Api(status)) if status.code == 404 => {}
                        Err(e) => tracing::warn!(error = %e, "auto-records: cannot delete {} {namespace}/{name}", kind.kind()),
                    }
                }
                Action::Clash(w) => problems.push(Problem {
                    source: w.source.clone(),
                    reason: "RecordExists",
                    message: format!(
                        "{} {}/{} exists and was not made by fedns (no label {MANAGED_BY_LABEL}: {MANAGED_BY}); it is left as it is",
                        w.kind.kind(),
                        w.namespace,
                        w.name
                    ),
                }),
            }
        }
        // One Warning Event per new problem; forget solved ones.
        let mut now: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
        for p in problems {
            let fresh = !reported.get(&p.source).is_some_and(|s| s.contains(&p.message));
            if fresh {
                tracing::warn!(source = %p.source, reason = p.reason, "auto-records: {}", p.message);
                if let Some((recorder, object)) = recorder_of.get(&p.source) {
                    let event = Event {
                        type_: EventType::Warning,
                        reason: p.reason.into(),
                        note: Some(p.message.chars().take(1000).collect()),
                        action: "GenerateRecord".into(),
                        secondary: None,
                    };
                    if let Err(e) = recorder.publish(&event, object).await {
                        tracing::debug!(error = %e, "cannot record an Event");
                    }
                }
            }
            now.entry(p.source).or_default().insert(p.message);
        }
        *reported = now;
    }

    fn object(&self, w: &Wanted) -> Value {
        let mut metadata = json!({
            "name": w.name,
            "namespace": w.namespace,
            "labels": {MANAGED_BY_LABEL: MANAGED_BY},
            "annotations": {GENERATED_FROM_ANNOTATION: w.source},
        });
        if let Some(owner) = &w.owner {
            metadata["ownerReferences"] = json!([owner]);
        }
        json!({
            "apiVersion": ServiceDNSRecord::api_version(&()),
            "kind": w.kind.kind(),
            "metadata": metadata,
            "spec": w.spec,
        })
    }

    async fn create(&self, w: &Wanted) -> Result<(), kube::Error> {
        let object = self.object(w);
        match w.kind {
            RecordKind::Service => {
                let record: ServiceDNSRecord = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
                Api::<ServiceDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .create(&PostParams::default(), &record)
                    .await?;
            }
            RecordKind::Ingress => {
                let record: IngressDNSRecord = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
                Api::<IngressDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .create(&PostParams::default(), &record)
                    .await?;
            }
        }
        Ok(())
    }

    async fn update(&self, w: &Wanted) -> Result<(), kube::Error> {
        let mut patch = self.object(w);
        // Fields the source no longer asks for go back to their defaults.
        for key in ["recordTTL", "dnsPrefix"] {
            if patch["spec"].get(key).is_none() && w.kind == RecordKind::Service {
                patch["spec"][key] = Value::Null;
            }
        }
        let params = PatchParams::default();
        match w.kind {
            RecordKind::Service => {
                Api::<ServiceDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .patch(&w.name, &params, &Patch::Merge(&patch))
                    .await?;
            }
            RecordKind::Ingress => {
                Api::<IngressDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .patch(&w.name, &params, &Patch::Merge(&patch))
                    .await?;
            }
        }
        Ok(())
    }
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
            in_host: true,
        }
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
