//! The plugin's test helpers: the kit's harness (`LabApi` with the netrollout kinds, its
//! builders and waits from `netrollout_testkit::fleet`, kubectl bound to it) and the plugin
//! binary bound to it ([`PluginLab`]).
#![allow(dead_code)]

pub use netrollout_testkit::apiserver::LabApi;
// Each test file takes the part it needs.
#[allow(unused_imports)]
pub use netrollout_testkit::cmd::Run;
#[allow(unused_imports)]
pub use netrollout_testkit::objects::{failed_status, node_status, rev_status, snapshot};

/// What the plugin's tests add to the kit's harness: the plugin binary bound to it.
#[allow(async_fn_in_trait)] // Test code: the futures are awaited where they are made.
pub trait PluginLab {
    /// Runs the plugin binary with `args` against this lab.
    async fn plugin(&self, args: &[&str]) -> Run;
}

impl PluginLab for LabApi {
    async fn plugin(&self, args: &[&str]) -> Run {
        let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-netrollout"))
            .arg("--kubeconfig")
            .arg(self.kubeconfig())
            .args(args)
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .expect("plugin runs");
        Run::from(out)
    }
}
