//! What the first screen is computed from: the Domains, records (or the
//! records the templates make) and what each member serves, read from the
//! running emulators.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

use fedns_api::names;
use fedns_api::{DataPlaneCheck, Domain, IngressDNSRecordSpec, ServiceDNSRecordSpec};
use fedns_kube_emulator::Emulator;
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use crate::cli::sandbox::running::Running;
use crate::cli::sandbox::seed::NAMESPACE;
use crate::records::auto;

/// A ServiceDNSRecord (or the one `--auto-records` makes).
pub(super) struct ServiceRecord {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) spec: ServiceDNSRecordSpec,
}

/// An IngressDNSRecord (or the one `--auto-records` makes).
pub(super) struct IngressRecord {
    pub(super) namespace: String,
    pub(super) name: String,
    pub(super) spec: IngressDNSRecordSpec,
}

/// What the controller will see of one member.
#[derive(Default)]
pub(super) struct MemberView {
    pub(super) region: Option<String>,
    pub(super) zones: Vec<String>,
    /// Services (namespace, name) with a load balancer address, and
    /// whether they have a ready endpoint.
    pub(super) services: BTreeMap<(String, String), bool>,
    /// Ingresses (namespace, name) with a load balancer address, and the
    /// IPv4 addresses it has.
    pub(super) ingresses: BTreeMap<(String, String), Vec<Ipv4Addr>>,
    /// Every load balancer IP address.
    pub(super) addresses: BTreeSet<IpAddr>,
}

pub(super) fn items(emulator: &Emulator, group: &str, version: &str, plural: &str) -> Vec<Value> {
    let store = emulator.store();
    let Some(info) = store.resource(group, version, plural) else {
        return Vec::new();
    };
    store
        .list(&info, &Default::default(), None, None)
        .ok()
        .and_then(|list| list.get("items").and_then(Value::as_array).cloned())
        .unwrap_or_default()
}

pub(super) fn meta(item: &Value, field: &str) -> String {
    item.pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

pub(super) fn lb_ingress(item: &Value) -> Vec<Value> {
    item.pointer("/status/loadBalancer/ingress")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|i| {
            ["ip", "hostname"]
                .iter()
                .any(|k| i.get(k).and_then(Value::as_str).is_some_and(|v| !v.is_empty()))
        })
        .collect()
}

pub(super) fn member_view(emulator: &Emulator, region: Option<String>, zones: Vec<String>) -> MemberView {
    let nodes: Vec<Arc<Node>> = items(emulator, "", "v1", "nodes")
        .into_iter()
        .filter_map(|n| serde_json::from_value(n).ok().map(Arc::new))
        .collect();
    let (region, zones) = crate::members::effective_topology(&region, &zones, &nodes);
    let mut view = MemberView {
        region: region.filter(|r| names::validate_label(r).is_ok()),
        zones: zones.into_iter().filter(|z| names::validate_label(z).is_ok()).collect(),
        ..MemberView::default()
    };
    view.zones.sort();
    let mut ready: BTreeSet<(String, String)> = BTreeSet::new();
    for slice in items(emulator, "discovery.k8s.io", "v1", "endpointslices") {
        let Some(service) = slice
            .pointer("/metadata/labels/kubernetes.io~1service-name")
            .and_then(Value::as_str)
        else {
            continue;
        };
        // A missing `ready` condition means ready, per the API.
        let any_ready = slice
            .get("endpoints")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
            .any(|e| e.pointer("/conditions/ready").and_then(Value::as_bool).unwrap_or(true));
        if any_ready {
            ready.insert((meta(&slice, "namespace"), service.to_owned()));
        }
    }
    for service in items(emulator, "", "v1", "services") {
        let lb = lb_ingress(&service);
        view.addresses.extend(ips(&lb));
        if !lb.is_empty() {
            let key = (meta(&service, "namespace"), meta(&service, "name"));
            let has_ready = ready.contains(&key);
            view.services.insert(key, has_ready);
        }
    }
    for ingress in items(emulator, "networking.k8s.io", "v1", "ingresses") {
        let lb = lb_ingress(&ingress);
        let found = ips(&lb);
        view.addresses.extend(found.iter().copied());
        if !lb.is_empty() {
            let v4 = found
                .into_iter()
                .filter_map(|a| match a {
                    IpAddr::V4(v4) => Some(v4),
                    IpAddr::V6(_) => None,
                })
                .collect();
            view.ingresses
                .insert((meta(&ingress, "namespace"), meta(&ingress, "name")), v4);
        }
    }
    view
}

pub(super) fn ips(lb: &[Value]) -> Vec<IpAddr> {
    lb.iter()
        .filter_map(|i| i.get("ip").and_then(Value::as_str)?.parse().ok())
        .collect()
}

/// `list[index % len]`.
pub(super) fn pick(list: &[String], index: usize) -> Option<&String> {
    (!list.is_empty()).then(|| &list[index % list.len()])
}

pub(super) fn plural(n: i32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

pub(super) fn probe_line(service: &str, check: &DataPlaneCheck) -> String {
    let how = match check.protocol {
        fedns_api::ProbeProtocol::Tcp => "a TCP connect".to_owned(),
        fedns_api::ProbeProtocol::Http => format!("HTTP GET {}", check.path),
        fedns_api::ProbeProtocol::Https => format!("HTTPS GET {}", check.path),
    };
    format!(
        "  {service} probes them: {how} every {} s; {} take an address out, {} brings it back",
        check.period_seconds,
        plural(check.failure_threshold, "failure", "failures"),
        plural(check.success_threshold, "success", "successes"),
    )
}

impl Running {
    /// The Domains, records (or the records the templates make) and what
    /// each member serves, as the controller will see them.
    pub(super) fn records(&self) -> (Vec<Domain>, Vec<ServiceRecord>, Vec<IngressRecord>) {
        let host = &self.federation.host;
        let domains: Vec<Domain> = items(host, "multiclusterdns.fedns.io", "v1alpha1", "domains")
            .into_iter()
            .filter(|d| meta(d, "namespace") == NAMESPACE)
            .filter_map(|d| serde_json::from_value(d).ok())
            .collect();
        let mut services = Vec::new();
        let mut ingresses = Vec::new();
        if self.engine.is_some() {
            let mut templates = Vec::new();
            for (kind, group, api_version, plural) in [
                ("Service", "", "v1", "services"),
                ("Ingress", "networking.k8s.io", "networking.k8s.io/v1", "ingresses"),
            ] {
                let version = api_version.rsplit('/').next().unwrap_or(api_version);
                for item in items(host, group, version, plural) {
                    let annotations: BTreeMap<String, String> = item
                        .pointer("/metadata/annotations")
                        .and_then(|a| serde_json::from_value(a.clone()).ok())
                        .unwrap_or_default();
                    if !annotations.contains_key(auto::DOMAIN_ANNOTATION) {
                        continue;
                    }
                    let hosts = item
                        .pointer("/spec/rules")
                        .and_then(Value::as_array)
                        .into_iter()
                        .flatten()
                        .filter_map(|r| r.get("host").and_then(Value::as_str).map(str::to_owned))
                        .collect();
                    templates.push(auto::Template {
                        kind,
                        api_version,
                        namespace: meta(&item, "namespace"),
                        name: meta(&item, "name"),
                        uid: None,
                        annotations,
                        hosts,
                        route_kind: None,
                        in_host: true,
                    });
                }
            }
            let domain_names = domains.iter().filter_map(|d| d.metadata.name.clone()).collect();
            for wanted in auto::wanted(&templates, &domain_names, None).0 {
                match wanted.kind {
                    auto::RecordKind::Service => {
                        if let Ok(spec) = serde_json::from_value(wanted.spec) {
                            services.push(ServiceRecord {
                                namespace: wanted.namespace,
                                name: wanted.name,
                                spec,
                            });
                        }
                    }
                    auto::RecordKind::Ingress => {
                        if let Ok(spec) = serde_json::from_value(wanted.spec) {
                            ingresses.push(IngressRecord {
                                namespace: wanted.namespace,
                                name: wanted.name,
                                spec,
                            });
                        }
                    }
                    // The sandbox reads no route templates (its route
                    // record is written by hand, engine or not).
                    auto::RecordKind::Route => {}
                }
            }
        } else {
            for item in items(host, "multiclusterdns.fedns.io", "v1alpha1", "servicednsrecords") {
                if let Some(spec) = item.get("spec").and_then(|s| serde_json::from_value(s.clone()).ok()) {
                    services.push(ServiceRecord {
                        namespace: meta(&item, "namespace"),
                        name: meta(&item, "name"),
                        spec,
                    });
                }
            }
            for item in items(host, "multiclusterdns.fedns.io", "v1alpha1", "ingressdnsrecords") {
                if let Some(spec) = item.get("spec").and_then(|s| serde_json::from_value(s.clone()).ok()) {
                    ingresses.push(IngressRecord {
                        namespace: meta(&item, "namespace"),
                        name: meta(&item, "name"),
                        spec,
                    });
                }
            }
        }
        services.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        ingresses.sort_by(|a, b| (&a.namespace, &a.name).cmp(&(&b.namespace, &b.name)));
        (domains, services, ingresses)
    }

    pub(super) fn member_views(&self) -> BTreeMap<String, MemberView> {
        // A MemberCluster's spec may set region and zones over the Nodes'.
        let overrides: BTreeMap<String, (Option<String>, Vec<String>)> = if self.engine.is_none() {
            items(&self.federation.host, "core.fedns.io", "v1alpha1", "memberclusters")
                .into_iter()
                .filter_map(|m| serde_json::from_value::<fedns_api::MemberCluster>(m).ok())
                .map(|m| {
                    (
                        m.metadata.name.clone().unwrap_or_default(),
                        (m.spec.region, m.spec.zones),
                    )
                })
                .collect()
        } else {
            BTreeMap::new()
        };
        self.federation
            .members
            .iter()
            .map(|(name, emulator)| {
                let (region, zones) = overrides.get(name).cloned().unwrap_or_default();
                (name.clone(), member_view(emulator, region, zones))
            })
            .collect()
    }
}
