//! The `coredns-etcd` provider: publishes RRsets in the format CoreDNS's
//! etcd plugin reads (etcd v3, <https://coredns.io/plugins/etcd/>).
//!
//! * A name's keys live under its labels reversed:
//!   `nginx.ns.myfed.svc.example.com` → `/skydns/com/example/svc/myfed/ns/nginx/`;
//! * one key per target, with a stable id: `<path>/fedns-<16 hex digits>`;
//!   except a name whose only record is a CNAME, which lives at `<path>`
//!   itself: the plugin looks a CNAME question up at exactly the name's
//!   key, and an address question falls back to that key when nothing lies
//!   below it, so both are answered;
//! * TXT data is one `text` (the strings joined; the plugin splits it at
//!   255 octets itself);
//! * the value is the plugin's JSON (`host`, `ttl`; `text` for TXT;
//!   `port`/`priority`/`weight` for SRV; `priority`/`mail` for MX) plus
//!   `owner` = the owner id, which CoreDNS ignores and fedns uses to never
//!   touch keys it did not write;
//! * each name's keys change in one etcd transaction, guarded so that it
//!   applies only if none of those keys changed since they were read (a
//!   concurrent writer makes it fail, and the next sync reads again);
//!   nothing is written when nothing changed.
//!
//! etcd is reached through its JSON gateway ([`etcd`], inside this folder).
//!
//! CoreDNS answers a name with every record *below* its path too, so a
//! published name nested under another published name of the same
//! namespace is reported; one with names of other namespaces below it is
//! a conflict and not written (the names below stay: they are the other
//! namespaces' own, and the planning rules already keep one namespace's
//! names from nesting under another's); a foreign key at or below a
//! desired name is a conflict.
//!
//! Layer: a provider. It may use `plan` (desired RRsets, the planner, the
//! TXT format) and the `provider` contract; never `source` nor another
//! provider (`embedded`, `route53`).

pub mod etcd;

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use fedns_api::RecordType;
use serde_json::{json, Value};
use tokio::sync::Mutex;

use futures::future::BoxFuture;

pub use self::etcd::EtcdTls;
use self::etcd::{EtcdClient, EtcdClientConfig, TxnGuard, TxnOp};
use crate::plan::desired::{DesiredRRset, DesiredZones};
use crate::plan::planner::{self, CurrentRRset};
use crate::provider::{AppliedCache, ErrorScope, Provider, ProviderMetrics, SyncMode, SyncReport};

/// The provider's name in conditions, metrics and logs.
pub const NAME: &str = "coredns-etcd";

/// Connection and layout settings.
#[derive(Debug, Clone)]
pub struct EtcdConfig {
    /// Client URLs, e.g. `http://127.0.0.1:2379`.
    pub endpoints: Vec<String>,
    /// Key prefix CoreDNS is configured with (`path` in the Corefile).
    pub prefix: String,
    /// Owner id written into every value.
    pub owner_id: String,
    /// TLS settings for `https://` endpoints; None: the system's roots.
    pub tls: Option<EtcdTls>,
    /// etcd auth user name and password; None when etcd's auth is off.
    pub credentials: Option<(String, String)>,
    /// Connect and request timeout.
    pub timeout: Duration,
}

impl Default for EtcdConfig {
    fn default() -> Self {
        EtcdConfig {
            endpoints: vec!["http://127.0.0.1:2379".into()],
            prefix: "/skydns".into(),
            owner_id: "fedns".into(),
            tls: None,
            credentials: None,
            timeout: Duration::from_secs(5),
        }
    }
}

/// The provider; one etcd client, built lazily (a settings error is
/// reported on every sync until fixed) and rebuilt after failures.
pub struct CorednsEtcd {
    config: EtcdConfig,
    client: Mutex<Option<EtcdClient>>,
    applied: AppliedCache,
    metrics: ProviderMetrics,
}

impl std::fmt::Debug for CorednsEtcd {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CorednsEtcd")
            .field("endpoints", &self.config.endpoints)
            .finish_non_exhaustive()
    }
}

/// FNV-1a (64-bit): a fixed, dependency-free hash, so key ids stay the
/// same across releases and machines.
fn fnv1a(bytes: &[u8]) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    for byte in bytes {
        hash ^= u64::from(*byte);
        hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
    }
    hash
}

impl CorednsEtcd {
    /// A provider for `config`, counting into `metrics` (no connection yet).
    pub fn new(config: EtcdConfig, metrics: ProviderMetrics) -> Self {
        CorednsEtcd {
            config,
            client: Mutex::new(None),
            applied: AppliedCache::default(),
            metrics,
        }
    }

    /// The metrics this provider counts into.
    pub fn metrics(&self) -> &ProviderMetrics {
        &self.metrics
    }

    /// The key path of a name: the prefix, then its labels reversed.
    pub fn name_path(&self, name: &str) -> String {
        let mut path = self.config.prefix.trim_end_matches('/').to_owned();
        for label in name.trim_end_matches('.').split('.').rev() {
            path.push('/');
            path.push_str(&label.to_ascii_lowercase());
        }
        path
    }

    /// The key of one target of `name`: `<path>/fedns-<id>`, the id a hash
    /// of the type and target, so the same record keeps the same key.
    pub fn record_key(&self, name: &str, record_type: RecordType, target: &str) -> String {
        format!(
            "{}/fedns-{:016x}",
            self.name_path(name),
            fnv1a(format!("{record_type} {target}").as_bytes())
        )
    }

    /// The keys and values etcd holds for `name` with `rrsets` (its RRsets
    /// in etcd form): one key per target below the name, or, for a name
    /// whose only record is one CNAME, the name's own key.
    ///
    /// # Errors
    /// A record the etcd plugin cannot express.
    fn wanted_keys(&self, name: &str, rrsets: &[&DesiredRRset]) -> Result<BTreeMap<String, String>, String> {
        let mut want = BTreeMap::new();
        if let [only] = rrsets {
            if only.record_type == RecordType::CNAME && only.targets.len() == 1 {
                let value = self.record_value(RecordType::CNAME, &only.targets[0], only.ttl)?;
                want.insert(self.name_path(name), value);
                return Ok(want);
            }
        }
        for rrset in rrsets {
            for target in &rrset.targets {
                let value = self.record_value(rrset.record_type, target, rrset.ttl)?;
                want.insert(self.record_key(name, rrset.record_type, target), value);
            }
        }
        Ok(want)
    }

    /// The value CoreDNS reads for one target (plus `owner`).
    ///
    /// # Errors
    /// A type the etcd plugin cannot express, or a malformed target.
    pub fn record_value(&self, record_type: RecordType, target: &str, ttl: u32) -> Result<String, String> {
        let owner = &self.config.owner_id;
        let fields: Vec<&str> = target.split_whitespace().collect();
        let number = |s: &str| {
            s.parse::<u16>()
                .map_err(|_| format!("{record_type} target {target:?}: {s:?} is not a number"))
        };
        let value = match record_type {
            RecordType::A | RecordType::AAAA | RecordType::CNAME => json!({"host": target, "ttl": ttl, "owner": owner}),
            // The plugin keeps one text and splits it at 255 octets itself.
            RecordType::TXT => json!({"text": crate::plan::txt::concatenated(target), "ttl": ttl, "owner": owner}),
            RecordType::SRV => match fields.as_slice() {
                [priority, weight, port, host] => json!({
                    "host": host, "port": number(port)?, "priority": number(priority)?, "weight": number(weight)?,
                    "ttl": ttl, "owner": owner,
                }),
                _ => return Err(format!("SRV target {target:?} is not \"priority weight port host\"")),
            },
            RecordType::MX => match fields.as_slice() {
                [preference, host] => {
                    json!({"host": host, "priority": number(preference)?, "mail": true, "ttl": ttl, "owner": owner})
                }
                _ => return Err(format!("MX target {target:?} is not \"preference host\"")),
            },
            other => return Err(format!("the CoreDNS etcd plugin cannot serve {other} records")),
        };
        Ok(value.to_string())
    }

    async fn client(&self) -> Result<EtcdClient, String> {
        let mut guard = self.client.lock().await;
        if let Some(client) = guard.as_ref() {
            return Ok(client.clone());
        }
        let client = EtcdClient::new(&EtcdClientConfig {
            endpoints: self.config.endpoints.clone(),
            tls: self.config.tls.clone(),
            credentials: self.config.credentials.clone(),
            timeout: self.config.timeout,
        })
        .map_err(|e| e.to_string())?;
        *guard = Some(client.clone());
        Ok(client)
    }

    async fn forget_client(&self) {
        *self.client.lock().await = None;
    }

    /// Every key under the zone: ours grouped into RRsets, the paths of
    /// keys with another (or no) owner, and our keys by name with the
    /// revision they were read at.
    async fn read_zone(&self, client: &EtcdClient, zone: &str) -> Result<ZoneKeys, String> {
        let zone_path = format!("{}/", self.name_path(zone));
        let response = client.range_prefix(&zone_path).await;
        self.metrics.api_call(NAME, "get", response.is_ok());
        let response = response.map_err(|e| format!("reading {zone_path}: {e}"))?;
        let mut ours: BTreeMap<(String, RecordType), CurrentRRset> = BTreeMap::new();
        let mut foreign: BTreeMap<String, String> = BTreeMap::new();
        let mut owned_keys: BTreeMap<String, BTreeMap<String, i64>> = BTreeMap::new();
        for kv in response {
            let key = kv.key;
            let value: Value = serde_json::from_slice(&kv.value).unwrap_or(Value::Null);
            let owner = value.get("owner").and_then(Value::as_str).map(str::to_owned);
            if owner.as_deref() != Some(self.config.owner_id.as_str()) {
                foreign.insert(key, owner.unwrap_or_else(|| "no owner".into()));
                continue;
            }
            // `<path>/fedns-<id>` is one target of the name at <path>; any
            // other key of ours is a CNAME at the name's own key.
            let name = match key.rsplit_once('/') {
                Some((path, id)) if is_record_id(id) => self.path_name(path),
                _ => self.path_name(&key),
            };
            let (record_type, target) = decode(&value);
            let ttl = value.get("ttl").and_then(Value::as_u64).unwrap_or(0) as u32;
            owned_keys.entry(name.clone()).or_default().insert(key, kv.mod_revision);
            let entry = ours.entry((name.clone(), record_type)).or_insert(CurrentRRset {
                name,
                record_type,
                ttl,
                targets: Vec::new(),
                owner: Some(self.config.owner_id.clone()),
                set_identifier: String::new(),
                policy: String::new(),
            });
            entry.targets.push(target);
            entry.targets.sort();
            entry.ttl = entry.ttl.min(ttl);
        }
        Ok((ours.into_values().collect(), foreign, owned_keys))
    }

    /// `/skydns/com/example/www` → `www.example.com`.
    fn path_name(&self, path: &str) -> String {
        let prefix = self.config.prefix.trim_end_matches('/');
        let rest = path.strip_prefix(prefix).unwrap_or(path).trim_start_matches('/');
        let mut labels: Vec<&str> = rest.split('/').filter(|l| !l.is_empty()).collect();
        labels.reverse();
        labels.join(".")
    }

    /// Brings etcd in line with `desired`, zone by zone. A
    /// [`SyncMode::Changed`] sync skips zones whose desired RRsets did not
    /// change since their last clean sync.
    pub async fn sync_all(&self, desired: &DesiredZones, mode: SyncMode) -> SyncReport {
        let started = std::time::Instant::now();
        let mut report = SyncReport::default();
        let mut apexes = Vec::new();
        let mut client = None;
        for zone in &desired.zones {
            let apex = zone.content.apex.to_ascii().trim_end_matches('.').to_owned();
            apexes.push(apex.clone());
            if self.applied.replay(&apex, &zone.rrsets, mode, &mut report) {
                continue;
            }
            if client.is_none() {
                match self.client().await {
                    Ok(c) => client = Some(c),
                    Err(e) => {
                        report.errors.push((ErrorScope::Provider, e));
                        self.applied.clear();
                        break;
                    }
                }
            }
            let Some(client) = client.as_ref() else { break };
            let mut outcome = SyncReport::default();
            match self.sync_zone(client, &apex, &zone.rrsets, &mut outcome).await {
                Ok(()) => self.applied.applied(&apex, &zone.rrsets, &outcome),
                Err(e) => {
                    outcome.errors.push((ErrorScope::Zone(apex.clone()), e));
                    self.applied.forget(&apex);
                    // A failed call may mean etcd restarted: reconnect next time.
                    self.forget_client().await;
                }
            }
            report.merge(outcome);
        }
        self.applied.retain(&apexes);
        self.metrics.sync_duration(NAME, started);
        report
    }

    async fn sync_zone(
        &self,
        client: &EtcdClient,
        zone: &str,
        desired: &[DesiredRRset],
        report: &mut SyncReport,
    ) -> Result<(), String> {
        let (current, foreign, owned_keys) = self.read_zone(client, zone).await?;
        // The etcd plugin has no traffic policies: Weighted and Nearest
        // names are published with every member (Failover RRsets already
        // hold the active role only).
        for rrset in desired {
            if let Some(why) = rrset.answer_limit_lost("CoreDNS's etcd plugin") {
                report.downgraded.push((rrset.name.clone(), rrset.record_type, why));
            }
            if let Some(routing) = rrset
                .routing
                .as_ref()
                .filter(|r| r.policy != fedns_api::RoutingPolicy::Failover)
            {
                report.downgraded.push((
                    rrset.name.clone(),
                    rrset.record_type,
                    format!(
                        "CoreDNS's etcd plugin has no traffic policies: {} published as All ({} members in every answer)",
                        routing.policy.as_str(),
                        routing.members.len()
                    ),
                ));
            }
        }
        // A foreign key at or below a desired name would be answered with it.
        let mut allowed = Vec::new();
        for rrset in desired {
            let path = self.name_path(&rrset.name);
            let holder = foreign
                .iter()
                .find(|(key, _)| key.as_str() == path || key.starts_with(&format!("{path}/")))
                .map(|(_, owner)| owner.clone());
            match holder {
                Some(holder) => report.conflicts.push((rrset.clone(), holder)),
                None => allowed.push(rrset.clone()),
            }
        }
        // Published names nested under other published names. CoreDNS
        // answers the outer name with the inner one's records too: when
        // they come from different namespaces, the outer name is not
        // written (a conflict), so no namespace's answer carries another's
        // records; within one namespace it is reported.
        let mut namespaces: BTreeMap<&str, BTreeSet<&str>> = BTreeMap::new();
        for rrset in &allowed {
            let entry = namespaces.entry(rrset.name.as_str()).or_default();
            entry.extend(
                rrset
                    .sources
                    .iter()
                    .map(|s| s.split_once('/').map_or(s.as_str(), |(ns, _)| ns)),
            );
        }
        let mut refused_outer: BTreeMap<String, String> = BTreeMap::new();
        for (inner, inner_ns) in &namespaces {
            for (outer, outer_ns) in &namespaces {
                if inner == outer || !inner.ends_with(&format!(".{outer}")) {
                    continue;
                }
                match inner_ns.iter().find(|ns| !outer_ns.contains(*ns)) {
                    Some(other) => {
                        refused_outer.entry((*outer).to_owned()).or_insert_with(|| {
                            format!("{inner} of namespace {other}, below it (CoreDNS answers a name with every record below its key)")
                        });
                    }
                    None => report.nested.push(((*inner).to_owned(), (*outer).to_owned())),
                }
            }
        }
        let allowed: Vec<DesiredRRset> = allowed
            .into_iter()
            .filter(|rrset| match refused_outer.get(&rrset.name) {
                Some(holder) => {
                    report.conflicts.push((rrset.clone(), holder.clone()));
                    false
                }
                None => true,
            })
            .collect();
        // TXT as the plugin keeps it: one text, split at 255 octets.
        let allowed: Vec<DesiredRRset> = allowed.into_iter().map(etcd_form).collect();
        let plan = planner::plan(&allowed, &current, &self.config.owner_id);
        self.metrics.records_owned(NAME, zone, current.len());
        let mut by_name: BTreeMap<&str, Vec<&DesiredRRset>> = BTreeMap::new();
        for rrset in &allowed {
            by_name.entry(rrset.name.as_str()).or_default().push(rrset);
        }
        let mut wants: BTreeMap<String, BTreeMap<String, String>> = BTreeMap::new();
        for (name, rrsets) in by_name {
            let want = self.wanted_keys(name, &rrsets).map_err(|e| format!("{name}: {e}"))?;
            wants.insert(name.to_owned(), want);
        }
        let mut changed: BTreeSet<String> = plan.changes.iter().map(|c| c.name().to_owned()).collect();
        // Names whose keys are laid out otherwise (written by an older
        // release) are rewritten even when their records are the same.
        for (name, want) in &wants {
            let have = owned_keys.get(name);
            if have.is_some_and(|have| !have.keys().eq(want.keys())) {
                changed.insert(name.clone());
            }
        }
        for name in changed {
            let want = wants.remove(&name).unwrap_or_default();
            let empty = BTreeMap::new();
            let have = owned_keys.get(&name).unwrap_or(&empty);
            let mut ops: Vec<TxnOp> = have
                .keys()
                .filter(|key| !want.contains_key(*key))
                .map(|key| TxnOp::Delete { key: key.clone() })
                .collect();
            // Every key the transaction touches must still be as it was read.
            let mut guards: Vec<TxnGuard> = have
                .iter()
                .map(|(key, revision)| TxnGuard::Unchanged {
                    key: key.clone(),
                    mod_revision: *revision,
                })
                .collect();
            guards.extend(
                want.keys()
                    .filter(|key| !have.contains_key(*key))
                    .map(|key| TxnGuard::Absent { key: key.clone() }),
            );
            ops.extend(want.into_iter().map(|(key, value)| TxnOp::Put { key, value }));
            if ops.is_empty() {
                continue;
            }
            let written = client.txn(&guards, &ops).await;
            self.metrics.api_call(NAME, "txn", written.is_ok());
            if !written.map_err(|e| format!("writing {name}: {e}"))? {
                return Err(format!(
                    "writing {name}: its keys changed in etcd since they were read; reading again next sync"
                ));
            }
            let changes = plan.changes.iter().filter(|c| c.name() == name).count();
            report.writes += 1;
            report.changes += changes;
            self.metrics.changes_applied(NAME, zone, changes);
        }
        Ok(())
    }
}

impl Provider for CorednsEtcd {
    fn name(&self) -> &'static str {
        NAME
    }

    fn sync<'a>(&'a self, desired: &'a DesiredZones, mode: SyncMode) -> BoxFuture<'a, SyncReport> {
        Box::pin(self.sync_all(desired, mode))
    }
}

/// What [`CorednsEtcd::read_zone`] found: our RRsets, foreign keys with
/// their owners, our keys by name with their mod revisions.
type ZoneKeys = (
    Vec<CurrentRRset>,
    BTreeMap<String, String>,
    BTreeMap<String, BTreeMap<String, i64>>,
);

/// Whether a key's last segment is a record id (`fedns-` and 16 hex digits).
fn is_record_id(segment: &str) -> bool {
    segment
        .strip_prefix("fedns-")
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// An RRset as etcd can hold it: TXT targets joined into one text and split
/// at 255 octets, the way the plugin serves (and [`decode`] reads) them.
fn etcd_form(mut rrset: DesiredRRset) -> DesiredRRset {
    if rrset.record_type == RecordType::TXT {
        for target in &mut rrset.targets {
            *target = crate::plan::txt::presentation(&crate::plan::txt::split(
                crate::plan::txt::concatenated(target).as_bytes(),
            ));
        }
        rrset.targets.sort();
        rrset.targets.dedup();
    }
    rrset
}

/// The record type and target a plugin value stands for.
fn decode(value: &Value) -> (RecordType, String) {
    let text = |k: &str| value.get(k).and_then(Value::as_str).unwrap_or_default().to_owned();
    let number = |k: &str| value.get(k).and_then(Value::as_u64).unwrap_or(0);
    if value.get("text").is_some() {
        let strings = crate::plan::txt::split(text("text").as_bytes());
        return (RecordType::TXT, crate::plan::txt::presentation(&strings));
    }
    if value.get("mail").and_then(Value::as_bool) == Some(true) {
        return (RecordType::MX, format!("{} {}", number("priority"), text("host")));
    }
    if number("port") > 0 {
        return (
            RecordType::SRV,
            format!(
                "{} {} {} {}",
                number("priority"),
                number("weight"),
                number("port"),
                text("host")
            ),
        );
    }
    let host = text("host");
    match host.parse::<std::net::IpAddr>() {
        Ok(std::net::IpAddr::V4(_)) => (RecordType::A, host),
        Ok(std::net::IpAddr::V6(_)) => (RecordType::AAAA, host),
        Err(_) => (RecordType::CNAME, host),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_and_values_in_the_plugin_format() {
        let p = CorednsEtcd::new(EtcdConfig::default(), ProviderMetrics::default());
        assert_eq!(
            p.name_path("nginx.ns.myfed.svc.example.com"),
            "/skydns/com/example/svc/myfed/ns/nginx"
        );
        let key = p.record_key("nginx.ns.myfed.svc.example.com", RecordType::A, "203.0.113.10");
        assert!(key.starts_with("/skydns/com/example/svc/myfed/ns/nginx/fedns-"));
        assert_eq!(
            key,
            p.record_key("NGINX.ns.myfed.svc.example.com.", RecordType::A, "203.0.113.10"),
            "stable id"
        );
        let value: Value = serde_json::from_str(&p.record_value(RecordType::A, "203.0.113.10", 30).unwrap()).unwrap();
        assert_eq!(value, json!({"host": "203.0.113.10", "ttl": 30, "owner": "fedns"}));
        let srv: Value =
            serde_json::from_str(&p.record_value(RecordType::SRV, "0 50 443 web.example.com", 30).unwrap()).unwrap();
        assert_eq!(decode(&srv), (RecordType::SRV, "0 50 443 web.example.com".into()));
        assert!(p.record_value(RecordType::CAA, "0 issue \"x\"", 30).is_err());
        assert_eq!(p.path_name("/skydns/com/example/www"), "www.example.com");
    }
}
