//! The first screen of a running sandbox ([`Running::screen`]): what it
//! started and the commands to try, picked from what `survey.rs` read.
//! Each part of the screen is a step of its own, in the order it prints.
//! Each hint's choice of member depends on the hints before it: those
//! choices (the Service and the Ingress host shown, the members they
//! touch) are made once, in [`Running::choices`], before any hint, and
//! handed to every step as [`Choices`].

use std::collections::BTreeMap;
use std::path::PathBuf;

use fedns_api::names;
use fedns_api::{DataPlaneCheck, Domain, RoutingPolicy};

use super::survey::{pick, probe_line, IngressRecord, MemberView, ServiceRecord};
use super::text::{Screen, Try};
use crate::cli::sandbox::running::Running;
use crate::cli::sandbox::seed::KARMADA_PULL_MEMBER;
use crate::federation::Engine;
use crate::records::auto;

/// The Service the screen shows: its record, its Domain and zone, and the
/// members serving it in seed order.
struct ShownService<'a> {
    record: &'a ServiceRecord,
    domain: &'a Domain,
    zone: String,
    serving: Vec<String>,
}

/// The Ingress host the screen shows: its record, the host, and the
/// members serving it in seed order.
struct ShownIngress<'a> {
    record: &'a IngressRecord,
    host: String,
    serving: Vec<String>,
}

/// The choices the hints depend on, made before the first hint.
struct Choices<'a> {
    service: Option<ShownService<'a>>,
    ingress: Option<ShownIngress<'a>>,
    /// The member `fail` (and the region and zone names, and `break-lb`)
    /// touch: the second serving member, one with a region if any.
    focus: Option<String>,
    /// The member `cordon` takes out: the first serving member (none with
    /// `--engine`).
    cordon: Option<String>,
    service_name: Option<String>,
    health_check: Option<DataPlaneCheck>,
}

impl Choices<'_> {
    /// The namespace of the records shown (the Service's, else the
    /// Ingress's).
    fn records_namespace(&self) -> Option<String> {
        self.service
            .as_ref()
            .map(|s| s.record.namespace.clone())
            .or_else(|| self.ingress.as_ref().map(|i| i.record.namespace.clone()))
    }
}

/// A Domain's zone, normalized.
fn zone_of(domain: &Domain) -> Option<String> {
    names::normalize_hostname(&domain.spec.domain).ok()
}

impl Running {
    /// The first screen of this sandbox.
    pub fn screen(&self) -> Screen {
        let (domains, services, ingresses) = self.records();
        let views = self.member_views();
        let mut screen = Screen { lines: Vec::new() };
        self.what_runs(&mut screen);
        let choices = self.choices(&domains, &services, &ingresses, &views);
        self.engine_view(&mut screen, &choices);
        self.where_probes_run(&mut screen, &choices);
        self.names(&mut screen, &choices, &views);
        self.discovery_inside_a_member(&mut screen, &choices);
        self.failures(&mut screen, &choices);
        self.live_change(&mut screen, &choices);
        self.log_and_footer(&mut screen);
        screen
    }

    fn kubeconfig(&self, cluster: &str) -> PathBuf {
        self.federation.state_dir.join(format!("{cluster}.kubeconfig"))
    }

    /// What runs: the members and the host, and what was not replayed.
    fn what_runs(&self, screen: &mut Screen) {
        screen.text(format!(
            "fedns sandbox: a host and {} member clusters on loopback",
            self.federation.members.len()
        ));
        for (name, member) in &self.federation.members {
            let path = self.kubeconfig(name);
            screen.text_naming(
                format!("  {name:<10} {}   kubeconfig {}", member.url(), path.display()),
                vec![path],
            );
        }
        let host_kubeconfig = self.kubeconfig("host");
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
    }

    /// The members for which `wanted` holds, in seed order.
    fn in_order(&self, views: &BTreeMap<String, MemberView>, wanted: &dyn Fn(&MemberView) -> bool) -> Vec<String> {
        self.order
            .iter()
            .filter(|m| views.get(*m).is_some_and(wanted))
            .cloned()
            .collect()
    }

    /// The Service to show: the first record whose Domain exists and
    /// that some member serves; its members in seed order.
    fn the_service_to_show<'a>(
        &self,
        domains: &'a [Domain],
        services: &'a [ServiceRecord],
        views: &BTreeMap<String, MemberView>,
    ) -> Option<ShownService<'a>> {
        services.iter().find_map(|record| {
            let domain = domains
                .iter()
                .find(|d| d.metadata.name.as_deref() == Some(record.spec.domain_ref.as_str()))?;
            let zone = zone_of(domain)?;
            let key = (record.namespace.clone(), record.name.clone());
            let serving = self.in_order(views, &|view: &MemberView| {
                view.services
                    .get(&key)
                    .is_some_and(|ready| *ready || record.spec.allow_service_without_endpoints)
            });
            (!serving.is_empty()).then_some(ShownService {
                record,
                domain,
                zone,
                serving,
            })
        })
    }

    /// The Ingress host to show: the first record with a host under a
    /// Domain that some member serves.
    fn the_ingress_to_show<'a>(
        &self,
        domains: &[Domain],
        ingresses: &'a [IngressRecord],
        views: &BTreeMap<String, MemberView>,
    ) -> Option<ShownIngress<'a>> {
        ingresses.iter().find_map(|record| {
            let host = record.spec.hosts.iter().find_map(|h| {
                let h = names::normalize_hostname(h).ok()?;
                domains
                    .iter()
                    .filter_map(zone_of)
                    .any(|zone| names::is_subdomain(&h, &zone))
                    .then_some(h)
            })?;
            let key = (record.namespace.clone(), record.name.clone());
            let serving = self.in_order(views, &|view: &MemberView| view.ingresses.contains_key(&key));
            (!serving.is_empty()).then_some(ShownIngress { record, host, serving })
        })
    }

    /// What the screen shows and the members its hints touch.
    fn choices<'a>(
        &self,
        domains: &'a [Domain],
        services: &'a [ServiceRecord],
        ingresses: &'a [IngressRecord],
        views: &BTreeMap<String, MemberView>,
    ) -> Choices<'a> {
        let service = self.the_service_to_show(domains, services, views);
        let ingress = self.the_ingress_to_show(domains, ingresses, views);
        let serving: Vec<String> = match (&service, &ingress) {
            (Some(ShownService { serving, .. }), _) | (None, Some(ShownIngress { serving, .. })) => serving.clone(),
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
        let service_name = service.as_ref().map(|s| s.record.name.clone());
        let health_check = service.as_ref().and_then(|s| s.record.spec.health_check.clone());
        Choices {
            service,
            ingress,
            focus,
            cordon,
            service_name,
            health_check,
        }
    }

    /// The engine's view: what lists its clusters, and the records made
    /// from annotated templates.
    fn engine_view(&self, screen: &mut Screen, choices: &Choices<'_>) {
        let Some(engine) = self.engine else { return };
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
        let host_kubeconfig = self.kubeconfig("host");
        screen.try_(
            Try::Kubectl {
                kubeconfig: host_kubeconfig.clone(),
                args,
                wrap_before: None,
            },
            None,
        );
        if let Some(namespace) = choices.records_namespace() {
            screen.text("Records made from annotated templates (--auto-records):");
            screen.try_(
                Try::Kubectl {
                    kubeconfig: host_kubeconfig,
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

    /// The load balancers, where probes run.
    fn where_probes_run(&self, screen: &mut Screen, choices: &Choices<'_>) {
        if self.probed && !self.load_balancers.is_empty() {
            let list: Vec<String> = self
                .load_balancers
                .iter()
                .map(|(name, address)| format!("{name} {address}"))
                .collect();
            screen.text(format!("Load balancers (HTTP responders): {}", list.join(", ")));
            if let (Some(name), Some(check)) = (&choices.service_name, &choices.health_check) {
                screen.text(probe_line(name, check));
            }
        }
    }

    /// A dig of `name` at the sandbox's DNS server, from a client subnet
    /// (and its region) when given.
    fn dig(&self, name: String, subnet: Option<(String, String)>) -> (Try, Option<String>) {
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
    }

    /// Names: the digs of the Service's names, the Ingress host and a
    /// route's host.
    fn names(&self, screen: &mut Screen, choices: &Choices<'_>, views: &BTreeMap<String, MemberView>) {
        let mut digs: Vec<(Try, Option<String>)> = Vec::new();
        if let Some(service) = &choices.service {
            digs.extend(self.service_digs(service, choices.focus.as_deref(), views));
        }
        if let Some(ShownIngress { host, .. }) = &choices.ingress {
            digs.push(self.dig(host.clone(), None));
        }
        digs.extend(self.route_dig());
        if !digs.is_empty() {
            let (ip, port) = (self.dns_addr.ip(), self.dns_addr.port());
            screen.text(format!("DNS on {ip} port {port} (UDP and TCP). Try:"));
            for (command, note) in digs {
                screen.try_(command, note);
            }
        }
    }

    /// The Service's global name (and from a client subnet, for a Nearest
    /// record), and its names in the region and zone of `focus`.
    fn service_digs(
        &self,
        service: &ShownService<'_>,
        focus: Option<&str>,
        views: &BTreeMap<String, MemberView>,
    ) -> Vec<(Try, Option<String>)> {
        let (record, domain, zone) = (service.record, service.domain, &service.zone);
        let mut digs = Vec::new();
        let label = record.spec.external_name.clone().unwrap_or_else(|| record.name.clone());
        let federation = domain.metadata.name.clone().unwrap_or_default();
        let prefix = format!("{label}.{}.{federation}.svc", record.namespace).to_ascii_lowercase();
        let global = format!("{prefix}.{zone}");
        digs.push(self.dig(global.clone(), None));
        // A client subnet from the Domain's table, for a Nearest record.
        let nearest = record
            .spec
            .routing
            .as_ref()
            .is_some_and(|r| r.policy == RoutingPolicy::Nearest);
        if nearest && !domain.spec.client_regions.is_empty() {
            if let Some(subnet) = nearest_subnet(domain, &service.serving, views) {
                digs.push(self.dig(global.clone(), Some(subnet)));
            }
        }
        if let Some(view) = focus.and_then(|f| views.get(f)) {
            if let Some(region) = &view.region {
                digs.push(self.dig(format!("{prefix}.{region}.{zone}"), None));
                if let Some(first) = view.zones.first() {
                    digs.push(self.dig(format!("{prefix}.{first}.{region}.{zone}"), None));
                }
            }
        }
        digs
    }

    /// The first RouteDNSRecord with a host: a Gateway API route.
    fn route_dig(&self) -> Option<(Try, Option<String>)> {
        let routes = super::survey::items(
            &self.federation.host,
            "multiclusterdns.fedns.io",
            "v1alpha1",
            "routednsrecords",
        );
        let (route, host) = routes.iter().find_map(|r| {
            let host = r.pointer("/spec/hosts/0").and_then(serde_json::Value::as_str)?;
            Some((r, host.to_owned()))
        })?;
        let kind = route
            .pointer("/spec/routeKind")
            .and_then(serde_json::Value::as_str)
            .unwrap_or("HTTPRoute");
        let name = format!(
            "{}/{}",
            super::survey::meta(route, "namespace"),
            super::survey::meta(route, "name")
        );
        let fallback = route.pointer("/spec/ingressFallback") == Some(&serde_json::Value::Bool(true));
        let (try_, _) = self.dig(host, None);
        let note = format!(
            "RouteDNSRecord {name}: the {kind} {name} behind each member's Gateway{}",
            if fallback {
                ", its Ingress where a member has none"
            } else {
                ""
            }
        );
        Some((try_, Some(note)))
    }

    /// Discovery inside a member: its replica answers what the member's
    /// cluster DNS forwards.
    fn discovery_inside_a_member(&self, screen: &mut Screen, choices: &Choices<'_>) {
        let Some(service) = &choices.service else { return };
        let (record, domain) = (service.record, service.domain);
        let replica = service
            .serving
            .iter()
            .find_map(|m| self.discovery.iter().find(|r| &r.member == m));
        if let Some(replica) = replica {
            let label = record.spec.external_name.clone().unwrap_or_else(|| record.name.clone());
            let federation = domain.metadata.name.clone().unwrap_or_default();
            let short = format!("{label}.{}.{federation}", record.namespace).to_ascii_lowercase();
            let file = self.federation.state_dir.join(format!("{}.dns", replica.member));
            screen.text_naming(
                format!(
                    "Inside {}: its cluster DNS would forward {federation}.svc.{} to {} (address in {}):",
                    replica.member,
                    crate::cli::sandbox::discovery::CLUSTER_DOMAIN,
                    replica.addr,
                    file.display()
                ),
                vec![file],
            );
            screen.try_(
                Try::Dig {
                    server: replica.addr,
                    name: format!("{short}.svc.{}", crate::cli::sandbox::discovery::CLUSTER_DOMAIN),
                    subnet: None,
                    region: None,
                },
                Some(format!("a pod's {short}: the local Service")),
            );
        }
    }

    /// A `fedns sandbox` control command on `cluster`.
    fn control(&self, action: &str, cluster: &str) -> Try {
        Try::Sandbox {
            action: action.to_owned(),
            cluster: cluster.to_owned(),
            state_dir: self.federation.state_dir.clone(),
        }
    }

    /// Failures: a member's API server stopped, its load balancer
    /// stopped, a member cordoned.
    fn failures(&self, screen: &mut Screen, choices: &Choices<'_>) {
        let (focus, probed_focus) = match &choices.focus {
            Some(f) => (
                f.clone(),
                self.probed && choices.health_check.is_some() && self.load_balancers.contains_key(f),
            ),
            None => (String::new(), false),
        };
        let service_name = &choices.service_name;
        if !focus.is_empty() {
            screen.text(match (service_name, probed_focus) {
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
            screen.try_(self.control("fail", &focus), None);
            screen.try_(self.control("recover", &focus), None);
        }
        if probed_focus {
            let name = service_name.clone().unwrap_or_default();
            screen.text(format!(
                "Stop a member's load balancer (it leaves {name}'s names), and start it again:"
            ));
            screen.try_(self.control("break-lb", &focus), None);
            screen.try_(self.control("fix-lb", &focus), None);
        }
        if let Some(cordon) = &choices.cordon {
            if !probed_focus {
                screen.text("Take a member out on purpose, whatever its health:");
            }
            screen.try_(self.control("cordon", cordon), Some("uncordon to undo".to_owned()));
        }
    }

    /// A live change: a member's Ingress deleted, so its load balancer
    /// leaves the host's answer. (Not a new status address: `kubectl
    /// patch --subresource=status` needs kubectl 1.24, and Debian's is
    /// 1.20.)
    fn live_change(&self, screen: &mut Screen, choices: &Choices<'_>) {
        let mut changes: Vec<Try> = Vec::new();
        if let Some(ShownIngress { record, serving, .. }) = &choices.ingress {
            // Not the member the cordon hint (printed before) took out.
            let member = [2, 1]
                .iter()
                .filter_map(|&i| pick(serving, i))
                .find(|m| Some(*m) != choices.cordon.as_ref() || serving.len() == 1);
            if let Some(member) = member {
                changes.push(Try::Kubectl {
                    kubeconfig: self.kubeconfig(member),
                    args: ["-n", &record.namespace, "delete", "ingress", &record.name]
                        .map(str::to_owned)
                        .to_vec(),
                    wrap_before: None,
                });
            }
        }
        if let Some(namespace) = choices.records_namespace() {
            changes.push(Try::Kubectl {
                kubeconfig: self.kubeconfig("host"),
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
    }

    /// Where log lines go, and what follows the screen.
    fn log_and_footer(&self, screen: &mut Screen) {
        if let Some(log) = &self.log_file {
            screen.text_naming(
                format!("Log lines go to {} (--verbose: to this terminal).", log.display()),
                vec![log.clone()],
            );
        }
        screen.text("Published changes follow (+ added, - removed). Ctrl-C stops everything.");
    }
}

/// A client subnet (and its region) from the Domain's table for a member
/// serving the Service, from the third on (an IPv4 row where the region
/// has one).
fn nearest_subnet(
    domain: &Domain,
    serving: &[String],
    views: &BTreeMap<String, MemberView>,
) -> Option<(String, String)> {
    (0..serving.len()).find_map(|k| {
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
    })
}
