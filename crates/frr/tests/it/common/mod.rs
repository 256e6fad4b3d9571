//! Helpers shared by the FRR renderer's tests: the inputs (the repo's samples and the Go
//! operator's manifests: the repository's fixtures, and the third-party ones of
//! `NETROLLOUT_COMPAT_DIR` when set), the nodes they are rendered for and the routing settings.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // tests may panic

pub mod frr;

use std::path::{Path, PathBuf};

use netrollout_api::{
    BGPPeering, Layer2NetworkConfiguration, NodeConfig, RoutingTable, Snapshot,
    VRFRouteConfiguration,
};
use netrollout_frr::Settings;
use netrollout_render::{Node, from_objects, render};
use serde_json::Value;

pub fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

pub fn settings() -> Settings {
    Settings {
        asn: 4_200_065_169,
        router_id: "192.0.2.11".parse().unwrap(),
    }
}

/// The input documents of a YAML stream (null documents dropped).
pub fn docs_of(text: &str) -> Vec<Value> {
    serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text)
        .unwrap()
        .into_iter()
        .filter(|d| !d.is_null())
        .collect()
}

/// The input documents of a YAML stream as a snapshot; legacy API versions are accepted.
pub fn snapshot_of(text: &str) -> Snapshot {
    snapshot_of_docs(docs_of(text))
}

/// Input documents as a snapshot; legacy API versions are accepted.
pub fn snapshot_of_docs(docs: Vec<Value>) -> Snapshot {
    let (mut vrfs, mut l2s, mut tables, mut peerings) =
        (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    for mut doc in docs {
        doc["apiVersion"] = Value::from("netrollout.io/v1alpha1");
        match doc["kind"].as_str().unwrap() {
            "VRFRouteConfiguration" => {
                vrfs.push(serde_json::from_value::<VRFRouteConfiguration>(doc).unwrap());
            }
            "Layer2NetworkConfiguration" => {
                l2s.push(serde_json::from_value::<Layer2NetworkConfiguration>(doc).unwrap());
            }
            "RoutingTable" => tables.push(serde_json::from_value::<RoutingTable>(doc).unwrap()),
            "BGPPeering" => peerings.push(serde_json::from_value::<BGPPeering>(doc).unwrap()),
            other => panic!("unexpected kind {other}"),
        }
    }
    let mut snapshot = from_objects(&vrfs, &l2s, &tables);
    snapshot.bgp_peerings = netrollout_render::peerings(&peerings);
    snapshot
}

/// Every sample under `config/samples/` as one snapshot.
pub fn samples() -> Snapshot {
    snapshot_of(&samples_text())
}

/// Every sample under `config/samples/` as one YAML stream.
pub fn samples_text() -> String {
    let dir = repo().join("config/samples");
    let mut paths: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "yaml"))
        .collect();
    paths.sort();
    let text: Vec<String> = paths
        .iter()
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect();
    text.join("\n---\n")
}

/// Every manifest of the Go operator's format (file name, snapshot), sorted by name: the
/// repository's fixtures (`fixture-*`), then the third-party manifests of `NETROLLOUT_COMPAT_DIR`
/// when it is set (`compat-*`).
pub fn compat() -> Vec<(String, Snapshot)> {
    netrollout_testkit::manifests::all()
        .into_iter()
        .map(|m| (m.name.clone(), snapshot_of(&m.text)))
        .collect()
}

/// The nodes every snapshot is rendered for: a control-plane node in rack r0 and a worker in
/// rack r1 (the samples select on both labels).
pub fn nodes() -> Vec<Node> {
    vec![
        Node {
            name: "cp-r0".into(),
            labels: [
                ("netrollout.io/rack".to_string(), "r0".to_string()),
                (
                    "node-role.kubernetes.io/control-plane".to_string(),
                    String::new(),
                ),
            ]
            .into(),
        },
        Node {
            name: "worker-r1".into(),
            labels: [("netrollout.io/rack".to_string(), "r1".to_string())].into(),
        },
    ]
}

/// The BGP peerings of `tests/data/peerings.yaml`, every field of the kind used.
pub fn peerings() -> Snapshot {
    snapshot_of(&peerings_text())
}

/// `tests/data/peerings.yaml`.
pub fn peerings_text() -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/peerings.yaml");
    std::fs::read_to_string(path).unwrap()
}

/// Every (case name, node config) the golden and FRR tests cover.
pub fn cases() -> Vec<(String, NodeConfig)> {
    let mut sets = vec![
        ("samples".to_string(), samples()),
        ("peerings".to_string(), peerings()),
    ];
    sets.extend(compat());
    let mut out = Vec::new();
    for (set, snapshot) in sets {
        let rendered =
            render(&snapshot, &nodes()).unwrap_or_else(|e| panic!("{set} does not render: {e}"));
        for node in nodes() {
            let config = rendered.config(&node.name).unwrap();
            out.push((format!("{set}-{}", node.name), config));
        }
    }
    out
}
