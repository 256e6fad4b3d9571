//! `--prometheus`: a real Prometheus (Debian's `prometheus`) scraping the lab's configurator(s)
//! and agents every second and evaluating the shipped rules (deploy/monitoring/rules.yaml, built
//! into this program) every second, so the alerts and the dashboard's queries can be tried on a
//! live rollout. Its config, targets and TSDB live in `STATE_DIR/prometheus`; its pid is recorded
//! like every other lab process, so teardown and `netrollout-lab down` end it.
//!
//! Targets are file-discovered: the lab rewrites `configurators.json` and `agents.json` whenever
//! it starts a configurator or adds a node, and Prometheus picks the change up by itself.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use serde_json::json;
use tokio::process::{Child, Command};

/// The shipped rules, written next to the generated config.
pub const RULES: &str = include_str!("../../../deploy/monitoring/rules.yaml");
/// The job the configurators' `/metrics` are scraped as (the rules' and dashboard's `job`).
pub const CONFIGURATOR_JOB: &str = "netrollout-configurator";
/// The job the agents' `/metrics` are scraped as, one target per node (`instance` = node name).
pub const AGENT_JOB: &str = "netrollout-agent";
/// Scrape and rule-evaluation interval: short, so a lab run shows alerts within seconds.
pub const INTERVAL: &str = "1s";

/// A running Prometheus.
#[derive(Debug)]
pub struct Prometheus {
    child: Child,
    dir: PathBuf,
    addr: SocketAddr,
}

/// Checks that the `prometheus` server is installed, saying how to get it if not.
pub fn check_installed() -> Result<()> {
    let found = std::env::var_os("PATH")
        .is_some_and(|path| std::env::split_paths(&path).any(|d| d.join("prometheus").is_file()));
    if !found {
        bail!(
            "--prometheus: no `prometheus` on PATH; install Debian's prometheus package \
             (hack/install-deps.sh), or run the lab without --prometheus"
        );
    }
    Ok(())
}

/// A free TCP port on the loopback (the kernel's choice; released before it is used).
pub fn free_port() -> Result<u16> {
    let l = std::net::TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
        .context("finding a free port on 127.0.0.1")?;
    Ok(l.local_addr()?.port())
}

/// The generated `prometheus.yml`: the rules file and the two file-discovered jobs in `dir`.
pub fn config(dir: &Path) -> String {
    let file = |name: &str| dir.join(name).to_string_lossy().into_owned();
    let job = |job: &str, targets: &str| {
        json!({
            "job_name": job,
            "file_sd_configs": [{"files": [file(targets)], "refresh_interval": INTERVAL}],
        })
    };
    // JSON is YAML: no YAML writer needed for the config.
    json!({
        "global": {"scrape_interval": INTERVAL, "scrape_timeout": INTERVAL, "evaluation_interval": INTERVAL},
        "rule_files": [file("rules.yaml")],
        "scrape_configs": [job(CONFIGURATOR_JOB, "configurators.json"), job(AGENT_JOB, "agents.json")],
    })
    .to_string()
}

/// A file-discovery target list: one group per target, `instance` set to its name.
pub fn targets(targets: &[(String, SocketAddr)]) -> String {
    let groups: Vec<_> = targets
        .iter()
        .map(|(name, addr)| json!({"targets": [addr.to_string()], "labels": {"instance": name}}))
        .collect();
    serde_json::Value::Array(groups).to_string()
}

impl Prometheus {
    /// Writes the config, the rules and empty target lists to `STATE_DIR/prometheus` (a new lab
    /// starts from an empty TSDB) and starts Prometheus on a free loopback port, logging to
    /// `log`. Returns once it accepts connections.
    pub async fn start(state_dir: &Path, log: &Path) -> Result<Self> {
        let dir = state_dir.join("prometheus");
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(dir.join("data"))
            .with_context(|| format!("creating {}", dir.display()))?;
        let write = |name: &str, text: &str| {
            let path = dir.join(name);
            std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))
        };
        write("prometheus.yml", &config(&dir))?;
        write("rules.yaml", RULES)?;
        write("configurators.json", "[]")?;
        write("agents.json", "[]")?;
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, free_port()?));
        let out =
            std::fs::File::create(log).with_context(|| format!("creating {}", log.display()))?;
        let child = Command::new("prometheus")
            .arg(format!(
                "--config.file={}",
                dir.join("prometheus.yml").display()
            ))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.join("data").display()
            ))
            .arg(format!("--web.listen-address={addr}"))
            .stdin(Stdio::null())
            .stdout(out.try_clone()?)
            .stderr(out)
            .kill_on_drop(true)
            .spawn()
            .context("starting prometheus")?;
        crate::pids::record_pids(state_dir, child.id().as_slice())?;
        let mut p = Self { child, dir, addr };
        for _ in 0..100 {
            if tokio::net::TcpStream::connect(addr).await.is_ok() {
                return Ok(p);
            }
            if let Some(status) = p.child.try_wait()? {
                bail!(
                    "prometheus exited ({status}) while starting; see {}",
                    log.display()
                );
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let _ = p.child.kill().await;
        bail!(
            "prometheus did not listen on {addr} within 10 s; see {}",
            log.display()
        )
    }

    /// Its URL (the web UI and the HTTP API).
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    /// Replaces the configurator targets (`job="netrollout-configurator"`).
    pub fn set_configurators(&self, t: &[(String, SocketAddr)]) -> Result<()> {
        self.replace("configurators.json", &targets(t))
    }

    /// Replaces the agent targets (`job="netrollout-agent"`, `instance` = node name).
    pub fn set_agents(&self, t: &[(String, SocketAddr)]) -> Result<()> {
        self.replace("agents.json", &targets(t))
    }

    /// Writes a target file whole (a temporary file renamed over it): Prometheus never reads
    /// half a list.
    fn replace(&self, name: &str, text: &str) -> Result<()> {
        let tmp = self.dir.join(format!(".{name}.tmp"));
        let path = self.dir.join(name);
        std::fs::write(&tmp, text).with_context(|| format!("writing {}", tmp.display()))?;
        std::fs::rename(&tmp, &path).with_context(|| format!("replacing {}", path.display()))
    }

    /// Stops Prometheus.
    pub async fn stop(mut self) {
        let _ = self.child.kill().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_config_scrapes_both_jobs_every_second_and_loads_the_shipped_rules() {
        let Ok(c) = serde_json::from_str::<serde_json::Value>(&config(Path::new("/s/prometheus")))
        else {
            panic!("the config is not JSON (so not YAML either)");
        };
        assert_eq!(c["global"]["scrape_interval"], "1s");
        assert_eq!(c["global"]["evaluation_interval"], "1s");
        assert_eq!(c["rule_files"][0], "/s/prometheus/rules.yaml");
        let jobs: Vec<_> = c["scrape_configs"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|j| {
                (
                    j["job_name"].clone(),
                    j["file_sd_configs"][0]["files"][0].clone(),
                )
            })
            .collect();
        assert_eq!(
            jobs,
            [
                (
                    json!(CONFIGURATOR_JOB),
                    json!("/s/prometheus/configurators.json")
                ),
                (json!(AGENT_JOB), json!("/s/prometheus/agents.json")),
            ]
        );
        assert!(RULES.contains("alert: NetrolloutRolloutFailed"));
    }

    #[test]
    fn each_target_carries_its_name_as_instance() {
        let addr = SocketAddr::from(([10, 77, 0, 11], 9101));
        let t = targets(&[("lab-node-1".into(), addr)]);
        assert_eq!(
            serde_json::from_str::<serde_json::Value>(&t).ok(),
            Some(json!([{"targets": ["10.77.0.11:9101"], "labels": {"instance": "lab-node-1"}}]))
        );
    }
}
