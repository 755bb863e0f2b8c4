//! The sandbox's first screen, as a value: what it started and what to try,
//! computed from the federation it runs (its members and their topology,
//! the Domains and records in the host, or the templates `--auto-records`
//! makes them from), never from the built-in example's names, so every
//! hint works whatever was seeded.
//!
//! Members are picked in seed order so that the hints touch different
//! clusters where there are enough: `cordon` the first member serving the
//! Service, `fail` (and the region and zone names, and `break-lb`) the
//! second, the client subnet and the live change the third (wrapping around
//! when there are fewer; the live change never on the cordoned member when
//! there is another, or it would not show).

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use fedns_api::names;
use fedns_api::{DataPlaneCheck, Domain, IngressDNSRecordSpec, RoutingPolicy, ServiceDNSRecordSpec};
use fedns_sandbox::Emulator;
use k8s_openapi::api::core::v1::Node;
use serde_json::Value;

use super::running::Running;
use super::seed::{KARMADA_PULL_MEMBER, NAMESPACE};
use crate::federation::Engine;
use crate::records::auto;

/// The first screen, line by line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Screen {
    /// In print order.
    pub lines: Vec<Line>,
}

/// One line of the first screen.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Line {
    /// Printed as is.
    Text {
        /// The line.
        text: String,
        /// The files it names (they exist).
        files: Vec<PathBuf>,
    },
    /// A command to try, indented, with a note after it.
    Try {
        /// The command.
        command: Try,
        /// Printed in parentheses after the command.
        note: Option<String>,
    },
}

/// A command the first screen offers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Try {
    /// `dig @IP -p PORT [+subnet=CIDR] NAME`.
    Dig {
        /// The sandbox's DNS address.
        server: SocketAddr,
        /// A name the sandbox publishes.
        name: String,
        /// An EDNS Client Subnet in a Domain's client table.
        subnet: Option<String>,
        /// With `subnet`: the region the table maps it to.
        region: Option<String>,
    },
    /// `fedns sandbox ACTION CLUSTER --state-dir DIR`.
    Sandbox {
        /// `fail`, `recover`, `cordon`, `break-lb`, `fix-lb`, ...
        action: String,
        /// A member.
        cluster: String,
        /// The running sandbox's state dir.
        state_dir: PathBuf,
    },
    /// `kubectl --kubeconfig PATH ARGS...`.
    Kubectl {
        /// A kubeconfig the sandbox wrote.
        kubeconfig: PathBuf,
        /// The rest of the command line (unquoted).
        args: Vec<String>,
        /// Continue the line (` \` and a newline) before this argument.
        wrap_before: Option<usize>,
    },
}

impl Try {
    /// The program and its arguments, as a shell passes them.
    pub fn argv(&self) -> Vec<String> {
        match self {
            Try::Dig {
                server, name, subnet, ..
            } => {
                let mut argv = vec![
                    "dig".to_owned(),
                    format!("@{}", server.ip()),
                    "-p".to_owned(),
                    server.port().to_string(),
                ];
                argv.extend(subnet.iter().map(|s| format!("+subnet={s}")));
                argv.push(name.clone());
                argv
            }
            Try::Sandbox {
                action,
                cluster,
                state_dir,
            } => vec![
                "fedns".to_owned(),
                "sandbox".to_owned(),
                action.clone(),
                cluster.clone(),
                "--state-dir".to_owned(),
                state_dir.display().to_string(),
            ],
            Try::Kubectl { kubeconfig, args, .. } => {
                let mut argv = vec![
                    "kubectl".to_owned(),
                    "--kubeconfig".to_owned(),
                    kubeconfig.display().to_string(),
                ];
                argv.extend(args.iter().cloned());
                argv
            }
        }
    }

    /// The files the command names.
    pub fn files(&self) -> Vec<PathBuf> {
        match self {
            Try::Kubectl { kubeconfig, .. } => vec![kubeconfig.clone()],
            _ => Vec::new(),
        }
    }
}

impl fmt::Display for Try {
    /// The command line, quoted for a POSIX shell.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let argv = self.argv();
        // Where the arguments after `kubectl --kubeconfig PATH` start.
        let wrap = match self {
            Try::Kubectl {
                wrap_before: Some(i), ..
            } => Some(i + 3),
            _ => None,
        };
        for (i, arg) in argv.iter().enumerate() {
            if i > 0 {
                f.write_str(if Some(i) == wrap { " \\\n      " } else { " " })?;
            }
            f.write_str(&quote(arg))?;
        }
        Ok(())
    }
}

/// `arg` as a POSIX shell reads it back: as is when plain, else in single quotes.
fn quote(arg: &str) -> String {
    let plain = !arg.is_empty()
        && arg
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "@%+=:,./_-".contains(c));
    if plain {
        arg.to_owned()
    } else {
        format!("'{}'", arg.replace('\'', r"'\''"))
    }
}

impl Screen {
    /// Every command offered, in print order.
    pub fn tries(&self) -> impl Iterator<Item = &Try> {
        self.lines.iter().filter_map(|line| match line {
            Line::Try { command, .. } => Some(command),
            Line::Text { .. } => None,
        })
    }

    /// Every file named.
    pub fn files(&self) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = Vec::new();
        for line in &self.lines {
            let named = match line {
                Line::Text { files, .. } => files.clone(),
                Line::Try { command, .. } => command.files(),
            };
            for file in named {
                if !files.contains(&file) {
                    files.push(file);
                }
            }
        }
        files
    }

    fn text(&mut self, text: impl Into<String>) {
        self.lines.push(Line::Text {
            text: text.into(),
            files: Vec::new(),
        });
    }

    fn text_naming(&mut self, text: impl Into<String>, files: Vec<PathBuf>) {
        self.lines.push(Line::Text {
            text: text.into(),
            files,
        });
    }

    fn try_(&mut self, command: Try, note: Option<String>) {
        self.lines.push(Line::Try { command, note });
    }
}

impl fmt::Display for Screen {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for line in &self.lines {
            match line {
                Line::Text { text, .. } => writeln!(f, "{text}")?,
                Line::Try { command, note: None } => writeln!(f, "  {command}")?,
                Line::Try {
                    command,
                    note: Some(note),
                } => writeln!(f, "  {command}   ({note})")?,
            }
        }
        Ok(())
    }
}

/// A ServiceDNSRecord (or the one `--auto-records` makes).
struct ServiceRecord {
    namespace: String,
    name: String,
    spec: ServiceDNSRecordSpec,
}

/// An IngressDNSRecord (or the one `--auto-records` makes).
struct IngressRecord {
    namespace: String,
    name: String,
    spec: IngressDNSRecordSpec,
}

/// What the controller will see of one member.
#[derive(Default)]
struct MemberView {
    region: Option<String>,
    zones: Vec<String>,
    /// Services (namespace, name) with a load balancer address, and
    /// whether they have a ready endpoint.
    services: BTreeMap<(String, String), bool>,
    /// Ingresses (namespace, name) with a load balancer address, and the
    /// IPv4 addresses it has.
    ingresses: BTreeMap<(String, String), Vec<Ipv4Addr>>,
    /// Every load balancer IP address.
    addresses: BTreeSet<IpAddr>,
}

fn items(emulator: &Emulator, group: &str, version: &str, plural: &str) -> Vec<Value> {
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

fn meta(item: &Value, field: &str) -> String {
    item.pointer(&format!("/metadata/{field}"))
        .and_then(Value::as_str)
        .unwrap_or_default()
        .to_owned()
}

fn lb_ingress(item: &Value) -> Vec<Value> {
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

fn member_view(emulator: &Emulator, region: Option<String>, zones: Vec<String>) -> MemberView {
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

fn ips(lb: &[Value]) -> Vec<IpAddr> {
    lb.iter()
        .filter_map(|i| i.get("ip").and_then(Value::as_str)?.parse().ok())
        .collect()
}

/// `list[index % len]`.
fn pick(list: &[String], index: usize) -> Option<&String> {
    (!list.is_empty()).then(|| &list[index % list.len()])
}

fn plural(n: i32, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

fn probe_line(service: &str, check: &DataPlaneCheck) -> String {
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
    fn records(&self) -> (Vec<Domain>, Vec<ServiceRecord>, Vec<IngressRecord>) {
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

    fn member_views(&self) -> BTreeMap<String, MemberView> {
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

    /// The first screen of this sandbox.
    pub fn screen(&self) -> Screen {
        let dir = &self.federation.state_dir;
        let kubeconfig = |cluster: &str| dir.join(format!("{cluster}.kubeconfig"));
        let (domains, services, ingresses) = self.records();
        let views = self.member_views();
        let zone_of = |domain: &Domain| names::normalize_hostname(&domain.spec.domain).ok();
        let mut screen = Screen { lines: Vec::new() };

        // What runs.
        screen.text(format!(
            "fedns sandbox: a host and {} member clusters on loopback",
            self.federation.members.len()
        ));
        for (name, member) in &self.federation.members {
            let path = kubeconfig(name);
            screen.text_naming(
                format!("  {name:<10} {}   kubeconfig {}", member.url(), path.display()),
                vec![path],
            );
        }
        let host_kubeconfig = kubeconfig("host");
        screen.text_naming(
            format!(
                "  host       {}   kubeconfig {}",
                self.federation.host.url(),
                host_kubeconfig.display()
            ),
            vec![host_kubeconfig.clone()],
        );
        if !self.skipped.is_empty() {
            screen.text("Not replayed (kinds the emulators do not serve):");
            for skipped in &self.skipped {
                screen.text(format!("  {skipped}"));
            }
        }

        // The Service to show: the first record whose Domain exists and
        // that some member serves; its members in seed order.
        let in_order = |wanted: &dyn Fn(&MemberView) -> bool| -> Vec<String> {
            self.order
                .iter()
                .filter(|m| views.get(*m).is_some_and(wanted))
                .cloned()
                .collect()
        };
        let service = services.iter().find_map(|record| {
            let domain = domains
                .iter()
                .find(|d| d.metadata.name.as_deref() == Some(record.spec.domain_ref.as_str()))?;
            let zone = zone_of(domain)?;
            let key = (record.namespace.clone(), record.name.clone());
            let serving = in_order(&|view: &MemberView| {
                view.services
                    .get(&key)
                    .is_some_and(|ready| *ready || record.spec.allow_service_without_endpoints)
            });
            (!serving.is_empty()).then_some((record, domain, zone, serving))
        });
        // The Ingress host to show: the first record with a host under a
        // Domain that some member serves.
        let ingress = ingresses.iter().find_map(|record| {
            let host = record.spec.hosts.iter().find_map(|h| {
                let h = names::normalize_hostname(h).ok()?;
                domains
                    .iter()
                    .filter_map(zone_of)
                    .any(|zone| names::is_subdomain(&h, &zone))
                    .then_some(h)
            })?;
            let key = (record.namespace.clone(), record.name.clone());
            let serving = in_order(&|view: &MemberView| view.ingresses.contains_key(&key));
            (!serving.is_empty()).then_some((record, host, serving))
        });
        let serving: Vec<String> = match (&service, &ingress) {
            (Some((_, _, _, serving)), _) | (None, Some((_, _, serving))) => serving.clone(),
            (None, None) => self.order.clone(),
        };
        let with_region: Vec<String> = serving
            .iter()
            .filter(|m| views.get(*m).is_some_and(|v| v.region.is_some()))
            .cloned()
            .collect();
        let focus = pick(if with_region.is_empty() { &serving } else { &with_region }, 1).cloned();
        // --engine: the members are the engine's clusters, never cordoned by fedns.
        let cordon = pick(&serving, 0).filter(|_| self.engine.is_none()).cloned();
        let service_name = service.as_ref().map(|(record, ..)| record.name.clone());
        let health_check = service
            .as_ref()
            .and_then(|(record, ..)| record.spec.health_check.clone());

        // The engine's view.
        if let Some(engine) = self.engine {
            let through_proxy = |how: &str| {
                self.federation
                    .members
                    .contains_key(KARMADA_PULL_MEMBER)
                    .then(|| format!(" ({KARMADA_PULL_MEMBER} {how})"))
            };
            // What lists the engine's clusters: the resource, its namespace
            // (`-A`: all), a label selector.
            let (kind, namespace, selector, pull) = match engine {
                Engine::Karmada => ("clusters.cluster.karmada.io", None, None, through_proxy("in pull mode")),
                Engine::Kubefed => (
                    "kubefedclusters.core.kubefed.io",
                    Some(crate::federation::KUBEFED_NAMESPACE),
                    None,
                    None,
                ),
                Engine::Clusternet => (
                    "managedclusters.clusters.clusternet.io",
                    Some("-A"),
                    None,
                    through_proxy("through the hub's socket proxy"),
                ),
                Engine::Capi => (
                    "clusters.cluster.x-k8s.io",
                    Some(crate::federation::CAPI_NAMESPACE),
                    None,
                    None,
                ),
                Engine::Argocd => (
                    "secrets",
                    Some(crate::federation::ARGOCD_NAMESPACE),
                    Some("argocd.argoproj.io/secret-type=cluster"),
                    None,
                ),
                Engine::Clusterprofile => (
                    "clusterprofiles.multicluster.x-k8s.io",
                    Some(crate::federation::CLUSTERPROFILE_NAMESPACE),
                    None,
                    None,
                ),
            };
            // Propagation engines have a control plane; the others keep an inventory.
            let role = match engine {
                Engine::Karmada | Engine::Kubefed | Engine::Clusternet => "control plane",
                Engine::Capi | Engine::Argocd | Engine::Clusterprofile => "cluster inventory",
            };
            screen.text(format!(
                "The host stands in for {}'s {role}; its clusters{}:",
                engine.as_str(),
                pull.unwrap_or_default()
            ));
            let mut args: Vec<String> = match namespace {
                Some(n) if n != "-A" => vec!["-n".to_owned(), n.to_owned()],
                _ => Vec::new(),
            };
            args.extend(["get".to_owned(), kind.to_owned()]);
            // kubectl takes `-A` only after the verb.
            if namespace == Some("-A") {
                args.push("-A".to_owned());
            }
            if let Some(selector) = selector {
                args.extend(["-l".to_owned(), selector.to_owned()]);
            }
            screen.try_(
                Try::Kubectl {
                    kubeconfig: host_kubeconfig.clone(),
                    args,
                    wrap_before: None,
                },
                None,
            );
            let records_namespace = service
                .as_ref()
                .map(|(record, ..)| record.namespace.clone())
                .or_else(|| ingress.as_ref().map(|(record, ..)| record.namespace.clone()));
            if let Some(namespace) = records_namespace {
                screen.text("Records made from annotated templates (--auto-records):");
                screen.try_(
                    Try::Kubectl {
                        kubeconfig: host_kubeconfig.clone(),
                        args: [
                            "-n",
                            &namespace,
                            "get",
                            "servicednsrecords,ingressdnsrecords",
                            "-l",
                            &format!("{}={}", auto::MANAGED_BY_LABEL, auto::MANAGED_BY),
                        ]
                        .map(str::to_owned)
                        .to_vec(),
                        wrap_before: None,
                    },
                    None,
                );
            }
        }

        // The load balancers, where probes run.
        if self.probed && !self.load_balancers.is_empty() {
            let list: Vec<String> = self
                .load_balancers
                .iter()
                .map(|(name, address)| format!("{name} {address}"))
                .collect();
            screen.text(format!("Load balancers (HTTP responders): {}", list.join(", ")));
            if let (Some(name), Some(check)) = (&service_name, &health_check) {
                screen.text(probe_line(name, check));
            }
        }

        // Names.
        let mut digs: Vec<(Try, Option<String>)> = Vec::new();
        let dig = |name: String, subnet: Option<(String, String)>| {
            let note = subnet.as_ref().map(|(_, region)| format!("Nearest: {region}"));
            let (subnet, region) = subnet.unzip();
            (
                Try::Dig {
                    server: self.dns_addr,
                    name,
                    subnet,
                    region,
                },
                note,
            )
        };
        if let Some((record, domain, zone, serving)) = &service {
            let label = record.spec.external_name.clone().unwrap_or_else(|| record.name.clone());
            let federation = domain.metadata.name.clone().unwrap_or_default();
            let prefix = format!("{label}.{}.{federation}.svc", record.namespace).to_ascii_lowercase();
            let global = format!("{prefix}.{zone}");
            digs.push(dig(global.clone(), None));
            // A client subnet from the Domain's table, for a Nearest record.
            let nearest = record
                .spec
                .routing
                .as_ref()
                .is_some_and(|r| r.policy == RoutingPolicy::Nearest);
            if nearest && !domain.spec.client_regions.is_empty() {
                let subnet = (0..serving.len()).find_map(|k| {
                    let member = pick(serving, 2 + k)?;
                    let region = views.get(member)?.region.as_deref()?;
                    let rows: Vec<&fedns_api::ClientRegion> = domain
                        .spec
                        .client_regions
                        .iter()
                        .filter(|row| row.region == region)
                        .collect();
                    let row = rows.iter().find(|row| !row.cidr.contains(':')).or(rows.first())?;
                    Some((row.cidr.clone(), region.to_owned()))
                });
                if let Some(subnet) = subnet {
                    digs.push(dig(global.clone(), Some(subnet)));
                }
            }
            if let Some(view) = focus.as_ref().and_then(|f| views.get(f)) {
                if let Some(region) = &view.region {
                    digs.push(dig(format!("{prefix}.{region}.{zone}"), None));
                    if let Some(first) = view.zones.first() {
                        digs.push(dig(format!("{prefix}.{first}.{region}.{zone}"), None));
                    }
                }
            }
        }
        if let Some((_, host, _)) = &ingress {
            digs.push(dig(host.clone(), None));
        }
        if !digs.is_empty() {
            let (ip, port) = (self.dns_addr.ip(), self.dns_addr.port());
            screen.text(format!("DNS on {ip} port {port} (UDP and TCP). Try:"));
            for (command, note) in digs {
                screen.try_(command, note);
            }
        }

        // Discovery inside a member: its replica answers what the member's
        // cluster DNS forwards.
        if let Some((record, domain, _, serving)) = &service {
            let replica = serving
                .iter()
                .find_map(|m| self.discovery.iter().find(|r| &r.member == m));
            if let Some(replica) = replica {
                let label = record.spec.external_name.clone().unwrap_or_else(|| record.name.clone());
                let federation = domain.metadata.name.clone().unwrap_or_default();
                let short = format!("{label}.{}.{federation}", record.namespace).to_ascii_lowercase();
                let file = dir.join(format!("{}.dns", replica.member));
                screen.text_naming(
                    format!(
                        "Inside {}: its cluster DNS would forward {federation}.svc.{} to {} (address in {}):",
                        replica.member,
                        super::discovery::CLUSTER_DOMAIN,
                        replica.addr,
                        file.display()
                    ),
                    vec![file],
                );
                screen.try_(
                    Try::Dig {
                        server: replica.addr,
                        name: format!("{short}.svc.{}", super::discovery::CLUSTER_DOMAIN),
                        subnet: None,
                        region: None,
                    },
                    Some(format!("a pod's {short}: the local Service")),
                );
            }
        }

        // Failures.
        let control = |action: &str, cluster: &str| Try::Sandbox {
            action: action.to_owned(),
            cluster: cluster.to_owned(),
            state_dir: dir.clone(),
        };
        let (focus, probed_focus) = match &focus {
            Some(f) => (
                f.clone(),
                self.probed && health_check.is_some() && self.load_balancers.contains_key(f),
            ),
            None => (String::new(), false),
        };
        if !focus.is_empty() {
            screen.text(match (&service_name, probed_focus) {
                (Some(name), true) => {
                    format!(
                        "Stop a member's API server ({name} stays while its load balancer passes), and bring it back:"
                    )
                }
                (Some(name), false) => {
                    format!("Stop a member's API server (it leaves {name}'s names in about 3 s), and bring it back:")
                }
                (None, _) => {
                    "Stop a member's API server (it leaves the names in about 3 s), and bring it back:".to_owned()
                }
            });
            screen.try_(control("fail", &focus), None);
            screen.try_(control("recover", &focus), None);
        }
        if probed_focus {
            let name = service_name.clone().unwrap_or_default();
            screen.text(format!(
                "Stop a member's load balancer (it leaves {name}'s names), and start it again:"
            ));
            screen.try_(control("break-lb", &focus), None);
            screen.try_(control("fix-lb", &focus), None);
        }
        if let Some(cordon) = &cordon {
            if !probed_focus {
                screen.text("Take a member out on purpose, whatever its health:");
            }
            screen.try_(control("cordon", cordon), Some("uncordon to undo".to_owned()));
        }

        // A live change: a member's Ingress deleted, so its load balancer
        // leaves the host's answer. (Not a new status address: `kubectl
        // patch --subresource=status` needs kubectl 1.24, and Debian's is
        // 1.20.)
        let mut changes: Vec<Try> = Vec::new();
        if let Some((record, _, serving)) = &ingress {
            // Not the member the cordon hint (printed before) took out.
            let member = [2, 1]
                .iter()
                .filter_map(|&i| pick(serving, i))
                .find(|m| Some(*m) != cordon.as_ref() || serving.len() == 1);
            if let Some(member) = member {
                changes.push(Try::Kubectl {
                    kubeconfig: kubeconfig(member),
                    args: ["-n", &record.namespace, "delete", "ingress", &record.name]
                        .map(str::to_owned)
                        .to_vec(),
                    wrap_before: None,
                });
            }
        }
        let namespace = service
            .as_ref()
            .map(|(record, ..)| record.namespace.clone())
            .or_else(|| ingress.as_ref().map(|(record, ..)| record.namespace.clone()));
        if let Some(namespace) = namespace {
            changes.push(Try::Kubectl {
                kubeconfig: host_kubeconfig.clone(),
                args: ["-n", &namespace, "get", "dnsendpoints", "-o", "yaml"]
                    .map(str::to_owned)
                    .to_vec(),
                wrap_before: None,
            });
        }
        if !changes.is_empty() {
            screen.text(if changes.len() > 1 {
                "Change a member live:"
            } else {
                "What is published:"
            });
            for command in changes {
                screen.try_(command, None);
            }
        }

        if let Some(log) = &self.log_file {
            screen.text_naming(
                format!("Log lines go to {} (--verbose: to this terminal).", log.display()),
                vec![log.clone()],
            );
        }
        screen.text("Published changes follow (+ added, - removed). Ctrl-C stops everything.");
        screen
    }
}
