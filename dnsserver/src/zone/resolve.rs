//! The RFC 1034 §4.3.2 answer algorithm run over the [`Tree`]: exact
//! match, CNAME chains, wildcards, referrals, with a routed name's
//! variant RRsets in place of its plain ones ([`Override`]).
//!
//! The snapshot builder runs [`Tree::resolve`] for every (name, type) worth
//! pre-rendering; the query path runs it only for the rare answers that
//! cannot be pre-rendered (wildcard synthesis, names below a zone cut).

use hickory_proto::op::ResponseCode;
use hickory_proto::rr::{Name, RData, Record, RecordType};

use super::tree::{fqdn, wire_key, Key, Node, RRset, Tree, VariantSets};

/// Longest CNAME chain followed for one answer. Chains longer than this (or
/// looping) end with what was gathered so far, as Knot and BIND do.
pub(crate) const MAX_CNAME_CHAIN: usize = 16;

/// The outcome of the answer algorithm for one question.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Resolution {
    pub rcode: ResponseCode,
    pub authoritative: bool,
    pub answers: Vec<Record>,
    pub authorities: Vec<Record>,
    pub additionals: Vec<Record>,
}

impl Resolution {
    fn new() -> Self {
        Resolution {
            rcode: ResponseCode::NoError,
            authoritative: true,
            answers: Vec::new(),
            authorities: Vec::new(),
            additionals: Vec::new(),
        }
    }
}

/// The RRsets a resolution uses at one routed name instead of its plain
/// ones: (index into [`Tree::routed`], the variant's RRsets).
pub(crate) type Override<'a> = Option<(usize, &'a VariantSets)>;

impl Tree {
    /// RFC 1034 §4.3.2 for one question, with RFC 4592 wildcards,
    /// referrals at zone cuts, and minimal ANY (RFC 8482 §4.1). CNAME
    /// chains are followed inside the zone of the question only, as Knot
    /// does: records of another zone would be out of bailiwick for the
    /// resolver, which discards them (RFC 2181 §5.4.1), so they only cost
    /// octets. `None`: the name is in no served zone (REFUSED).
    pub fn resolve(&self, qname: &Name, qtype: RecordType) -> Option<Resolution> {
        self.resolve_routed(qname, qtype, None).map(|(res, _)| res)
    }

    /// [`Tree::resolve`], answering the routed name of `variant` with the
    /// variant's RRsets; also returns the first routed name the answer
    /// went through (its answer depends on the variant).
    pub fn resolve_routed(
        &self,
        qname: &Name,
        qtype: RecordType,
        variant: Override<'_>,
    ) -> Option<(Resolution, Option<usize>)> {
        let mut touched = None;
        let res = self.resolve_inner(qname, qtype, variant, &mut touched)?;
        Some((res, touched))
    }

    fn resolve_inner(
        &self,
        qname: &Name,
        qtype: RecordType,
        variant: Override<'_>,
        touched: &mut Option<usize>,
    ) -> Option<Resolution> {
        let qname = fqdn(qname.clone());
        let question_zone = self.zone_for(&qname)?;
        let mut res = Resolution::new();
        let mut current = qname;
        let mut seen: Vec<Key> = Vec::new();
        for _ in 0..=MAX_CNAME_CHAIN {
            let zone = match self.zone_for(&current) {
                Some(zone) if zone == question_zone => zone,
                // Zones answered to stub resolvers through forwarders:
                // the chain goes on in the other served zones.
                Some(zone) if self.zones[question_zone].follow_cnames_across_zones => zone,
                // The chain left the zone: the resolver continues it.
                _ => return Some(res),
            };
            let key = wire_key(&current);
            if seen.contains(&key) {
                return Some(res); // CNAME loop: stop, as Knot does
            }
            seen.push(key.clone());
            if !self.zones[zone].pending.is_empty() && self.zones[zone].pending.binary_search(&key).is_ok() {
                // A pending name (`ZoneContent::pending`): SERVFAIL when
                // asked; a chain reaching it stops (the resolver asks it).
                if res.answers.is_empty() {
                    res.rcode = ResponseCode::ServFail;
                    res.authoritative = false;
                }
                return Some(res);
            }

            let (node, synthesized) = match self.nodes.get(&key) {
                Some(node) => (node, false),
                None => {
                    let encloser = self.closest_encloser(&current, zone);
                    if encloser.cut.is_some() {
                        self.referral(encloser, &mut res);
                        return Some(res);
                    }
                    if encloser.wildcard_child {
                        let wild = Name::from_ascii("*")
                            .and_then(|w| w.append_name(&encloser.name))
                            .ok()
                            .and_then(|w| self.nodes.get(&wire_key(&w)));
                        match wild {
                            Some(wild) => (wild, true),
                            None => return Some(self.nxdomain(zone, res)),
                        }
                    } else {
                        return Some(self.nxdomain(zone, res));
                    }
                }
            };
            if let Some(cut_key) = &node.cut {
                let at_cut = !synthesized && cut_key == &key;
                if !(at_cut && qtype == RecordType::DS) {
                    let cut = &self.nodes[cut_key];
                    self.referral(cut, &mut res);
                    return Some(res);
                }
                // DS at a cut is answered by the parent: NODATA here (no DNSSEC).
                res.authorities.push(self.zones[zone].negative_soa.clone());
                return Some(res);
            }
            let owner = current.clone();
            let mut rrsets = &node.rrsets;
            if let Some(&routed) = self.routed_keys.get(&key).filter(|_| !synthesized) {
                touched.get_or_insert(routed);
                if let Some((_, sets)) = variant.filter(|(r, _)| *r == routed) {
                    rrsets = sets;
                }
            }
            if qtype == RecordType::ANY {
                // RFC 8482 §4.1: one RRset is enough; the first in type order.
                match rrsets.iter().next() {
                    Some((rtype, set)) => push_rrset(&mut res.answers, &owner, *rtype, set),
                    None => res.authorities.push(self.zones[zone].negative_soa.clone()),
                }
                return Some(res);
            }
            if let Some(set) = rrsets.get(&qtype) {
                push_rrset(&mut res.answers, &owner, qtype, set);
                self.add_additionals(qtype, set, &mut res);
                return Some(res);
            }
            if let Some(cname) = rrsets.get(&RecordType::CNAME) {
                push_rrset(&mut res.answers, &owner, RecordType::CNAME, cname);
                match cname.rdatas.first().as_deref() {
                    Some(RData::CNAME(target)) => current = fqdn(target.0.to_lowercase()),
                    _ => return Some(res),
                }
                continue;
            }
            res.authorities.push(self.zones[zone].negative_soa.clone());
            return Some(res);
        }
        Some(res)
    }

    /// The types of the wildcard that answers for the missing name
    /// `name` (RFC 4592 §3.3.1), or `None` when no wildcard does.
    pub fn wildcard_types(&self, name: &Name) -> Option<Vec<RecordType>> {
        let name = fqdn(name.to_lowercase());
        let zone = self.zone_for(&name)?;
        let encloser = self.closest_encloser(&name, zone);
        if encloser.cut.is_some() || !encloser.wildcard_child {
            return None;
        }
        let wild = Name::from_ascii("*").and_then(|w| w.append_name(&encloser.name)).ok()?;
        let node = self.nodes.get(&wire_key(&wild))?;
        Some(node.rrsets.keys().copied().collect())
    }

    /// The deepest existing ancestor of `name` in `zone` (the apex at worst).
    pub(crate) fn closest_encloser(&self, name: &Name, zone: usize) -> &Node {
        let apex_labels = self.zones[zone].apex.num_labels();
        let mut current = name.clone();
        while current.num_labels() > apex_labels {
            current = current.base_name();
            if let Some(node) = self.nodes.get(&wire_key(&current)) {
                return node;
            }
        }
        &self.nodes[&self.zones[zone].apex_key]
    }

    fn nxdomain(&self, zone: usize, mut res: Resolution) -> Resolution {
        res.rcode = ResponseCode::NXDomain;
        res.authorities.push(self.zones[zone].negative_soa.clone());
        res
    }

    /// RFC 1034 §4.3.2 step 3b: NS of the cut in authority, glue in additional.
    fn referral(&self, cut: &Node, res: &mut Resolution) {
        if res.answers.is_empty() {
            res.authoritative = false;
        }
        if let Some(ns) = cut.rrsets.get(&RecordType::NS) {
            push_rrset(&mut res.authorities, &cut.name, RecordType::NS, ns);
            for rdata in &ns.rdatas {
                if let RData::NS(target) = &*rdata {
                    self.push_addresses(&target.0, &mut res.additionals, true);
                }
            }
        }
    }

    /// Additional section processing (RFC 1034 §4.3.2 step 6) for NS, MX
    /// and SRV targets with addresses in the served zones.
    fn add_additionals(&self, rtype: RecordType, set: &RRset, res: &mut Resolution) {
        for rdata in &set.rdatas {
            let target = match (rtype, &*rdata) {
                (RecordType::NS, RData::NS(ns)) => &ns.0,
                (RecordType::MX, RData::MX(mx)) => &mx.exchange,
                (RecordType::SRV, RData::SRV(srv)) => &srv.target,
                _ => continue,
            };
            self.push_addresses(target, &mut res.additionals, false);
        }
    }

    fn push_addresses(&self, target: &Name, out: &mut Vec<Record>, glue: bool) {
        let Some(node) = self.nodes.get(&wire_key(&fqdn(target.to_lowercase()))) else {
            return;
        };
        if node.cut.is_some() && !glue {
            return; // below a cut: not authoritative data
        }
        for rtype in [RecordType::A, RecordType::AAAA] {
            if let Some(set) = node.rrsets.get(&rtype) {
                push_rrset(out, &node.name, rtype, set);
            }
        }
    }
}

fn push_rrset(out: &mut Vec<Record>, owner: &Name, rtype: RecordType, set: &RRset) {
    debug_assert!(set.rdatas.iter().all(|r| r.record_type() == rtype));
    out.extend(
        set.rdatas
            .iter()
            .map(|rdata| Record::from_rdata(owner.clone(), set.ttl, rdata.into_owned())),
    );
}
