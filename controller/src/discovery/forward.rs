//! The forwarding configuration a member's cluster DNS needs: one domain,
//! `F.svc.<cluster-domain>`, sent to the member-side replica. Printed by
//! `fedns join` and `fedns discovery-config`.

use std::fmt::Write as _;

/// The configuration for federations `federations` (Domain names), cluster
/// domain `cluster_domain`, and the replica's address `server` (`IP` or
/// `IP:PORT`): a CoreDNS server block per federation (CoreDNS 1.8 and
/// later; add to the `coredns` ConfigMap's Corefile), kube-dns
/// `stubDomains`, and dnsmasq / NodeLocal DNSCache lines.
pub fn forward_config(federations: &[String], cluster_domain: &str, server: &str) -> String {
    let cluster_domain = cluster_domain.trim_end_matches('.');
    let (ip, port) = split_server(server);
    let domains: Vec<String> = federations
        .iter()
        .map(|f| format!("{}.svc.{cluster_domain}", f.to_ascii_lowercase()))
        .collect();
    let mut out = String::new();
    let _ = writeln!(out, "# CoreDNS 1.8+ (ConfigMap kube-system/coredns, key Corefile): add");
    for domain in &domains {
        let _ = writeln!(
            out,
            "{domain}:53 {{\n    errors\n    cache 5\n    forward . {ip}:{port}\n}}"
        );
    }
    let _ = writeln!(out, "\n# kube-dns (ConfigMap kube-system/kube-dns):");
    let stubs: Vec<String> = domains.iter().map(|d| format!("\"{d}\": [\"{ip}:{port}\"]")).collect();
    let _ = writeln!(out, "data:\n  stubDomains: |\n    {{{}}}", stubs.join(", "));
    let _ = writeln!(
        out,
        "\n# dnsmasq (and NodeLocal DNSCache's upstream dnsmasq-style stubs):"
    );
    for domain in &domains {
        let _ = writeln!(out, "--server=/{domain}/{ip}#{port}");
    }
    out
}

/// `IP:PORT`, `[IPv6]:PORT` or a bare `IP` (port 53).
fn split_server(server: &str) -> (String, u16) {
    if let Ok(addr) = server.parse::<std::net::SocketAddr>() {
        let ip = match addr.ip() {
            std::net::IpAddr::V6(v6) => format!("[{v6}]"),
            v4 => v4.to_string(),
        };
        return (ip, addr.port());
    }
    (server.trim_matches(|c| c == '[' || c == ']').to_owned(), 53)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn corefile_stub_domains_and_dnsmasq_lines() {
        let text = forward_config(&["myfed".into()], "cluster.local.", "10.96.0.53");
        assert!(text.contains("myfed.svc.cluster.local:53 {"), "{text}");
        assert!(text.contains("forward . 10.96.0.53:53"), "{text}");
        assert!(
            text.contains("{\"myfed.svc.cluster.local\": [\"10.96.0.53:53\"]}"),
            "{text}"
        );
        assert!(
            text.contains("--server=/myfed.svc.cluster.local/10.96.0.53#53"),
            "{text}"
        );
        let text = forward_config(&["myfed".into()], "cluster.local", "127.0.0.1:5300");
        assert!(text.contains("forward . 127.0.0.1:5300"), "{text}");
    }
}
