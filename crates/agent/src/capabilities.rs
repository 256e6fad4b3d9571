//! Capability detection (docs/contract.md, "Pre-flight"): what the node's kernel and FRR can
//! do, reported once in `status.capabilities` of the node's `NodeNetworkConfig` so that the
//! configurator does not dispatch a revision the node cannot apply.
//!
//! - **Kernel**: each device kind the agent may create is tried for real: a scratch device
//!   (names starting [`SCRATCH_PREFIX`], a prefix no config uses) is created and deleted through
//!   the dataplane, in the node's own network namespace. The kernel answers `EOPNOTSUPP` for a
//!   kind whose driver it lacks (after trying to load its module): that kind is missing. Any
//!   other answer leaves the kind unchecked (in neither list) and is logged: it says nothing
//!   about the driver. Bridge VLAN filtering is tried as a bridge with `vlan_filtering 1`.
//!   VRF is asked without a device ([`Dataplane::try_vrf_driver`]: a VRF without a table, which
//!   the driver refuses before the device exists): FRR sees every device of the namespace, and
//!   its bfdd (8.4 and 10.3) exits when a VRF it was told about is gone before it binds its
//!   sockets to it, which a scratch VRF created and deleted at once made happen (the VM lab's
//!   nodes ran without bfdd after their agents started).
//! - **FRR** (only with FRR support on): `bgpd` and `bfdd` are each present when `vtysh -c
//!   "show daemons"` lists it, missing otherwise (FRR down counts as missing until it answers); the version its
//!   daemons run (`frrVersion`, from their running config's `frr version` line), absent while
//!   FRR does not answer.
//! - **Writes**: detected at start; the report is written when the object the agent's watch
//!   last saw carries other capabilities (or none), so a restart with nothing changed writes
//!   nothing. While something is missing, detection runs again every [`RECHECK`] (a module
//!   loaded later is reported within that time); a change is written once.
//! - **Bounded** ([`crate::bounded`]): detection is a step `capabilities` with the deadline
//!   `--kernel-deadline` (plus `--frr-deadline` with FRR): a kernel holding its netlink lock
//!   (removing a namespace full of links) makes it wait. Past `--step-slow` the wait is logged
//!   and counted; past the deadline the agent assumes nothing: it writes nothing (the object
//!   keeps what an earlier detection reported; a node that never reported lacks nothing, so
//!   a revision is dispatched to it and its apply restores on failure), lets the detection
//!   finish in the background (the kernel owes it, `part_busy_seconds{part="kernel"}`) and
//!   writes its result when it ends. Claiming `missing` on no answer would hold every rollout
//!   back for a busy kernel; claiming `present` could let a revision through that the node
//!   cannot apply: neither is said without an answer. Each write is a step
//!   `capabilities-write` within `--api-deadline`, tried again after 5 s.

use std::collections::BTreeSet;
use std::time::Duration;

use kube::Api;
use kube::api::{Patch, PatchParams};
use netrollout_api::{Capability, NodeCapabilities, NodeNetworkConfig};
use netrollout_dataplane::{Dataplane, Desired, Link, LinkKind, Managed, Vxlan};
use serde_json::{Value, json};
use tokio::sync::watch;

use crate::bounded::Bounded;
use crate::frr::{Frr, FrrSettings};
use crate::txn::Part;

/// Name prefix of the scratch devices; no managed prefix starts like it.
pub const SCRATCH_PREFIX: &str = "nrcap.";
/// How often detection runs again while something is missing.
pub const RECHECK: Duration = Duration::from_secs(60);
/// Field manager of the capability writes.
const FIELD_MANAGER: &str = "netrollout-agent-capabilities";
/// Pause before a failed write is tried again.
const WRITE_RETRY: Duration = Duration::from_secs(5);
/// The kernel's answer for a link kind it has no driver for.
const EOPNOTSUPP: i32 = 95;

/// The connection detection uses: the node's own namespace, owning only scratch names.
///
/// # Errors
/// The netlink connection cannot be opened.
pub fn scratch_dataplane() -> Result<Dataplane, netrollout_dataplane::Error> {
    Dataplane::connect(scratch_managed()?)
}

/// The scratch prefix as the dataplane's ownership list (tests connect in a namespace with it).
///
/// # Errors
/// Never for this constant prefix; typed because the dataplane checks every list.
pub fn scratch_managed() -> Result<Managed, netrollout_dataplane::Error> {
    Managed::new([SCRATCH_PREFIX])
}

/// Detects the kernel's capabilities through `dp` (which must own [`SCRATCH_PREFIX`]) and,
/// with `frr`, whether bgpd runs. Leaves no scratch device behind.
pub async fn detect(dp: &Dataplane, frr: Option<&Frr>) -> NodeCapabilities {
    let mut present = BTreeSet::new();
    let mut missing = BTreeSet::new();
    // Leftovers of a detection a crash interrupted go first.
    clean(dp).await;
    let bridge = Link::new(name("br"), LinkKind::Bridge);
    let tries: [(Capability, Vec<Link>); 6] = [
        (Capability::Bridge, vec![bridge.clone()]),
        (
            Capability::Vxlan,
            vec![Link::new(
                name("vx"),
                LinkKind::Vxlan(Vxlan {
                    vni: 16_777_214,
                    local: std::net::Ipv4Addr::LOCALHOST.into(),
                    underlay: None,
                    // Not the VXLAN port: never in the way of a real device.
                    port: 47_989,
                    learning: false,
                    neigh_suppress: false,
                }),
            )],
        ),
        (
            Capability::Veth,
            vec![
                Link::new(name("v0"), LinkKind::Veth { peer: name("v1") }),
                Link::new(name("v1"), LinkKind::Veth { peer: name("v0") }),
            ],
        ),
        (
            Capability::Macvlan,
            vec![
                bridge.clone(),
                Link::new(name("mv"), LinkKind::Macvlan { parent: name("br") }),
            ],
        ),
        (
            Capability::Dummy,
            vec![Link::new(name("dm"), LinkKind::Dummy)],
        ),
        (
            Capability::Vlan,
            vec![
                bridge,
                Link::new(
                    name("vl"),
                    LinkKind::Vlan {
                        parent: name("br"),
                        id: 4094,
                    },
                ),
            ],
        ),
    ];
    for (cap, links) in tries {
        // A device on a bridge says nothing about the device when bridges are missing.
        if links.len() > 1 && missing.contains(&Capability::Bridge) && cap != Capability::Veth {
            continue;
        }
        let mut desired = Desired::default();
        for l in links {
            desired.add_link(l);
        }
        let result = dp.apply(&desired).await;
        clean(dp).await;
        sort(cap, result.map(|_| ()), &mut present, &mut missing);
    }
    // No scratch VRF device: FRR would see it come and go (see the module's documentation).
    let vrf = dp.try_vrf_driver(&name("vrf")).await;
    sort(Capability::Vrf, vrf, &mut present, &mut missing);
    let filtering = dp.try_bridge_vlan_filtering(&name("vf")).await;
    clean(dp).await;
    sort(
        Capability::VlanFiltering,
        filtering,
        &mut present,
        &mut missing,
    );
    if let Some(frr) = frr {
        let daemons = [Capability::Bgpd, Capability::Bfdd];
        match frr.vtysh(&["-c", "show daemons"]).await {
            Ok(out) => {
                for cap in daemons {
                    if runs(&out, cap) {
                        present.insert(cap);
                    } else {
                        tracing::warn!(daemons = out.trim(), "FRR runs without {cap}");
                        missing.insert(cap);
                    }
                }
            }
            Err(e) => {
                tracing::warn!(error = %e, "FRR does not answer; bgpd and bfdd count as missing");
                missing.extend(daemons);
            }
        }
    }
    NodeCapabilities {
        present: words(&present),
        missing: words(&missing),
        frr_version: match frr {
            Some(frr) => frr_version(frr).await,
            None => None,
        },
    }
}

/// The version FRR's daemons show in their running config (`frr version` line); `None`, logged,
/// while FRR does not answer.
async fn frr_version(frr: &Frr) -> Option<String> {
    if frr.version().is_none()
        && let Err(e) = frr.running_config().await
    {
        tracing::warn!(error = %e, "FRR does not answer; its version is not reported");
    }
    frr.version()
}

/// A scratch device's name.
fn name(s: &str) -> String {
    format!("{SCRATCH_PREFIX}{s}")
}

/// Removes every scratch device (`ip link del` of each `nrcap.*`).
async fn clean(dp: &Dataplane) {
    if let Err(e) = dp.apply(&Desired::default()).await {
        tracing::warn!(error = %e, "removing the capability check's scratch devices");
    }
}

fn sort(
    cap: Capability,
    result: netrollout_dataplane::Result<()>,
    present: &mut BTreeSet<Capability>,
    missing: &mut BTreeSet<Capability>,
) {
    match result {
        Ok(()) => {
            present.insert(cap);
        }
        Err(e) if e.errno() == Some(EOPNOTSUPP) => {
            tracing::info!(capability = %cap, error = %e, "the kernel lacks {cap}");
            missing.insert(cap);
        }
        Err(e) => tracing::warn!(capability = %cap, error = %e, "{cap} could not be checked"),
    }
}

fn words(set: &BTreeSet<Capability>) -> Vec<String> {
    let mut w: Vec<String> = set.iter().map(|c| c.as_str().to_string()).collect();
    w.sort();
    w
}

/// Whether `show daemons` (a space-separated list, e.g. " mgmtd zebra bgpd staticd") names
/// the daemon `cap` ([`Capability::Bgpd`], [`Capability::Bfdd`]).
pub fn runs(show_daemons: &str, cap: Capability) -> bool {
    show_daemons.split_whitespace().any(|d| d == cap.as_str())
}

/// The status patch for `detected` when `seen` (the object as last seen) carries something
/// else; `None` when it already says the same.
pub fn patch(seen: Option<&NodeNetworkConfig>, detected: &NodeCapabilities) -> Option<Value> {
    let have = seen.and_then(|o| o.status.as_ref()?.capabilities.as_ref());
    // Every field named, an absent version as null: a merge patch keeps what it does not name,
    // and a version left from before would never equal the detection (a write on every event).
    let capabilities = json!({
        "present": detected.present,
        "missing": detected.missing,
        "frrVersion": detected.frr_version,
    });
    (have != Some(detected)).then(|| json!({ "status": { "capabilities": capabilities } }))
}

/// [`detect`] in the node's namespace on a thread of its own with a runtime of its own (the
/// dataplane's futures are awaited, never spawned, elsewhere in the agent; detection runs
/// beside the main loop).
///
/// # Errors
/// The runtime or the netlink connection cannot be set up.
pub async fn detect_apart(frr: Option<FrrSettings>) -> Result<NodeCapabilities, String> {
    tokio::task::spawn_blocking(move || {
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(|e| format!("starting the detection runtime: {e}"))?;
        rt.block_on(async {
            let dp = scratch_dataplane().map_err(|e| e.to_string())?;
            let frr = match frr {
                Some(s) => Some(Frr::new(s).map_err(|e| e.to_string())?),
                None => None,
            };
            Ok(detect(&dp, frr.as_ref()).await)
        })
    })
    .await
    .map_err(|e| format!("the detection thread ended: {e}"))?
}

/// Detects at start and whenever [`RECHECK`] passes while something is missing, and writes
/// what changed into the status of the node's `NodeNetworkConfig` once the watch has seen it
/// (`seen`; a node without one has nowhere to report yet). Each detection is a bounded step
/// with `deadline` (see the module's documentation). Runs until aborted.
pub async fn report(
    client: kube::Client,
    node: String,
    mut seen: watch::Receiver<Option<NodeNetworkConfig>>,
    frr: Option<FrrSettings>,
    bounded: Bounded,
    deadline: Duration,
) {
    let api: Api<NodeNetworkConfig> = Api::all(client);
    loop {
        let detected = match bounded_detection(&bounded, deadline, frr.clone()).await {
            Ok(d) => d,
            Err(e) => {
                tracing::error!(error = %e, "capability detection failed; nothing reported");
                return;
            }
        };
        tracing::info!(present = ?detected.present, missing = ?detected.missing, "capabilities detected");
        let recheck = tokio::time::sleep(RECHECK);
        let mut recheck = std::pin::pin!(recheck);
        loop {
            let body = patch(seen.borrow_and_update().as_ref(), &detected);
            let mut failed = false;
            if let Some(body) = body {
                let params = PatchParams::apply(FIELD_MANAGER);
                let body = Patch::Merge(&body);
                let write = api.patch_status(&node, &params, &body);
                match bounded.api("capabilities-write", write).await {
                    Ok(_) => tracing::info!(node = %node, "capabilities written"),
                    Err(e) => {
                        tracing::warn!(error = %e, "writing capabilities; retried");
                        failed = true;
                    }
                }
            }
            tokio::select! {
                changed = seen.changed() => if changed.is_err() { return },
                () = tokio::time::sleep(WRITE_RETRY), if failed => {}
                () = &mut recheck, if !detected.missing.is_empty() => break,
            }
        }
    }
}

/// One detection ([`detect_apart`]) as the step `capabilities` within `deadline`; past it,
/// nothing is assumed: the detection goes on (owed by the kernel) and its result, whenever
/// it comes, is the answer.
async fn bounded_detection(
    bounded: &Bounded,
    deadline: Duration,
    frr: Option<FrrSettings>,
) -> Result<NodeCapabilities, String> {
    let waits_on = if frr.is_some() {
        "the kernel (netlink) and FRR"
    } else {
        "the kernel (netlink)"
    };
    let mut detection = tokio::spawn(detect_apart(frr));
    let part = Part::Kernel.as_str();
    let answer = match bounded
        .within(
            "capabilities",
            part,
            waits_on,
            deadline,
            &mut detection,
            || {},
        )
        .await
    {
        Some(answer) => answer,
        None => {
            tracing::warn!(
                deadline_s = deadline.as_secs_f64(),
                "capability detection got no answer within its deadline: nothing is reported \
                 until it ends (the object keeps what it carries; a node that never reported \
                 lacks nothing); it goes on in the background"
            );
            // Work given up on at a deadline: the kernel owes it (not before: the transaction's
            // wait names the oldest work the kernel owes, which should be its own).
            let owed = bounded.steps().owe(
                Part::Kernel,
                "capability detection (scratch devices)".into(),
            );
            let answer = detection.await;
            drop(owed);
            tracing::info!("capability detection answered after its deadline");
            answer
        }
    };
    answer.map_err(|e| format!("the detection task ended: {e}"))?
}

#[cfg(test)]
mod tests {
    use super::*;

    fn caps(present: &[&str], missing: &[&str]) -> NodeCapabilities {
        NodeCapabilities {
            present: present.iter().map(|s| s.to_string()).collect(),
            missing: missing.iter().map(|s| s.to_string()).collect(),
            frr_version: None,
        }
    }

    fn nnc_with(c: Option<NodeCapabilities>) -> NodeNetworkConfig {
        let mut o = NodeNetworkConfig::new("n1", Default::default());
        o.status = Some(netrollout_api::NodeNetworkConfigStatus {
            capabilities: c,
            ..Default::default()
        });
        o
    }

    #[test]
    fn capabilities_are_written_only_when_the_object_says_otherwise() {
        let found = caps(&["bridge"], &["vrf"]);
        assert!(patch(None, &found).is_some(), "nothing seen yet");
        assert!(
            patch(Some(&nnc_with(None)), &found).is_some(),
            "none reported yet"
        );
        assert!(
            patch(Some(&nnc_with(Some(caps(&["bridge", "vrf"], &[])))), &found).is_some(),
            "changed"
        );
        assert_eq!(patch(Some(&nnc_with(Some(found.clone()))), &found), None);
        assert_eq!(
            patch(None, &found).unwrap()["status"]["capabilities"]["missing"],
            json!(["vrf"])
        );
    }

    #[test]
    fn the_frr_version_is_written_when_it_changes_and_an_unknown_one_clears_the_old() {
        let on = |v: Option<&str>| NodeCapabilities {
            frr_version: v.map(str::to_string),
            ..caps(&["bgpd"], &[])
        };
        let seen = nnc_with(Some(on(Some("8.4.4"))));
        assert_eq!(patch(Some(&seen), &on(Some("8.4.4"))), None);
        let upgraded = patch(Some(&seen), &on(Some("10.3"))).expect("a new version is written");
        assert_eq!(
            upgraded["status"]["capabilities"]["frrVersion"],
            json!("10.3")
        );
        // A merge patch keeps what it does not name: the old version goes only as null.
        let unknown = patch(Some(&seen), &on(None)).expect("an unknown version is written");
        assert_eq!(unknown["status"]["capabilities"]["frrVersion"], Value::Null);
        assert!(
            unknown["status"]["capabilities"]
                .as_object()
                .unwrap()
                .contains_key("frrVersion")
        );
    }

    #[test]
    fn a_daemon_runs_only_when_show_daemons_names_it() {
        assert!(runs(" mgmtd zebra bgpd staticd\n", Capability::Bgpd));
        assert!(!runs(" mgmtd zebra staticd bgpd-old\n", Capability::Bgpd));
        assert!(!runs(" mgmtd zebra bgpd staticd\n", Capability::Bfdd));
        assert!(runs(" zebra bgpd bfdd\n", Capability::Bfdd));
    }
}
