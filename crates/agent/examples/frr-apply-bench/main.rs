//! FRR apply benchmark, FRR 8.4 and 10.3 side by side: for each version and size, real FRR of
//! that version (8.4 from the host, 10.3 from the root file system `hack/frr10.sh` caches; the
//! one FRR start, pathspace `-N`) in a fresh network namespace, a config of N VRFs with
//! import/export/aggregate/community policies rendered by `netrollout-frr`. Every row has its
//! baseline measured in the same run on the same FRR: the same apply through that version's
//! `frr-reload.py` (as the agent applied before its own diff).
//!
//! Measured, per version and size: the first apply of the whole config to FRR running the base
//! config only (one run each: the agent's, then `frr-reload.py`'s on an FRR started afresh);
//! the config with one VRF's export and community changed, applied by a fresh agent (a text it
//! never checked) and by one going back and forth between texts it checked before (their parse
//! kept: no check); the first apply of an agent that just started, when FRR already runs the
//! text (0 FRR writes); the no-op apply of the text it loaded last (0 FRR writes, no FRR call);
//! and each step of an apply on its own (wall, and the CPU of the bench, its vtysh children,
//! zebra, bgpd and mgmtd). Changes are timed as the median of three, alternating the direction.
//!
//! Arguments: `VERSION:SIZE,SIZE...` (e.g. `8.4:50,200 10.3:50,200,500`), or bare sizes for the
//! version of `NETROLLOUT_FRR_VERSION`. Needs root and FRR (hack/install-deps.sh). Prints
//! tab-separated rows: area, benchmark, measured, baseline, ratio, goal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod cpu;
mod node;

use netrollout_agent::frr::Frr;
use netrollout_frr::daemons::Version;

use cpu::{Took, ms};
use node::{Node, config, settings};

/// A row: what (with its CPU), the agent's figure against `frr-reload.py`'s, the goal.
fn row(what: &str, agent: &Took, reload: &Took, goal: &str) {
    println!(
        "agent-frr\t{what} (CPU {:.0} ms: {})\t{:.0} ms\t{:.0} ms (frr-reload.py; CPU {:.0} ms: {})\t{:.2}x\t{goal}",
        ms(agent.cpu),
        agent.parts,
        ms(agent.wall),
        ms(reload.wall),
        ms(reload.cpu),
        reload.parts,
        ms(agent.wall) / ms(reload.wall)
    );
}

async fn bench(version: Version, vrfs: u32) {
    let label = format!("FRR {version}, {vrfs} VRFs");
    let ns = format!(
        "frrbench-{}-{}-{vrfs}",
        std::process::id(),
        version.to_string().replace('.', "")
    );
    let dir = tempfile::tempdir().unwrap();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let dir = dir.path();
    std::fs::write(dir.join("base.conf"), node::BASE).unwrap();
    let probe = Frr::new(settings(dir, &ns, version)).unwrap();
    let full = probe
        .full(&probe.managed(&config(vrfs, false)).unwrap())
        .unwrap();
    let changed = probe
        .full(&probe.managed(&config(vrfs, true)).unwrap())
        .unwrap();
    assert_ne!(full, changed);
    let (full, changed) = (&full, &changed);

    // The first apply of the whole config, FRR running the base config: frr-reload.py on an
    // FRR of its own (stopped after), then the agent.
    let first_reload = {
        let node = Node::start(&format!("{ns}r"), dir, version);
        let f = cpu::Frr {
            version,
            pathspace: &node.ns,
        };
        let s = settings(dir, &node.ns, version);
        let took = cpu::once(f, || async {
            let frr = Frr::new(s.clone()).unwrap();
            frr.apply_with_reload_script(full).await.unwrap();
        })
        .await;
        // frr-reload.py brought FRR to the text: the agent finds nothing to write.
        let check = Frr::new(s).unwrap();
        assert_eq!(check.apply(full).await.unwrap(), 0, "frr-reload.py's load");
        took
    };
    let node = Node::start(&format!("{ns}a"), dir, version);
    let ns = node.ns.as_str();
    let f = cpu::Frr {
        version,
        pathspace: ns,
    };
    let s = settings(dir, ns, version);
    let first = cpu::once(f, || async {
        let frr = Frr::new(s.clone()).unwrap();
        assert!(frr.apply(full).await.unwrap() >= 1);
        assert_eq!(
            frr.fallbacks(),
            0,
            "the first apply fell back to frr-reload.py"
        );
    })
    .await;
    cpu::wait_idle(f);
    row(
        &format!("first apply of the whole config, {label} (FRR ran the base config; one run)"),
        &first,
        &first_reload,
        "reported",
    );

    // One changed VRF, there and back: the agent's diff, then frr-reload.py.
    let text = |i: usize| if i.is_multiple_of(2) { changed } else { full };
    let diff = cpu::median3(f, |i| {
        let s = s.clone();
        async move {
            // A new Frr each time, as a text never checked before: its memory of the loaded text
            // would make the next one a no-op, and it keeps FRR's parse of the texts it checked.
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply(text(i)).await.unwrap(), 1);
        }
    })
    .await;
    let script = cpu::median3(f, |i| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply_with_reload_script(text(i + 1)).await.unwrap(), 1);
        }
    })
    .await;
    // FRR runs `full` now. An agent that just started applies it: nothing to change.
    let fresh = cpu::median3(f, |_| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            assert_eq!(frr.apply(full).await.unwrap(), 0);
        }
    })
    .await;
    let fresh_script = cpu::median3(f, |_| {
        let s = s.clone();
        async move {
            let frr = Frr::new(s).unwrap();
            frr.apply_with_reload_script(full).await.unwrap();
        }
    })
    .await;
    let frr = Frr::new(s.clone()).unwrap();
    frr.apply(full).await.unwrap();
    let noop = cpu::once(f, || async {
        assert_eq!(frr.apply(full).await.unwrap(), 0);
    })
    .await;
    // One agent process applying texts it checked before (a change and its undo, a restore):
    // FRR's parse of each is kept, so only the script starts a vtysh.
    assert_eq!(frr.apply(changed).await.unwrap(), 1);
    assert_eq!(frr.apply(full).await.unwrap(), 1);
    let kept = cpu::median3(f, |i| {
        let frr = &frr;
        async move {
            assert_eq!(frr.apply(text(i)).await.unwrap(), 1);
        }
    })
    .await;
    assert_eq!(frr.apply(full).await.unwrap(), 1);
    assert_eq!(frr.vty_fallbacks(), 0, "FRR was read with vtysh");
    assert_eq!(frr.fallbacks(), 0, "an apply fell back to frr-reload.py");

    steps(f, &label, &frr, dir, changed, full).await;
    drop(node);

    let goal = if vrfs <= 50 { "< 200 ms" } else { "< 1 s" };
    row(
        &format!("apply 1 changed VRF, {label} (agent's diff)"),
        &diff,
        &script,
        goal,
    );
    row(
        &format!("apply 1 changed VRF, {label}, texts this agent checked before (parse kept)"),
        &kept,
        &script,
        goal,
    );
    row(
        &format!("first apply after a restart, FRR runs the text, {label} (0 FRR writes)"),
        &fresh,
        &fresh_script,
        "0 writes",
    );
    println!(
        "agent-frr\tno-op apply of the loaded text, {label} (0 FRR writes)\t{:.3} ms\t{:.0} ms (frr-reload.py)\t{:.4}x\t0 writes",
        ms(noop.wall),
        ms(fresh_script.wall),
        ms(noop.wall) / ms(fresh_script.wall)
    );
}

/// Where an apply's time goes, step by step, each on its own (FRR runs `full`).
async fn steps(
    f: cpu::Frr<'_>,
    label: &str,
    frr: &Frr,
    dir: &std::path::Path,
    changed: &str,
    full: &str,
) {
    let file = dir.join("changed.conf");
    std::fs::write(&file, changed).unwrap();
    let file = file.to_str().unwrap();
    cpu::step(
        f,
        label,
        "vtysh start (`vtysh -c 'show version'`)",
        5,
        || async {
            frr.vtysh(&["-c", "show version"]).await.unwrap();
        },
    )
    .await;
    cpu::step(
        f,
        label,
        "the check, FRR's parse (`vtysh -m -f`)",
        5,
        || async {
            frr.vtysh(&["-m", "-f", file]).await.unwrap();
        },
    )
    .await;
    cpu::step(
        f,
        label,
        "running config read by vtysh (`show running-config`)",
        5,
        || async {
            frr.vtysh(&["-c", "show running-config no-header"])
                .await
                .unwrap();
        },
    )
    .await;
    cpu::step(
        f,
        label,
        "running config read over the vty sockets",
        5,
        || async {
            frr.running_config().await.unwrap();
        },
    )
    .await;
    cpu::step(
        f,
        label,
        "the daemons answering (`enable` over the vty sockets)",
        5,
        || async {
            frr.require_running().await.unwrap();
        },
    )
    .await;
    cpu::step(f, label, "the diff of the two texts (pure)", 5, || async {
        let (a, b) = (
            netrollout_agent::frr::read_as_diff(changed),
            netrollout_agent::frr::read_as_diff(full),
        );
        assert_ne!(a, b);
    })
    .await;
    assert_eq!(frr.vty_fallbacks(), 0, "FRR was read with vtysh");
}

/// `VERSION:SIZE,SIZE...` or a bare size (the version of `NETROLLOUT_FRR_VERSION`).
fn runs(args: &[String]) -> Vec<(Version, u32)> {
    let size = |s: &str| -> u32 {
        s.parse()
            .unwrap_or_else(|_| panic!("{s:?}: a VRF count, e.g. 8.4:50,200 10.3:500"))
    };
    let mut runs = Vec::new();
    for arg in args {
        match arg.split_once(':') {
            Some((version, sizes)) => {
                let version: Version = version.parse().unwrap_or_else(|e| panic!("{e}"));
                runs.extend(sizes.split(',').map(|s| (version, size(s))));
            }
            None => runs.push((Version::from_env(), size(arg))),
        }
    }
    runs
}

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let args = if args.is_empty() {
        vec!["8.4:50,200".to_string(), "10.3:50,200,500".to_string()]
    } else {
        args
    };
    for (version, vrfs) in runs(&args) {
        bench(version, vrfs).await;
    }
}
