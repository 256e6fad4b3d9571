//! FRR renderer benchmark: one node's config with 100 VRFs (two policies each, IPv4 and IPv6
//! import and export items, aggregates, communities, route targets) and 1,000 layer-2 networks.
//! Prints `hack/bench.sh` rows (area, benchmark, measured, baseline, ratio, goal); the baseline,
//! measured in the same run, is serialising the same `NodeConfig` to JSON.

use std::time::{Duration, Instant};

use netrollout_api::{
    Layer2Config, NodeConfig, PrefixAction, PrefixItem, RoutingTableConfig, VrfConfig, VrfPolicy,
};
use netrollout_frr::{Settings, render};

const RUNS: usize = 51;

fn item(cidr: String, le: Option<i32>, action: PrefixAction) -> PrefixItem {
    PrefixItem {
        cidr,
        le,
        action,
        ..Default::default()
    }
}

fn config() -> NodeConfig {
    let vrfs = (0..100u32)
        .map(|i| {
            let name = format!("vrf{i:03}");
            let policies = (0..2i32)
                .map(|p| VrfPolicy {
                    source: format!("{name}-{p}"),
                    seq: 10 + p * 10,
                    import: vec![
                        item(format!("10.{i}.{p}.0/24"), Some(32), PrefixAction::Permit),
                        item(
                            format!("fd00:{i:x}:{p}::/64"),
                            Some(128),
                            PrefixAction::Permit,
                        ),
                        item(format!("10.{i}.{p}.128/25"), None, PrefixAction::Deny),
                    ],
                    export: vec![
                        item(format!("172.16.{i}.0/24"), Some(32), PrefixAction::Permit),
                        item(
                            format!("fd01:{i:x}:{p}::/64"),
                            Some(128),
                            PrefixAction::Permit,
                        ),
                    ],
                    aggregate: vec![format!("172.16.{i}.0/24"), format!("fd01:{i:x}::/48")],
                    communities: vec![format!("65000:{i}")],
                })
                .collect();
            VrfConfig {
                table_id: 1_000_000 + i,
                vrf_interface: format!("vr.{name}"),
                bridge_interface: Some(format!("br.{name}")),
                vxlan_interface: Some(format!("vx.{name}")),
                veth_default_interface: format!("vd.{name}"),
                veth_vrf_interface: format!("vv.{name}"),
                vni: Some(1_000_000 + i),
                route_target: Some(format!("65000:{i}")),
                policies,
                name,
                ..Default::default()
            }
        })
        .collect();
    let layer2s = (0..1000u16)
        .map(|i| Layer2Config {
            source: format!("l2-{i}"),
            id: i + 1,
            vni: 2_000_000 + u32::from(i),
            mtu: 1500,
            bridge_interface: format!("l2.{}", i + 1),
            vxlan_interface: format!("lx.{}", i + 1),
            vrf: Some(format!("vrf{:03}", i % 100)),
            anycast_gateways: vec![format!("172.17.{}.1/24", i % 256)],
            ..Default::default()
        })
        .collect();
    let routing_tables = vec![RoutingTableConfig {
        source: "taas-100".into(),
        table_id: 100,
        interface: "tb.100".into(),
    }];
    NodeConfig {
        vrfs,
        layer2s,
        routing_tables,
        bgp_peerings: vec![],
    }
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let config = config();
    let settings = Settings {
        asn: 4_200_065_169,
        router_id: "192.0.2.1".parse()?,
    };
    let mut bytes = 0;
    let rendering = median(
        (0..RUNS)
            .map(|_| {
                let start = Instant::now();
                bytes = std::hint::black_box(render(&config, &settings)).len();
                start.elapsed()
            })
            .collect(),
    );
    let mut json_bytes = 0;
    let mut json_runs = Vec::with_capacity(RUNS);
    for _ in 0..RUNS {
        let start = Instant::now();
        json_bytes = std::hint::black_box(serde_json::to_vec(&config)?).len();
        json_runs.push(start.elapsed());
    }
    let json = median(json_runs);
    let ms = |d: Duration| d.as_secs_f64() * 1e3;
    println!(
        "frr\trender 100 VRF + 1000 L2 to FRR text ({} KiB, median of {RUNS})\t{:.2} ms\tNodeConfig to JSON ({} KiB) {:.2} ms\t{:.1}x\t< 10 ms",
        bytes / 1024,
        ms(rendering),
        json_bytes / 1024,
        ms(json),
        rendering.as_secs_f64() / json.as_secs_f64()
    );
    Ok(())
}
