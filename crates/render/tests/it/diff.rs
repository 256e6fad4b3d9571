//! The structural diff of two snapshots (`netrollout_render::diff`): input changes, nodes
//! grouped by how their configs change, and a snapshot that does not render named by side.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
use netrollout_render::Node;
use netrollout_render::diff::{Side, diff};
use netrollout_render::from_objects;

use crate::common::l2;

/// A node in `rack`.
fn racked(name: &str, rack: &str) -> Node {
    Node {
        name: name.into(),
        labels: [("rack".to_string(), rack.to_string())].into(),
    }
}

/// A layer-2 network on the nodes of `rack`.
fn on_rack(
    name: &str,
    id: i32,
    rack: &str,
    mtu: i32,
) -> netrollout_api::Layer2NetworkConfiguration {
    let mut net = l2(name, id, i64::from(id) * 10);
    net.spec.mtu = mtu;
    net.spec.node_selector = Some(LabelSelector {
        match_labels: Some([("rack".to_string(), rack.to_string())].into()),
        match_expressions: None,
    });
    net
}

#[test]
fn nodes_that_change_alike_are_grouped_and_the_rest_are_unchanged() {
    let nodes = [
        racked("a1", "a"),
        racked("a2", "a"),
        racked("b1", "b"),
        racked("c1", "c"),
    ];
    let old = from_objects(
        &[],
        &[
            on_rack("net-a", 10, "a", 1500),
            on_rack("net-b", 20, "b", 1500),
        ],
        &[],
    );
    let new = from_objects(
        &[],
        &[
            on_rack("net-a", 10, "a", 9000),
            on_rack("net-b", 20, "b", 1500),
            on_rack("net-c", 30, "c", 1500),
        ],
        &[],
    );
    let found = diff(&old, &new, &nodes).unwrap();
    let inputs: Vec<String> = found.inputs.iter().map(ToString::to_string).collect();
    assert_eq!(inputs.len(), 2, "{inputs:?}");
    assert_eq!(
        inputs[0],
        "~ layer2NetworkConfigurations[net-a].spec.mtu: 1500 -> 9000"
    );
    assert!(
        inputs[1].starts_with("+ layer2NetworkConfigurations[net-c]: "),
        "{inputs:?}"
    );
    let groups: Vec<(Vec<String>, Vec<String>)> = found
        .nodes
        .iter()
        .map(|g| {
            let changes = g.changes.iter().map(ToString::to_string).collect();
            (g.nodes.clone(), changes)
        })
        .collect();
    assert_eq!(groups.len(), 2, "{groups:?}");
    assert!(
        groups.contains(&(
            vec!["a1".to_string(), "a2".to_string()],
            vec!["~ layer2s[10].mtu: 1500 -> 9000".to_string()]
        )),
        "rack a's two nodes change alike: {groups:?}"
    );
    let c = groups
        .iter()
        .find(|(n, _)| n == &["c1"])
        .expect("c1 changes");
    assert!(c.1.iter().all(|l| l.starts_with('+')), "{groups:?}");
    assert_eq!(found.unchanged, ["b1"]);
}

#[test]
fn a_snapshot_that_does_not_render_is_named_by_its_side() {
    let nodes = [racked("a1", "a")];
    let good = from_objects(&[], &[on_rack("net", 10, "a", 1500)], &[]);
    let bad = from_objects(
        &[],
        &[on_rack("net", 10, "a", 1500), on_rack("dup", 10, "a", 1500)],
        &[],
    );
    let err = diff(&good, &bad, &nodes).unwrap_err();
    assert_eq!(err.side, Side::New);
    assert!(err.to_string().starts_with("the new snapshot: "), "{err}");
    assert!(err.to_string().contains("spec.id"), "{err}");
    assert_eq!(diff(&bad, &good, &nodes).unwrap_err().side, Side::Old);
}
