//! Probes: is the node still connected after a change?
//!
//! Checks, all run concurrently, each bounded by the per-probe timeout (the TCP and API server
//! checks count it in ticks of real waiting, so a clock jump cannot time them out: `ticks`):
//! - `tcp HOST:PORT`: a TCP connection opens (`--probe-tcp`);
//! - `icmp ADDR`: an echo reply arrives (`--probe-icmp`);
//! - `gateway`: the IPv4 default gateway (from `/proc/net/route`) answers a ping
//!   (`--probe-gateway`);
//! - `api-server`: an uncached `GET /version` to the API server gets an HTTP answer, of any
//!   status (`--probe-api-server`);
//! - `link NAME`: every managed interface of the new config is operationally up (`up` or
//!   `unknown` in `/sys/class/net/NAME/operstate`).
//!
//! A check that already failed before the change is reported, not enforced
//! ([`crate::outcome::enforced_failures`]); the link checks are always enforced.

use std::net::IpAddr;
use std::time::Duration;

use futures::future::join_all;

pub use crate::outcome::{Outcome, describe};
use crate::{icmp, ticks};

/// Which probes to run.
#[derive(Clone, Debug, Default)]
pub struct ProbeConfig {
    /// TCP targets, `host:port`.
    pub tcp: Vec<String>,
    /// ICMP targets.
    pub icmp: Vec<IpAddr>,
    /// Ping the default gateway.
    pub gateway: bool,
    /// Ask the API server for its version, uncached.
    pub api_server: bool,
    /// Time limit of each single check.
    pub each_timeout: Duration,
    /// The checks of the health-check file (`--healthcheck-config`).
    pub healthcheck: Option<std::sync::Arc<crate::healthcheck::HealthCheck>>,
}

/// Runs checks against the network and the API server.
#[derive(Clone)]
pub struct Prober {
    cfg: ProbeConfig,
    client: kube::Client,
}

impl std::fmt::Debug for Prober {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prober")
            .field("cfg", &self.cfg)
            .finish_non_exhaustive()
    }
}

impl Prober {
    /// A prober with these settings; `client` serves the API-server check.
    pub fn new(cfg: ProbeConfig, client: kube::Client) -> Self {
        Self { cfg, client }
    }

    /// Runs the connectivity checks (TCP, ICMP, gateway, API server, the health-check file's).
    pub async fn connectivity(&self) -> Vec<Outcome> {
        self.connectivity_except(&[]).await
    }

    /// Runs the connectivity checks except those named in `skip` (checks that already failed
    /// before a change are not judged after it, so they are not waited for either).
    pub async fn connectivity_except(&self, skip: &[String]) -> Vec<Outcome> {
        let t = self.cfg.each_timeout;
        let run = |name: &str| !skip.iter().any(|s| s == name);
        let mut checks: Vec<futures::future::BoxFuture<'_, Outcome>> = Vec::new();
        for target in self.cfg.tcp.iter().filter(|t| run(&format!("tcp {t}"))) {
            checks.push(Box::pin(async move {
                let r = ticks::within(t, tokio::net::TcpStream::connect(target.as_str())).await;
                let error = match r {
                    Some(Ok(_)) => None,
                    Some(Err(e)) => Some(e.to_string()),
                    None => Some(format!("no connection within {t:?}")),
                };
                Outcome {
                    name: format!("tcp {target}"),
                    error,
                }
            }));
        }
        for addr in self.cfg.icmp.iter().filter(|a| run(&format!("icmp {a}"))) {
            checks.push(Box::pin(async move {
                Outcome {
                    name: format!("icmp {addr}"),
                    error: icmp::ping(*addr, t).await.err(),
                }
            }));
        }
        if self.cfg.gateway && run("gateway") {
            checks.push(Box::pin(async move {
                let error = match default_gateway() {
                    Ok(gw) => icmp::ping(IpAddr::V4(gw), t)
                        .await
                        .err()
                        .map(|e| format!("{gw}: {e}")),
                    Err(e) => Some(e),
                };
                Outcome {
                    name: "gateway".into(),
                    error,
                }
            }));
        }
        if self.cfg.api_server && run("api-server") {
            checks.push(Box::pin(async move {
                let error = match ticks::within(t, self.client.apiserver_version()).await {
                    // Any HTTP answer, an error status included, proves the path to the API
                    // server: an API server that is up but failing (etcd down, overloaded) is
                    // no reason to undo a network change.
                    Some(Ok(_) | Err(kube::Error::Api(_))) => None,
                    Some(Err(e)) => Some(e.to_string()),
                    None => Some(format!("no answer within {t:?}")),
                };
                Outcome {
                    name: "api-server".into(),
                    error,
                }
            }));
        }
        let mut out = join_all(checks).await;
        if let Some(hc) = &self.cfg.healthcheck {
            out.extend(hc.run_except(t, skip).await);
        }
        out
    }
}

/// Checks that each named link is operationally up.
pub fn links_up(names: &[String]) -> Vec<Outcome> {
    names
        .iter()
        .map(|name| {
            let path = format!("/sys/class/net/{name}/operstate");
            let error = match std::fs::read_to_string(&path) {
                Ok(s) if matches!(s.trim(), "up" | "unknown") => None,
                Ok(s) => Some(format!("operstate is {}", s.trim())),
                Err(e) => Some(format!("{path}: {e}")),
            };
            Outcome {
                name: format!("link {name}"),
                error,
            }
        })
        .collect()
}

/// The IPv4 default gateway of the main table (`ip -4 route show default`).
fn default_gateway() -> Result<std::net::Ipv4Addr, String> {
    let table = std::fs::read_to_string("/proc/net/route")
        .map_err(|e| format!("reading /proc/net/route: {e}"))?;
    parse_default_gateway(&table).ok_or_else(|| "no IPv4 default route with a gateway".into())
}

fn parse_default_gateway(table: &str) -> Option<std::net::Ipv4Addr> {
    const RTF_GATEWAY: u32 = 0x2;
    table.lines().skip(1).find_map(|line| {
        let f: Vec<&str> = line.split_whitespace().collect();
        let (dest, gw, flags, mask) = (f.get(1)?, f.get(2)?, f.get(3)?, f.get(7)?);
        let flags = u32::from_str_radix(flags, 16).ok()?;
        if *dest != "00000000" || *mask != "00000000" || flags & RTF_GATEWAY == 0 {
            return None;
        }
        // /proc/net/route prints addresses as host-order (little-endian) hex.
        let gw = u32::from_str_radix(gw, 16).ok()?;
        Some(std::net::Ipv4Addr::from(gw.swap_bytes()))
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::enforced_failures;

    fn outcome(name: &str, ok: bool) -> Outcome {
        Outcome {
            name: name.into(),
            error: (!ok).then(|| "down".to_string()),
        }
    }

    #[test]
    fn a_check_that_failed_before_the_change_is_not_enforced() {
        let before = [outcome("tcp a:1", false), outcome("icmp b", true)];
        let after = [
            outcome("tcp a:1", false),
            outcome("icmp b", false),
            outcome("link l2.1", false),
        ];
        let names: Vec<&str> = enforced_failures(&before, &after)
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        assert_eq!(names, ["icmp b", "link l2.1"]);
    }

    #[test]
    fn the_default_gateway_is_read_from_proc_net_route() {
        let table = "Iface\tDestination\tGateway \tFlags\tRefCnt\tUse\tMetric\tMask\t\tMTU\tWindow\tIRTT\n\
            eth0\t0000FEA9\t00000000\t0001\t0\t0\t0\t0000FFFF\t0\t0\t0\n\
            eth0\t00000000\t0102000A\t0003\t0\t0\t0\t00000000\t0\t0\t0\n";
        assert_eq!(
            parse_default_gateway(table),
            Some("10.0.2.1".parse().unwrap())
        );
        assert_eq!(parse_default_gateway("header\n"), None);
    }
}
