//! Building kube clients from a kubeconfig path or the environment.

use std::path::Path;

use anyhow::Context;
use kube::config::{KubeConfigOptions, Kubeconfig};
use kube::{Client, Config};

/// A client for `kubeconfig` (its current context), or, without a path,
/// the in-cluster configuration, else `$KUBECONFIG` / `~/.kube/config`.
///
/// # Errors
/// The kubeconfig cannot be read or parsed, or names no usable cluster.
pub async fn client(kubeconfig: Option<&Path>) -> anyhow::Result<Client> {
    Client::try_from(config(kubeconfig).await?).context("building the Kubernetes client")
}

/// The client configuration [`client`] uses.
///
/// # Errors
/// As [`client`].
pub async fn config(kubeconfig: Option<&Path>) -> anyhow::Result<Config> {
    let config = match kubeconfig {
        Some(path) => {
            let kubeconfig =
                Kubeconfig::read_from(path).with_context(|| format!("reading kubeconfig {}", path.display()))?;
            Config::from_custom_kubeconfig(kubeconfig, &KubeConfigOptions::default())
                .await
                .with_context(|| format!("using kubeconfig {}", path.display()))?
        }
        None => Config::infer()
            .await
            .context("no in-cluster config and no kubeconfig found")?,
    };
    Ok(config)
}
