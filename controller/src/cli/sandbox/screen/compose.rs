//! The first screen of a running sandbox ([`Running::screen`]): what it
//! started and the commands to try, picked from what `survey.rs` read.
//! One function, kept whole: each hint's choice of member depends on the
//! hints before it.

use fedns_api::names;
use fedns_api::{Domain, RoutingPolicy};

use super::survey::{pick, probe_line, MemberView};
use super::text::{Screen, Try};
use crate::cli::sandbox::running::Running;
use crate::cli::sandbox::seed::KARMADA_PULL_MEMBER;
use crate::federation::Engine;
use crate::records::auto;

impl Running {
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
        // The first RouteDNSRecord with a host: a Gateway API route.
        let routes = super::survey::items(
            &self.federation.host,
            "multiclusterdns.fedns.io",
            "v1alpha1",
            "routednsrecords",
        );
        if let Some((route, host)) = routes.iter().find_map(|r| {
            let host = r.pointer("/spec/hosts/0").and_then(serde_json::Value::as_str)?;
            Some((r, host.to_owned()))
        }) {
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
            let (try_, _) = dig(host, None);
            let note = format!(
                "RouteDNSRecord {name}: the {kind} {name} behind each member's Gateway{}",
                if fallback {
                    ", its Ingress where a member has none"
                } else {
                    ""
                }
            );
            digs.push((try_, Some(note)));
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
