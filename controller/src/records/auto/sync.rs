//! The `--auto-records` loop ([`AutoRecords`]): reads the templates
//! ([`TemplateSource`], the members' ServiceExports and routes) and the
//! records, keeps of the members' templates those their MemberCluster
//! allows (`spec.autoRecords`), plans, writes, and reports problems as
//! Events (on templates outside the members) and refusals as log lines
//! and the MemberCluster condition `AutoRecordsRefused`.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use crate::events::Recorder;
use crate::members::gateway::GatewayApi;
use fedns_api::member_cluster::AutoRecordsAllowance;
use fedns_api::{Domain, IngressDNSRecord, MemberCluster, RouteDNSRecord, RouteKind, ServiceDNSRecord};
use k8s_openapi::api::core::v1::{ObjectReference, Service};
use k8s_openapi::api::networking::v1::Ingress;
use kube::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use kube::runtime::events::{Event, EventType};
use kube::runtime::reflector::{ObjectRef, Store};
use kube::{Client, Resource, ResourceExt};
use serde_json::{json, Value};
use tokio::sync::{watch, Notify};

use super::plan::{
    admit, plan, wanted, Action, Existing, FromMember, Problem, RecordKind, Refusal, Template, Wanted,
    GENERATED_FROM_ANNOTATION, MANAGED_BY, MANAGED_BY_LABEL, REFUSALS_LISTED,
};

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
    /// Route templates (each Gateway API route kind; kinds the cluster
    /// does not serve are empty).
    pub routes: Arc<GatewayApi>,
    /// kubefed's federated routes (`FederatedHTTPRoute`…), when kubefed is read.
    pub federated_routes: Option<Arc<GatewayApi>>,
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
    /// RouteDNSRecords.
    pub routes: Store<RouteDNSRecord>,
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
            route_kind: None,
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
            route_kind: None,
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
            route_kind: None,
            in_host: source.in_host,
        });
    }
    out.extend(route_templates(&source.routes, false, source.in_host));
    if let Some(federated) = &source.federated_routes {
        out.extend(route_templates(federated, true, source.in_host));
    }
    out
}

/// How soon a pass follows one whose condition write met a newer
/// MemberCluster.
const AGAIN_SOON: Duration = Duration::from_secs(1);

/// What the loop has reported so far, to report each thing once.
#[derive(Default)]
struct Reported {
    /// Problems by source id: their messages.
    problems: BTreeMap<String, BTreeSet<String>>,
    /// Members' templates refused.
    refusals: BTreeSet<Refusal>,
    /// The last failure to write a member's condition, by member.
    condition_errors: BTreeMap<String, String>,
    /// A condition was not written because the MemberCluster changed
    /// meanwhile: pass again soon, with the newer copy.
    again_soon: bool,
}

/// The MemberClusters of `namespace` (the allowances: `spec.autoRecords`),
/// waking `changed` whenever an allowance changes (not on status writes).
fn follow_allowances(api: Api<MemberCluster>, changed: Arc<Notify>) -> Store<MemberCluster> {
    use futures::StreamExt;
    use kube::runtime::{reflector, watcher, WatchStreamExt};
    let (store, writer) = reflector::store();
    let reader = store.clone();
    tokio::spawn(async move {
        let mut seen: BTreeMap<String, Option<AutoRecordsAllowance>> = BTreeMap::new();
        let mut last_error: Option<String> = None;
        let events = reflector::reflector(writer, watcher(api, watcher::Config::default()).default_backoff());
        let mut events = std::pin::pin!(events);
        while let Some(event) = events.next().await {
            match event {
                Ok(_) => {
                    last_error = None;
                    let now: BTreeMap<String, Option<AutoRecordsAllowance>> = reader
                        .state()
                        .iter()
                        .map(|c| (c.name_any(), c.spec.auto_records.clone()))
                        .collect();
                    if now != seen {
                        seen = now;
                        changed.notify_one();
                    }
                }
                Err(e) => {
                    let e = e.to_string();
                    if last_error.as_ref() != Some(&e) {
                        tracing::warn!(error = %e, "auto-records: watching MemberClusters (spec.autoRecords); retrying");
                    }
                    last_error = Some(e);
                }
            }
        }
    });
    store
}

/// The routes in `caches` carrying a fedns annotation, as templates
/// (`federated`: kubefed's `Federated<Kind>` objects).
/// A route's `hosts` are its `spec.hostnames`.
fn route_templates(caches: &GatewayApi, federated: bool, in_host: bool) -> Vec<Template> {
    let mut out = Vec::new();
    for route_kind in RouteKind::ALL {
        let cache = caches.routes(route_kind);
        for (namespace, name) in cache.matching(|f| !f.fedns_annotations.is_empty()) {
            let Some(facts) = cache.get(&namespace, &name) else {
                continue;
            };
            let (kind, api_version) = if federated {
                (federated_kind(route_kind), "types.kubefed.io/v1beta1")
            } else {
                (route_kind.as_str(), "gateway.networking.k8s.io/v1")
            };
            out.push(Template {
                kind,
                api_version,
                namespace,
                name,
                uid: facts.uid.as_deref().map(str::to_owned),
                annotations: facts
                    .fedns_annotations
                    .iter()
                    .map(|(k, v)| (k.to_string(), v.to_string()))
                    .collect(),
                hosts: facts.hostnames.iter().map(|h| h.to_string()).collect(),
                route_kind: Some(route_kind),
                in_host,
            });
        }
    }
    // The caches are maps: a stable order, so the first source is stable.
    out.sort_by(|a, b| (a.kind, &a.namespace, &a.name).cmp(&(b.kind, &b.namespace, &b.name)));
    out
}

/// kubefed's name of the federated type of `kind` (`kubefedctl enable`).
fn federated_kind(kind: RouteKind) -> &'static str {
    match kind {
        RouteKind::HTTPRoute => "FederatedHTTPRoute",
        RouteKind::GRPCRoute => "FederatedGRPCRoute",
        RouteKind::TLSRoute => "FederatedTLSRoute",
        RouteKind::TCPRoute => "FederatedTCPRoute",
        RouteKind::UDPRoute => "FederatedUDPRoute",
    }
}

/// Every member's annotated routes as templates (for fleets where plain
/// kubectl or Argo CD writes the routes into each member, with no template
/// anywhere else), and whether every member's routes have been listed.
fn member_routes(registry: &crate::members::Registry) -> (Vec<FromMember>, bool) {
    let mut out = Vec::new();
    let mut listed = true;
    for member in registry.members() {
        listed &= member.gateway_api.routes_listed();
        out.extend(
            route_templates(&member.gateway_api, false, false)
                .into_iter()
                .map(|template| FromMember {
                    member: member.name.clone(),
                    template,
                }),
        );
    }
    (out, listed)
}

/// Every member's ServiceExports whose Service is a LoadBalancer, as
/// templates, and whether every member's ServiceExports have been listed.
fn member_exports(registry: &crate::members::Registry) -> (Vec<FromMember>, bool) {
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
            out.push(FromMember {
                member: member.name.clone(),
                template: Template {
                    kind: "ServiceExport",
                    api_version: "multicluster.x-k8s.io/v1alpha1",
                    namespace,
                    name,
                    uid: None,
                    annotations: annotations_of(&export.metadata),
                    hosts: Vec::new(),
                    route_kind: None,
                    in_host: false,
                },
            });
        }
    }
    (out, listed)
}

fn existing_of(
    services: &Store<ServiceDNSRecord>,
    ingresses: &Store<IngressDNSRecord>,
    routes: &Store<RouteDNSRecord>,
) -> Vec<Existing> {
    let mut out = existing(RecordKind::Service, services, |r| serde_json::to_value(&r.spec));
    out.extend(existing(RecordKind::Ingress, ingresses, |r| {
        serde_json::to_value(&r.spec)
    }));
    out.extend(existing(RecordKind::Route, routes, |r| serde_json::to_value(&r.spec)));
    out
}

/// The records of one kind, as the plan sees them.
fn existing<K>(kind: RecordKind, records: &Store<K>, spec: impl Fn(&K) -> serde_json::Result<Value>) -> Vec<Existing>
where
    K: Resource + Clone + 'static,
    K::DynamicType: std::hash::Hash + Eq + Clone,
{
    records
        .state()
        .iter()
        .map(|r| Existing {
            kind,
            namespace: r.namespace().unwrap_or_default(),
            name: r.name_any(),
            generated: r.labels().get(MANAGED_BY_LABEL).map(String::as_str) == Some(MANAGED_BY),
            spec: spec(r).unwrap_or_default(),
            owners: r.owner_references().to_vec(),
            generated_from: r.annotations().get(GENERATED_FROM_ANNOTATION).cloned(),
        })
        .collect()
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
        for source in &self.sources {
            let route_caches = std::iter::once(&source.routes).chain(source.federated_routes.as_ref());
            for caches in route_caches {
                while !caches.routes_listed() {
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            }
        }
        store_ready(&self.services).await;
        store_ready(&self.ingresses).await;
        store_ready(&self.routes).await;
        store_ready(&self.domains).await;
        // The members' allowances (MemberCluster spec.autoRecords).
        let allowances = self.registry.as_ref().map(|registry| {
            follow_allowances(
                Api::namespaced(self.host.clone(), registry.member_cluster_namespace()),
                changed.clone(),
            )
        });
        if let Some(allowances) = &allowances {
            store_ready(allowances).await;
        }
        tracing::info!("auto-records: caches ready");
        let mut reported = Reported::default();
        loop {
            if *self.leader.borrow() {
                self.pass(&mut reported, allowances.as_ref()).await;
            }
            let wait = if reported.again_soon {
                AGAIN_SOON.min(resync)
            } else {
                resync
            };
            let _ = tokio::time::timeout(wait, changed.notified()).await;
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    async fn pass(&self, reported: &mut Reported, allowances: Option<&Store<MemberCluster>>) {
        let mut templates = Vec::new();
        let mut recorder_of: BTreeMap<String, (Recorder, ObjectReference)> = BTreeMap::new();
        for source in &self.sources {
            for t in templates_of(source) {
                recorder_of.insert(t.id(), (source.recorder.clone(), t.reference()));
                templates.push(t);
            }
        }
        let zones: BTreeMap<String, String> = self
            .domains
            .state()
            .iter()
            .map(|d| (d.name_any(), d.spec.domain.clone()))
            .collect();
        let (exports_listed, member_routes_listed) = match &self.registry {
            Some(registry) => {
                let (mut from_members, exports_listed) = member_exports(registry);
                let (routes, routes_listed) = member_routes(registry);
                from_members.extend(routes);
                let refusals = self.admit_member_templates(registry, allowances, from_members, &zones, &mut templates);
                self.report_refusals(registry, allowances, refusals, reported).await;
                (exports_listed, routes_listed)
            }
            None => (true, true),
        };
        let domains: BTreeSet<String> = zones.keys().cloned().collect();
        let (wanted, mut problems) = wanted(&templates, &domains, self.default_domain.as_deref());
        let existing = existing_of(&self.services, &self.ingresses, &self.routes);
        let mut actions = plan(&wanted, &existing);
        if !exports_listed || !member_routes_listed {
            // A member's ServiceExports or routes are not known yet: keep
            // what they (may have) made.
            let from_exports: BTreeSet<(RecordKind, &str, &str)> = existing
                .iter()
                .filter(|e| {
                    (!exports_listed
                        && e.generated_from
                            .as_deref()
                            .is_some_and(|g| g.starts_with("ServiceExport/")))
                        || (!member_routes_listed && e.kind == RecordKind::Route)
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
                        RecordKind::Route => Api::<RouteDNSRecord>::namespaced(self.host.clone(), &namespace)
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
            let fresh = !reported.problems.get(&p.source).is_some_and(|s| s.contains(&p.message));
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
        reported.problems = now;
    }

    /// Adds to `templates` the members' templates their members allow
    /// (after the host's and the control planes', so those win a name);
    /// returns the others.
    fn admit_member_templates(
        &self,
        registry: &crate::members::Registry,
        allowances: Option<&Store<MemberCluster>>,
        from_members: Vec<FromMember>,
        zones: &BTreeMap<String, String>,
        templates: &mut Vec<Template>,
    ) -> Vec<Refusal> {
        let members = registry.members();
        let engine: BTreeMap<String, Option<AutoRecordsAllowance>> = registry
            .engine_members()
            .into_iter()
            .map(|c| (c.name_any(), c.spec.auto_records))
            .collect();
        let namespace = registry.member_cluster_namespace();
        let allowed: BTreeMap<String, Option<AutoRecordsAllowance>> = members
            .iter()
            .map(|m| {
                let own = allowances
                    .and_then(|a| a.get(&ObjectRef::new(&m.name).within(namespace)))
                    .and_then(|c| c.spec.auto_records.clone());
                (m.name.clone(), own.or_else(|| engine.get(&m.name).cloned().flatten()))
            })
            .collect();
        let copies = |kind: RouteKind, namespace: &str, name: &str| -> Vec<(String, Vec<String>)> {
            members
                .iter()
                .filter_map(|m| {
                    let route = m.gateway_api.routes(kind).get(namespace, name)?;
                    Some((m.name.clone(), route.hostnames.iter().map(|h| h.to_string()).collect()))
                })
                .collect()
        };
        // The records the host's and the control planes' templates make.
        let domains: BTreeSet<String> = zones.keys().cloned().collect();
        let made_by_host: BTreeSet<(RecordKind, String, String)> =
            wanted(templates, &domains, self.default_domain.as_deref())
                .0
                .into_iter()
                .map(|w| (w.kind, w.namespace, w.name))
                .collect();
        let (admitted, refusals) = admit(
            from_members,
            &made_by_host,
            &allowed,
            zones,
            self.default_domain.as_deref(),
            &copies,
        );
        templates.extend(admitted);
        refusals
    }

    /// Logs each new refusal (a Warning line), and sets every member's
    /// condition `AutoRecordsRefused` (nothing is written into a member).
    async fn report_refusals(
        &self,
        registry: &crate::members::Registry,
        allowances: Option<&Store<MemberCluster>>,
        refusals: Vec<Refusal>,
        reported: &mut Reported,
    ) {
        let mut by_member: BTreeMap<String, Vec<&Refusal>> = registry
            .members()
            .iter()
            .map(|m| (m.name.clone(), Vec::new()))
            .collect();
        for r in &refusals {
            if !reported.refusals.contains(r) {
                tracing::warn!(
                    member = %r.member,
                    kind = r.kind,
                    namespace = %r.namespace,
                    name = %r.name,
                    reason = %r.reason,
                    "auto-records: a member's {} {}/{} makes no record: {}",
                    r.kind,
                    r.namespace,
                    r.name,
                    r.reason
                );
            }
            by_member.entry(r.member.clone()).or_default().push(r);
        }
        let namespace = registry.member_cluster_namespace();
        reported.again_soon = false;
        for (member, refused) in by_member {
            let listed: Vec<String> = refused.iter().take(REFUSALS_LISTED).map(|r| r.to_string()).collect();
            let cached = allowances.and_then(|a| a.get(&ObjectRef::new(&member).within(namespace)));
            match registry
                .set_auto_records_refused(&member, cached.as_deref(), refused.len(), &listed)
                .await
            {
                Ok(written) => {
                    reported.again_soon |= !written;
                    reported.condition_errors.remove(&member);
                }
                Err(e) => {
                    if reported.condition_errors.get(&member) != Some(&e) {
                        tracing::warn!(member = %member, error = %e, "auto-records: cannot write the MemberCluster's condition; trying again on the next pass");
                    }
                    reported.condition_errors.insert(member, e);
                }
            }
        }
        reported.refusals = refusals.into_iter().collect();
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
            RecordKind::Route => {
                let record: RouteDNSRecord = serde_json::from_value(object).map_err(kube::Error::SerdeError)?;
                Api::<RouteDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .create(&PostParams::default(), &record)
                    .await?;
            }
        }
        Ok(())
    }

    async fn update(&self, w: &Wanted) -> Result<(), kube::Error> {
        let mut patch = self.object(w);
        // Fields the source no longer asks for go back to their defaults.
        let resettable: &[&str] = match w.kind {
            RecordKind::Service => &["recordTTL", "dnsPrefix"],
            RecordKind::Ingress => &[],
            RecordKind::Route => &["recordTTL", "hosts"],
        };
        for key in resettable {
            if patch["spec"].get(*key).is_none() {
                patch["spec"][*key] = Value::Null;
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
            RecordKind::Route => {
                Api::<RouteDNSRecord>::namespaced(self.host.clone(), &w.namespace)
                    .patch(&w.name, &params, &Patch::Merge(&patch))
                    .await?;
            }
        }
        Ok(())
    }
}
