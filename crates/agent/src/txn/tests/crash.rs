//! Every crash point. A transaction (rev-1 → rev-2, on the model world) is run once per crash
//! point: between two effects, after each kernel op, between `frr.conf` written and FRR
//! reloaded, and between the steps of each state write (temporary file written, synced,
//! renamed, directory synced). The agent dies there; the disk keeps what that crash keeps
//! ([`CrashMode`]: the page cache, only synced data, or torn unsynced data); the next process
//! starts on it (recovery), then sees the spec again. Then the kernel's managed objects and
//! FRR's running text are exactly one whole config (old or new), the backup and journal agree
//! with it, and the last status report says the truth. A crash once the restore of a failed
//! change began leaves the revision Failed with its own reason, and it is never applied again.
//! The count of crash points is printed and must stay above a floor, so a refactor cannot drop
//! them silently.

use netrollout_api::{NodeConfig, NodePhase};

use super::configs::{config, frr_text};
use super::harness::{CrashMode, Crashed, End, Node};
use crate::txn::{Effect, Purpose};

/// One story to crash in.
struct Scenario {
    name: &'static str,
    /// The committed config before (`None`: a node's first config).
    old: Option<Vec<u16>>,
    new: Vec<u16>,
    /// Faults of the world (probes, kernel, FRR).
    faults: fn(&mut Node),
    /// The reason rev-2 fails with, when it fails without a crash.
    fails: Option<&'static str>,
}

fn scenarios() -> Vec<Scenario> {
    vec![
        Scenario {
            name: "commit",
            old: Some(vec![10, 20]),
            new: vec![10, 30, 40],
            faults: |_| {},
            fails: None,
        },
        Scenario {
            name: "first config",
            old: None,
            new: vec![10, 20],
            faults: |_| {},
            fails: None,
        },
        Scenario {
            name: "probe fails",
            old: Some(vec![10, 20]),
            new: vec![30],
            faults: |n| n.probes.after = Box::new(|_| vec!["tcp 10.9.9.9:443"]),
            fails: Some("ProbeFailed"),
        },
        Scenario {
            name: "kernel refuses",
            old: Some(vec![10, 20]),
            new: vec![10, 30, 40],
            faults: |n| n.kernel_fails_at = Some(3),
            fails: Some("ApplyFailed"),
        },
        Scenario {
            name: "kernel answers late",
            old: Some(vec![10, 20]),
            new: vec![10, 30, 40],
            faults: |n| n.kernel_late_at = Some(2),
            fails: Some("ApplyFailed"),
        },
        Scenario {
            name: "FRR answers late",
            old: Some(vec![10, 20]),
            new: vec![10, 30],
            faults: |n| n.frr_late = true,
            fails: Some("ApplyFailed"),
        },
        Scenario {
            name: "FRR rejects",
            old: Some(vec![10, 20]),
            new: vec![10, 30],
            faults: |n| n.frr.reject = Some("layer2 30".into()),
            fails: Some("FrrRejected"),
        },
    ]
}

fn old_config(sc: &Scenario) -> NodeConfig {
    sc.old.as_deref().map(config).unwrap_or_default()
}

/// A node running the scenario's old config, with its faults.
fn start(sc: &Scenario) -> Node {
    let mut node = Node::new();
    if let Some(old) = &sc.old {
        let spec = node.spec("rev-1", &config(old), None);
        assert_eq!(node.see(spec), Ok(End::Done));
    }
    (sc.faults)(&mut node);
    node.points = 0;
    node
}

/// A settled run: the node, its crashes, and whether the first crash hit the restore of a
/// failed change (then rev-2 must never be applied again after it).
struct Settled {
    node: Node,
    crashes: u32,
    in_restore: bool,
}

fn is_restore(e: &Effect) -> bool {
    matches!(
        e,
        Effect::ApplyFrr {
            purpose: Purpose::Restore,
            ..
        } | Effect::ApplyKernel {
            purpose: Purpose::Restore,
            ..
        }
    )
}

fn is_apply(e: &Effect) -> bool {
    matches!(
        e,
        Effect::ApplyFrr {
            purpose: Purpose::Apply,
            ..
        } | Effect::ApplyKernel {
            purpose: Purpose::Apply,
            ..
        }
    )
}

/// Runs the scenario, crashing at `first` (and, after the restart, at `second`); `None` when
/// the run passed its last crash point without crashing.
fn run(
    sc: &Scenario,
    first: u64,
    mode: CrashMode,
    second: Option<u64>,
) -> Result<Option<Settled>, String> {
    let mut node = start(sc);
    let spec = node.spec("rev-2", &config(&sc.new), None);
    node.crash_at = Some(first);
    node.effects.clear();
    match node.see(spec.clone()) {
        Ok(End::Runaway(e)) => return Err(format!("the first run: {e}")),
        Ok(_) => return Ok(None),
        Err(Crashed) => {}
    }
    let in_restore = node.effects.iter().any(is_restore);
    node.effects.clear();
    let mut crashes = 0;
    let mut crash_at = second;
    loop {
        crashes += 1;
        node.crash_parts();
        node.disk = node.disk.crash(if crashes == 1 {
            mode
        } else {
            CrashMode::Process
        });
        node.points = 0;
        node.crash_at = crash_at.take();
        node.disk
            .state()
            .map_err(|e| format!("after the crash the state does not read: {e}"))?;
        match node.start() {
            Err(Crashed) => continue,
            Ok(End::Stopped(e)) => return Err(format!("recovery stopped: {e}")),
            Ok(End::Refused(e)) => return Err(format!("recovery refused: {e}")),
            Ok(End::Runaway(e)) => return Err(format!("recovery: {e}")),
            Ok(End::Done) => {}
        }
        // After recovery the node runs its last-known-good, whole.
        let disk = node
            .disk
            .state()
            .map_err(|e| format!("after recovery: {e}"))?;
        if !node.kernel_runs(&disk.lkg.config) {
            return Err(format!(
                "after recovery the kernel does not run last-known-good {:?}",
                disk.lkg.revision
            ));
        }
        let spec = node.spec("rev-2", &config(&sc.new), None);
        match node.see(spec) {
            Err(Crashed) => continue,
            Ok(End::Stopped(e)) => return Err(format!("the transaction stopped: {e}")),
            Ok(End::Refused(e)) => return Err(format!("the transaction refused: {e}")),
            Ok(End::Runaway(e)) => return Err(format!("the transaction after recovery: {e}")),
            Ok(End::Done) => {
                return Ok(Some(Settled {
                    node,
                    crashes,
                    in_restore,
                }));
            }
        }
    }
}

/// The invariant after the node settled.
fn check(sc: &Scenario, settled: &Settled) -> Result<(), String> {
    let (node, crashed_twice) = (&settled.node, settled.crashes > 1);
    let disk = node.disk.state()?;
    if settled.in_restore {
        if node.effects.iter().any(is_apply) {
            return Err("rev-2 was applied again after a crash in its restore".into());
        }
        let reason = disk.failures.revisions.get("rev-2").map(|f| f.reason);
        if reason.map(|r| r.as_str()) != sc.fails {
            return Err(format!(
                "after a crash in its restore rev-2 is recorded {reason:?}, not {:?}",
                sc.fails
            ));
        }
    }
    let new = config(&sc.new);
    let old = old_config(sc);
    if disk.journal.is_some() {
        return Err(format!("a journal is left: {:?}", disk.journal));
    }
    let last = node.last();
    let runs_new = node.kernel_runs(&new) && node.frr.running == frr_text(&new);
    let old_frr =
        node.frr.running == frr_text(&old) || (sc.old.is_none() && node.frr.running.is_empty());
    let runs_old = node.kernel_runs(&old) && old_frr;
    if runs_new {
        if sc.fails.is_some() {
            return Err("a config that fails is running".into());
        }
        if disk.lkg.revision.as_deref() != Some("rev-2") || disk.lkg.frr != Some(frr_text(&new)) {
            return Err(format!(
                "running rev-2 but the backup is {:?}",
                disk.lkg.revision
            ));
        }
        if (last.phase, last.ready, last.revision.as_deref())
            != (Some(NodePhase::Provisioned), true, Some("rev-2"))
        {
            return Err(format!("running rev-2 but the status says {last:?}"));
        }
    } else if runs_old {
        let old_rev = sc.old.as_ref().map(|_| "rev-1");
        if disk.lkg.revision.as_deref() != old_rev {
            return Err(format!(
                "running the old config but the backup is {:?}",
                disk.lkg.revision
            ));
        }
        let failure = disk
            .failures
            .revisions
            .get("rev-2")
            .ok_or("rev-2 is not recorded failed")?;
        let expected = sc.fails.unwrap_or("AgentCrashed");
        if sc.fails.is_none() && !crashed_twice {
            return Err("a good config was given up after one crash".into());
        }
        if failure.reason.as_str() != expected && failure.reason.as_str() != "AgentCrashed" {
            return Err(format!(
                "rev-2 failed with {} (expected {expected})",
                failure.reason
            ));
        }
        if (last.phase, last.ready, last.reason.as_str())
            != (Some(NodePhase::Failed), false, failure.reason.as_str())
            || last.last_known_good.as_deref() != old_rev
        {
            return Err(format!(
                "running the old config but the status says {last:?}"
            ));
        }
    } else {
        return Err(format!(
            "the node runs neither config whole: kernel {:?}, FRR {:?}",
            node.kernel.state.links.keys().collect::<Vec<_>>(),
            node.frr.running
        ));
    }
    Ok(())
}

/// The most crash points a restart after a crash in a scenario of `n` points may pass:
/// recovery (a restore) and the retry are each at most one run of the scenario.
fn second_crash_bound(n: u64) -> u64 {
    3 * n + 20
}

/// The crash points of one run of a scenario, without crashing.
fn points(sc: &Scenario) -> u64 {
    let mut node = start(sc);
    let spec = node.spec("rev-2", &config(&sc.new), None);
    node.see(spec).expect("no crash asked");
    node.points
}

#[test]
fn every_crash_point_leaves_one_whole_config_a_backup_that_agrees_and_a_true_status() {
    let mut enumerated = 0;
    let mut in_restore = 0;
    let mut failures = Vec::new();
    for sc in scenarios() {
        let n = points(&sc);
        assert!(n >= 10, "{}: only {n} crash points", sc.name);
        for at in 1..=n {
            for mode in CrashMode::ALL {
                enumerated += 1;
                let result = run(&sc, at, mode, None).and_then(|settled| {
                    let settled = settled.ok_or("no crash at a counted point")?;
                    in_restore += u32::from(settled.in_restore);
                    check(&sc, &settled)
                });
                if let Err(e) = result {
                    failures.push(format!("{} point {at}/{n} {mode:?}: {e}", sc.name));
                }
            }
        }
        assert!(
            matches!(run(&sc, n + 1, CrashMode::Process, None), Ok(None)),
            "{}: a crash point past the {n} counted",
            sc.name
        );
    }
    println!(
        "crash points enumerated: {enumerated} ({in_restore} in a restore), passed: {}",
        enumerated - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {enumerated} crash points broke the invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        in_restore >= 100,
        "only {in_restore} crash points in a restore"
    );
    assert!(
        enumerated >= 400,
        "only {enumerated} crash points: a refactor dropped some"
    );
}

#[test]
fn a_second_crash_at_every_point_of_the_retry_still_leaves_one_whole_config() {
    let mut enumerated = 0;
    let mut in_restore = 0;
    let mut failures = Vec::new();
    for sc in scenarios() {
        let n = points(&sc);
        for first in 1..=n {
            // A restart (recovery and the retry) passes fewer crash points than this; a
            // restart that still crashes here never ends (a broken restore or commit order).
            let bound = second_crash_bound(n);
            for second in 1.. {
                if second > bound {
                    failures.push(format!(
                        "{} points {first}+{second}: the restart after the first crash still \
                         had crash points left after {bound}: it does not settle",
                        sc.name
                    ));
                    break;
                }
                let result = run(&sc, first, CrashMode::Process, Some(second));
                match result {
                    Ok(Some(settled)) if settled.crashes == 1 => {
                        // The restart finished before this point: every later one is too.
                        if let Err(e) = check(&sc, &settled) {
                            failures.push(format!("{} points {first}+{second}: {e}", sc.name));
                        }
                        break;
                    }
                    Ok(Some(settled)) => {
                        enumerated += 1;
                        in_restore += u32::from(settled.in_restore);
                        if let Err(e) = check(&sc, &settled) {
                            failures.push(format!("{} points {first}+{second}: {e}", sc.name));
                        }
                    }
                    Ok(None) => unreachable!("the first crash point is within the run"),
                    Err(e) => {
                        // The later points of this restart would fail the same way (and a
                        // restart that never ends has no last point): name this one, go on.
                        enumerated += 1;
                        failures.push(format!("{} points {first}+{second}: {e}", sc.name));
                        break;
                    }
                }
            }
        }
    }
    println!(
        "double crash points enumerated: {enumerated} ({in_restore} first in a restore), \
         passed: {}",
        enumerated - failures.len()
    );
    assert!(
        failures.is_empty(),
        "{} of {enumerated} double crashes broke the invariant:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        in_restore >= 100,
        "only {in_restore} double crashes in a restore"
    );
    assert!(enumerated >= 1000, "only {enumerated} double crash points");
}
