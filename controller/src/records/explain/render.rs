//! An explanation as text for a terminal ([`render`]).

use super::build::Explanation;
use super::routing::RoutingExplanation;

fn render_routing(out: &mut String, routing: &RoutingExplanation) {
    use std::fmt::Write as _;
    let _ = writeln!(out, "  routing {}", routing.policy);
    for member in &routing.members {
        let _ = writeln!(out, "    {member}");
    }
    if !routing.fallback.is_empty() {
        let _ = writeln!(out, "    fallback {}", routing.fallback.join(" → "));
    }
    if let Some(limit) = &routing.answer_limit {
        let _ = writeln!(out, "    {limit}");
    }
    if let Some(client) = &routing.client {
        let _ = writeln!(
            out,
            "  client {}: region {}, answered with {} (SCOPE PREFIX-LENGTH {})",
            client.subnet,
            client.region.as_deref().unwrap_or("(none)"),
            client.clusters.join(", "),
            client.scope
        );
        let _ = writeln!(out, "    {}", client.reason);
    }
}

/// The explanation as text for a terminal.
pub fn render(explanation: &Explanation) -> String {
    use std::fmt::Write as _;
    let mut out = String::new();
    let _ = writeln!(out, "{}", explanation.name);
    for ds in &explanation.ds_records {
        let _ = writeln!(out, "  zone signed (DNSSEC); DS for the parent zone: {ds}");
    }
    if explanation.dns_endpoints.is_empty() {
        let _ = writeln!(out, "  no DNSEndpoint publishes this name");
        return out;
    }
    let _ = writeln!(
        out,
        "  published by DNSEndpoint {}",
        explanation.dns_endpoints.join(", ")
    );
    let Some(record) = &explanation.record else {
        let _ = writeln!(
            out,
            "  not made by fedns from a record (no ServiceDNSRecord or IngressDNSRecord owns it)"
        );
        return out;
    };
    let _ = writeln!(out, "  record {record}");
    if let Some(routing) = &explanation.routing {
        render_routing(&mut out, routing);
    }
    for condition in &explanation.conditions {
        let _ = writeln!(
            out,
            "  {}={} ({}): {}",
            condition.type_, condition.status, condition.reason, condition.message
        );
    }
    let _ = writeln!(out);
    for cluster in &explanation.clusters {
        let _ = writeln!(
            out,
            "  {:<20} {:<4} control plane {}{}{}",
            cluster.cluster,
            if cluster.in_answer { "IN" } else { "OUT" },
            cluster.control_plane,
            if cluster.cordoned { ", cordoned" } else { "" },
            match cluster.ready_endpoints {
                Some(true) => ", endpoints ready",
                Some(false) => ", no ready endpoint",
                None => "",
            }
        );
        let _ = writeln!(out, "  {:<20}      {}", "", cluster.reason);
        if let Some(source) = &cluster.source {
            let _ = writeln!(
                out,
                "  {:<20}      from {source}; {source} reports Ready={} (fedns's probes decide)",
                "",
                cluster.engine_ready.as_deref().unwrap_or("(none)")
            );
        }
        for address in &cluster.addresses {
            let _ = writeln!(
                out,
                "  {:<20}      {} {}{}{}",
                "",
                address.address,
                address.state,
                address
                    .since
                    .as_deref()
                    .map(|s| format!(" since {s}"))
                    .unwrap_or_default(),
                address
                    .last_error
                    .as_deref()
                    .map(|e| format!(": {e}"))
                    .unwrap_or_default()
            );
            if let Some(pending) = &address.pending_state {
                let _ = writeln!(
                    out,
                    "  {:<20}        pending {pending}: held since {}, takes effect at {} if it holds (failover/failback delay)",
                    "",
                    address.pending_since.as_deref().unwrap_or("?"),
                    address.pending_effective_at.as_deref().unwrap_or("?")
                );
            }
            if let Some(quorum) = &address.quorum {
                let _ = writeln!(out, "  {:<20}        quorum {quorum}", "");
            }
            for vantage in &address.vantage_points {
                let _ = writeln!(
                    out,
                    "  {:<20}        vantage point {:<12} {}{}{} ({})",
                    "",
                    vantage.name,
                    vantage.state,
                    vantage
                        .since
                        .as_deref()
                        .map(|s| format!(" since {s}"))
                        .unwrap_or_default(),
                    vantage
                        .last_error
                        .as_deref()
                        .map(|e| format!(": {e}"))
                        .unwrap_or_default(),
                    vantage.standing
                );
            }
        }
    }
    out
}
