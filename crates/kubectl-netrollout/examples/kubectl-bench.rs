//! `diff` benchmark: two revisions (100 VRFs, 400 layer-2 networks on rack selectors; the newer
//! one changes 10 MTUs and adds a VRF) compared on 1,000 nodes in 20 racks. Baseline: rendering
//! both snapshots and building every node's two configs, the work a per-node diff cannot avoid.
//! Prints `hack/bench.sh` rows (area, benchmark, measured, baseline, ratio, goal).

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use k8s_openapi::api::core::v1::Node;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, ObjectMeta};
use kubectl_netrollout::cluster::Observed;
use kubectl_netrollout::diff::DiffReport;
use netrollout_api::{
    Layer2NetworkConfigurationSpec, NamedInput, NodeConfig, NodeNetworkConfig,
    NodeNetworkConfigSpec, Snapshot, VRFRouteConfigurationSpec,
};
use netrollout_testkit::objects::revision;

const NODES: usize = 1000;
const RACKS: usize = 20;

fn snapshot(changed: bool) -> Snapshot {
    let mut vrfs: Vec<_> = (0..100 + usize::from(changed))
        .map(|i| NamedInput {
            name: format!("vrf-{i:03}"),
            spec: VRFRouteConfigurationSpec {
                vrf: format!("v{i:03}"),
                seq: 10,
                vni: Some(1_000_000 + i as i64),
                ..Default::default()
            },
        })
        .collect();
    vrfs.sort_by(|a, b| a.name.cmp(&b.name));
    let l2s = (0..400)
        .map(|i| NamedInput {
            name: format!("l2-{i:03}"),
            spec: Layer2NetworkConfigurationSpec {
                id: i + 1,
                vni: 2_000_000 + i64::from(i),
                mtu: if changed && i < 10 { 9000 } else { 1500 },
                vrf: Some(format!("v{:03}", i % 100)),
                node_selector: Some(LabelSelector {
                    match_labels: Some(BTreeMap::from([(
                        "rack".to_string(),
                        format!("r{}", i as usize % RACKS),
                    )])),
                    ..Default::default()
                }),
                ..Default::default()
            },
        })
        .collect();
    Snapshot {
        vrf_route_configurations: vrfs,
        layer2_network_configurations: l2s,
        routing_tables: vec![],
        bgp_peerings: vec![],
    }
}

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let old = revision("ncr-old", 1, snapshot(false));
    let new = revision("ncr-new", 2, snapshot(true));
    let mut observed = Observed::default();
    let mut render_nodes = vec![];
    for i in 0..NODES {
        let name = format!("node-{i:04}");
        let labels = BTreeMap::from([("rack".to_string(), format!("r{}", i % RACKS))]);
        let meta = ObjectMeta {
            name: Some(name.clone()),
            labels: Some(labels.clone()),
            ..Default::default()
        };
        observed.nodes.insert(
            name.clone(),
            Node {
                metadata: meta,
                ..Default::default()
            },
        );
        let spec = NodeNetworkConfigSpec {
            revision: "ncr-old".into(),
            config: NodeConfig::default(),
        };
        observed
            .configs
            .insert(name.clone(), NodeNetworkConfig::new(&name, spec));
        render_nodes.push(netrollout_render::Node { name, labels });
    }
    observed.revisions = vec![new.clone(), old.clone()];

    let mut diff_runs = vec![];
    let mut base_runs = vec![];
    let mut groups = 0;
    for _ in 0..5 {
        let t = Instant::now();
        for rev in [&old, &new] {
            let rendered = netrollout_render::render(&rev.spec.snapshot, &render_nodes)?;
            for n in &render_nodes {
                std::hint::black_box(rendered.config(&n.name));
            }
        }
        base_runs.push(t.elapsed());
        let t = Instant::now();
        let report = DiffReport::new(Some(&old), &new, &observed)?;
        diff_runs.push(t.elapsed());
        groups = report.nodes.len();
    }
    // Racks 0-9 each get one changed MTU and the new VRF; racks 10-19 only the new VRF.
    assert_eq!(groups, 11, "nodes with the same changes are grouped");
    let (measured, baseline) = (median(diff_runs), median(base_runs));
    println!(
        "tools\tdiff of 2 revisions on {NODES} nodes (median of 5)\t{:.1} ms\t{:.1} ms (render both)\t{:.2}\t< 3",
        measured.as_secs_f64() * 1e3,
        baseline.as_secs_f64() * 1e3,
        measured.as_secs_f64() / baseline.as_secs_f64()
    );
    Ok(())
}
