//! A container's liveness and readiness probes as the kubelet polls them (pure): `httpGet`
//! only, named ports looked up, Kubernetes' defaults.

use std::net::{Ipv4Addr, SocketAddr};
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Container, Probe};
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;

/// An HTTP probe as the kubelet polls it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct HttpProbe {
    /// Where: the pod's address (or the probe's `host`) and port.
    pub addr: SocketAddr,
    /// The path.
    pub path: String,
    /// `initialDelaySeconds`.
    pub initial_delay: Duration,
    /// `periodSeconds`.
    pub period: Duration,
    /// `timeoutSeconds`.
    pub timeout: Duration,
    /// `failureThreshold`.
    pub failure_threshold: u32,
    /// `successThreshold`.
    pub success_threshold: u32,
}

/// The probe `pr` of container `c` at `at` (its field path), polled at `pod_ip` unless it names
/// a host.
pub(super) fn http_probe(
    pr: &Probe,
    c: &Container,
    pod_ip: Ipv4Addr,
    at: &str,
) -> Result<HttpProbe> {
    let get = pr
        .http_get
        .as_ref()
        .with_context(|| format!("{at}: only httpGet probes are modelled"))?;
    if get.scheme.as_deref().is_some_and(|s| s != "HTTP") {
        bail!("{at}.httpGet.scheme: only HTTP is modelled");
    }
    let port = match &get.port {
        IntOrString::Int(n) => {
            u16::try_from(*n).with_context(|| format!("{at}.httpGet.port {n}"))?
        }
        IntOrString::String(name) => (c.ports.iter().flatten())
            .find(|cp| cp.name.as_deref() == Some(name))
            .and_then(|cp| u16::try_from(cp.container_port).ok())
            .with_context(|| {
                format!("{at}.httpGet.port: the container has no port named {name}")
            })?,
    };
    let host: std::net::IpAddr = match &get.host {
        Some(h) => h
            .parse()
            .with_context(|| format!("{at}.httpGet.host {h}: the lab probes addresses only"))?,
        None => pod_ip.into(),
    };
    let secs = |v: Option<i32>, default: u64| {
        Duration::from_secs(v.and_then(|v| u64::try_from(v).ok()).unwrap_or(default))
    };
    let count =
        |v: Option<i32>, default: u32| v.and_then(|v| u32::try_from(v).ok()).unwrap_or(default);
    Ok(HttpProbe {
        addr: SocketAddr::new(host, port),
        path: get.path.clone().unwrap_or_else(|| "/".into()),
        initial_delay: secs(pr.initial_delay_seconds, 0),
        period: secs(pr.period_seconds, 10),
        timeout: secs(pr.timeout_seconds, 1),
        failure_threshold: count(pr.failure_threshold, 3),
        success_threshold: count(pr.success_threshold, 1),
    })
}

impl std::fmt::Display for HttpProbe {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "http://{}{}", self.addr, self.path)
    }
}
