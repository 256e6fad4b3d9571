//! What a scenario does with FRR beyond the nodes' own: a workload's BGP speaker (its own FRR
//! in its namespace, for `BGPPeering`), vtysh in any FRR namespace, and single commands where
//! the nodes run (here, or inside the VM).

use anyhow::Result;

use super::Cluster;

impl Cluster {
    /// Starts FRR (zebra, bgpd, bfdd) from `config` in the workload namespace `netns` (its
    /// pathspace is the namespace's name, so [`crate::frr::teardown`] ends it with the lab's).
    pub async fn start_workload_frr(&self, netns: &str, config: &str) -> Result<()> {
        self.workload_frr(netns, config, None).await
    }

    /// Starts `daemon` of the workload's FRR ([`Cluster::start_workload_frr`]) again, alone.
    pub async fn restart_workload_daemon(
        &self,
        netns: &str,
        config: &str,
        daemon: &str,
    ) -> Result<()> {
        self.workload_frr(netns, config, Some(daemon)).await
    }

    async fn workload_frr(&self, netns: &str, config: &str, daemon: Option<&str>) -> Result<()> {
        match &self.vm {
            Some(vm) => vm
                .call(crate::vm::Op::StartFrr {
                    netns: netns.into(),
                    config: config.into(),
                    daemon: daemon.map(Into::into),
                })
                .await
                .map(drop),
            None => match daemon {
                Some(d) => crate::frr::start_daemon(netns, netns, config, d, self.opts.frr),
                None => crate::frr::start(netns, netns, config, self.opts.frr).map(drop),
            },
        }
    }

    /// `vtysh -c COMMAND` of the FRR in namespace `netns` (a node's or a workload's); its output.
    pub async fn vtysh(&self, netns: &str, command: &str) -> Result<String> {
        self.run(&crate::frr::vtysh_argv(netns, self.frr_version(), command))
            .await
    }

    /// The FRR version the nodes run (`--frr`; the VM's guest runs it too).
    pub fn frr_version(&self) -> netrollout_frr::daemons::Version {
        self.opts.frr
    }

    /// Runs `argv` where the nodes run (here, or in the VM) to its end; its stdout.
    pub async fn run(&self, argv: &[String]) -> Result<String> {
        match &self.vm {
            Some(vm) => Ok(vm
                .call(crate::vm::Op::Run {
                    argv: argv.to_vec(),
                })
                .await?
                .as_str()
                .unwrap_or_default()
                .to_string()),
            None => crate::frr::run(argv),
        }
    }
}

impl Cluster {
    /// Adds a ping stream from namespace `netns` to `addr`, recorded and reported as `pair`.
    pub async fn add_stream(
        &mut self,
        pair: crate::traffic::Pair,
        netns: &str,
        addr: std::net::Ipv4Addr,
    ) -> Result<()> {
        let state_dir = self.opts.state_dir.clone();
        self.traffic
            .stream(pair, netns.into(), addr, &state_dir, self.vm.as_ref())
            .await
    }
}
