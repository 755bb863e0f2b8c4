//! Which credentials fedns takes from what others write: a MemberCluster's
//! Secret, or an inventory object (a Cluster API kubeconfig Secret, an
//! Argo CD cluster Secret, a ClusterProfile). Inline data is used as it
//! is (a token, `client-certificate-data`/`client-key-data`,
//! `certificate-authority-data`, a user name and password). What would run
//! a command or read a file on fedns's machine is refused: `exec` (unless
//! the operator named the command, `--allow-exec-plugin`),
//! `auth-provider`, `tokenFile`, `client-certificate`, `client-key`,
//! `certificate-authority`. Argo CD's `awsAuthConfig` (EKS tokens made with
//! fedns's own AWS identity) only with `--allow-argocd-aws-auth`, and only
//! for an EKS endpoint whose certificate is verified. Whoever writes those
//! objects would otherwise choose what fedns runs (as root in its pod, or
//! on the operator's machine in `fedns explain --from-cluster`) and which
//! of its files, or which of its identities' tokens, it sends to a server
//! of their choosing.
//!
//! A refusal is the member's `Ready=False` with reason
//! [`CREDENTIALS_REFUSED`], naming the field.

use std::collections::BTreeSet;

use fedns_api::conditions;
use kube::config::{ExecConfig, Kubeconfig};

/// Reason of a member's `Ready=False` condition when its credentials
/// name something fedns does not use from a Secret or an inventory object.
pub const CREDENTIALS_REFUSED: &str = "CredentialsRefused";

/// Why a member cannot be connected: the reason of its `Ready=False`
/// condition (`AuthFailed`, [`CREDENTIALS_REFUSED`]) and a one-line message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct ConnectError {
    /// The condition's reason.
    pub(crate) reason: &'static str,
    /// The condition's message.
    pub(crate) message: String,
}

impl ConnectError {
    /// Credentials refused by the [`CredentialPolicy`] (or by a source:
    /// a Secret it may not read).
    pub(crate) fn refused(message: impl Into<String>) -> ConnectError {
        ConnectError {
            reason: CREDENTIALS_REFUSED,
            message: message.into(),
        }
    }
}

/// Any other failure (bad input, a Secret missing, a client that cannot
/// be built) is `AuthFailed`.
impl From<String> for ConnectError {
    fn from(message: String) -> ConnectError {
        ConnectError {
            reason: conditions::AUTH_FAILED,
            message,
        }
    }
}

impl std::fmt::Display for ConnectError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

/// Compares the message (for tests).
impl PartialEq<&str> for ConnectError {
    fn eq(&self, other: &&str) -> bool {
        self.message == *other
    }
}

/// Environment variables a Secret may not set for an allowed plugin: they
/// choose which program runs (`PATH`: the command is looked up in it) or
/// what it loads (the dynamic loader's).
fn env_refused(name: &str) -> bool {
    name == "PATH" || name.starts_with("LD_") || name.starts_with("DYLD_")
}

/// What the operator allows beyond inline credentials (`fedns controller
/// --allow-exec-plugin`, `--allow-argocd-aws-auth`; `fedns explain
/// --allow-exec-plugin`). The default allows nothing more.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CredentialPolicy {
    /// Commands of exec credential plugins that may run, each matched
    /// exactly against the `command` written in the Secret or object
    /// (`argocd-k8s-auth` allows that name, looked up in fedns's `PATH`,
    /// not `/tmp/argocd-k8s-auth`).
    pub exec_plugins: BTreeSet<String>,
    /// Argo CD `awsAuthConfig`: make EKS tokens with fedns's own AWS
    /// identity, for EKS endpoints only.
    pub argocd_aws_auth: bool,
}

impl CredentialPolicy {
    /// An exec plugin (`field` names it in messages): its command must be
    /// one of [`CredentialPolicy::exec_plugins`], and its environment may
    /// not choose another program.
    pub(crate) fn check_exec(&self, exec: &ExecConfig, field: &str) -> Result<(), String> {
        let command = exec.command.as_deref().unwrap_or_default();
        if !self.exec_plugins.contains(command) {
            return Err(format!(
                "{field} runs command {command:?}; fedns runs a credential plugin named by a Secret or an inventory object only when it is started with --allow-exec-plugin={command}"
            ));
        }
        let mut set: Vec<&str> = exec
            .env
            .iter()
            .flatten()
            .filter_map(|e| e.get("name").map(String::as_str))
            .filter(|name| env_refused(name))
            .collect();
        set.sort_unstable();
        set.dedup();
        if !set.is_empty() {
            return Err(format!(
                "{field} sets {} in the plugin's environment, which would choose what runs: not allowed from a Secret or an inventory object",
                set.join(", ")
            ));
        }
        Ok(())
    }

    /// A whole kubeconfig from a Secret or an inventory object (`origin`
    /// names it): every cluster and user in it, not only the current
    /// context's. `operator_exec`: its exec plugins are the operator's own
    /// (a ClusterProfile provider file), not the object's. A kubeconfig
    /// that does not parse passes (building the client reports it).
    pub(crate) fn check_kubeconfig(&self, text: &str, origin: &str, operator_exec: bool) -> Result<(), String> {
        let Ok(kubeconfig) = Kubeconfig::from_yaml(text) else {
            return Ok(());
        };
        let mut refused = Vec::new();
        // Files and auth providers have an inline replacement to name.
        let mut inline_instead = false;
        for named in &kubeconfig.clusters {
            let Some(cluster) = &named.cluster else { continue };
            if cluster.certificate_authority.is_some() {
                inline_instead = true;
                refused.push(format!(
                    "cluster {:?} has certificate-authority (a file on fedns's machine; use certificate-authority-data)",
                    named.name
                ));
            }
        }
        for named in &kubeconfig.auth_infos {
            let Some(user) = &named.auth_info else { continue };
            let files = [
                ("tokenFile", user.token_file.is_some(), "token"),
                (
                    "client-certificate",
                    user.client_certificate.is_some(),
                    "client-certificate-data",
                ),
                ("client-key", user.client_key.is_some(), "client-key-data"),
            ];
            for (field, set, inline) in files {
                if set {
                    inline_instead = true;
                    refused.push(format!(
                        "user {:?} has {field} (a file on fedns's machine; use {inline})",
                        named.name
                    ));
                }
            }
            if let Some(provider) = &user.auth_provider {
                inline_instead = true;
                refused.push(format!(
                    "user {:?} has auth-provider {:?} (it can run a command or read files; never used from a Secret)",
                    named.name, provider.name
                ));
            }
            if let Some(exec) = &user.exec {
                if !operator_exec {
                    if let Err(e) = self.check_exec(exec, &format!("user {:?} exec", named.name)) {
                        refused.push(e);
                    }
                }
            }
        }
        if refused.is_empty() {
            Ok(())
        } else if inline_instead {
            Err(format!(
                "{origin}: {}; fedns uses only inline credentials from a Secret or an inventory object (token, client-certificate-data/client-key-data, certificate-authority-data, username/password)",
                refused.join("; ")
            ))
        } else {
            Err(format!("{origin}: {}", refused.join("; ")))
        }
    }

    /// EKS tokens made in process (Argo CD `awsAuthConfig`, `origin`
    /// names the Secret) for `endpoint`: only with
    /// [`CredentialPolicy::argocd_aws_auth`], only to an EKS endpoint
    /// ([`is_eks_endpoint`]) whose certificate is verified (`insecure`
    /// false).
    pub(crate) fn check_eks(&self, endpoint: &str, insecure: bool, origin: &str) -> Result<(), String> {
        if !self.argocd_aws_auth {
            return Err(format!(
                "{origin}: config.awsAuthConfig would have fedns sign EKS tokens with its own AWS identity, which it does only when started with --allow-argocd-aws-auth"
            ));
        }
        if !is_eks_endpoint(endpoint) {
            return Err(format!(
                "{origin}: config.awsAuthConfig: server {endpoint:?} is not an EKS endpoint (https://<id>.<zone>.<region>.eks.amazonaws.com); fedns sends its EKS tokens to no other server"
            ));
        }
        if insecure {
            return Err(format!(
                "{origin}: config.awsAuthConfig with tlsClientConfig.insecure: an EKS token is not sent to a server whose certificate is not verified"
            ));
        }
        Ok(())
    }
}

/// Is `url` an EKS cluster endpoint: `https`, port 443 (or none), no user
/// information or path, a host of at least one label under
/// `eks.amazonaws.com` (`eks.amazonaws.com.cn` in China), as EKS names
/// them (`https://<id>.<zone>.<region>.eks.amazonaws.com`)?
pub(crate) fn is_eks_endpoint(url: &str) -> bool {
    let Ok(uri) = url.parse::<http::Uri>() else {
        return false;
    };
    let Some(authority) = uri.authority() else {
        return false;
    };
    if uri.scheme_str() != Some("https")
        || authority.as_str().contains('@')
        || uri.port_u16().is_some_and(|p| p != 443)
        || !matches!(uri.path(), "" | "/")
        || uri.query().is_some()
    {
        return false;
    }
    let host = authority.host().to_ascii_lowercase();
    let Some(name) = host
        .strip_suffix(".eks.amazonaws.com")
        .or_else(|| host.strip_suffix(".eks.amazonaws.com.cn"))
    else {
        return false;
    };
    !name.is_empty()
        && name
            .split('.')
            .all(|label| !label.is_empty() && label.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn policy(plugins: &[&str]) -> CredentialPolicy {
        CredentialPolicy {
            exec_plugins: plugins.iter().map(|p| (*p).to_owned()).collect(),
            argocd_aws_auth: false,
        }
    }

    fn kubeconfig(cluster: &str, user: &str) -> String {
        format!(
            "apiVersion: v1\nkind: Config\nclusters: [{{name: w, cluster: {{server: 'https://127.0.0.1:6443'{cluster}}}}}]\nusers: [{{name: u, user: {user}}}]\ncontexts: [{{name: c, context: {{cluster: w, user: u}}}}]\ncurrent-context: c\n"
        )
    }

    #[test]
    fn inline_credentials_pass() {
        let text = kubeconfig(
            ", certificate-authority-data: LS0tLS0=",
            "{token: t, client-certificate-data: Y2VydA==, client-key-data: a2V5}",
        );
        assert_eq!(policy(&[]).check_kubeconfig(&text, "Secret s", false), Ok(()));
    }

    /// Each field that names a file or a command is refused by name.
    #[test]
    fn files_commands_and_auth_providers_are_refused_by_name() {
        let cases = [
            (kubeconfig(", certificate-authority: /etc/ssl/ca.pem", "{token: t}"), "cluster \"w\" has certificate-authority"),
            (kubeconfig("", "{tokenFile: /var/run/secrets/kubernetes.io/serviceaccount/token}"), "user \"u\" has tokenFile"),
            (kubeconfig("", "{client-certificate: /etc/c.pem, client-key: /etc/k.pem}"), "user \"u\" has client-certificate (a file on fedns's machine; use client-certificate-data); user \"u\" has client-key"),
            (kubeconfig("", "{auth-provider: {name: gcp, config: {cmd-path: /bin/id}}}"), "user \"u\" has auth-provider \"gcp\""),
            (kubeconfig("", "{exec: {command: id, apiVersion: client.authentication.k8s.io/v1}}"), "user \"u\" exec runs command \"id\"; fedns runs a credential plugin named by a Secret or an inventory object only when it is started with --allow-exec-plugin=id"),
        ];
        for (text, want) in cases {
            let err = policy(&["argocd-k8s-auth"])
                .check_kubeconfig(&text, "Secret fedns-system/s key kubeconfig", false)
                .unwrap_err();
            assert!(err.starts_with("Secret fedns-system/s key kubeconfig: "), "{err}");
            assert!(err.contains(want), "{err}\nwanted: {want}");
        }
    }

    /// A user outside the current context is checked too: kube-rs reads
    /// only the current context's, but what a Secret holds is not run
    /// anywhere.
    #[test]
    fn every_user_is_checked_not_only_the_current_one() {
        let text = "apiVersion: v1\nkind: Config\nclusters: [{name: w, cluster: {server: 'https://127.0.0.1:6443'}}]\nusers: [{name: u, user: {token: t}}, {name: other, user: {exec: {command: sh, apiVersion: client.authentication.k8s.io/v1}}}]\ncontexts: [{name: c, context: {cluster: w, user: u}}]\ncurrent-context: c\n";
        let err = policy(&[]).check_kubeconfig(text, "Secret s", false).unwrap_err();
        assert!(err.contains("user \"other\" exec runs command \"sh\""), "{err}");
    }

    /// Only the exact command allowed runs: not a path ending in that
    /// name, not another name; the plugin's environment may not change
    /// `PATH` or the loader's variables.
    #[test]
    fn only_the_named_command_runs_and_its_environment_cannot_choose_another() {
        let exec = |command: &str, env: &[(&str, &str)]| ExecConfig {
            command: Some(command.into()),
            env: Some(
                env.iter()
                    .map(|(n, v)| {
                        [
                            ("name".to_owned(), (*n).to_owned()),
                            ("value".to_owned(), (*v).to_owned()),
                        ]
                        .into()
                    })
                    .collect(),
            ),
            ..ExecConfig::default()
        };
        let p = policy(&["argocd-k8s-auth"]);
        assert_eq!(
            p.check_exec(&exec("argocd-k8s-auth", &[("AWS_REGION", "eu-west-1")]), "exec"),
            Ok(())
        );
        for refused in [
            "/tmp/argocd-k8s-auth",
            "./argocd-k8s-auth",
            "argocd-k8s-auth ",
            "sh",
            "",
        ] {
            assert!(p.check_exec(&exec(refused, &[]), "exec").is_err(), "{refused:?} ran");
        }
        for name in ["PATH", "LD_PRELOAD", "DYLD_INSERT_LIBRARIES"] {
            let err = p
                .check_exec(&exec("argocd-k8s-auth", &[(name, "/tmp")]), "exec")
                .unwrap_err();
            assert!(
                err.contains(&format!("sets {name} in the plugin's environment")),
                "{err}"
            );
        }
        // The operator's own plugins (a ClusterProfile provider file) are not checked.
        let text = kubeconfig(
            "",
            "{exec: {command: kubelogin, apiVersion: client.authentication.k8s.io/v1}}",
        );
        assert_eq!(p.check_kubeconfig(&text, "access provider kubelogin", true), Ok(()));
        assert!(p.check_kubeconfig(&text, "access provider kubelogin", false).is_err());
    }

    #[test]
    fn eks_endpoints() {
        for good in [
            "https://0123456789ABCDEF0123456789ABCDEF.gr7.eu-west-1.eks.amazonaws.com",
            "https://abc.yl4.us-east-1.eks.amazonaws.com/",
            "https://abc.sk1.us-west-2.eks.amazonaws.com:443",
            "https://abc.yl4.cn-north-1.eks.amazonaws.com.cn",
        ] {
            assert!(is_eks_endpoint(good), "{good}");
        }
        for bad in [
            "https://127.0.0.1:6443",
            "http://abc.gr7.eu-west-1.eks.amazonaws.com",
            "https://eks.amazonaws.com",
            "https://abc.gr7.eu-west-1.eks.amazonaws.com.attacker.example",
            "https://abc.gr7.eu-west-1.eks.amazonaws.com:6443",
            "https://user@abc.gr7.eu-west-1.eks.amazonaws.com",
            "https://abc.gr7.eu-west-1.eks.amazonaws.com/path",
            "https://attacker.example/abc.gr7.eu-west-1.eks.amazonaws.com",
            "https://abc..eks.amazonaws.com",
            "abc.gr7.eu-west-1.eks.amazonaws.com",
            "",
        ] {
            assert!(!is_eks_endpoint(bad), "{bad}");
        }
    }

    #[test]
    fn eks_tokens_need_the_flag_an_eks_endpoint_and_a_verified_certificate() {
        let eks = "https://abc.gr7.eu-west-1.eks.amazonaws.com";
        let err = policy(&[]).check_eks(eks, false, "Secret argocd/c").unwrap_err();
        assert!(err.contains("--allow-argocd-aws-auth"), "{err}");
        let allowed = CredentialPolicy {
            argocd_aws_auth: true,
            ..CredentialPolicy::default()
        };
        assert_eq!(allowed.check_eks(eks, false, "Secret argocd/c"), Ok(()));
        let err = allowed
            .check_eks("https://127.0.0.1:6443", false, "Secret argocd/c")
            .unwrap_err();
        assert!(err.contains("is not an EKS endpoint"), "{err}");
        let err = allowed.check_eks(eks, true, "Secret argocd/c").unwrap_err();
        assert!(err.contains("tlsClientConfig.insecure"), "{err}");
    }
}
