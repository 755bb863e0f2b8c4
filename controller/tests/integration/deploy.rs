//! deploy/: the install commands of docs/operations.md, run as written against the
//! emulator with the kubectl `./scripts/test.sh` makes sure of (1.27 or
//! later, kustomize v5). Each kustomization renders with `kubectl
//! kustomize` without a warning, applies server-side to a fresh emulated
//! cluster, and every rendered object reads back (`kubectl get -f`) as
//! rendered.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::Instant;

use fedns_kube_emulator::Emulator;
use serde::Deserialize;
use serde_json::Value;

/// The document, and its section whose first code block holds the install commands.
const INSTALL_DOC: &str = "docs/operations.md";
const INSTALL_HEADING: &str = "## Installing in a cluster";

pub(crate) fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap().to_path_buf()
}

/// The command lines of the first code block under [`INSTALL_HEADING`]
/// (comment-only and empty lines left out).
fn documented_install_commands(root: &Path) -> Vec<String> {
    let doc = std::fs::read_to_string(root.join(INSTALL_DOC)).unwrap();
    let section = doc
        .split_once(&format!("\n{INSTALL_HEADING}\n"))
        .unwrap_or_else(|| panic!("{INSTALL_DOC} has no `{INSTALL_HEADING}` section"))
        .1;
    let block = section
        .split_once("```")
        .and_then(|(_, rest)| rest.split_once('\n'))
        .and_then(|(_, rest)| rest.split_once("```"))
        .unwrap_or_else(|| panic!("no code block under `{INSTALL_HEADING}` in {INSTALL_DOC}"))
        .0;
    block
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .map(str::to_owned)
        .collect()
}

/// The folder after `-k` in an install command.
fn kustomization_of(command: &str) -> String {
    let words: Vec<&str> = command.split_whitespace().collect();
    let at = words
        .iter()
        .position(|w| *w == "-k")
        .unwrap_or_else(|| panic!("install command without `-k DIR` in {INSTALL_DOC}: {command}"));
    words
        .get(at + 1)
        .unwrap_or_else(|| panic!("`-k` without a folder: {command}"))
        .to_string()
}

/// Runs `program args` in the repository root with only the emulator's
/// kubeconfig (and a private HOME, so kubectl's discovery cache stays there).
fn run(home: &Path, program: &str, args: &[&str]) -> Output {
    let out = Command::new(program)
        .args(args)
        .current_dir(repo_root())
        .env("KUBECONFIG", home.join("kubeconfig"))
        .env("HOME", home)
        .output()
        .unwrap_or_else(|e| {
            panic!("{program}: {e} (kubectl must be installed; ./scripts/test.sh installs Debian's kubernetes-client)")
        });
    assert!(
        out.status.success(),
        "{program} {args:?} failed:\n{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// `kubectl kustomize DIR` with the kubeconfig in `home`: the rendered
/// text and its objects.
pub(crate) fn render(home: &Path, dir: &str) -> (String, Vec<Value>) {
    let rendered = String::from_utf8(run(home, "kubectl", &["kustomize", dir]).stdout).unwrap();
    let objects = serde_yaml_ng::Deserializer::from_str(&rendered)
        .map(|doc| Value::deserialize(doc).unwrap())
        .filter(|v| !v.is_null())
        .collect();
    (rendered, objects)
}

/// Creates (server-side apply) the namespaces `names`.
fn apply_namespaces<'a>(home: &Path, names: impl IntoIterator<Item = &'a str>) {
    let docs: String = names
        .into_iter()
        .map(|ns| format!("---\napiVersion: v1\nkind: Namespace\nmetadata:\n  name: {ns}\n"))
        .collect();
    if docs.is_empty() {
        return;
    }
    let path = home.join("namespaces.yaml");
    std::fs::write(&path, docs).unwrap();
    run(
        home,
        "kubectl",
        &["apply", "--server-side", "-f", path.to_str().unwrap()],
    );
}

fn kubectl_json(home: &Path, args: &[&str]) -> Value {
    serde_json::from_slice(&run(home, "kubectl", args).stdout).unwrap()
}

/// Every field of `wanted` is in `stored` with the same value (lists
/// element by element); what the server adds (uid, status, a Service's
/// clusterIP, ...) is ignored.
fn differences(path: &str, stored: &Value, wanted: &Value, out: &mut Vec<String>) {
    match (stored, wanted) {
        (Value::Object(stored), Value::Object(wanted)) => {
            for (key, w) in wanted {
                match stored.get(key) {
                    Some(s) => differences(&format!("{path}.{key}"), s, w, out),
                    None => out.push(format!("{path}.{key}: missing")),
                }
            }
        }
        (Value::Array(s), Value::Array(w)) if s.len() == w.len() => {
            for (i, (s, w)) in s.iter().zip(w).enumerate() {
                differences(&format!("{path}[{i}]"), s, w, out);
            }
        }
        _ if stored == wanted => {}
        _ => out.push(format!("{path}: stored {stored}, rendered {wanted}")),
    }
}

fn key(object: &Value) -> (String, String, String) {
    let text = |v: &Value| v.as_str().unwrap_or_default().to_owned();
    (
        text(&object["kind"]),
        text(&object["metadata"]["namespace"]),
        text(&object["metadata"]["name"]),
    )
}

/// Applies one documented install command to a fresh emulated cluster and
/// checks what was stored.
fn install(runtime: &tokio::runtime::Runtime, command: &str) {
    let dir = kustomization_of(command);
    let total = Instant::now();
    let emulator = runtime.block_on(Emulator::start()).unwrap();
    let home = std::env::temp_dir().join(format!(
        "fedns-deploy-{}-{}",
        std::process::id(),
        emulator.addr().port()
    ));
    std::fs::create_dir_all(&home).unwrap();
    emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap();

    let started = Instant::now();
    let (rendered, objects) = render(&home, &dir);
    println!(
        "{dir}: `kubectl kustomize` rendered {} objects in {:?}",
        objects.len(),
        started.elapsed()
    );
    let rendered_path = home.join("rendered.yaml");
    std::fs::write(&rendered_path, &rendered).unwrap();
    // Namespaces another system owns (Argo CD's, kubefed's) exist where
    // that system runs; the kustomization only puts objects in them.
    create_foreign_namespaces(&home, &objects);

    let started = Instant::now();
    let out = run(&home, "sh", &["-c", command]);
    println!("{dir}: `{command}` took {:?}", started.elapsed());
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        stdout.lines().filter(|l| l.contains("serverside-applied")).count(),
        objects.len(),
        "one `serverside-applied` line per rendered object:\n{stdout}{}",
        String::from_utf8_lossy(&out.stderr)
    );

    // Every rendered object reads back as rendered.
    let started = Instant::now();
    let got = kubectl_json(&home, &["get", "-f", rendered_path.to_str().unwrap(), "-o", "json"]);
    let got: Vec<Value> = match got["items"].as_array() {
        Some(items) => items.clone(),
        None => vec![got],
    };
    let stored: BTreeMap<_, _> = got.iter().map(|o| (key(o), o)).collect();
    assert_eq!(stored.len(), objects.len(), "{dir}: objects read back");
    for wanted in &objects {
        let k = key(wanted);
        let object = stored.get(&k).unwrap_or_else(|| panic!("{dir}: {k:?} not read back"));
        let mut diffs = Vec::new();
        differences("", object, wanted, &mut diffs);
        assert!(diffs.is_empty(), "{dir}: {k:?} stored differs:\n{}", diffs.join("\n"));
    }
    println!(
        "{dir}: `kubectl get -f` read back {} objects in {:?}",
        got.len(),
        started.elapsed()
    );

    let object = |kind: &str, namespace: &str, name: &str| -> &Value {
        stored
            .get(&(kind.to_owned(), namespace.to_owned(), name.to_owned()))
            .unwrap_or_else(|| panic!("{dir}: no {kind} {namespace}/{name}"))
    };

    // The CRDs are established and their kinds served.
    let crds: Vec<&Value> = got.iter().filter(|o| o["kind"] == "CustomResourceDefinition").collect();
    assert_eq!(crds.len(), fedns_api::crd::all().len(), "{dir}: every fedns CRD");
    let mut served = Vec::new();
    for crd in &crds {
        let established = crd["status"]["conditions"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|c| c["type"] == "Established" && c["status"] == "True");
        assert!(established, "{dir}: CRD not Established: {crd}");
        served.push(crd["metadata"]["name"].as_str().unwrap().to_owned());
    }
    let started = Instant::now();
    let list = kubectl_json(&home, &["get", &served.join(","), "-A", "-o", "json"]);
    assert_eq!(list["items"], serde_json::json!([]), "{dir}: custom resources listed");
    println!(
        "{dir}: listed the {} custom resource kinds in {:?}",
        served.len(),
        started.elapsed()
    );

    // The objects fedns needs, with what each overlay changes.
    let ns = "fedns-system";
    let controller = object("Deployment", ns, "fedns-controller");
    let pod = &controller["spec"]["template"]["spec"];
    let args: Vec<&str> = pod["containers"][0]["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(args.first(), Some(&"controller"), "{dir}: {args:?}");
    keeps_zones_on_an_empty_dir(pod, &format!("{dir}: the controller"));
    assert_eq!(pod["serviceAccountName"], "fedns", "{dir}");
    let groups: Vec<&str> = object("ClusterRole", "", "fedns")["rules"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|r| r["apiGroups"].as_array().unwrap())
        .map(|g| g.as_str().unwrap())
        .collect();
    assert!(
        groups.contains(&"multiclusterdns.fedns.io") && groups.contains(&"core.fedns.io"),
        "{dir}: ClusterRole groups {groups:?}"
    );
    assert_eq!(
        object("ClusterRoleBinding", "", "fedns")["subjects"][0]["namespace"],
        ns,
        "{dir}"
    );
    object("Service", ns, "fedns-dns");
    object("Namespace", "", ns);
    let account = object("ServiceAccount", ns, "fedns");
    let role_arn = &account["metadata"]["annotations"]["eks.amazonaws.com/role-arn"];
    let dns_server = stored.get(&("Deployment".to_owned(), ns.to_owned(), "fedns-dns-server".to_owned()));
    match dir.as_str() {
        "deploy/overlays/route53" => {
            assert!(args.contains(&"--provider=route53"), "{dir}: {args:?}");
            assert!(role_arn.is_string(), "{dir}: IRSA annotation: {}", account["metadata"]);
            assert!(dns_server.is_none(), "{dir}: no dns-server replicas");
        }
        "deploy/overlays/google-clouddns" => {
            assert!(args.contains(&"--provider=google-clouddns"), "{dir}: {args:?}");
            assert!(
                account["metadata"]["annotations"]["iam.gke.io/gcp-service-account"].is_string(),
                "{dir}: Workload Identity annotation: {}",
                account["metadata"]
            );
            assert!(dns_server.is_none(), "{dir}: no dns-server replicas");
        }
        "deploy/overlays/dns-replicas" => {
            let replicas = dns_server.unwrap_or_else(|| panic!("{dir}: no dns-server replicas"));
            assert_eq!(
                replicas["spec"]["template"]["spec"]["containers"][0]["args"][0],
                "dns-server"
            );
            keeps_zones_on_an_empty_dir(&replicas["spec"]["template"]["spec"], &format!("{dir}: the dns-server"));
            assert!(!args.contains(&"--provider=route53"), "{dir}: {args:?}");
        }
        _ => {
            assert!(!args.contains(&"--provider=route53"), "{dir}: {args:?}");
            assert!(role_arn.is_null(), "{dir}: no IRSA annotation in the base");
            assert!(dns_server.is_none(), "{dir}: no dns-server replicas in the base");
        }
    }
    drop(emulator);
    let _ = std::fs::remove_dir_all(&home);
    println!("{dir}: installed and checked in {:?}", total.elapsed());
}

/// The install commands of docs/operations.md, exactly as written: one
/// per kustomization (the base and every overlay), each applied to a fresh
/// emulated cluster.
#[test]
fn documented_install_commands_apply_every_kustomization() {
    let root = repo_root();
    let commands = documented_install_commands(&root);
    let mut installed: Vec<String> = commands.iter().map(|c| kustomization_of(c)).collect();
    installed.sort();
    let mut expected = vec!["deploy/base".to_owned()];
    for entry in std::fs::read_dir(root.join("deploy/overlays")).unwrap() {
        let name = entry.unwrap().file_name().into_string().unwrap();
        expected.push(format!("deploy/overlays/{name}"));
    }
    expected.sort();
    assert_eq!(
        installed, expected,
        "{INSTALL_DOC} install commands: one per kustomization"
    );
    let version = Command::new("kubectl").args(["version", "--client"]).output();
    if let Ok(version) = version {
        println!(
            "{}",
            String::from_utf8_lossy(&version.stdout)
                .lines()
                .next()
                .unwrap_or_default()
        );
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let started = Instant::now();
    for command in &commands {
        install(&runtime, command);
    }
    println!("{} install commands in {:?}", commands.len(), started.elapsed());
}

/// The namespaces `objects` put something in but do not declare (an
/// engine's own namespace), created as the cluster fedns is installed in
/// already has them; returns their names.
fn create_foreign_namespaces(home: &Path, objects: &[Value]) -> Vec<String> {
    let declared: std::collections::BTreeSet<&str> = objects
        .iter()
        .filter(|o| o["kind"] == "Namespace")
        .filter_map(|o| o["metadata"]["name"].as_str())
        .collect();
    let foreign: std::collections::BTreeSet<String> = objects
        .iter()
        .filter_map(|o| o["metadata"]["namespace"].as_str())
        .filter(|ns| !declared.contains(ns))
        .map(str::to_owned)
        .collect();
    apply_namespaces(home, foreign.iter().map(String::as_str));
    foreign.into_iter().collect()
}

/// `kubectl delete -k` of any kustomization removes only what fedns
/// created: fedns's manifests own no namespace, CRD or object another
/// system owns. Each overlay is applied over the namespaces it puts
/// objects in but does not declare (Argo CD's, kubefed's), each holding a
/// stand-in object of that system; after the delete, those namespaces and
/// their objects remain. (The emulator deletes a namespace's objects with
/// it at once, so an overlay that owned one would lose the stand-in.)
#[test]
fn uninstalling_deletes_nothing_fedns_does_not_own() {
    let root = repo_root();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let mut checked = 0;
    for dir in every_kustomization(&root) {
        let emulator = runtime.block_on(Emulator::start()).unwrap();
        let home = std::env::temp_dir().join(format!(
            "fedns-uninstall-{}-{}",
            std::process::id(),
            emulator.addr().port()
        ));
        std::fs::create_dir_all(&home).unwrap();
        emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap();
        let (_, objects) = render(&home, &dir);
        // Namespaces fedns may own: its own, declared in its manifests.
        for object in objects.iter().filter(|o| o["kind"] == "Namespace") {
            let name = object["metadata"]["name"].as_str().unwrap_or_default();
            assert!(
                name.starts_with("fedns-"),
                "{dir}: declares Namespace {name}, which another system owns: `kubectl delete -k {dir}` would delete it with everything in it"
            );
        }
        if dir == "deploy/member-discovery/host" {
            // Installed into a host that already has fedns (its CRDs).
            run(&home, "kubectl", &["apply", "--server-side", "-k", "deploy/crds"]);
        }
        let foreign = create_foreign_namespaces(&home, &objects);
        let stand_ins: String = foreign
            .iter()
            .map(|ns| {
                format!(
                    "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned-by-another-system\n  namespace: {ns}\ndata: {{keep: \"yes\"}}\n"
                )
            })
            .collect();
        let stand_ins_path = home.join("stand-ins.yaml");
        if !foreign.is_empty() {
            std::fs::write(&stand_ins_path, &stand_ins).unwrap();
            run(
                &home,
                "kubectl",
                &["apply", "--server-side", "-f", stand_ins_path.to_str().unwrap()],
            );
        }
        run(&home, "kubectl", &["apply", "--server-side", "-k", &dir]);
        // --ignore-not-found: the emulator deletes a namespace's objects with it
        // at once (no Terminating phase), before kubectl reaches them.
        run(
            &home,
            "kubectl",
            &["delete", "-k", &dir, "--wait=false", "--ignore-not-found"],
        );
        for ns in &foreign {
            let kept = run(
                &home,
                "kubectl",
                &[
                    "get",
                    "configmap",
                    "owned-by-another-system",
                    "-n",
                    ns,
                    "-o",
                    "name",
                    "--ignore-not-found",
                ],
            );
            assert_eq!(
                String::from_utf8_lossy(&kept.stdout).trim(),
                "configmap/owned-by-another-system",
                "{dir}: `kubectl delete -k` removed namespace {ns}'s object"
            );
            checked += 1;
        }
        println!(
            "{dir}: uninstalled; {} namespace(s) of other systems kept with their objects",
            foreign.len()
        );
        drop(emulator);
        let _ = std::fs::remove_dir_all(&home);
    }
    assert!(
        checked >= 2,
        "the Argo CD and kubefed overlays put objects in their namespaces: {checked}"
    );
}

/// Every kustomization fedns ships: the base, every overlay, and the
/// member-side ones (discovery and its host part, the agent, the
/// controller's member identity).
fn every_kustomization(root: &Path) -> Vec<String> {
    let mut dirs = vec![
        "deploy/base".to_owned(),
        "deploy/member-discovery".to_owned(),
        "deploy/member-discovery/host".to_owned(),
        "deploy/agent".to_owned(),
        "deploy/member".to_owned(),
    ];
    let mut overlays: Vec<String> = std::fs::read_dir(root.join("deploy/overlays"))
        .unwrap()
        .map(|e| format!("deploy/overlays/{}", e.unwrap().file_name().into_string().unwrap()))
        .collect();
    overlays.sort();
    dirs.extend(overlays);
    dirs
}

/// `kubectl kustomize` of every kustomization prints nothing on stderr:
/// no deprecated field (`bases`, `patchesStrategicMerge`), no other
/// warning a user would read at every install.
#[test]
fn every_kustomization_renders_without_a_warning() {
    let root = repo_root();
    let home = std::env::temp_dir().join(format!("fedns-kustomize-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut dirs = every_kustomization(&root);
    dirs.extend(["deploy/crds".to_owned(), "deploy/monitoring".to_owned()]);
    for dir in &dirs {
        let out = run(&home, "kubectl", &["kustomize", dir]);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.trim().is_empty(), "`kubectl kustomize {dir}` warned:\n{stderr}");
    }
    println!("{} kustomizations render without a warning", dirs.len());
    let _ = std::fs::remove_dir_all(&home);
}

/// `kubectl apply --server-side --dry-run=server -k DIR` of every
/// kustomization: the API server admits every object (the CRDs through
/// the structural-schema rules, everything through validation and
/// defaulting) and stores nothing. Against a fresh emulator per
/// kustomization, and against the real API server named by
/// `FEDNS_REAL_KUBECONFIG` when set. The namespaces a kustomization
/// declares are created for real first: a dry run of a namespaced object
/// in a namespace that does not exist yet is refused (NotFound) by a real
/// server, and by the emulator alike.
#[test]
fn every_kustomization_passes_a_server_side_dry_run() {
    let root = repo_root();
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let real = std::env::var(crate::crds::REAL_KUBECONFIG).ok();
    if real.is_none() {
        println!("{} not set: the emulator only", crate::crds::REAL_KUBECONFIG);
    }
    for dir in every_kustomization(&root) {
        let emulator = runtime.block_on(Emulator::start()).unwrap();
        let mut targets = vec![("emulator".to_owned(), Some(&emulator))];
        if let Some(path) = &real {
            targets.push((format!("real API server ({path})"), None));
        }
        for (server, emulator) in targets {
            let home = std::env::temp_dir().join(format!(
                "fedns-dry-run-{}-{}",
                std::process::id(),
                crate::common::free_port()
            ));
            std::fs::create_dir_all(&home).unwrap();
            match (emulator, &real) {
                (Some(emulator), _) => emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap(),
                (None, Some(path)) => {
                    std::fs::copy(path, home.join("kubeconfig")).unwrap();
                }
                (None, None) => unreachable!("a real target only with its kubeconfig"),
            }
            let (rendered, objects) = render(&home, &dir);
            let namespaces: Vec<&str> = objects
                .iter()
                .filter_map(|o| o["metadata"]["namespace"].as_str())
                .collect::<std::collections::BTreeSet<_>>()
                .into_iter()
                .collect();
            apply_namespaces(&home, namespaces.iter().copied());
            let started = Instant::now();
            let out = run(
                &home,
                "kubectl",
                &["apply", "--server-side", "--dry-run=server", "-k", &dir],
            );
            let stdout = String::from_utf8_lossy(&out.stdout);
            let dry = stdout
                .lines()
                .filter(|l| l.contains("serverside-applied (server dry run)"))
                .count();
            assert_eq!(
                dry,
                objects.len(),
                "{server}: {dir}: one dry-run line per object:\n{stdout}"
            );
            if emulator.is_some() {
                // Nothing was stored: only the namespaces made above exist.
                let path = home.join("rendered.yaml");
                std::fs::write(&path, &rendered).unwrap();
                let left = run(
                    &home,
                    "kubectl",
                    &["get", "-f", path.to_str().unwrap(), "--ignore-not-found", "-o", "name"],
                );
                let left: Vec<String> = String::from_utf8_lossy(&left.stdout)
                    .lines()
                    .filter(|l| !l.starts_with("namespace/"))
                    .map(str::to_owned)
                    .collect();
                assert!(left.is_empty(), "{server}: {dir}: a dry run stored {left:?}");
            }
            println!(
                "{server}: {dir}: {} objects admitted by a server-side dry run in {:?}",
                objects.len(),
                started.elapsed()
            );
            let _ = std::fs::remove_dir_all(&home);
        }
    }
}

/// deploy/member-discovery (in a member) and its host/ part (in the host):
/// each renders, applies server-side to a fresh emulated cluster and reads
/// back as rendered; the replica runs `dns-server --member-cluster` with
/// its state on an emptyDir and NODE_NAME from the downward API; every
/// rule is read-only (least privilege: the member's Services,
/// EndpointSlices and Nodes; the host's Domains, DNSEndpoints,
/// ServiceDNSRecords and MemberClusters).
#[test]
fn member_discovery_kustomizations_apply_read_only() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    for (dir, resources) in [
        ("deploy/member-discovery", vec!["services", "nodes", "endpointslices"]),
        (
            "deploy/member-discovery/host",
            // ingressdnsrecords: `fedns explain --from-cluster` with this
            // identity explains a CNAME fallback's target from them;
            // namespaces: their labels, while a Domain admits by selector.
            vec![
                "domains",
                "dnsendpoints",
                "servicednsrecords",
                "ingressdnsrecords",
                "memberclusters",
                "namespaces",
            ],
        ),
    ] {
        let emulator = runtime.block_on(Emulator::start()).unwrap();
        let home = std::env::temp_dir().join(format!(
            "fedns-deploy-md-{}-{}",
            std::process::id(),
            emulator.addr().port()
        ));
        std::fs::create_dir_all(&home).unwrap();
        emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap();
        if dir.ends_with("host") {
            // The CRDs the rules name, and fedns's namespace, exist in a
            // host (fedns's own install created them).
            run(&home, "kubectl", &["apply", "--server-side", "-k", "deploy/crds"]);
            run(
                &home,
                "kubectl",
                &["apply", "--server-side", "-f", "deploy/member-discovery/namespace.yaml"],
            );
        }
        let (objects, stored) = apply_and_read_back(&home, dir);
        let mut named = Vec::new();
        for role in objects.iter().filter(|o| o["kind"] == "ClusterRole") {
            for rule in role["rules"].as_array().unwrap() {
                let verbs: Vec<&str> = rule["verbs"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|v| v.as_str().unwrap())
                    .collect();
                assert_eq!(verbs, ["get", "list", "watch"], "{dir}: read-only: {rule}");
                named.extend(
                    rule["resources"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .map(|r| r.as_str().unwrap().to_owned()),
                );
            }
        }
        named.sort();
        let mut wanted: Vec<String> = resources.iter().map(|r| r.to_string()).collect();
        wanted.sort();
        assert_eq!(named, wanted, "{dir}: exactly these resources");
        if !dir.ends_with("host") {
            let deployment = stored
                .get(&(
                    "Deployment".to_owned(),
                    "fedns-system".to_owned(),
                    "fedns-discovery".to_owned(),
                ))
                .expect("the replica Deployment");
            let pod = &deployment["spec"]["template"]["spec"];
            let args = pod["containers"][0]["args"].to_string();
            for arg in [
                "dns-server",
                "--member-cluster=",
                "--read-only",
                "--state-file=/var/lib/fedns/",
            ] {
                assert!(args.contains(arg), "{dir}: {arg} in {args}");
            }
            assert_eq!(pod["containers"][0]["env"][0]["name"], "NODE_NAME");
            assert!(
                pod["volumes"].to_string().contains("emptyDir"),
                "{dir}: state on an emptyDir"
            );
            assert!(stored.contains_key(&(
                "Service".to_owned(),
                "fedns-system".to_owned(),
                "fedns-discovery".to_owned()
            )));
        }
        println!("{dir}: {} objects applied and read back", objects.len());
        drop(emulator);
        let _ = std::fs::remove_dir_all(&home);
    }
}

/// deploy/agent (in a member): renders, applies server-side to a fresh
/// emulated cluster and reads back as rendered; the agent runs `fedns
/// agent` with no host credentials (no Secret, no volume); both Roles are
/// namespaced and touch ConfigMaps only (least privilege: the agent's own
/// target list and report, and what the controller's member credentials
/// need for them).
#[test]
fn agent_kustomization_applies_with_configmap_roles_only() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap();
    let dir = "deploy/agent";
    let emulator = runtime.block_on(Emulator::start()).unwrap();
    let home = std::env::temp_dir().join(format!(
        "fedns-deploy-agent-{}-{}",
        std::process::id(),
        emulator.addr().port()
    ));
    std::fs::create_dir_all(&home).unwrap();
    emulator.write_kubeconfig(&home.join("kubeconfig")).unwrap();
    let (objects, stored) = apply_and_read_back(&home, dir);
    assert!(
        !objects
            .iter()
            .any(|o| o["kind"] == "ClusterRole" || o["kind"] == "Secret"),
        "{dir}: namespaced Roles only, no credentials"
    );
    let roles: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "Role").collect();
    assert_eq!(roles.len(), 2, "the agent's Role and the controller's");
    for role in roles {
        for rule in role["rules"].as_array().unwrap() {
            assert_eq!(rule["resources"], serde_json::json!(["configmaps"]), "{dir}: {rule}");
            let verbs = rule["verbs"].to_string();
            assert!(!verbs.contains("delete") && !verbs.contains("\"*\""), "{dir}: {rule}");
        }
    }
    let deployment = stored
        .get(&(
            "Deployment".to_owned(),
            "fedns-system".to_owned(),
            "fedns-agent".to_owned(),
        ))
        .expect("the agent Deployment");
    let pod = &deployment["spec"]["template"]["spec"];
    assert_eq!(pod["containers"][0]["args"][0], "agent");
    assert!(pod["volumes"].is_null(), "no host kubeconfig mounted: {pod}");
    println!("{dir}: {} objects applied and read back", objects.len());
    drop(emulator);
    let _ = std::fs::remove_dir_all(&home);
}

/// Objects read back from an API server, by [`key`].
type Stored = BTreeMap<(String, String, String), Value>;

/// Renders kustomization `dir`, applies it server-side with the
/// kubeconfig in `home`, and checks every object reads back as rendered;
/// returns the rendered objects and the stored ones by [`key`].
fn apply_and_read_back(home: &Path, dir: &str) -> (Vec<Value>, Stored) {
    let (rendered, objects) = render(home, dir);
    let path = home.join("rendered.yaml");
    std::fs::write(&path, &rendered).unwrap();
    run(
        home,
        "kubectl",
        &["apply", "--server-side", "-f", path.to_str().unwrap()],
    );
    let got = kubectl_json(home, &["get", "-f", path.to_str().unwrap(), "-o", "json"]);
    let got: Vec<Value> = got["items"].as_array().cloned().unwrap_or_else(|| vec![got]);
    let stored: BTreeMap<_, _> = got.into_iter().map(|o| (key(&o), o)).collect();
    for wanted in &objects {
        let object = stored
            .get(&key(wanted))
            .unwrap_or_else(|| panic!("{dir}: {:?} not read back", key(wanted)));
        let mut diffs = Vec::new();
        differences("", object, wanted, &mut diffs);
        assert!(diffs.is_empty(), "{dir}: stored differs:\n{}", diffs.join("\n"));
    }
    (objects, stored)
}

/// `pod` (a pod spec) keeps its served zones (`--snapshot-file`) in a
/// folder mounted from an emptyDir: writable under a read-only root
/// filesystem, and kept across container restarts.
fn keeps_zones_on_an_empty_dir(pod: &Value, what: &str) {
    let container = &pod["containers"][0];
    let file = container["args"]
        .as_array()
        .into_iter()
        .flatten()
        .find_map(|a| a.as_str()?.strip_prefix("--snapshot-file="))
        .unwrap_or_else(|| panic!("{what}: no --snapshot-file in {}", container["args"]));
    let mount = container["volumeMounts"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|m| {
            m["mountPath"]
                .as_str()
                .is_some_and(|p| Path::new(file).parent() == Some(Path::new(p)))
        })
        .unwrap_or_else(|| panic!("{what}: nothing mounted where {file} is"));
    let volume = pod["volumes"]
        .as_array()
        .into_iter()
        .flatten()
        .find(|v| v["name"] == mount["name"])
        .unwrap_or_else(|| panic!("{what}: no volume {}", mount["name"]));
    assert!(
        volume["emptyDir"].is_object(),
        "{what}: {file} on {volume}, not an emptyDir"
    );
    assert_ne!(mount["readOnly"], true, "{what}: {file} mounted read-only");
}

/// The user `deploy/Dockerfile`'s final stage runs as: its last `USER`
/// line, which must be numeric (`UID:GID`): a kubelet verifies
/// `runAsNonRoot` only against a numeric user.
fn dockerfile_user(root: &Path) -> (u64, u64) {
    let text = std::fs::read_to_string(root.join("deploy/Dockerfile")).unwrap();
    let user = text
        .lines()
        .rev()
        .find_map(|l| l.trim().strip_prefix("USER "))
        .expect("deploy/Dockerfile has a USER line");
    let (uid, gid) = user.trim().split_once(':').unwrap_or((user.trim(), user.trim()));
    let number = |s: &str| {
        s.parse::<u64>()
            .unwrap_or_else(|_| panic!("deploy/Dockerfile: USER {user} is not numeric (UID:GID)"))
    };
    (number(uid), number(gid))
}

/// Volume types Pod Security "restricted" admits (pod-security-admission,
/// policy/check_restrictedVolumes.go).
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// What Pod Security "restricted" (version latest) refuses in `pod` (a
/// pod spec), one line each, after the checks of
/// k8s.io/pod-security-admission/policy (baseline and restricted).
fn restricted_violations(pod: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for field in ["hostNetwork", "hostPID", "hostIPC"] {
        if pod[field] == true {
            out.push(format!("{field}: true"));
        }
    }
    let pod_sc = &pod["securityContext"];
    if pod_sc["sysctls"].as_array().is_some_and(|s| !s.is_empty()) {
        out.push("sysctls set".into());
    }
    for volume in pod["volumes"].as_array().into_iter().flatten() {
        let kind = volume
            .as_object()
            .unwrap()
            .keys()
            .find(|k| *k != "name")
            .cloned()
            .unwrap_or_default();
        if !RESTRICTED_VOLUMES.contains(&kind.as_str()) {
            out.push(format!("volume {} of type {kind}", volume["name"]));
        }
    }
    let containers = pod["containers"]
        .as_array()
        .into_iter()
        .chain(pod["initContainers"].as_array())
        .flatten();
    for c in containers {
        let name = c["name"].as_str().unwrap_or_default();
        let sc = &c["securityContext"];
        if sc["privileged"] == true {
            out.push(format!("{name}: privileged"));
        }
        if sc["allowPrivilegeEscalation"] != false {
            out.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        let non_root = sc["runAsNonRoot"] == true || (sc["runAsNonRoot"].is_null() && pod_sc["runAsNonRoot"] == true);
        if !non_root {
            out.push(format!("{name}: runAsNonRoot is not true (pod or container)"));
        }
        if sc["runAsUser"] == 0 || (sc["runAsUser"].is_null() && pod_sc["runAsUser"] == 0) {
            out.push(format!("{name}: runAsUser 0"));
        }
        let seccomp = if sc["seccompProfile"].is_null() {
            &pod_sc["seccompProfile"]
        } else {
            &sc["seccompProfile"]
        };
        if !matches!(seccomp["type"].as_str(), Some("RuntimeDefault" | "Localhost")) {
            out.push(format!(
                "{name}: seccompProfile.type is not RuntimeDefault or Localhost"
            ));
        }
        let drops = sc["capabilities"]["drop"].as_array().cloned().unwrap_or_default();
        if !drops.iter().any(|d| d == "ALL") {
            out.push(format!("{name}: capabilities.drop lacks ALL"));
        }
        for add in sc["capabilities"]["add"].as_array().into_iter().flatten() {
            if add != "NET_BIND_SERVICE" {
                out.push(format!("{name}: capability {add} added"));
            }
        }
        for port in c["ports"].as_array().into_iter().flatten() {
            if port["hostPort"].as_u64().is_some_and(|p| p != 0) {
                out.push(format!("{name}: hostPort {}", port["hostPort"]));
            }
        }
        if !sc["procMount"].is_null() && sc["procMount"] != "Default" {
            out.push(format!("{name}: procMount {}", sc["procMount"]));
        }
        if let Some(kind) = sc["appArmorProfile"]["type"].as_str() {
            if kind == "Unconfined" {
                out.push(format!("{name}: appArmorProfile Unconfined"));
            }
        }
    }
    out
}

/// Every fedns workload in every kustomization starts under Pod Security
/// "restricted", as the image's numeric user, from an image users can
/// get: each pod template meets the restricted rules; runs as the
/// Dockerfile's USER (runAsUser, runAsGroup, fsGroup); has a read-only
/// root; names `ghcr.io/fedns/fedns:<workspace version>` with
/// `imagePullPolicy: IfNotPresent`; has memory requests and limits. Pods
/// that serve DNS drain on SIGTERM within their grace period, spread over
/// nodes, and have a PodDisruptionBudget when they run more than one
/// replica.
#[test]
fn every_pod_meets_pod_security_restricted_and_runs_the_image_user() {
    let root = repo_root();
    let (uid, gid) = dockerfile_user(&root);
    let image = format!("ghcr.io/fedns/fedns:{}", env!("CARGO_PKG_VERSION"));
    let home = std::env::temp_dir().join(format!("fedns-pod-security-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut checked = 0;
    for dir in every_kustomization(&root) {
        let (_, objects) = render(&home, &dir);
        let budgets: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "PodDisruptionBudget").collect();
        for workload in objects.iter().filter(|o| {
            matches!(
                o["kind"].as_str(),
                Some("Deployment" | "DaemonSet" | "StatefulSet" | "Job" | "CronJob" | "Pod")
            )
        }) {
            let what = format!("{dir}: {} {}", workload["kind"], workload["metadata"]["name"]);
            let template = &workload["spec"]["template"];
            let pod = &template["spec"];
            let violations = restricted_violations(pod);
            assert!(
                violations.is_empty(),
                "{what} violates restricted:\n{}",
                violations.join("\n")
            );
            let sc = &pod["securityContext"];
            assert_eq!(sc["runAsUser"], uid, "{what}: runAsUser is the Dockerfile's USER");
            assert_eq!(sc["runAsGroup"], gid, "{what}: runAsGroup is the Dockerfile's group");
            assert_eq!(sc["fsGroup"], gid, "{what}: fsGroup");
            for c in pod["containers"].as_array().unwrap() {
                assert_eq!(
                    c["image"],
                    image.as_str(),
                    "{what}: the image carries the workspace version"
                );
                assert_eq!(c["imagePullPolicy"], "IfNotPresent", "{what}");
                assert_eq!(c["securityContext"]["readOnlyRootFilesystem"], true, "{what}");
                assert!(
                    c["resources"]["requests"]["memory"].is_string() && c["resources"]["limits"]["memory"].is_string(),
                    "{what}: memory requests and limits"
                );
                let args: Vec<&str> = c["args"].as_array().unwrap().iter().filter_map(Value::as_str).collect();
                if !matches!(args.first(), Some(&"controller" | &"dns-server")) {
                    continue;
                }
                let drain: u64 = args
                    .iter()
                    .find_map(|a| a.strip_prefix("--shutdown-drain="))
                    .unwrap_or_else(|| panic!("{what}: serves DNS without --shutdown-drain"))
                    .parse()
                    .unwrap();
                let grace = pod["terminationGracePeriodSeconds"].as_u64().unwrap_or(30);
                assert!(
                    drain >= 5 && grace >= drain + 10,
                    "{what}: drain {drain} s (≥ 5: kube-proxy must see the endpoint go) within a grace period of {grace} s (drain + 10 to shut down)"
                );
                let probe = &c["readinessProbe"];
                let turns_unready =
                    probe["periodSeconds"].as_u64().unwrap_or(10) * probe["failureThreshold"].as_u64().unwrap_or(3);
                assert!(
                    turns_unready * 2 <= drain,
                    "{what}: the readiness probe turns a draining pod not-serving after {turns_unready} s, more than half the drain ({drain} s): kube-proxy keeps UDP conntrack entries to it until it exits"
                );
                let spread = pod["topologySpreadConstraints"].to_string();
                assert!(spread.contains("kubernetes.io/hostname"), "{what}: spread over nodes");
                assert!(
                    spread.contains("topology.kubernetes.io/zone"),
                    "{what}: spread over zones"
                );
                if workload["spec"]["replicas"].as_u64().unwrap_or(1) > 1 {
                    let labels = &template["metadata"]["labels"];
                    let budget = budgets.iter().find(|b| {
                        b["spec"]["selector"]["matchLabels"]
                            .as_object()
                            .is_some_and(|m| m.iter().all(|(k, v)| &labels[k] == v))
                    });
                    let budget = budget.unwrap_or_else(|| panic!("{what}: no PodDisruptionBudget selects its pods"));
                    assert_eq!(budget["spec"]["maxUnavailable"], 1, "{what}");
                }
            }
            checked += 1;
        }
    }
    println!("{checked} workloads meet Pod Security restricted as user {uid}:{gid}, image {image}");
    assert!(
        checked >= 4,
        "the controller, dns-server replicas, agent and member-side replicas"
    );
    let _ = std::fs::remove_dir_all(&home);
}

/// One rule as docs/operations.md's RBAC table writes it and as the
/// manifests hold it: (role, API group, resources, resource names, verbs),
/// lists sorted.
type RuleRow = (String, String, Vec<String>, Vec<String>, Vec<String>);

/// The backticked words of `text`.
fn backticked(text: &str) -> Vec<String> {
    text.split('`').skip(1).step_by(2).map(str::to_owned).collect()
}

/// The rows of the table under `## RBAC` in docs/operations.md.
fn documented_rbac(root: &Path) -> Vec<RuleRow> {
    let doc = std::fs::read_to_string(root.join("docs/operations.md")).unwrap();
    let section = doc
        .split_once("\n## RBAC\n")
        .expect("docs/operations.md has `## RBAC`")
        .1;
    let section = section.split("\n## ").next().unwrap();
    let mut rows = Vec::new();
    for line in section
        .lines()
        .filter(|l| l.starts_with("| ") && !l.starts_with("| role"))
    {
        let cells: Vec<&str> = line.trim_matches('|').split(" | ").map(str::trim).collect();
        assert_eq!(cells.len(), 6, "docs/operations.md RBAC row: {line}");
        let role = format!(
            "{} {}",
            cells[0].split_whitespace().next().unwrap(),
            backticked(cells[0])[0]
        );
        let group = match cells[2] {
            "core" => String::new(),
            "non-resource" => "non-resource".to_owned(),
            other => backticked(other).concat(),
        };
        let (resources, names) = match cells[3].split_once(" named ") {
            Some((resources, names)) => (backticked(resources), backticked(names)),
            None => (backticked(cells[3]), Vec::new()),
        };
        let verbs = cells[4].split(", ").map(str::to_owned).collect();
        rows.push(normalised((role, group, resources, names, verbs)));
    }
    rows.sort();
    rows
}

fn normalised(mut row: RuleRow) -> RuleRow {
    row.2.sort();
    row.3.sort();
    row.4.sort();
    row
}

/// docs/operations.md's RBAC table is the rules of the Roles and
/// ClusterRoles of deploy/base, deploy/member, deploy/agent and
/// deploy/member-discovery (with its host part), row for row.
#[test]
fn the_documented_rbac_table_is_the_manifests() {
    let root = repo_root();
    let home = std::env::temp_dir().join(format!("fedns-rbac-doc-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut manifests = Vec::new();
    for dir in [
        "deploy/base",
        "deploy/member",
        "deploy/agent",
        "deploy/member-discovery",
        "deploy/member-discovery/host",
    ] {
        let (_, objects) = render(&home, dir);
        for role in objects
            .iter()
            .filter(|o| o["kind"] == "Role" || o["kind"] == "ClusterRole")
        {
            let name = format!(
                "{} {}",
                role["kind"].as_str().unwrap(),
                role["metadata"]["name"].as_str().unwrap()
            );
            for rule in role["rules"].as_array().unwrap() {
                let strings = |key: &str| -> Vec<String> {
                    rule[key]
                        .as_array()
                        .into_iter()
                        .flatten()
                        .map(|v| v.as_str().unwrap().to_owned())
                        .collect()
                };
                let row = if rule["nonResourceURLs"].is_array() {
                    (
                        name.clone(),
                        "non-resource".to_owned(),
                        strings("nonResourceURLs"),
                        Vec::new(),
                        strings("verbs"),
                    )
                } else {
                    let groups = strings("apiGroups");
                    assert_eq!(groups.len(), 1, "{dir}: {name}: one API group per rule: {rule}");
                    (
                        name.clone(),
                        groups[0].clone(),
                        strings("resources"),
                        strings("resourceNames"),
                        strings("verbs"),
                    )
                };
                manifests.push(normalised(row));
            }
        }
    }
    manifests.sort();
    let documented = documented_rbac(&root);
    let missing: Vec<&RuleRow> = manifests.iter().filter(|r| !documented.contains(r)).collect();
    let extra: Vec<&RuleRow> = documented.iter().filter(|r| !manifests.contains(r)).collect();
    assert!(
        missing.is_empty() && extra.is_empty(),
        "docs/operations.md's RBAC table differs from the manifests:\nnot documented: {missing:#?}\nnot in the manifests: {extra:#?}"
    );
    println!("{} RBAC rules documented as the manifests hold them", manifests.len());
    let _ = std::fs::remove_dir_all(&home);
}

/// docs/operations.md counts the CRDs `deploy/crds` holds ("the six
/// CRDs"), in words, as the binary generates them.
#[test]
fn the_documented_crd_count_is_the_crds() {
    const WORDS: [&str; 13] = [
        "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven", "twelve",
    ];
    let doc = std::fs::read_to_string(repo_root().join("docs/operations.md")).unwrap();
    let count = fedns_api::crd::all().len();
    let said: Vec<&str> = doc
        .split("the ")
        .skip(1)
        .filter_map(|rest| rest.split_once(" CRDs").map(|(word, _)| word))
        .filter(|word| WORDS.contains(word))
        .collect();
    assert!(!said.is_empty(), "docs/operations.md says how many CRDs the base holds");
    for word in said {
        assert_eq!(
            word, WORDS[count],
            "docs/operations.md: \"the {word} CRDs\", but there are {count}"
        );
    }
}

/// Every image tag the manifests and the docs write (`…/fedns:X.Y.Z`) is
/// the workspace version, so a release bumps them with `Cargo.toml`.
#[test]
fn image_tags_are_the_workspace_version() {
    let root = repo_root();
    let version = env!("CARGO_PKG_VERSION");
    let mut files = vec![root.join("README.md"), root.join("deploy/Dockerfile")];
    let mut dirs = vec![root.join("docs"), root.join("deploy")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "md" || e == "yaml") {
                files.push(path);
            }
        }
    }
    let mut tags = 0;
    for file in &files {
        let text = std::fs::read_to_string(file).unwrap();
        for (at, _) in text.match_indices("/fedns:") {
            let tag: String = text[at + "/fedns:".len()..]
                .chars()
                .take_while(|c| c.is_ascii_alphanumeric() || *c == '.' || *c == '-')
                .collect();
            if tag.starts_with(|c: char| c.is_ascii_digit()) || tag == "latest" {
                assert_eq!(tag, version, "{}: image tag {tag}", file.display());
                tags += 1;
            }
        }
    }
    println!("{tags} image tags are {version}");
    assert!(tags >= 5, "the manifests name the image: {tags}");
}

/// Every kustomization that runs pods ships NetworkPolicies for them: a
/// default deny of ingress in their namespace, and for each pod, policies
/// admitting exactly the ports its containers serve (DNS from anywhere only
/// for the pods serving the public, labelled `fedns.io/dns`; every other
/// port from pods of the cluster only).
#[test]
fn every_pod_is_reachable_only_on_its_own_ports() {
    let root = repo_root();
    let home = std::env::temp_dir().join(format!("fedns-network-policy-{}", std::process::id()));
    std::fs::create_dir_all(&home).unwrap();
    let mut checked = 0;
    for dir in every_kustomization(&root) {
        let (_, objects) = render(&home, &dir);
        let policies: Vec<&Value> = objects.iter().filter(|o| o["kind"] == "NetworkPolicy").collect();
        let selects = |policy: &Value, labels: &Value| -> bool {
            policy["spec"]["podSelector"]["matchLabels"]
                .as_object()
                .is_none_or(|wanted| wanted.iter().all(|(k, v)| labels[k] == *v))
        };
        for workload in objects
            .iter()
            .filter(|o| matches!(o["kind"].as_str(), Some("Deployment" | "DaemonSet" | "StatefulSet")))
        {
            let what = format!("{dir}: {} {}", workload["kind"], workload["metadata"]["name"]);
            let namespace = &workload["metadata"]["namespace"];
            let labels = &workload["spec"]["template"]["metadata"]["labels"];
            let mine: Vec<&&Value> = policies
                .iter()
                .filter(|p| p["metadata"]["namespace"] == *namespace && selects(p, labels))
                .collect();
            assert!(
                mine.iter().any(|p| p["spec"]["podSelector"] == serde_json::json!({})
                    && p["spec"]["policyTypes"] == serde_json::json!(["Ingress"])
                    && p["spec"]["ingress"].is_null()),
                "{what}: no default deny of ingress in its namespace"
            );
            let mut served: Vec<(u64, String)> = Vec::new();
            for c in workload["spec"]["template"]["spec"]["containers"].as_array().unwrap() {
                for port in c["ports"].as_array().into_iter().flatten() {
                    served.push((
                        port["containerPort"].as_u64().unwrap(),
                        port["protocol"].as_str().unwrap_or("TCP").to_owned(),
                    ));
                }
            }
            let mut admitted: Vec<(u64, String)> = Vec::new();
            for policy in &mine {
                for rule in policy["spec"]["ingress"].as_array().into_iter().flatten() {
                    let from_anywhere = rule["from"].is_null();
                    for port in rule["ports"].as_array().into_iter().flatten() {
                        let entry = (
                            port["port"].as_u64().unwrap(),
                            port["protocol"].as_str().unwrap_or("TCP").to_owned(),
                        );
                        assert!(
                            served.contains(&entry),
                            "{what}: {} admits {entry:?}, which the pod does not serve",
                            policy["metadata"]["name"]
                        );
                        if from_anywhere {
                            assert!(
                                labels["fedns.io/dns"] == "true" && entry.0 == 5353,
                                "{what}: {} admits {entry:?} from anywhere",
                                policy["metadata"]["name"]
                            );
                        } else {
                            for source in rule["from"].as_array().unwrap() {
                                assert!(
                                    source["ipBlock"].is_null(),
                                    "{what}: {} admits addresses outside the cluster",
                                    policy["metadata"]["name"]
                                );
                            }
                        }
                        admitted.push(entry);
                    }
                }
            }
            for port in &served {
                assert!(
                    admitted.contains(port),
                    "{what}: {port:?} is served but no policy admits it"
                );
            }
            checked += 1;
        }
    }
    println!("{checked} workloads checked");
    assert!(
        checked >= 4,
        "the controller, dns-server, agent and member-side replicas"
    );
    let _ = std::fs::remove_dir_all(home);
}
