//! Render benchmark: 1,000 VRFs + 4,000 layer-2 networks with rack selectors for 5,000 nodes.
//! Prints `hack/bench.sh` rows (area, benchmark, measured, baseline, ratio, goal).

use std::time::Instant;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
use netrollout_api::{
    Layer2NetworkConfiguration, Layer2NetworkConfigurationSpec, PrefixItem, VRFRouteConfiguration,
    VRFRouteConfigurationSpec,
};
use netrollout_render::{Node, Revision, from_objects, render};

const RACKS: usize = 50;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let vrfs: Vec<VRFRouteConfiguration> = (0..1000)
        .map(|i| {
            let mut spec = VRFRouteConfigurationSpec {
                vrf: format!("vrf{i:04}"),
                seq: 10,
                vni: Some(1_000_000 + i),
                route_target: Some(format!("65000:{i}")),
                ..Default::default()
            };
            spec.export.push(PrefixItem {
                cidr: format!("10.{}.{}.0/24", i / 256, i % 256),
                le: Some(32),
                ..Default::default()
            });
            VRFRouteConfiguration::new(&format!("vrf-{i}"), spec)
        })
        .collect();
    let layer2s: Vec<Layer2NetworkConfiguration> = (0..4000)
        .map(|i| {
            let racks = [format!("r{}", i % RACKS), format!("r{}", (i + 1) % RACKS)];
            Layer2NetworkConfiguration::new(
                &format!("l2-{i}"),
                Layer2NetworkConfigurationSpec {
                    id: i as i32 + 1,
                    vni: 2_000_000 + i as i64,
                    mtu: 1500,
                    vrf: Some(format!("vrf{:04}", i % 1000)),
                    anycast_mac: Some("1a:ee:cf:2f:a7:a8".into()),
                    anycast_gateways: vec![format!("172.{}.{}.1/24", 16 + i / 256, i % 256)],
                    node_selector: Some(LabelSelector {
                        match_expressions: Some(vec![LabelSelectorRequirement {
                            key: "netrollout.io/rack".into(),
                            operator: "In".into(),
                            values: Some(racks.to_vec()),
                        }]),
                        match_labels: None,
                    }),
                    ..Default::default()
                },
            )
        })
        .collect();
    let nodes: Vec<Node> = (0..5000)
        .map(|i| Node {
            name: format!("node-{i:05}"),
            labels: [
                ("netrollout.io/rack".to_string(), format!("r{}", i % RACKS)),
                (
                    "topology.kubernetes.io/zone".to_string(),
                    format!("z{}", i % 3),
                ),
            ]
            .into(),
        })
        .collect();

    let start = Instant::now();
    let snapshot = from_objects(&vrfs, &layer2s, &[]);
    let revision = Revision::of(&snapshot)?;
    let hashed = start.elapsed();
    let rendered = render(&snapshot, &nodes)?;
    let full = start.elapsed();

    let start = Instant::now();
    let mut bytes = 0;
    for node in nodes.iter().take(200) {
        let config = rendered.config(&node.name).ok_or("node missing")?;
        bytes += serde_json::to_vec(&config)?.len();
    }
    let per_node = start.elapsed() / 200;

    let goal = 1.0;
    let full_s = full.as_secs_f64();
    println!(
        "render\tfull render: 1000 VRF + 4000 L2, 5000 nodes (validate, hash, select, size-check)\t{:.0} ms\tgoal 1000 ms\t{:.2}x of goal\t< 1 s",
        full_s * 1e3,
        full_s / goal
    );
    println!(
        "render\t  of which snapshot + canonical JSON + sha256 ({} KiB)\t{:.0} ms\t-\t-\t-",
        revision.size / 1024,
        hashed.as_secs_f64() * 1e3
    );
    println!(
        "render\tone node's NodeConfig built + JSON ({} KiB avg)\t{:.2} ms\tfull render / 5000 = {:.3} ms\t{:.1}x\t-",
        bytes / 200 / 1024,
        per_node.as_secs_f64() * 1e3,
        full_s * 1e3 / 5000.0,
        per_node.as_secs_f64() / (full_s / 5000.0)
    );
    Ok(())
}
