//! Load-balancer host names (AWS ELB style) resolved to A/AAAA through a
//! configurable resolver (hickory-resolver), cached, and re-resolved at
//! the record TTL; a change triggers the records that use the name.

use std::collections::{BTreeMap, BTreeSet};
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use hickory_resolver::config::{ConnectionConfig, NameServerConfig, ResolverConfig};
use hickory_resolver::net::runtime::TokioRuntimeProvider;
use hickory_resolver::Resolver;
use tokio::sync::mpsc;

use super::model::HostnameAddresses;

struct Entry {
    addresses: Option<Vec<IpAddr>>,
    next_refresh: Instant,
    interval: Duration,
    users: BTreeSet<String>,
}

/// The cache; cheap to clone.
#[derive(Clone)]
pub struct HostnameResolver {
    resolver: Arc<Resolver<TokioRuntimeProvider>>,
    entries: Arc<Mutex<BTreeMap<String, Entry>>>,
    changed: mpsc::UnboundedSender<String>,
}

impl std::fmt::Debug for HostnameResolver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HostnameResolver").finish_non_exhaustive()
    }
}

/// A cache read view for the builder.
#[derive(Debug, Clone, Default)]
pub struct Resolved(BTreeMap<String, Vec<IpAddr>>);

impl HostnameAddresses for Resolved {
    fn addresses(&self, hostname: &str) -> Option<Vec<IpAddr>> {
        self.0.get(hostname).cloned()
    }
}

impl HostnameResolver {
    /// A resolver asking `server` (UDP and TCP), or the system's resolvers
    /// (`/etc/resolv.conf`) when None. Users of names whose addresses change
    /// are sent on `changed` (a record key).
    ///
    /// # Errors
    /// The system configuration cannot be read.
    pub fn new(server: Option<SocketAddr>, changed: mpsc::UnboundedSender<String>) -> anyhow::Result<Self> {
        let resolver = match server {
            Some(addr) => {
                let mut udp = ConnectionConfig::udp();
                udp.port = addr.port();
                let mut tcp = ConnectionConfig::tcp();
                tcp.port = addr.port();
                let config =
                    ResolverConfig::from_name_servers(vec![NameServerConfig::new(addr.ip(), true, vec![udp, tcp])]);
                Resolver::builder_with_config(config, TokioRuntimeProvider::default()).build()?
            }
            None => Resolver::builder_tokio()?.build()?,
        };
        let this = HostnameResolver {
            resolver: Arc::new(resolver),
            entries: Arc::new(Mutex::new(BTreeMap::new())),
            changed,
        };
        let refresher = this.clone();
        tokio::spawn(async move { refresher.refresh_loop().await });
        Ok(this)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<String, Entry>> {
        self.entries.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Registers that record `user` needs `hostname`, re-resolved every
    /// `ttl`; resolves it now when it is new.
    pub fn want(&self, hostname: &str, ttl: Duration, user: &str) {
        let mut entries = self.lock();
        let entry = entries.entry(hostname.to_owned()).or_insert_with(|| Entry {
            addresses: None,
            next_refresh: Instant::now(),
            interval: ttl,
            users: BTreeSet::new(),
        });
        entry.interval = entry.interval.min(ttl).max(Duration::from_secs(1));
        entry.users.insert(user.to_owned());
    }

    /// Drops `user` from every name it no longer uses.
    pub fn forget(&self, user: &str, keep: &BTreeSet<String>) {
        let mut entries = self.lock();
        for (name, entry) in entries.iter_mut() {
            if !keep.contains(name) {
                entry.users.remove(user);
            }
        }
        entries.retain(|_, e| !e.users.is_empty());
    }

    /// What is resolved now.
    pub fn snapshot(&self) -> Resolved {
        Resolved(
            self.lock()
                .iter()
                .filter_map(|(k, e)| e.addresses.clone().map(|a| (k.clone(), a)))
                .collect(),
        )
    }

    async fn refresh_loop(&self) {
        loop {
            let due: Vec<String> = {
                let now = Instant::now();
                self.lock()
                    .iter()
                    .filter(|(_, e)| e.next_refresh <= now)
                    .map(|(k, _)| k.clone())
                    .collect()
            };
            for name in due {
                let result = self.resolver.lookup_ip(format!("{name}.")).await;
                let addresses: Option<Vec<IpAddr>> = match result {
                    Ok(lookup) => {
                        let mut a: Vec<IpAddr> = lookup.iter().collect();
                        a.sort();
                        a.dedup();
                        Some(a)
                    }
                    Err(e) => {
                        tracing::warn!(hostname = %name, error = %e, "cannot resolve a load balancer hostname");
                        None
                    }
                };
                let users = {
                    let mut entries = self.lock();
                    let Some(entry) = entries.get_mut(&name) else { continue };
                    entry.next_refresh = Instant::now() + entry.interval;
                    // A failed lookup keeps the last good answer.
                    if addresses.is_none() || entry.addresses == addresses {
                        continue;
                    }
                    entry.addresses = addresses;
                    entry.users.clone()
                };
                for user in users {
                    let _ = self.changed.send(user);
                }
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }
}
