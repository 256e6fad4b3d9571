//! The configurator replicas: start one with the lab's rollout settings, find the leader, kill
//! one.

use std::net::{Ipv4Addr, SocketAddr};
use std::process::Stdio;

use anyhow::{Context as _, Result};
use k8s_openapi::api::coordination::v1::Lease;
use kube::api::Api;
use tokio::process::{Child, Command};

use super::{Cluster, LEASE, NAMESPACE};
use crate::settings::flag;

impl Cluster {
    fn spawn(&self, cmd: &mut Command, name: &str) -> Result<Child> {
        let log = std::fs::File::create(self.log_path(name))?;
        cmd.env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        let child = cmd.spawn().with_context(|| format!("starting {name}"))?;
        crate::pids::record_pids(&self.opts.state_dir, child.id().as_slice())?;
        Ok(child)
    }

    /// The lab's rollout settings as configurator flags.
    fn configurator_flags(&self) -> Vec<(String, String)> {
        let mut flags: Vec<(String, String)> = [
            ("--update-limit", self.opts.update_limit.to_string()),
            ("--apply-timeout", flag(self.opts.apply_timeout())),
            ("--pickup-timeout", flag(self.opts.pickup_timeout)),
            ("--max-failures", self.opts.max_failures.to_string()),
            ("--guard", self.opts.guard.as_str().to_string()),
        ]
        .map(|(k, v)| (k.to_string(), v))
        .to_vec();
        if let Some(p) = &self.prometheus {
            flags.push(("--prometheus-url".into(), p.url()));
        }
        flags.extend(self.opts.configurator_flags.iter().cloned());
        flags
    }

    /// Starts a configurator replica with the lab's rollout settings.
    pub fn start_configurator(&mut self, id: &str) -> Result<()> {
        if self.opts.containers {
            let flags = self.configurator_flags();
            let (pod, metrics) = self.start_configurator_pod(id, flags)?;
            self.configurators
                .insert(id.to_string(), super::Proc::Pod(pod));
            return self.set_configurator_metrics(id, metrics);
        }
        let mut cmd = Command::new(self.opts.bin_dir.join("netrollout-configurator"));
        // With a Prometheus, analysis checks (`RolloutAnalysis`) are measured against it.
        cmd.env("POD_NAME", id)
            .args(
                self.configurator_flags()
                    .into_iter()
                    .flat_map(|(k, v)| [k, v]),
            )
            .args(["--lease-namespace", NAMESPACE, "--lease-name", LEASE])
            .args(["--health-addr", "127.0.0.1:0"]);
        // With a Prometheus, each replica's metrics port is known (and kept when it restarts).
        let metrics = match &self.prometheus {
            Some(_) => match self.configurator_metrics.get(id) {
                Some(addr) => *addr,
                None => SocketAddr::from((Ipv4Addr::LOCALHOST, crate::prometheus::free_port()?)),
            },
            None => SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
        };
        cmd.args(["--metrics-addr", &metrics.to_string()]);
        let kubeconfig = crate::identities::configurator_kubeconfig(
            &self.server,
            &self.opts.state_dir,
            NAMESPACE,
            id,
        )?;
        let child = self.spawn(cmd.env("KUBECONFIG", kubeconfig), id)?;
        self.configurators
            .insert(id.to_string(), super::Proc::Process(child));
        self.set_configurator_metrics(id, metrics)
    }

    fn set_configurator_metrics(&mut self, id: &str, metrics: SocketAddr) -> Result<()> {
        if let Some(p) = &self.prometheus {
            self.configurator_metrics.insert(id.to_string(), metrics);
            let t: Vec<_> = (self.configurator_metrics.iter())
                .map(|(id, addr)| (id.clone(), *addr))
                .collect();
            p.set_configurators(&t)?;
        }
        Ok(())
    }

    /// The configurator replica holding the Lease, if any.
    pub async fn leader(&self) -> Result<Option<String>> {
        let leases: Api<Lease> = Api::namespaced(self.client.clone(), NAMESPACE);
        Ok(leases
            .get_opt(LEASE)
            .await?
            .and_then(|l| l.spec?.holder_identity))
    }

    /// Restarts every configurator replica with `--guard guard`, the lab's other settings kept
    /// (`remote-break` compares the guard with no guard in one lab). Each replica comes back
    /// under its own identity, so the Lease it held is its own again.
    pub async fn restart_configurators(&mut self, guard: crate::settings::GuardMode) -> Result<()> {
        let ids: Vec<String> = self.configurators.keys().cloned().collect();
        for id in &ids {
            self.kill_configurator(id).await?;
        }
        self.opts.guard = guard;
        for id in &ids {
            self.start_configurator(id)?;
        }
        Ok(())
    }

    /// Kills a configurator replica with SIGKILL.
    pub async fn kill_configurator(&mut self, id: &str) -> Result<()> {
        let proc = self
            .configurators
            .remove(id)
            .with_context(|| format!("no configurator {id}"))?;
        proc.kill().await;
        Ok(())
    }
}
