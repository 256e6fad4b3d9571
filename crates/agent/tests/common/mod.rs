//! The agent's lab from the test kit, running this crate's `netrollout-agent` binary.

// Each test file takes the part it needs.
#[allow(unused_imports)]
pub use lab_ext::AgentLab;
#[allow(unused_imports)]
pub use netrollout_testkit::agent::{Lab, layer2, layer2s};

pub mod lab_ext;

/// A fresh lab (namespace, veth, lab API server, Node) for this crate's agent binary.
pub async fn lab() -> Lab {
    test_log();
    Lab::new(env!("CARGO_BIN_EXE_netrollout-agent").into()).await
}

/// With `NETROLLOUT_TEST_LOG` set (a tracing filter, e.g.
/// `netrollout_lab_apiserver::writes=debug`), what this process logs (its lab API servers
/// run in it) goes to each test's captured output, shown when the test fails. Off by default.
fn test_log() {
    if let Ok(filter) = std::env::var("NETROLLOUT_TEST_LOG") {
        let _ = tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::new(filter))
            .with_test_writer()
            .with_ansi(false)
            .try_init();
    }
}

/// The agent's FRR settings for a test FRR (shared with the frr-apply bench).
#[allow(dead_code)]
pub mod frr_settings;

/// The FRR world (only the FRR test files use it).
#[allow(dead_code, clippy::unwrap_used, clippy::expect_used)]
pub mod frr;

/// Stopping and restarting the lab API server under a running agent.
#[allow(dead_code)]
pub mod api_restart;

/// Waits until the Node's `NetworkConfigReady` condition has `status` and `reason` (the agent
/// writes it right after the object's status); panics with what it saw after 10 s.
#[allow(dead_code, clippy::unwrap_used)]
pub async fn wait_node_condition(lab: &Lab, status: &str, reason: &str) {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let seen = lab.node_condition().await;
        if seen
            .as_ref()
            .is_some_and(|(s, r, _)| s == status && r == reason)
        {
            return;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the Node's condition is {seen:?}, not {status} {reason}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
}

/// `kill -9` of the agent's process tree, its log per start, where a kill landed (the kill
/// tests use it).
#[allow(dead_code)]
pub mod kills;

/// A supervisor's view of FRR: one daemon killed, later started again.
#[allow(dead_code)]
pub mod supervisor;
