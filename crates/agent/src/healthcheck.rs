//! The health-check file (`--healthcheck-config PATH`), in the format of the Go operator's
//! `net-healthcheck-config.yaml`, extended by protocol and VRF: checks that see tenant traffic,
//! which the API-server path alone cannot.
//!
//! ```yaml
//! interfaces: ["eth0", "l2.*"]      # every interface matching a pattern must be up (`*` globs)
//! reachability:
//!   - host: 10.0.0.1                 # TCP by default: a connection to host:port opens
//!     port: 443
//!   - host: 10.250.0.10              # ICMP: an echo reply arrives
//!     protocol: icmp
//!     vrf: vr.m2m                    # bound to this device (a VRF): tenant reachability
//! taints: [node.netrollout.io/network-unavailable]   # removed once Provisioned and passing
//! timeout: 3s                        # per check (default: the agent's --probe-each-timeout)
//! retries: 3                         # accepted for compatibility; the agent's probe loop retries
//! ```
//!
//! `interfacesFile`, `reachabilityFile` and `taintsFile` name further YAML lists (relative to the
//! file's directory), as in the Go operator. The checks join the agent's probes: like every
//! probe, one that already failed before a change is reported, not enforced.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::icmp;
use crate::outcome::Outcome;

/// Why a health-check file was rejected; each names the file and the field.
#[derive(Debug, thiserror::Error)]
pub enum HealthCheckError {
    /// The file cannot be read.
    #[error("health-check file {path}: {source}")]
    Read {
        /// The file.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// The file is not valid YAML of the expected shape.
    #[error("health-check file {path}: {message} (see docs/agent.md for the format)")]
    Parse {
        /// The file.
        path: PathBuf,
        /// What the parser said.
        message: String,
    },
    /// A field has a value the agent cannot use.
    #[error("health-check file {path}: {field}: {message}")]
    Field {
        /// The file.
        path: PathBuf,
        /// Which field, e.g. `reachability[1].port`.
        field: String,
        /// What is wrong and what to write instead.
        message: String,
    },
}

/// The checks of a health-check file.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HealthCheck {
    /// Interface name patterns (`*` matches any run of characters).
    pub interfaces: Vec<String>,
    /// Reachability checks.
    pub reachability: Vec<Reachability>,
    /// Taint keys to remove from the Node once Provisioned with the checks passing.
    pub taints: Vec<String>,
    /// Time limit of each check, when the file sets one.
    pub timeout: Option<Duration>,
}

/// One reachability check.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Reachability {
    /// Host name or address.
    pub host: String,
    /// TCP port (TCP only).
    pub port: u16,
    /// TCP or ICMP.
    pub protocol: Protocol,
    /// Device (a VRF) the check's socket is bound to.
    pub vrf: Option<String>,
}

/// How a reachability check probes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Protocol {
    /// A TCP connection opens.
    Tcp,
    /// An ICMP echo reply arrives.
    Icmp,
}

#[derive(Debug, Default, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
struct File {
    #[serde(default)]
    interfaces: Vec<String>,
    interfaces_file: Option<PathBuf>,
    #[serde(default)]
    reachability: Vec<RawReachability>,
    reachability_file: Option<PathBuf>,
    #[serde(default)]
    taints: Vec<String>,
    taints_file: Option<PathBuf>,
    timeout: Option<String>,
    retries: Option<u32>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawReachability {
    host: String,
    port: Option<u16>,
    protocol: Option<Protocol>,
    vrf: Option<String>,
}

fn parse<T: for<'de> Deserialize<'de>>(path: &Path) -> Result<T, HealthCheckError> {
    let text = std::fs::read_to_string(path).map_err(|source| HealthCheckError::Read {
        path: path.to_path_buf(),
        source,
    })?;
    serde_saphyr::from_str(&text).map_err(|e| HealthCheckError::Parse {
        path: path.to_path_buf(),
        message: e.to_string(),
    })
}

impl HealthCheck {
    /// Reads and validates a health-check file and the files it names.
    pub fn load(path: &Path) -> Result<Self, HealthCheckError> {
        let file: File = parse(path)?;
        let dir = path.parent().unwrap_or(Path::new("."));
        let field = |field: String, message: String| HealthCheckError::Field {
            path: path.to_path_buf(),
            field,
            message,
        };
        let mut interfaces = file.interfaces;
        if let Some(f) = &file.interfaces_file {
            interfaces.extend(parse::<Vec<String>>(&dir.join(f))?);
        }
        let mut raw = file.reachability;
        if let Some(f) = &file.reachability_file {
            raw.extend(parse::<Vec<RawReachability>>(&dir.join(f))?);
        }
        let mut taints = file.taints;
        if let Some(f) = &file.taints_file {
            taints.extend(parse::<Vec<String>>(&dir.join(f))?);
        }
        let mut reachability = Vec::new();
        for (i, r) in raw.into_iter().enumerate() {
            let protocol = r.protocol.unwrap_or(Protocol::Tcp);
            let port = match (protocol, r.port) {
                (Protocol::Tcp, Some(p)) if p > 0 => p,
                (Protocol::Tcp, _) => {
                    return Err(field(
                        format!("reachability[{i}].port"),
                        format!("a TCP check of {:?} needs a port from 1 to 65535", r.host),
                    ));
                }
                (Protocol::Icmp, _) => 0,
            };
            if protocol == Protocol::Icmp && r.host.parse::<IpAddr>().is_err() {
                return Err(field(
                    format!("reachability[{i}].host"),
                    format!("an ICMP check needs an address, not {:?}", r.host),
                ));
            }
            reachability.push(Reachability {
                host: r.host,
                port,
                protocol,
                vrf: r.vrf.filter(|v| !v.is_empty()),
            });
        }
        let timeout = match &file.timeout {
            Some(t) => Some(
                netrollout_support::parse_duration(t)
                    .map_err(|e| field("timeout".into(), e.to_string()))?,
            ),
            None => None,
        };
        let _ = file.retries;
        Ok(Self {
            interfaces,
            reachability,
            taints,
            timeout,
        })
    }

    /// Runs every check, each bounded by the file's timeout or `default_timeout`.
    pub async fn run(&self, default_timeout: Duration) -> Vec<Outcome> {
        self.run_except(default_timeout, &[]).await
    }

    /// Runs every check except the reachability checks named in `skip` (the interface checks
    /// read sysfs and cost nothing, so they always run).
    pub async fn run_except(&self, default_timeout: Duration, skip: &[String]) -> Vec<Outcome> {
        let t = self.timeout.unwrap_or(default_timeout);
        let mut out = interfaces_up(&self.interfaces, Path::new("/sys/class/net"));
        let checks = self
            .reachability
            .iter()
            .filter(|r| !skip.contains(&r.name()))
            .map(|r| r.probe(t));
        out.extend(futures::future::join_all(checks).await);
        out
    }
}

impl Reachability {
    /// The check's name in outcomes, e.g. `icmp 10.0.0.1 via vr.m2m`.
    fn name(&self) -> String {
        let via = self
            .vrf
            .as_ref()
            .map(|v| format!(" via {v}"))
            .unwrap_or_default();
        match self.protocol {
            Protocol::Icmp => format!("icmp {}{via}", self.host),
            Protocol::Tcp => format!("tcp {}:{}{via}", self.host, self.port),
        }
    }

    async fn probe(&self, t: Duration) -> Outcome {
        let error = match self.protocol {
            Protocol::Icmp => match self.host.parse() {
                Ok(addr) => icmp::ping_via(addr, t, self.vrf.clone()).await.err(),
                Err(_) => Some(format!("{:?} is not an address", self.host)),
            },
            Protocol::Tcp => tcp(&self.host, self.port, self.vrf.clone(), t).await.err(),
        };
        Outcome {
            name: self.name(),
            error,
        }
    }
}

/// Opens a TCP connection, its socket bound to `device` when given; the wait is counted in ticks
/// of real waiting (crate::ticks), so a clock leap while it waits does not fail it.
async fn tcp(host: &str, port: u16, device: Option<String>, t: Duration) -> Result<(), String> {
    let addr: SocketAddr = tokio::net::lookup_host((host, port))
        .await
        .map_err(|e| format!("resolving {host}: {e}"))?
        .next()
        .ok_or_else(|| format!("{host} has no address"))?;
    let socket = if addr.is_ipv4() {
        tokio::net::TcpSocket::new_v4()
    } else {
        tokio::net::TcpSocket::new_v6()
    }
    .map_err(|e| format!("socket: {e}"))?;
    if let Some(dev) = &device {
        socket
            .bind_device(Some(dev.as_bytes()))
            .map_err(|e| format!("binding to {dev}: {e}"))?;
    }
    match crate::ticks::within(t, socket.connect(addr)).await {
        Some(Ok(_)) => Ok(()),
        Some(Err(e)) => Err(e.to_string()),
        None => Err(format!("no connection within {t:?}")),
    }
}

/// Whether `name` matches `pattern`, where `*` matches any run of characters.
pub fn matches(pattern: &str, name: &str) -> bool {
    match pattern.split_once('*') {
        None => pattern == name,
        Some((head, rest)) => {
            let Some(tail) = name.strip_prefix(head) else {
                return false;
            };
            (0..=tail.len())
                .filter(|i| tail.is_char_boundary(*i))
                .any(|i| matches(rest, &tail[i..]))
        }
    }
}

/// One outcome per pattern: every interface under `sys` (`/sys/class/net`) matching it is
/// operationally up (`up` or `unknown`); a pattern matching none fails.
pub fn interfaces_up(patterns: &[String], sys: &Path) -> Vec<Outcome> {
    let names: Vec<String> = std::fs::read_dir(sys)
        .map(|d| {
            d.filter_map(|e| e.ok())
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    patterns
        .iter()
        .map(|pattern| {
            let matching: Vec<&String> = names.iter().filter(|n| matches(pattern, n)).collect();
            let down: Vec<String> = matching
                .iter()
                .filter_map(|n| {
                    let state =
                        std::fs::read_to_string(sys.join(n).join("operstate")).unwrap_or_default();
                    let state = state.trim();
                    (!matches!(state, "up" | "unknown")).then(|| format!("{n} is {state}"))
                })
                .collect();
            let error = if matching.is_empty() {
                Some("no interface matches".to_string())
            } else if down.is_empty() {
                None
            } else {
                Some(down.join(", "))
            };
            Outcome {
                name: format!("interfaces {pattern}"),
                error,
            }
        })
        .collect()
}

#[cfg(test)]
#[path = "healthcheck_tests.rs"]
mod tests;
