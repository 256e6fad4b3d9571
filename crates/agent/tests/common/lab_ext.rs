//! What the agent's own tests know of the agent's insides, on the kit's agent lab (which drives
//! the agent from outside only): the kernel objects a config becomes (the library's `convert`)
//! and the journal file of the state directory (`store`).

#![allow(clippy::expect_used)] // test helpers: a failed step is the test failure

use std::time::Duration;

use netrollout_agent::convert::{Vtep, managed, to_desired};
use netrollout_agent::store::JOURNAL_FILE;
use netrollout_api::NodeConfig;
use netrollout_dataplane::{Dataplane, diff};
use netrollout_testkit::agent::Lab;

/// The agent's knowledge, on the kit's [`Lab`].
#[allow(async_fn_in_trait, dead_code)] // Test code: the futures are awaited where they are made.
pub trait AgentLab {
    /// The node's VXLAN endpoint: the namespace's veth address.
    fn vtep(&self) -> Vtep;

    /// Whether the namespace's kernel holds exactly `config`'s managed objects (nothing to do).
    async fn holds(&self, config: &NodeConfig) -> bool;

    /// Waits until the agent has written its journal (an apply is under way), so a kill that
    /// follows lands mid-apply whatever the machine's speed. Panics after `timeout`.
    async fn wait_applying(&self, timeout: Duration);
}

impl AgentLab for Lab {
    fn vtep(&self) -> Vtep {
        Vtep {
            local: Some(self.ns_ip.parse().expect("the namespace's address")),
            underlay: None,
        }
    }

    async fn holds(&self, config: &NodeConfig) -> bool {
        let desired = to_desired(config, &self.vtep()).expect("the config converts");
        let observed = Dataplane::in_netns(&self.ns, managed().expect("the managed prefixes"))
            .expect("a dataplane in the namespace")
            .observe()
            .await
            .expect("the kernel's state");
        diff(&desired, &observed).is_empty()
    }

    async fn wait_applying(&self, timeout: Duration) {
        let path = self.state_dir().join(JOURNAL_FILE);
        self.wait_file(&path, "the agent's journal", timeout).await;
    }
}
