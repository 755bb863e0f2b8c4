//! The `embedded` sink: publishes desired zones to fedns's own DNS server.
//!
//! Layer: a provider (the built-in one). It may use `plan` (desired zones,
//! incremental record changes); never `source` nor another provider
//! (`route53`, `coredns_etcd`). It does not implement the `provider`
//! trait: the Kubernetes source drives it directly.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};

use fedns_api::{DnssecSpec, TsigKeyReference};
use fedns_dnsserver::{
    DenialOfExistence, DnssecAlgorithm, DnssecConfig, DnssecKey, PublishOutcome, TsigAlgorithm, TsigKey, ZoneChanges,
    ZoneContent, ZoneStore,
};
use tokio::sync::Notify;

pub(crate) mod dnssec_layout;

pub use dnssec_layout::{standby_flags, DNSSEC_KEY_DATA, DNSSEC_KSK_DATA, DNSSEC_ZSK_DATA};

use crate::plan::desired::DesiredZones;
use crate::plan::incremental::ZoneRecordChanges;

/// Where the secrets of `spec.transfer.tsigKeys` and the DNSSEC keys
/// come from. `Debug` shows which keys are held, never their bytes.
#[derive(Default)]
struct KeySources {
    /// Secret data by (namespace, Secret name, data key): what the
    /// Kubernetes source read.
    secrets: BTreeMap<(String, String, String), Vec<u8>>,
    /// Keys by lower-case name without the trailing dot: `--tsig-key-file`.
    named: BTreeMap<String, TsigKey>,
    /// DNSSEC private keys (PKCS#8 DER) by (namespace, Secret name), then
    /// by data key (those ending in `.pkcs8`): the key Secrets the
    /// Kubernetes source read (see `dnssec_layout` for the names).
    dnssec_secrets: BTreeMap<(String, String), BTreeMap<String, Vec<u8>>>,
    /// `--dnssec-key-dir`: keys kept as files, made when absent.
    dnssec_key_dir: Option<std::path::PathBuf>,
    /// Parsed keys by their PKCS#8 bytes' source (Secret or key folder,
    /// data key, flags), so a publish does not parse every key again.
    dnssec_keys: BTreeMap<String, (Vec<u8>, DnssecKey)>,
    /// DS records (presentation format) by `namespace/name` of the Domain.
    ds_records: BTreeMap<String, Vec<String>>,
    /// Why a Domain that asks for DNSSEC is served unsigned, by
    /// `namespace/name` (no key material in the text).
    dnssec_problems: BTreeMap<String, String>,
}

impl std::fmt::Debug for KeySources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("KeySources")
            .field("secrets", &self.secrets.keys().collect::<Vec<_>>())
            .field("named", &self.named.keys().collect::<Vec<_>>())
            .field("dnssec_secrets", &self.dnssec_secrets.keys().collect::<Vec<_>>())
            .field("dnssec_key_dir", &self.dnssec_key_dir)
            .field("ds_records", &self.ds_records)
            .finish_non_exhaustive()
    }
}

/// The Secret holding the signing key of the Domain `name` (in its own
/// namespace): `spec.dnssec.keySecret`, else `<name>-dnssec`.
pub fn dnssec_secret_name(domain_name: &str, spec: &DnssecSpec) -> String {
    spec.key_secret
        .clone()
        .unwrap_or_else(|| format!("{domain_name}-dnssec"))
}

/// The server's algorithm for the CRD's.
pub fn dnssec_algorithm(algorithm: fedns_api::DnssecAlgorithm) -> DnssecAlgorithm {
    match algorithm {
        fedns_api::DnssecAlgorithm::EcdsaP256Sha256 => DnssecAlgorithm::EcdsaP256Sha256,
        fedns_api::DnssecAlgorithm::Ed25519 => DnssecAlgorithm::Ed25519,
    }
}

/// Feeds a [`ZoneStore`]; every [`EmbeddedSink::apply`] publishes the
/// complete desired state (the store rebuilds only when it changed).
#[derive(Debug, Clone)]
pub struct EmbeddedSink {
    store: Arc<ZoneStore>,
    keys: Arc<Mutex<KeySources>>,
    extra: Arc<Mutex<ExtraZones>>,
    whole_wanted: Arc<Notify>,
}

/// Zones served beside the published ones (a member-side replica's
/// discovery zones) and the server-wide settings every zone gets.
#[derive(Debug, Default)]
struct ExtraZones {
    /// Added to every whole publish.
    zones: Vec<ZoneContent>,
    /// Set on every zone: see [`ZoneContent::default_client_region`].
    default_client_region: Option<String>,
    /// A whole publish of the pipeline's zones went to the store (until
    /// then the extra zones are published alone).
    pipeline_published: bool,
}

impl EmbeddedSink {
    /// A sink publishing into `store`.
    pub fn new(store: Arc<ZoneStore>) -> Self {
        EmbeddedSink {
            store,
            keys: Arc::default(),
            extra: Arc::default(),
            whole_wanted: Arc::new(Notify::new()),
        }
    }

    /// Clients nothing else places get region `region` in every zone
    /// (see [`ZoneContent::default_client_region`]); taken at the next
    /// whole publish.
    pub fn set_default_client_region(&self, region: Option<String>) {
        self.extra
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .default_client_region = region;
    }

    /// Woken when the extra zones need a whole publish of the pipeline's
    /// zones ([`EmbeddedSink::set_extra_zones`] added or removed a zone):
    /// the Kubernetes source publishes whole then.
    pub fn whole_wanted(&self) -> &Arc<Notify> {
        &self.whole_wanted
    }

    /// Replaces the zones served beside the pipeline's (a member-side
    /// replica's discovery zones). Owners whose records changed are applied
    /// name by name ([`ZoneStore::publish_changes`]); when the set of zones
    /// changes, the extra zones are published alone before the pipeline's
    /// first publish, else [`EmbeddedSink::whole_wanted`] is woken. Returns
    /// the number of owner names whose records changed (0: nothing to do).
    pub fn set_extra_zones(&self, zones: Vec<ZoneContent>) -> usize {
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let changes = extra_changes(&extra.zones, &zones);
        let changed: usize = changes.iter().map(|c| c.names.len()).sum();
        let same_zones = extra.zones.len() == zones.len()
            && extra.zones.iter().zip(&zones).all(|(a, b)| {
                a.apex == b.apex && a.soa == b.soa && a.name_servers == b.name_servers && a.pending == b.pending
            });
        extra.zones = zones;
        if same_zones && changed == 0 {
            return 0;
        }
        if !extra.pipeline_published {
            let default_region = extra.default_client_region.clone();
            let contents = extra
                .zones
                .iter()
                .cloned()
                .map(|mut z| {
                    z.default_client_region.clone_from(&default_region);
                    z
                })
                .collect();
            let outcome = self.store.publish(contents);
            self.report(&outcome);
        } else if !same_zones || self.store.publish_changes(changes).is_none() {
            self.whole_wanted.notify_one();
        }
        changed.max(1)
    }

    /// The contents to publish whole: `contents` and the extra zones, each
    /// with the server's default client region. Called with `extra` held,
    /// so no change of the extra zones slips between.
    fn with_extra(extra: &mut ExtraZones, mut contents: Vec<ZoneContent>) -> Vec<ZoneContent> {
        extra.pipeline_published = true;
        contents.extend(extra.zones.iter().cloned());
        if extra.default_client_region.is_some() {
            for zone in &mut contents {
                zone.default_client_region.clone_from(&extra.default_client_region);
            }
        }
        contents
    }

    /// The store this sink publishes into.
    pub fn store(&self) -> &Arc<ZoneStore> {
        &self.store
    }

    /// Replaces the Secret data TSIG keys are read from: (namespace,
    /// Secret name, data key) → value (the base64 secret as text). True
    /// when they differ from the last ones (zones must be published whole
    /// again to take them).
    pub fn set_tsig_secrets(&self, secrets: BTreeMap<(String, String, String), Vec<u8>>) -> bool {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let changed = keys.secrets != secrets;
        keys.secrets = secrets;
        changed
    }

    /// Keys found by name whatever their `secretRef` says (`fedns
    /// dns-server --manifests --tsig-key-file`).
    pub fn set_named_tsig_keys(&self, keys: Vec<TsigKey>) {
        let named = keys
            .into_iter()
            .map(|k| (k.name().to_ascii().trim_end_matches('.').to_owned(), k))
            .collect();
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).named = named;
    }

    /// Replaces the DNSSEC key Secrets' data: (namespace, Secret name) →
    /// data key → PKCS#8 DER ([`DNSSEC_KEY_DATA`] in CSK mode,
    /// [`DNSSEC_KSK_DATA`] and [`DNSSEC_ZSK_DATA`] in KSK+ZSK mode, any
    /// other `*.pkcs8` a standby key). True when they changed.
    pub fn set_dnssec_secrets(&self, secrets: BTreeMap<(String, String), BTreeMap<String, Vec<u8>>>) -> bool {
        let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let changed = keys.dnssec_secrets != secrets;
        keys.dnssec_secrets = secrets;
        changed
    }

    /// Keeps DNSSEC keys as files in `dir` (`fedns dns-server --manifests
    /// --dnssec-key-dir`), PKCS#8 DER: `<zone>.<algorithm number>.pkcs8`
    /// (CSK mode), or `<zone>.<algorithm number>.ksk.pkcs8` and
    /// `….zsk.pkcs8` (KSK+ZSK mode), made (mode 0600) when absent; standby
    /// keys `<zone>.<algorithm number>.standby-<name>.pkcs8` (flags 256 when
    /// `<name>` starts with `zsk`, else 257) are read, never made.
    pub fn set_dnssec_key_dir(&self, dir: std::path::PathBuf) {
        self.keys.lock().unwrap_or_else(|e| e.into_inner()).dnssec_key_dir = Some(dir);
    }

    /// Some signed zone has signatures due to be made again: publish the
    /// whole desired state (the store re-signs, under new serials).
    pub fn resign_due(&self) -> bool {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| u32::try_from(d.as_secs()).unwrap_or(u32::MAX));
        self.store.load().resign_due(now)
    }

    /// Why each Domain (`namespace/name`) that asks for DNSSEC is served
    /// unsigned, as of the last publish: a key Secret that is missing or
    /// lacks the key mode's keys, a key of another algorithm, an invalid
    /// `spec.dnssec`. Never holds key material.
    pub fn dnssec_problems(&self) -> BTreeMap<String, String> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.dnssec_problems.clone()
    }

    /// The DS records to put at the parent for the Domain `domain`
    /// (`namespace/name`), as last published; empty when it is unsigned.
    pub fn ds_records(&self, domain: &str) -> Vec<String> {
        let keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        keys.ds_records.get(domain).cloned().unwrap_or_default()
    }

    /// The signing configuration of `zone`, whose Domain asks for DNSSEC
    /// with `spec`: its keys (by `spec.keyMode`, standby keys included)
    /// from the Domain's Secret, else from the key folder (the mode's keys
    /// made there when absent). Errors name the Secret or folder and the
    /// data keys, never key material.
    fn dnssec_config(
        &self,
        zone: &crate::plan::desired::DesiredZone,
        spec: &DnssecSpec,
    ) -> Result<DnssecConfig, String> {
        spec.validate()?;
        let algorithm = dnssec_algorithm(spec.algorithm);
        let (namespace, name) = zone.domain.split_once('/').unwrap_or(("", zone.domain.as_str()));
        let secret = dnssec_secret_name(name, spec);
        let mut sources = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let (source, data) = if let Some(data) = sources.dnssec_secrets.get(&(namespace.to_owned(), secret.clone())) {
            (format!("Secret {namespace}/{secret}"), data.clone())
        } else if let Some(dir) = &sources.dnssec_key_dir {
            let apex = zone.content.apex.to_ascii().to_ascii_lowercase();
            let prefix = format!("{}.{}.", apex.trim_end_matches('.'), spec.algorithm.number());
            (
                format!("key folder {} ({prefix}*)", dir.display()),
                key_dir_data(dir, &prefix, spec.key_mode, algorithm)?,
            )
        } else {
            return Err(format!(
                "spec.dnssec: Secret {namespace}/{secret} could not be read nor created"
            ));
        };
        let layout =
            dnssec_layout::key_layout(spec.key_mode, &data).map_err(|e| format!("spec.dnssec: {source} {e}"))?;
        let mut parse = |bytes: &dnssec_layout::KeyBytes| -> Result<DnssecKey, String> {
            let cache = format!("{source}\n{}\n{}", bytes.name, bytes.flags);
            match sources.dnssec_keys.get(&cache) {
                Some((pkcs8, key)) if *pkcs8 == bytes.pkcs8 && key.algorithm() == algorithm => Ok(key.clone()),
                _ => {
                    let key = DnssecKey::with_flags(algorithm, &bytes.pkcs8, bytes.flags)
                        .map_err(|e| format!("spec.dnssec: {source} {:?}: {e}", bytes.name))?;
                    sources.dnssec_keys.insert(cache, (bytes.pkcs8.clone(), key.clone()));
                    Ok(key)
                }
            }
        };
        let key = parse(&layout.primary)?;
        let zone_signing_key = layout.zone_signing.as_ref().map(&mut parse).transpose()?;
        let standby = layout.standby.iter().map(&mut parse).collect::<Result<Vec<_>, _>>()?;
        let config = DnssecConfig {
            key,
            zone_signing_key,
            standby,
            signature_validity: u32::try_from(spec.signature_validity).unwrap_or(u32::MAX),
            signature_refresh: u32::try_from(spec.signature_refresh).unwrap_or(u32::MAX),
            denial: match spec.denial {
                fedns_api::DnssecDenial::Compact => DenialOfExistence::Compact,
                fedns_api::DnssecDenial::Nsec => DenialOfExistence::Nsec,
            },
        };
        config.check().map_err(|e| format!("spec.dnssec: {source}: {e}"))?;
        let ds = config.key.ds_record(&zone.content.apex, zone.content.soa.ttl)?;
        sources.ds_records.insert(zone.domain.clone(), vec![ds]);
        Ok(config)
    }

    /// Resolves one key reference of a Domain in `namespace`.
    fn resolve(&self, namespace: &str, reference: &TsigKeyReference) -> Result<TsigKey, String> {
        let sources = self.keys.lock().unwrap_or_else(|e| e.into_inner());
        let wanted = reference.name.to_ascii_lowercase();
        let wanted = wanted.trim_end_matches('.');
        let algorithm = match reference.algorithm {
            fedns_api::TsigAlgorithm::HmacSha256 => TsigAlgorithm::HmacSha256,
            fedns_api::TsigAlgorithm::HmacSha512 => TsigAlgorithm::HmacSha512,
        };
        if let Some(key) = sources.named.get(wanted) {
            if key.algorithm() != algorithm {
                return Err(format!(
                    "TSIG key {wanted}: the key file says {}, the Domain {}",
                    key.algorithm().as_str(),
                    algorithm.as_str()
                ));
            }
            return Ok(key.clone());
        }
        let secret = &reference.secret_ref;
        let value = sources
            .secrets
            .get(&(namespace.to_owned(), secret.name.clone(), secret.key().to_owned()))
            .ok_or_else(|| {
                format!(
                    "TSIG key {wanted}: Secret {namespace}/{} has no key {:?} (or cannot be read)",
                    secret.name,
                    secret.key()
                )
            })?;
        let text = String::from_utf8_lossy(value);
        TsigKey::parse(&format!("{}:{wanted}:{}", algorithm.as_str(), text.trim()))
    }

    /// Publishes `desired`. Records the DNS server could not serve come
    /// back in the outcome's `skipped` list.
    ///
    /// A zone whose TSIG keys cannot all be resolved is published with
    /// transfers and NOTIFY off (never open without its keys).
    pub fn apply(&self, desired: &DesiredZones) -> PublishOutcome {
        let contents = desired
            .zones
            .iter()
            .map(|zone| self.with_keys(zone, zone.content.clone()))
            .collect();
        self.publish(contents)
    }

    /// [`EmbeddedSink::apply`], moving the records out of `desired` (its
    /// zones keep their settings, RRsets and problems) instead of copying
    /// them: a whole publish at 100,000 shards held both copies at its peak.
    pub fn apply_taking(&self, desired: &mut DesiredZones) -> PublishOutcome {
        let contents = desired
            .zones
            .iter_mut()
            .map(|zone| {
                let content = ZoneContent {
                    records: std::mem::take(&mut zone.content.records),
                    routed: std::mem::take(&mut zone.content.routed),
                    ..zone.content.clone()
                };
                self.with_keys(zone, content)
            })
            .collect();
        self.publish(contents)
    }

    /// `content` of `zone` with its TSIG keys resolved (transfers off when
    /// one cannot be).
    fn with_keys(&self, zone: &crate::plan::desired::DesiredZone, mut content: ZoneContent) -> ZoneContent {
        content.dnssec = None;
        match &zone.dnssec {
            Some(spec) => match self.dnssec_config(zone, spec) {
                Ok(config) => {
                    content.dnssec = Some(config);
                    self.keys
                        .lock()
                        .unwrap_or_else(|e| e.into_inner())
                        .dnssec_problems
                        .remove(&zone.domain);
                }
                Err(e) => {
                    let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                    keys.ds_records.remove(&zone.domain);
                    // Said once per problem, not on every publish.
                    if keys.dnssec_problems.get(&zone.domain) != Some(&e) {
                        tracing::warn!(domain = %zone.domain, "{e}; the zone is served unsigned");
                        keys.dnssec_problems.insert(zone.domain.clone(), e);
                    }
                }
            },
            None => {
                let mut keys = self.keys.lock().unwrap_or_else(|e| e.into_inner());
                keys.ds_records.remove(&zone.domain);
                keys.dnssec_problems.remove(&zone.domain);
            }
        }
        if !zone.transfer_keys.is_empty() {
            let namespace = zone.domain.split_once('/').map_or("", |(ns, _)| ns);
            let resolved: Result<Vec<TsigKey>, String> = zone
                .transfer_keys
                .iter()
                .map(|reference| self.resolve(namespace, reference))
                .collect();
            match resolved {
                Ok(keys) => content.transfer.keys = keys,
                Err(e) => {
                    tracing::warn!(domain = %zone.domain, "{e}; zone transfers and NOTIFY are off for this zone");
                    content.transfer = Default::default();
                }
            }
        }
        content
    }

    fn publish(&self, contents: Vec<ZoneContent>) -> PublishOutcome {
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let outcome = self.store.publish(Self::with_extra(&mut extra, contents));
        self.report(&outcome);
        outcome
    }

    /// The zones of `settings` without records, with their keys resolved
    /// (before the extra zones' lock: `with_keys` takes the keys' lock).
    fn settings_contents(&self, settings: &DesiredZones) -> Vec<ZoneContent> {
        settings
            .zones
            .iter()
            .map(|zone| {
                let content = ZoneContent {
                    records: Vec::new(),
                    routed: Vec::new(),
                    ..zone.content.clone()
                };
                self.with_keys(zone, content)
            })
            .collect()
    }

    /// Publishes `settings` (zones without records, as
    /// [`crate::plan::incremental::Update::Whole`] gives them) whole, their
    /// records taken from `next_part` some names at a time (see
    /// `ZoneStore::publish_in_parts`). None: a part could not be applied
    /// name by name and nothing was published; publish the whole desired
    /// state with [`EmbeddedSink::apply_taking`] instead.
    pub fn apply_in_parts(
        &self,
        settings: &DesiredZones,
        next_part: &mut dyn FnMut() -> Option<Vec<ZoneRecordChanges>>,
    ) -> Option<PublishOutcome> {
        let contents = self.settings_contents(settings);
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let contents = Self::with_extra(&mut extra, contents);
        // The extra zones' records come as the last part.
        let mut extra_part = Some(extra_changes(&[], &extra.zones)).filter(|c| !c.is_empty());
        let mut parts = || next_part().or_else(|| extra_part.take());
        let outcome = self.store.publish_in_parts(contents, &mut parts)?;
        self.report(&outcome);
        Some(outcome)
    }

    /// Publishes new zone settings (as
    /// [`crate::plan::incremental::Update::Settings`] gives them) over the
    /// records served: SOA values, transfers, client tables (see
    /// `ZoneStore::publish_settings`). None: the server cannot take them
    /// so and nothing was published; publish the whole desired state with
    /// [`EmbeddedSink::apply_taking`] instead.
    pub fn apply_settings(&self, settings: &DesiredZones) -> Option<PublishOutcome> {
        let contents = self.settings_contents(settings);
        let mut extra = self.extra.lock().unwrap_or_else(|e| e.into_inner());
        let contents = Self::with_extra(&mut extra, contents);
        let outcome = self.store.publish_settings(&contents)?;
        self.report(&outcome);
        Some(outcome)
    }

    /// Publishes changed names on top of the zones last published: the
    /// server re-renders only those names (and names whose answers go
    /// through them). None: nothing was applied (a change its incremental
    /// path does not take, e.g. a wildcard or a record type new to the
    /// server), publish the whole desired state instead. The changes are
    /// taken, not copied: at 1,000,000 shards a cold start's pass changes
    /// thousands of names of 50 records each, and a copy of them was about
    /// 50 MiB of the controller's peak.
    pub fn apply_changes(&self, changes: Vec<ZoneRecordChanges>) -> Option<PublishOutcome> {
        let outcome = self.store.publish_changes(changes)?;
        self.report(&outcome);
        Some(outcome)
    }

    /// Logs what a publish did.
    fn report(&self, outcome: &PublishOutcome) {
        if outcome.changed {
            for zone in &outcome.zones {
                tracing::info!(zone = %zone.apex, serial = zone.serial, rrsets = zone.rrset_count, "published zone");
                for ds in &zone.ds_records {
                    tracing::info!(zone = %zone.apex, ds = %ds, "zone signed; put this DS record in the parent zone");
                }
            }
        }
        for skipped in &outcome.skipped {
            tracing::warn!(name = %skipped.name, record_type = %skipped.record_type, reason = %skipped.reason, "record not served");
        }
    }

    /// Every Secret (namespace, name) the signed zones of `desired` take
    /// their DNSSEC keys from, for the Kubernetes source to read (and to
    /// create with new keys of the algorithm and key mode when absent).
    pub fn wanted_dnssec_secrets(desired: &DesiredZones) -> Vec<WantedDnssecSecret> {
        let mut wanted: Vec<WantedDnssecSecret> = desired
            .zones
            .iter()
            .filter_map(|zone| {
                let spec = zone.dnssec.as_ref()?;
                let (namespace, name) = zone.domain.split_once('/')?;
                Some((
                    namespace.to_owned(),
                    dnssec_secret_name(name, spec),
                    dnssec_algorithm(spec.algorithm),
                    spec.key_mode,
                ))
            })
            .collect();
        wanted.sort_by(|a, b| (&a.0, &a.1).cmp(&(&b.0, &b.1)));
        wanted.dedup_by(|a, b| a.0 == b.0 && a.1 == b.1);
        wanted
    }

    /// Every Secret (namespace, name) the zones of `desired` take TSIG
    /// keys from, for the Kubernetes source to read.
    pub fn wanted_secrets(desired: &DesiredZones) -> Vec<(String, String)> {
        let mut wanted: Vec<(String, String)> = desired
            .zones
            .iter()
            .flat_map(|zone| {
                let namespace = zone.domain.split_once('/').map_or("", |(ns, _)| ns).to_owned();
                zone.transfer_keys
                    .iter()
                    .map(move |k| (namespace.clone(), k.secret_ref.name.clone()))
            })
            .collect();
        wanted.sort();
        wanted.dedup();
        wanted
    }
}

/// A DNSSEC key Secret to read: (namespace, name, the algorithm and key
/// mode of the keys made when it does not exist).
pub type WantedDnssecSecret = (String, String, DnssecAlgorithm, fedns_api::DnssecKeyMode);

/// The keys of one zone in the key folder `dir` as Secret data: the
/// active keys of `mode` (`<prefix>pkcs8` as [`DNSSEC_KEY_DATA`], or
/// `<prefix>ksk.pkcs8` and `<prefix>zsk.pkcs8` as [`DNSSEC_KSK_DATA`] and
/// [`DNSSEC_ZSK_DATA`]), made when absent, and the standby keys
/// `<prefix>standby-<name>.pkcs8` as `standby-<name>.pkcs8`. `prefix` is
/// `<zone>.<algorithm number>.`.
fn key_dir_data(
    dir: &std::path::Path,
    prefix: &str,
    mode: fedns_api::DnssecKeyMode,
    algorithm: DnssecAlgorithm,
) -> Result<BTreeMap<String, Vec<u8>>, String> {
    let mut data = BTreeMap::new();
    for (name, _) in dnssec_layout::active_keys(mode) {
        let file = match *name {
            DNSSEC_KEY_DATA => format!("{prefix}pkcs8"),
            other => format!("{prefix}{other}"),
        };
        data.insert((*name).to_owned(), read_or_make_key(&dir.join(file), algorithm)?);
    }
    let entries = std::fs::read_dir(dir).map_err(|e| format!("spec.dnssec: reading {}: {e}", dir.display()))?;
    for entry in entries.flatten() {
        let file_name = entry.file_name();
        let Some(rest) = file_name.to_str().and_then(|n| n.strip_prefix(prefix)) else {
            continue;
        };
        if rest.starts_with("standby-") && rest.ends_with(dnssec_layout::PKCS8_SUFFIX) {
            let path = entry.path();
            let bytes = std::fs::read(&path).map_err(|e| format!("spec.dnssec: reading {}: {e}", path.display()))?;
            data.insert(rest.to_owned(), bytes);
        }
    }
    Ok(data)
}

/// The PKCS#8 key in `file`, or a new one of `algorithm` written there
/// (mode 0600, created exclusively) when it does not exist.
fn read_or_make_key(file: &std::path::Path, algorithm: DnssecAlgorithm) -> Result<Vec<u8>, String> {
    match std::fs::read(file) {
        Ok(bytes) => return Ok(bytes),
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            return Err(format!("spec.dnssec: reading {}: {e}", file.display()))
        }
        Err(_) => {}
    }
    let pkcs8 = DnssecKey::generate_pkcs8(algorithm)?;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.mode(0o600);
    }
    let mut out = options
        .open(file)
        .map_err(|e| format!("spec.dnssec: creating {}: {e}", file.display()))?;
    std::io::Write::write_all(&mut out, &pkcs8).map_err(|e| format!("spec.dnssec: writing {}: {e}", file.display()))?;
    tracing::info!(file = %file.display(), "made a new DNSSEC signing key");
    Ok(pkcs8)
}

/// Per zone of `new`, the owners whose records differ from `old`'s (an
/// owner only in `old` is listed with no records), as
/// [`ZoneStore::publish_changes`] takes them. Routed names are not
/// carried (extra zones have none).
fn extra_changes(old: &[ZoneContent], new: &[ZoneContent]) -> Vec<ZoneChanges> {
    use fedns_dnsserver::hickory_proto::rr::{Name, Record};
    type Owners = BTreeMap<Name, Vec<Record>>;
    let owners = |zone: Option<&ZoneContent>| -> Owners {
        let mut out = Owners::new();
        for record in zone.iter().flat_map(|z| z.records.iter()) {
            out.entry(record.name.to_lowercase()).or_default().push(record.clone());
        }
        for records in out.values_mut() {
            records.sort_by_key(|a| a.to_string());
        }
        out
    };
    new.iter()
        .filter_map(|zone| {
            let before = owners(old.iter().find(|o| o.apex == zone.apex));
            let after = owners(Some(zone));
            let mut names: Vec<(Name, Vec<Record>)> = after
                .iter()
                .filter(|(name, records)| before.get(*name) != Some(records))
                .map(|(name, records)| (name.clone(), records.clone()))
                .collect();
            names.extend(
                before
                    .keys()
                    .filter(|name| !after.contains_key(*name))
                    .map(|name| (name.clone(), Vec::new())),
            );
            (!names.is_empty()).then(|| ZoneChanges {
                apex: zone.apex.clone(),
                names,
                routed: Vec::new(),
            })
        })
        .collect()
}

#[cfg(test)]
mod dnssec_tests {
    use super::*;
    use fedns_api::DnssecKeyMode;
    use fedns_dnsserver::hickory_proto::rr::Name;

    fn zone(mode: DnssecKeyMode) -> crate::plan::desired::DesiredZone {
        crate::plan::desired::DesiredZone {
            domain: "fedns-system/myfed".into(),
            content: ZoneContent::new(Name::from_ascii("example.com.").unwrap()),
            rrsets: Vec::new(),
            transfer_keys: Vec::new(),
            dnssec: Some(DnssecSpec {
                enabled: true,
                key_mode: mode,
                ..serde_json::from_value(serde_json::json!({"enabled": true})).unwrap()
            }),
        }
    }

    fn pkcs8() -> Vec<u8> {
        DnssecKey::generate_pkcs8(DnssecAlgorithm::EcdsaP256Sha256).unwrap()
    }

    fn config_of(sink: &EmbeddedSink, zone: &crate::plan::desired::DesiredZone) -> Result<DnssecConfig, String> {
        sink.dnssec_config(zone, zone.dnssec.as_ref().unwrap())
    }

    /// A KSK+ZSK Secret: the KSK (257) is `key`, the ZSK (256) signs the
    /// rest, other `.pkcs8` entries are standby keys with flags by name;
    /// the DS is the KSK's.
    #[test]
    fn ksk_zsk_secret_is_parsed() {
        let sink = EmbeddedSink::new(ZoneStore::new());
        let data = BTreeMap::from([
            (DNSSEC_KSK_DATA.to_owned(), pkcs8()),
            (DNSSEC_ZSK_DATA.to_owned(), pkcs8()),
            ("zsk-next.pkcs8".to_owned(), pkcs8()),
            ("ksk-next.pkcs8".to_owned(), pkcs8()),
        ]);
        sink.set_dnssec_secrets(BTreeMap::from([(
            ("fedns-system".to_owned(), "myfed-dnssec".to_owned()),
            data,
        )]));
        let zone = zone(DnssecKeyMode::KskZsk);
        let config = config_of(&sink, &zone).unwrap();
        assert_eq!(config.key.flags(), 257);
        assert_eq!(config.zone_signing_key.as_ref().map(DnssecKey::flags), Some(256));
        let standby: Vec<u16> = config.standby.iter().map(DnssecKey::flags).collect();
        assert_eq!(standby, [257, 256], "ksk-next, zsk-next (data key order)");
        let ds = sink.ds_records("fedns-system/myfed");
        assert_eq!(
            ds,
            [config.key.ds_record(&zone.content.apex, zone.content.soa.ttl).unwrap()]
        );
        // Parsed keys are reused while the bytes stay.
        assert_eq!(config_of(&sink, &zone).unwrap(), config);
    }

    /// A Secret lacking the mode's keys: an error naming the Secret and
    /// the missing data keys, no key bytes; the CSK layout of the same
    /// Secret works.
    #[test]
    fn secret_without_the_modes_keys_is_refused_by_name() {
        let sink = EmbeddedSink::new(ZoneStore::new());
        let key = pkcs8();
        sink.set_dnssec_secrets(BTreeMap::from([(
            ("fedns-system".to_owned(), "myfed-dnssec".to_owned()),
            BTreeMap::from([(DNSSEC_KEY_DATA.to_owned(), key.clone())]),
        )]));
        let err = config_of(&sink, &zone(DnssecKeyMode::KskZsk)).unwrap_err();
        assert_eq!(
            err,
            r#"spec.dnssec: Secret fedns-system/myfed-dnssec lacks "ksk.pkcs8", "zsk.pkcs8" (keyMode KSK+ZSK)"#
        );
        let csk = config_of(&sink, &zone(DnssecKeyMode::Csk)).unwrap();
        assert_eq!((csk.zone_signing_key, csk.standby.len()), (None, 0));
        // A key that does not parse: named by data key, bytes never shown.
        sink.set_dnssec_secrets(BTreeMap::from([(
            ("fedns-system".to_owned(), "myfed-dnssec".to_owned()),
            BTreeMap::from([
                (DNSSEC_KEY_DATA.to_owned(), key),
                ("zsk-2.pkcs8".to_owned(), vec![0xAB; 40]),
            ]),
        )]));
        let err = config_of(&sink, &zone(DnssecKeyMode::Csk)).unwrap_err();
        assert!(err.contains(r#""zsk-2.pkcs8""#) && !err.contains("171"), "{err}");
    }

    /// `--dnssec-key-dir` in KSK+ZSK mode: `<zone>.13.ksk.pkcs8` and
    /// `<zone>.13.zsk.pkcs8` made (mode 0600) and kept; a
    /// `<zone>.13.standby-zsk*.pkcs8` file is a standby ZSK, another
    /// `standby-*` file a standby KSK.
    #[test]
    fn key_dir_ksk_zsk_and_standby_files() {
        let dir = std::env::temp_dir().join(format!("fedns-keydir-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let sink = EmbeddedSink::new(ZoneStore::new());
        sink.set_dnssec_key_dir(dir.clone());
        let zone = zone(DnssecKeyMode::KskZsk);
        let first = config_of(&sink, &zone).unwrap();
        for file in ["example.com.13.ksk.pkcs8", "example.com.13.zsk.pkcs8"] {
            let meta = std::fs::metadata(dir.join(file)).unwrap();
            #[cfg(unix)]
            {
                use std::os::unix::fs::PermissionsExt;
                assert_eq!(meta.permissions().mode() & 0o777, 0o600, "{file}");
            }
            assert!(meta.len() > 0);
        }
        assert!(
            !dir.join("example.com.13.pkcs8").exists(),
            "no CSK made in KSK+ZSK mode"
        );
        assert!(first.standby.is_empty());
        std::fs::write(dir.join("example.com.13.standby-zsk-next.pkcs8"), pkcs8()).unwrap();
        std::fs::write(dir.join("example.com.13.standby-ksk-next.pkcs8"), pkcs8()).unwrap();
        std::fs::write(dir.join("example.org.13.standby-zsk.pkcs8"), pkcs8()).unwrap();
        let second = config_of(&sink, &zone).unwrap();
        assert_eq!(second.key, first.key, "the KSK file is kept");
        assert_eq!(second.zone_signing_key, first.zone_signing_key);
        let standby: Vec<u16> = second.standby.iter().map(DnssecKey::flags).collect();
        assert_eq!(
            standby,
            [257, 256],
            "standby-ksk-next, standby-zsk-next; example.org's ignored"
        );
        // CSK mode on the same folder: its own file, the standby keys too.
        let csk = config_of(&sink, &self::zone(DnssecKeyMode::Csk)).unwrap();
        assert!(dir.join("example.com.13.pkcs8").exists());
        assert_eq!((csk.zone_signing_key.is_none(), csk.standby.len()), (true, 2));
        std::fs::remove_dir_all(&dir).ok();
    }
}
