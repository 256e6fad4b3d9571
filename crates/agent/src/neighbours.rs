//! The neighbour task (`advertiseNeighbors`): announces every neighbour the node has learned on
//! such a network's bridge as a host route (`/32`, `/128`, protocol
//! [`netrollout_dataplane::RTPROT_NEIGHBOURS`]) in the network's VRF table, where FRR's
//! `redistribute kernel` takes it into BGP (and EVPN) through the VRF's export policy.
//!
//! It runs beside the apply transaction, never inside it: neighbours come and go at any time,
//! not with revisions. The agent tells it what to track ([`Targets`]) after every kernel apply
//! and restore (the [`HostRoutes`] of the config the kernel then holds) and once on start (the
//! last-known-good config, which the kernel holds when no journal says otherwise); until then
//! it writes nothing. [`Neighbours::keep`] syncs when the targets change, when the kernel
//! announces a neighbour change, and every [`RESYNC`]; a sync reads the whole state, so a
//! missed notification or a route removed by hand is made good by the next one. A failed sync
//! is logged and made again; the task never ends (it is supervised with the agent's other
//! tasks, [`netrollout_support::tasks`]).

use std::time::Duration;

use netrollout_dataplane::{HostRoutes, Neighbours};
use tokio::sync::watch;

/// The bridges and tables to track; `None` until the agent knows what the kernel holds.
pub type Targets = Option<Vec<HostRoutes>>;

/// Sync at least this often, changes or not.
pub const RESYNC: Duration = Duration::from_secs(10);
/// Pause before trying to open the netlink sockets again.
const RETRY: Duration = Duration::from_secs(5);

/// Runs the task in the agent's network namespace, for ever.
pub async fn run(targets: watch::Receiver<Targets>) {
    let neighbours = loop {
        // Opening asks the kernel (its netlink lock may be held): off the runtime's threads.
        match tokio::task::spawn_blocking(Neighbours::connect).await {
            Ok(Ok(n)) => break n,
            Ok(Err(e)) => {
                tracing::error!(error = %e, "the neighbour task cannot open its netlink sockets; retrying");
                tokio::time::sleep(RETRY).await;
            }
            Err(e) => {
                tracing::error!(error = %e, "the neighbour task cannot open its netlink sockets; retrying");
                tokio::time::sleep(RETRY).await;
            }
        }
    };
    neighbours.keep(targets, RESYNC).await;
    // The agent dropped the targets' sender: it is ending.
    std::future::pending::<()>().await;
}
