//! The Kubernetes API client: from the kubeconfig file a flag names, or inferred
//! (`$KUBECONFIG`, `~/.kube/config`, the pod's service account).

use std::path::Path;

use crate::{Error, Result};

/// The client config from `kubeconfig`, or inferred when `None`; `context` picks a context of
/// the kubeconfig other than its current one. Callers may adjust the config (the agent turns off
/// the client's own retries) before [`client`].
///
/// # Errors
/// [`Error::KubeconfigRead`], [`Error::KubeconfigInvalid`] or [`Error::NoConfig`].
pub async fn kube_config(kubeconfig: Option<&Path>, context: Option<&str>) -> Result<kube::Config> {
    let options = kube::config::KubeConfigOptions {
        context: context.map(str::to_string),
        ..Default::default()
    };
    match kubeconfig {
        Some(path) => {
            let shown = path.display().to_string();
            let file = kube::config::Kubeconfig::read_from(path).map_err(|source| {
                Error::KubeconfigRead {
                    path: shown.clone(),
                    source,
                }
            })?;
            kube::Config::from_custom_kubeconfig(file, &options)
                .await
                .map_err(|source| Error::KubeconfigInvalid {
                    path: shown,
                    source,
                })
        }
        None if context.is_some() => {
            kube::Config::from_kubeconfig(&options)
                .await
                .map_err(|source| Error::KubeconfigInvalid {
                    path: "$KUBECONFIG or ~/.kube/config".into(),
                    source,
                })
        }
        None => kube::Config::infer().await.map_err(Error::NoConfig),
    }
}

/// A client for `config`.
///
/// # Errors
/// [`Error::Client`].
pub fn client(config: kube::Config) -> Result<kube::Client> {
    kube::Client::try_from(config).map_err(Error::Client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_missing_kubeconfig_is_named() {
        let e = kube_config(Some(Path::new("/nonexistent/kubeconfig")), None)
            .await
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("cannot read kubeconfig /nonexistent/kubeconfig"),
            "{e}"
        );
    }
}
