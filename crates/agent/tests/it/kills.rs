//! `kill -9` at random moments, 200 times, FRR phases included: the real agent with real FRR
//! (zebra + bgpd 8.4 and an eBGP peer, `tests/common/frr.rs`) in network namespaces against the
//! lab API server. Revisions alternate between two configs that differ in kernel objects (three
//! layer-2 networks: bridges and VXLAN devices, or none) and in FRR text (`advertise-all-vni`,
//! or no managed section), so each kill lands somewhere in a change of both. A kill takes the
//! agent and every process it started (a running `vtysh -f` or `frr-reload.py`), as when the
//! pod's container dies. Some kills are chained: one more during the recovery of the previous,
//! or during the retry that follows it (a second crash on one revision reports it `Failed`).
//!
//! After each kill the agent is started again; once it has settled (recovered, no journal, a
//! final status for the revision), the kernel's managed objects and FRR's running config
//! (`vtysh show running-config`) are exactly one whole config — the one the status names —,
//! `frr.conf`, the backup and the journal agree with it. The test prints the kills per step
//! they landed in, the half-applied configs found (must be 0), the restarts that restored, and
//! the recovery time (kill → settled). Several independent worlds run in parallel, so the 200
//! kills fit the CI budget. Needs root and FRR.

#![allow(clippy::unwrap_used, clippy::expect_used)]

use crate::common;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use common::AgentLab as _;
use common::frr::World;
use common::kills::{Landed, LogTail, Progress, kill_tree, median_max};
use common::layer2s;
use netrollout_agent::store::{JOURNAL_FILE, Store};
use netrollout_api::{NodeConfig, NodePhase};
use rand::{Rng, RngExt, SeedableRng};

/// Kills in all, the requirement.
const KILLS: usize = 200;
/// Independent namespaces (each an agent, its FRR, a peer FRR and a lab API server).
const WORLDS: usize = 8;

/// What one world saw.
#[derive(Debug, Default)]
struct Tally {
    landed: BTreeMap<Landed, usize>,
    kills: usize,
    /// Kills during a revision's second attempt (the retry after a crash).
    second_attempt: usize,
    /// Settled checks where the kernel or FRR did not hold exactly one whole config.
    half_applied: Vec<String>,
    /// Settled checks where backup, journal, `frr.conf` or status disagreed.
    untrue: Vec<String>,
    /// Restarts that found a journal (an interrupted apply) and finished recovering.
    recovered: usize,
    /// Of those, the ones that restored last-known-good (FRR, then the kernel).
    restored: usize,
    /// Revisions reported `Failed` (`AgentCrashed`) after two kills.
    crashed_twice: usize,
    /// Kill → settled, per settled check.
    recovery: Vec<Duration>,
    revisions: usize,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 10)]
async fn kill_9_two_hundred_times_with_frr_never_leaves_a_half_applied_config() {
    let t0 = Instant::now();
    let seed: u64 = rand::rng().random();
    eprintln!("seed {seed} (set KILLS_SEED to repeat the choices)");
    let seed = std::env::var("KILLS_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(seed);
    let per_world = KILLS.div_ceil(WORLDS);
    let worlds: Vec<_> = (0..WORLDS)
        .map(|i| tokio::spawn(world(per_world, seed.wrapping_add(i as u64))))
        .collect();
    let mut all = Tally::default();
    for w in worlds {
        let t = w.await.expect("a world's task");
        for (k, v) in t.landed {
            *all.landed.entry(k).or_default() += v;
        }
        all.kills += t.kills;
        all.second_attempt += t.second_attempt;
        all.half_applied.extend(t.half_applied);
        all.untrue.extend(t.untrue);
        all.recovered += t.recovered;
        all.restored += t.restored;
        all.crashed_twice += t.crashed_twice;
        all.recovery.extend(t.recovery);
        all.revisions += t.revisions;
    }
    let (median, max) = median_max(&all.recovery);
    eprintln!(
        "kills: {} in {} revisions over {WORLDS} namespaces in {:.1} s",
        all.kills,
        all.revisions,
        t0.elapsed().as_secs_f64()
    );
    for phase in Landed::ALL {
        eprintln!(
            "  landed {:<40} {}",
            phase.describe(),
            all.landed.get(&phase).copied().unwrap_or(0)
        );
    }
    eprintln!(
        "  of them in a revision's second attempt: {}; revisions Failed (AgentCrashed) after two \
         kills: {}",
        all.second_attempt, all.crashed_twice
    );
    eprintln!(
        "half-applied found: {}; other disagreements: {}; restarts that found a journal: {}, \
         restored: {}; recovery (kill -> settled): median {} ms, max {} ms",
        all.half_applied.len(),
        all.untrue.len(),
        all.recovered,
        all.restored,
        median.as_millis(),
        max.as_millis()
    );
    assert!(all.kills >= KILLS, "only {} kills", all.kills);
    assert!(
        all.half_applied.is_empty() && all.untrue.is_empty(),
        "half-applied: {:#?}\nother: {:#?}",
        all.half_applied,
        all.untrue
    );
    assert_eq!(all.restored, all.recovered, "a recovery did not restore");
    // The kills must reach FRR's steps, not only the kernel's, for the figure to mean anything.
    let frr = [Landed::FrrCheck, Landed::FrrWritten, Landed::FrrReload]
        .iter()
        .map(|p| all.landed.get(p).copied().unwrap_or(0))
        .sum::<usize>();
    for (what, n) in [
        ("FRR's steps", frr),
        (
            "the probe hold",
            all.landed.get(&Landed::ProbeHold).copied().unwrap_or(0),
        ),
        (
            "the recovery",
            all.landed.get(&Landed::Recovery).copied().unwrap_or(0),
        ),
        (
            "the kernel step",
            all.landed.get(&Landed::Kernel).copied().unwrap_or(0),
        ),
    ] {
        assert!(n >= 5, "only {n} kills landed in {what}");
    }
}

/// What FRR runs and `frr.conf` holds once a config is committed.
#[derive(Debug, Clone)]
struct Snap {
    running: String,
    conf: String,
}

/// One namespace: two clean commits (A, then B) to learn what FRR runs for each, then
/// revisions alternating A and B, each killed at least once, until `kills` kills.
async fn world(kills: usize, seed: u64) -> Tally {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut w = World::new("10s").await;
    w.lab.extra_args.extend(
        ["--probe-hold", "300ms", "--probe-interval", "100ms"]
            .iter()
            .map(|s| s.to_string()),
    );
    let (a, b) = (layer2s(600, 3), NodeConfig::default());
    let mut configs: BTreeMap<String, NodeConfig> = BTreeMap::new();
    let mut tail = LogTail::from_end(&w.lab.log_path());
    let journal = w.lab.state_dir().join(JOURNAL_FILE);
    w.lab.start_agent();
    let mut snaps = Vec::new();
    for (rev, config) in [("rev-0", &a), ("rev-1", &b)] {
        configs.insert(rev.into(), config.clone());
        w.lab.set_spec(rev, config.clone()).await;
        settle(&w, &mut tail, rev, &journal).await;
        let status = w.lab.status().await;
        assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
        snaps.push(Snap {
            running: strip_header(&w.node.running()),
            conf: std::fs::read_to_string(&w.conf).unwrap(),
        });
    }
    let snap = |c: &NodeConfig| snaps[usize::from(c.layer2s.is_empty())].clone();
    let mut t = Tally::default();
    for i in 2.. {
        if t.kills >= kills {
            break;
        }
        t.revisions += 1;
        let rev = format!("rev-{i}");
        let config = if i % 2 == 0 { a.clone() } else { b.clone() };
        let new_frr = snap(&config).conf;
        configs.insert(rev.clone(), config.clone());
        w.lab.set_spec(&rev, config).await;
        aim(&mut rng, &mut tail, &rev, &w, &new_frr).await;
        let mut last_kill = kill(&mut w, &mut tail, &rev, &new_frr, &mut t);
        // Start again; up to five more kills: in the recovery of the previous (restoring FRR
        // and the kernel), or in the retry that follows it.
        let chain = rng.random_range(0..=5);
        for depth in 0.. {
            let store = Store::open(w.lab.state_dir()).unwrap();
            let before = store.journal().unwrap();
            // A journal of the revision already committed (killed between the backup's rename
            // and the journal's removal) is only removed: no retry follows.
            let committed = store.last_known_good().unwrap().revision.as_deref() == Some(&rev);
            tail = LogTail::from_end(&w.lab.log_path());
            w.lab.start_agent();
            let Some(j) = before.filter(|_| depth < chain) else {
                break;
            };
            let wait = Duration::from_secs(60);
            if rng.random_range(0..100) < 15 && j.attempt == 1 && j.revision == rev && !committed {
                let quoted = format!("\"revision\":\"{rev}\"");
                tail.wait_line_progressing(
                    &w.lab,
                    &["\"step\":\"journal\"", "\"attempt\":2", &quoted],
                    wait,
                )
                .await;
                t.second_attempt += 1;
                sleep_ms(&mut rng, 300).await;
            } else {
                tail.wait_line_progressing(
                    &w.lab,
                    &["journal says an apply was interrupted"],
                    wait,
                )
                .await;
                sleep_ms(&mut rng, 900).await;
            }
            last_kill = kill(&mut w, &mut tail, &rev, &new_frr, &mut t);
            count_recovery(&tail, &mut t);
        }
        settle(&w, &mut tail, &rev, &journal).await;
        t.recovery.push(last_kill.elapsed());
        count_recovery(&tail, &mut t);
        check(&w, &rev, &configs, &snap, &mut t).await;
    }
    t
}

/// Waits for a moment to kill at, aimed at one step of the attempt (chosen at random), then a
/// random delay into it.
async fn aim(rng: &mut impl Rng, tail: &mut LogTail, rev: &str, w: &World, new_frr: &str) {
    let quoted = format!("\"revision\":\"{rev}\"");
    let within = Duration::from_secs(60);
    match rng.random_range(0..5) {
        0 => {
            tail.wait_line_progressing(&w.lab, &["\"step\":\"journal\"", &quoted], within)
                .await;
            sleep_ms(rng, 20).await;
        }
        1 => {
            tail.wait_line_progressing(&w.lab, &["\"step\":\"apply\"", &quoted], within)
                .await;
            sleep_ms(rng, 60).await;
        }
        2 => {
            let mut progress = Progress::new(within);
            while std::fs::read_to_string(&w.conf).unwrap_or_default() != new_frr {
                tail.refresh();
                assert!(
                    progress.alive(tail, &w.lab),
                    "frr.conf never became {rev}'s; this start's log:\n{}",
                    tail.text
                );
                tokio::time::sleep(Duration::from_millis(3)).await;
            }
            sleep_ms(rng, 500).await;
        }
        3 => {
            tail.wait_line_progressing(&w.lab, &["\"step\":\"apply-frr\"", &quoted], within)
                .await;
            sleep_ms(rng, 300).await;
        }
        _ => {
            tail.wait_line_progressing(
                &w.lab,
                &["\"step\":\"probe-after\"", "\"passed\":true", &quoted],
                within,
            )
            .await;
        }
    }
}

async fn sleep_ms(rng: &mut impl Rng, max: u64) {
    tokio::time::sleep(Duration::from_millis(rng.random_range(0..=max))).await;
}

/// Kills the agent's tree, noting where the kill landed; returns its moment.
fn kill(w: &mut World, tail: &mut LogTail, rev: &str, new_frr: &str, t: &mut Tally) -> Instant {
    let conf = w.conf.clone();
    let mut at = Instant::now();
    let landed = kill_tree(&mut w.lab, |procs| {
        at = Instant::now();
        tail.refresh();
        let frr_conf = std::fs::read_to_string(&conf).unwrap_or_default();
        Landed::classify(&tail.text, rev, procs, &frr_conf, new_frr)
    });
    *t.landed.entry(landed).or_default() += 1;
    t.kills += 1;
    at
}

/// Counts a start that found a journal and finished recovering, and whether it restored.
fn count_recovery(tail: &LogTail, t: &mut Tally) {
    let Some(end) = tail.text.find("state recovered") else {
        return;
    };
    let recovery = &tail.text[..end];
    if recovery.contains("journal says an apply was interrupted") {
        t.recovered += 1;
        if recovery.contains("restored the last-known-good FRR config")
            && recovery.contains("\"step\":\"restored\"")
        {
            t.restored += 1;
        }
    }
}

/// Waits until the agent has recovered, removed the journal and reported `rev` finished, as
/// long as it makes [`Progress`].
async fn settle(w: &World, tail: &mut LogTail, rev: &str, journal: &std::path::Path) {
    let mut progress = Progress::new(Duration::from_secs(90));
    loop {
        tail.refresh();
        if tail.text.contains("state recovered") && !journal.exists() {
            let nnc = w.lab.nnc_api().get(&w.lab.node).await.unwrap();
            if nnc.status.is_some_and(|s| {
                s.observed_revision.as_deref() == Some(rev)
                    && matches!(s.phase, Some(NodePhase::Provisioned | NodePhase::Failed))
            }) {
                return;
            }
        }
        assert!(
            progress.alive(tail, &w.lab),
            "{rev} did not settle and the agent made no progress for 90 s; this start's log:\n{}",
            tail.text
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// The invariant after a settled kill: kernel and FRR hold exactly the config the status names
/// (the revision when Provisioned, its last-known-good when Failed), and so do `frr.conf` and the
/// backup; there is no journal.
async fn check(
    w: &World,
    rev: &str,
    configs: &BTreeMap<String, NodeConfig>,
    snap: &impl Fn(&NodeConfig) -> Snap,
    t: &mut Tally,
) {
    let status = w.lab.status().await;
    let held = match status.phase {
        Some(NodePhase::Provisioned) => rev.to_string(),
        _ => {
            t.crashed_twice += 1;
            if status.reason.as_deref() != Some("AgentCrashed") {
                t.untrue
                    .push(format!("{rev}: failed, not by two crashes: {status:?}"));
            }
            status.last_known_good_revision.clone().unwrap_or_default()
        }
    };
    let Some(config) = configs.get(&held) else {
        t.untrue
            .push(format!("{rev}: status names no known revision: {status:?}"));
        return;
    };
    let want = snap(config);
    if !w.lab.holds(config).await {
        let links = w.lab.ip("-br link");
        t.half_applied
            .push(format!("{rev}: the kernel does not hold {held}:\n{links}"));
    }
    let running = strip_header(&w.node.running());
    if running != want.running {
        t.half_applied.push(format!(
            "{rev}: FRR does not run {held}'s config:\n{running}\n--- want:\n{}",
            want.running
        ));
    }
    let lkg = Store::open(w.lab.state_dir())
        .unwrap()
        .last_known_good()
        .unwrap();
    if lkg.revision.as_deref() != Some(held.as_str()) || lkg.frr.as_deref() != Some(&want.conf) {
        t.untrue
            .push(format!("{rev}: backup is {:?}, not {held}", lkg.revision));
    }
    if std::fs::read_to_string(&w.conf).unwrap_or_default() != want.conf {
        t.untrue.push(format!("{rev}: frr.conf is not {held}'s"));
    }
}

/// `show running-config` without its `Building configuration...` preamble.
fn strip_header(text: &str) -> String {
    text.lines()
        .skip_while(|l| !l.starts_with("frr version"))
        .collect::<Vec<_>>()
        .join("\n")
}
