//! deploy/monitoring/: the Grafana dashboard and the PrometheusRule parse
//! and hold what an operator needs, and every metric they name has a
//! series on `/metrics` of a running controller, scraped after a publish
//! (embedded and etcd) and DNS answers, with the labels they match on.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use fedns_controller::cli::{Cli, Command};
use fedns_controller::federation::Federation;
use fedns_e2e::{free_port, Etcd};
use serde_json::{json, Value};
use tokio::sync::Notify;

const GLOBAL: &str = "nginx.ns.myfed.svc.example.com";

/// Labels Prometheus adds when it scrapes (target labels), never in `/metrics`.
const SCRAPE_LABELS: [&str; 7] = [
    "namespace",
    "pod",
    "job",
    "instance",
    "container",
    "service",
    "endpoint",
];

fn monitoring_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../deploy/monitoring")
}

/// Every PromQL expression of the dashboard (panel targets and variable
/// queries), with where it stands.
fn dashboard_queries() -> Vec<(String, String)> {
    let path = monitoring_dir().join("grafana-dashboard.json");
    let dashboard: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(
        dashboard["uid"].is_string() && dashboard["title"].is_string(),
        "uid and title"
    );
    assert!(dashboard["description"].is_string(), "a dashboard description");
    let mut queries = Vec::new();
    let mut titles = BTreeSet::new();
    for panel in dashboard["panels"].as_array().expect("panels") {
        let title = panel["title"].as_str().expect("every panel has a title");
        if panel["type"] == "row" {
            continue;
        }
        assert!(titles.insert(title.to_owned()), "two panels titled {title}");
        assert!(panel["description"].is_string(), "{title}: no description");
        assert!(
            panel["gridPos"]["w"].is_u64() && panel["gridPos"]["h"].is_u64(),
            "{title}: gridPos"
        );
        let targets = panel["targets"]
            .as_array()
            .unwrap_or_else(|| panic!("{title}: no targets"));
        assert!(!targets.is_empty(), "{title}: no targets");
        for target in targets {
            let expr = target["expr"]
                .as_str()
                .unwrap_or_else(|| panic!("{title}: a target without expr"));
            queries.push((format!("panel {title:?}"), expr.to_owned()));
        }
    }
    for variable in dashboard["templating"]["list"].as_array().into_iter().flatten() {
        if variable["type"] == "query" {
            let query = variable["query"]["query"]
                .as_str()
                .or(variable["query"].as_str())
                .unwrap();
            queries.push((format!("variable {}", variable["name"]), query.to_owned()));
        }
    }
    // What the dashboard must show at least.
    for wanted in [
        "fedns_member_clusters",
        "fedns_dns_queries_total",
        "fedns_change_to_dnsendpoint_write_seconds_bucket",
        "fedns_provider_api_calls_total",
    ] {
        assert!(
            queries.iter().any(|(_, q)| q.contains(wanted)),
            "no dashboard panel on {wanted}"
        );
    }
    queries
}

/// Every alert expression of the PrometheusRule, by alert name.
fn alert_queries() -> Vec<(String, String)> {
    let path = monitoring_dir().join("prometheus-rule.yaml");
    let rule: Value = serde_yaml_ng::from_str(&std::fs::read_to_string(&path).unwrap())
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert_eq!(rule["apiVersion"], "monitoring.coreos.com/v1");
    assert_eq!(rule["kind"], "PrometheusRule");
    let mut queries = Vec::new();
    for group in rule["spec"]["groups"].as_array().expect("spec.groups") {
        for rule in group["rules"].as_array().expect("rules") {
            let alert = rule["alert"].as_str().expect("alerting rules only");
            let expr = rule["expr"].as_str().unwrap_or_else(|| panic!("{alert}: no expr"));
            assert!(rule["for"].is_string(), "{alert}: no `for`");
            assert!(
                ["warning", "critical"].contains(&rule["labels"]["severity"].as_str().unwrap_or_default()),
                "{alert}: severity warning or critical"
            );
            for annotation in ["summary", "description"] {
                assert!(rule["annotations"][annotation].is_string(), "{alert}: no {annotation}");
            }
            queries.push((format!("alert {alert}"), expr.to_owned()));
        }
    }
    for wanted in ["FednsMemberNotReady", "FednsProviderFailing", "FednsDNSRefusedSurge"] {
        assert!(
            queries.iter().any(|(place, _)| place == &format!("alert {wanted}")),
            "no alert {wanted}"
        );
    }
    queries
}

/// The metric selectors of a PromQL expression: each `fedns_*` name and
/// the label names matched in the braces after it.
fn selectors(expr: &str) -> Vec<(String, Vec<String>)> {
    let mut found = Vec::new();
    let mut rest = expr;
    while let Some(at) = rest.find("fedns_") {
        // Only a name that starts a token (not `xfedns_...`).
        let before = rest[..at].chars().last();
        let tail = &rest[at..];
        let len = tail
            .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_' || c == ':'))
            .unwrap_or(tail.len());
        let name = &tail[..len];
        rest = &tail[len..];
        if before.is_some_and(|c| c.is_ascii_alphanumeric() || c == '_') {
            continue;
        }
        let mut labels = Vec::new();
        let after = rest.trim_start();
        if let Some(inside) = after.strip_prefix('{') {
            let mut depth_quote = false;
            let mut escaped = false;
            let mut current = String::new();
            let mut end = inside.len();
            for (i, c) in inside.char_indices() {
                if depth_quote {
                    if escaped {
                        escaped = false;
                    } else if c == '\\' {
                        escaped = true;
                    } else if c == '"' {
                        depth_quote = false;
                    }
                    continue;
                }
                match c {
                    '"' => depth_quote = true,
                    ',' | '}' => {
                        let key = current.split(['=', '!']).next().unwrap_or_default().trim();
                        if !key.is_empty() {
                            labels.push(key.to_owned());
                        }
                        current.clear();
                        if c == '}' {
                            end = i;
                            break;
                        }
                    }
                    _ => current.push(c),
                }
            }
            rest = &inside[end..];
        }
        found.push((name.to_owned(), labels));
    }
    found
}

/// What `/metrics` serves: every series name with the label names seen on it.
#[derive(Debug, Default)]
struct Served {
    series: BTreeMap<String, BTreeSet<String>>,
}

impl Served {
    fn parse(text: &str) -> Served {
        let mut served = Served::default();
        for line in text.lines().filter(|l| !l.starts_with('#') && !l.is_empty()) {
            let end = line.find(['{', ' ']).unwrap_or(line.len());
            let labels = served.series.entry(line[..end].to_owned()).or_default();
            if let Some((_, keys)) = selectors(line).into_iter().next() {
                labels.extend(keys);
            }
        }
        served
    }
}

const MEMBER_YAML: &str = r#"
apiVersion: v1
kind: Node
metadata:
  name: node-a
  labels: {topology.kubernetes.io/region: us-east-1, topology.kubernetes.io/zone: us-east-1a}
---
apiVersion: v1
kind: Service
metadata: {name: nginx, namespace: ns}
spec: {type: LoadBalancer, ports: [{port: LB_PORT}]}
status: {loadBalancer: {ingress: [{ip: "127.0.3.1"}]}}
---
apiVersion: discovery.k8s.io/v1
kind: EndpointSlice
metadata:
  name: nginx-abcde
  namespace: ns
  labels: {kubernetes.io/service-name: nginx}
addressType: IPv4
endpoints:
  - addresses: ["10.1.0.5"]
    conditions: {ready: true}
ports: [{port: 80}]
"#;

const HOST_YAML: &str = r#"
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: Domain
metadata: {name: myfed, namespace: fedns-system}
spec: {domain: example.com, nameServers: [ns1.example.com]}
---
apiVersion: v1
kind: Namespace
metadata: {name: ns}
---
apiVersion: multiclusterdns.fedns.io/v1alpha1
kind: ServiceDNSRecord
metadata: {name: nginx, namespace: ns}
spec: {domainRef: myfed, healthCheck: {protocol: TCP, periodSeconds: 1}}
"#;

/// The RCODE `dig` reports for `name` (`NOERROR`, `REFUSED`, ...), "" on timeout.
fn dig_status(port: u16, name: &str) -> String {
    let out = std::process::Command::new("dig")
        .args(["+time=1", "+tries=1", "-p", &port.to_string(), "@127.0.0.1", name, "A"])
        .output()
        .expect("dig (Debian bind9-dnsutils) must be installed");
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find_map(|l| l.split("status: ").nth(1))
        .map(|s| s.split(',').next().unwrap_or_default().to_owned())
        .unwrap_or_default()
}

async fn http_get(url: &str) -> String {
    use http_body_util::BodyExt;
    let client: hyper_util::client::legacy::Client<_, http_body_util::Empty<bytes::Bytes>> =
        hyper_util::client::legacy::Client::builder(hyper_util::rt::TokioExecutor::new()).build_http();
    match client.get(url.parse().unwrap()).await {
        Ok(response) => {
            let body = response.into_body().collect().await.unwrap().to_bytes();
            String::from_utf8_lossy(&body).into_owned()
        }
        Err(_) => String::new(),
    }
}

/// Parses the dashboard and the alerts, runs a controller in-process
/// (embedded DNS and coredns-etcd against a real etcd, so provider series
/// exist), publishes a name, answers it and a refused one, and checks that
/// every metric the two files name has a series on its `/metrics`, with
/// the labels they match on.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dashboard_and_alerts_name_served_metrics() {
    let mut queries = dashboard_queries();
    queries.extend(alert_queries());
    let named: BTreeSet<String> = queries
        .iter()
        .flat_map(|(_, expr)| selectors(expr).into_iter().map(|(name, _)| name))
        .collect();

    let etcd = Etcd::start();
    let dir = std::env::temp_dir().join(format!("fedns-e2e-monitoring-{}-{}", std::process::id(), free_port()));
    let federation = Federation::start(&dir, "fedns-system", &["east"]).await.unwrap();
    // The load balancer is a responder on loopback, so the data-plane
    // probe metrics have series too.
    let lb = fedns_standins::responder::Responder::start("127.0.3.1:0".parse().unwrap(), None)
        .await
        .unwrap();
    federation
        .member("east")
        .unwrap()
        .seed_yaml(
            "east",
            &MEMBER_YAML.replace("LB_PORT", &lb.address().port().to_string()),
        )
        .unwrap();
    federation.register("east", json!({})).unwrap();
    federation.host.seed_yaml("host", HOST_YAML).unwrap();
    let dns_port = free_port();
    let metrics_port = free_port();
    let cli = <Cli as clap::Parser>::try_parse_from([
        "fedns".to_owned(),
        "controller".to_owned(),
        format!("--kubeconfig={}", dir.join("host.kubeconfig").display()),
        format!("--dns-listen=127.0.0.1:{dns_port}"),
        format!("--metrics-addr=127.0.0.1:{metrics_port}"),
        "--udp-workers=1".to_owned(),
        "--leader-elect=false".to_owned(),
        "--provider=embedded".to_owned(),
        "--provider=coredns-etcd".to_owned(),
        format!("--etcd-endpoints={}", etcd.url()),
        // Vantage points on: their metrics (FednsVantagePointSilent) are
        // served from the controller's own vantage point at least.
        "--vantage-namespace=fedns-system".to_owned(),
    ])
    .unwrap();
    let Command::Controller(args) = cli.command else {
        panic!("not the controller")
    };
    let stop = Arc::new(Notify::new());
    let controller = {
        let stop = stop.clone();
        tokio::spawn(async move {
            fedns_controller::cli::controller::run_until(&args, async move { stop.notified().await }).await
        })
    };

    // Activity: the name is published (etcd included) and answered, and a
    // name outside every zone is refused.
    let url = format!("http://127.0.0.1:{metrics_port}/metrics");
    let started = Instant::now();
    let (body, served) = loop {
        let answered = dig_status(dns_port, GLOBAL) == "NOERROR";
        let _ = dig_status(dns_port, "www.example.org");
        let body = http_get(&url).await;
        let served = Served::parse(&body);
        if answered && named.iter().all(|name| served.series.contains_key(name)) {
            break (body, served);
        }
        if started.elapsed() > Duration::from_secs(30) {
            let missing: Vec<&String> = named.iter().filter(|n| !served.series.contains_key(*n)).collect();
            panic!("{GLOBAL} answered: {answered}; no series of {missing:?} on /metrics within 30 s:\n{body}");
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };
    assert_eq!(dig_status(dns_port, "www.example.org"), "REFUSED");

    for (place, expr) in &queries {
        let found = selectors(expr);
        assert!(!found.is_empty(), "{place}: names no fedns metric: {expr}");
        for (name, labels) in found {
            let seen = served
                .series
                .get(&name)
                .unwrap_or_else(|| panic!("{place}: {name} is not on /metrics:\n{body}"));
            for label in labels.iter().filter(|l| !SCRAPE_LABELS.contains(&l.as_str())) {
                assert!(
                    seen.contains(label),
                    "{place}: {name} has no label {label} (it has {seen:?})"
                );
            }
        }
    }
    println!(
        "{} metrics named by {} queries, all on /metrics: {named:?}",
        named.len(),
        queries.len()
    );
    stop.notify_one();
    controller.await.unwrap().unwrap();
    federation.stop();
}

#[test]
fn selectors_find_names_and_matched_labels() {
    assert_eq!(
        selectors(
            r#"sum by (rcode) (rate(fedns_dns_queries_total{rcode=~"REFUSED|other",namespace="a,b"}[5m])) / fedns_x"#
        ),
        vec![
            (
                "fedns_dns_queries_total".to_owned(),
                vec!["rcode".to_owned(), "namespace".to_owned()]
            ),
            ("fedns_x".to_owned(), vec![]),
        ]
    );
    let served = Served::parse(
        "# TYPE fedns_reconciles counter\nfedns_reconciles_total{kind=\"A\",result=\"ok\"} 1\nfedns_g 2\n# EOF\n",
    );
    assert_eq!(
        served.series["fedns_reconciles_total"],
        BTreeSet::from(["kind".to_owned(), "result".to_owned()])
    );
    assert_eq!(served.series["fedns_g"], BTreeSet::new());
    assert_eq!(served.series.len(), 2);
}
