//! Container mode: what the lab's kubelet saw of every pod during a story, as checks and as
//! hack/bench.sh rows (`containers` area): each pod kept running without a restart the story
//! did not make, the agents are ready at the end, and their peak memory and CPU time.

use std::time::Duration;

use super::{Monitor, Summary};
use crate::cluster::Cluster;
use crate::pods::kubelet::Status;

/// Records the checks and prints the rows; `wall` is the story's wall time.
pub(super) fn report(summary: &mut Summary, m: &Monitor, lab: &Cluster, wall: Duration) {
    let pods = lab.pod_statuses();
    if pods.is_empty() {
        return;
    }
    let restarted: Vec<String> = (pods.iter())
        .filter(|(n, _, s)| !s.restarts.is_empty() && !lab.drilled.contains(n))
        .map(|(n, _, s)| {
            format!(
                "{n}: {}",
                s.restarts
                    .iter()
                    .map(|r| r.1.as_str())
                    .collect::<Vec<_>>()
                    .join("; ")
            )
        })
        .collect();
    summary.check(
        "container mode: no container was restarted by its liveness probe or an exit (but a drill's)",
        restarted.is_empty(),
        if restarted.is_empty() {
            format!("{} pod(s) under the lab's kubelet", pods.len())
        } else {
            restarted.join(", ")
        },
    );
    let unready: Vec<&str> = (pods.iter())
        .filter(|(n, _, s)| n.contains("agent") && !s.ready)
        .map(|(n, _, _)| n.as_str())
        .collect();
    summary.check(
        "container mode: every agent pod is ready at the end (its readiness probe passes)",
        unready.is_empty(),
        unready.join(", "),
    );
    for (what, agents) in [("agent", true), ("configurator", false)] {
        let group: Vec<&(String, Option<u64>, Status)> = (pods.iter())
            .filter(|(n, _, _)| n.contains("agent") == agents)
            .collect();
        let Some(limit) = group.iter().find_map(|(_, l, _)| *l) else {
            continue;
        };
        let Some((name, _, top)) = group.iter().max_by_key(|(_, _, s)| s.peak_memory) else {
            continue;
        };
        let cpu: Duration = group.iter().map(|(_, _, s)| s.cpu).sum();
        let mib = |b: u64| b as f64 / f64::from(1 << 20);
        m.say(&format!(
            "{what} pods: peak memory {:.1} MiB ({name}) of a {:.0} MiB limit; CPU {:.1} s over {} pod(s) in {:.0} s",
            mib(top.peak_memory),
            mib(limit),
            cpu.as_secs_f64(),
            group.len(),
            wall.as_secs_f64()
        ));
        crate::out!(
            "containers\t{what} peak memory (highest of {} pods)\t{:.1} MiB\t{:.0} MiB limit\t{:.3}x\t< 1x",
            group.len(),
            mib(top.peak_memory),
            mib(limit),
            top.peak_memory as f64 / limit as f64
        );
        crate::out!(
            "containers\t{what} CPU per pod (mean of {})\t{:.2} s\t{:.0} s wall\t{:.4}x\t-",
            group.len(),
            cpu.as_secs_f64() / group.len() as f64,
            wall.as_secs_f64(),
            cpu.as_secs_f64() / group.len() as f64 / wall.as_secs_f64()
        );
    }
}
