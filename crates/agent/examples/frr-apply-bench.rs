//! FRR apply benchmark: real FRR 8.4 (zebra + bgpd, pathspace `-N`) in a fresh network
//! namespace, a config of 50 VRFs with import/export/aggregate/community policies rendered by
//! `netrollout-frr`. Baseline (same run): a full `vtysh -f` load of that config into FRR.
//! Measured: the agent's apply (`frr-reload.py`) of the same config with one VRF's export and
//! community changed, and the no-op apply of an unchanged text (0 FRR writes).
//! Needs root and FRR. Prints tab-separated rows: area, benchmark, measured, baseline, ratio, goal.
#![allow(clippy::unwrap_used, clippy::expect_used)]

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use netrollout_agent::frr::{Frr, FrrSettings};
use netrollout_api::{NodeConfig, PrefixAction, PrefixItem, VrfConfig, VrfPolicy};
use netrollout_testkit::cmd::run;
use netrollout_testkit::frr::{Daemons, Log};

const VRFS: u32 = 50;
const BASE: &str = "frr defaults datacenter\nhostname bench\n!\nrouter bgp 65000\n \
    bgp router-id 192.0.2.1\nexit\n!\n";

fn config(changed: bool) -> NodeConfig {
    let item = |cidr: String| PrefixItem {
        cidr,
        seq: None,
        ge: None,
        le: Some(28),
        action: PrefixAction::Permit,
    };
    NodeConfig {
        vrfs: (0..VRFS)
            .map(|i| {
                let bump = u32::from(changed && i == 7);
                VrfConfig {
                    name: format!("t{i}"),
                    table_id: 100 + i,
                    vrf_interface: format!("vr.t{i}"),
                    veth_default_interface: format!("vd.t{i}"),
                    veth_vrf_interface: format!("vv.t{i}"),
                    policies: vec![VrfPolicy {
                        source: format!("t{i}"),
                        seq: 10,
                        import: vec![item(format!("10.{i}.0.0/16"))],
                        export: vec![item(format!("172.16.{}.0/24", i * 2 + bump))],
                        aggregate: vec![format!("172.16.{}.0/23", i * 2)],
                        communities: vec![format!("65000:{}", 100 + i + bump)],
                    }],
                    ..Default::default()
                }
            })
            .collect(),
        ..Default::default()
    }
}

#[tokio::main]
async fn main() {
    let ns = format!("frrbench-{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let dir_path: PathBuf = dir.path().to_path_buf();
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&dir_path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    run("ip", &["netns", "add", &ns]);
    run("ip", &["-n", &ns, "link", "set", "lo", "up"]);
    std::fs::write(dir_path.join("frr.conf"), BASE).unwrap();
    let daemons = Daemons::start(&ns, &ns, &dir_path.join("frr.conf"), Log::Syslog);
    let base = dir_path.join("base.conf");
    std::fs::write(&base, BASE).unwrap();
    let frr = Frr::new(FrrSettings {
        base_config: base,
        config: dir_path.join("frr.conf"),
        pathspace: Some(ns.clone()),
        vty_socket: None,
        asn: None,
        // Differs from the base's 192.0.2.1: VRFs peer with the default VRF over iBGP.
        router_id: Some("192.0.2.101".parse().unwrap()),
        vtep_ip: None,
        reload_script: "/usr/lib/frr/frr-reload.py".into(),
        bindir: "/usr/bin".into(),
        rundir: dir_path.clone(),
    })
    .unwrap();
    let full = frr.full(&frr.managed(&config(false)).unwrap()).unwrap();
    let changed = frr.full(&frr.managed(&config(true)).unwrap()).unwrap();
    assert_ne!(full, changed);

    // Baseline: the whole config loaded with `vtysh -f` into FRR running the base only.
    let file = dir_path.join("load.conf");
    std::fs::write(&file, &full).unwrap();
    let t = Instant::now();
    let out = Command::new("vtysh")
        .args(["-N", &ns, "-f"])
        .arg(&file)
        .output()
        .unwrap();
    let load = t.elapsed();
    assert!(out.status.success(), "vtysh -f failed");

    // The agent's apply of the same text (FRR already runs it), then one changed VRF.
    assert_eq!(frr.apply(&full).await.unwrap(), 1);
    let t = Instant::now();
    let writes = frr.apply(&changed).await.unwrap();
    let one = t.elapsed();
    assert_eq!(writes, 1);
    let t = Instant::now();
    let noop_writes = frr.apply(&changed).await.unwrap();
    let noop = t.elapsed();
    drop(daemons);
    let _ = Command::new("ip").args(["netns", "del", &ns]).status();

    let base_ms = load.as_secs_f64() * 1e3;
    let ms = one.as_secs_f64() * 1e3;
    println!(
        "agent-frr\tapply 1 changed VRF of {VRFS} (frr-reload)\t{ms:.0} ms\t{base_ms:.0} ms (vtysh -f, full)\t{:.2}x\t< 1x full load",
        ms / base_ms
    );
    let noop_ms = noop.as_secs_f64() * 1e3;
    println!(
        "agent-frr\tno-op apply ({noop_writes} FRR writes)\t{noop_ms:.3} ms\t{base_ms:.0} ms (vtysh -f, full)\t{:.4}x\t0 writes",
        noop_ms / base_ms
    );
}
