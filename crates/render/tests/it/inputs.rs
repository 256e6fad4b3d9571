//! The samples and the Go operator's manifests (tests/data/go-operator/, plus the third-party ones
//! of `NETROLLOUT_COMPAT_DIR` when set) parse, validate and render; the same inputs in any
//! order give the same revision.

use std::path::{Path, PathBuf};

use netrollout_api::{Layer2NetworkConfiguration, RoutingTable, VRFRouteConfiguration};
use netrollout_render::{Node, Revision, from_objects, render};
use netrollout_testkit::manifests;
use proptest::prelude::*;
use serde_json::Value;

fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[derive(Debug, Default)]
struct Objects {
    vrfs: Vec<VRFRouteConfiguration>,
    layer2s: Vec<Layer2NetworkConfiguration>,
    tables: Vec<RoutingTable>,
}

/// Parses every document; each must round-trip without losing a field (unknown fields would
/// otherwise be dropped silently).
fn load(text: &str, what: &str) -> Objects {
    let mut out = Objects::default();
    for doc in serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text).unwrap() {
        if doc.is_null() {
            continue;
        }
        assert_eq!(doc["apiVersion"], "netrollout.io/v1alpha1", "{what}");
        let kind = doc["kind"].as_str().unwrap().to_string();
        let reserialized = match kind.as_str() {
            "VRFRouteConfiguration" => push(&mut out.vrfs, &doc),
            "Layer2NetworkConfiguration" => push(&mut out.layer2s, &doc),
            "RoutingTable" => push(&mut out.tables, &doc),
            other => panic!("{what}: unexpected kind {other}"),
        };
        assert_subset(
            &doc["spec"],
            &reserialized["spec"],
            &format!("{what}: {kind} spec"),
        );
    }
    out
}

fn push<T: serde::de::DeserializeOwned + serde::Serialize>(
    list: &mut Vec<T>,
    doc: &Value,
) -> Value {
    let obj: T = serde_json::from_value(doc.clone()).unwrap();
    let back = serde_json::to_value(&obj).unwrap();
    list.push(obj);
    back
}

/// Every field of `input` is in `output` with the same value.
fn assert_subset(input: &Value, output: &Value, path: &str) {
    match (input, output) {
        (Value::Object(i), Value::Object(o)) => {
            for (k, v) in i {
                // A `false` flag is the default and is not written back.
                if v == &Value::Bool(false) && !o.contains_key(k) {
                    continue;
                }
                let got = o
                    .get(k)
                    .unwrap_or_else(|| panic!("{path}.{k} was dropped on parsing"));
                assert_subset(v, got, &format!("{path}.{k}"));
            }
        }
        (Value::Array(i), Value::Array(o)) => {
            assert_eq!(i.len(), o.len(), "{path}");
            for (n, (a, b)) in i.iter().zip(o).enumerate() {
                assert_subset(a, b, &format!("{path}[{n}]"));
            }
        }
        (a, b) => assert_eq!(a, b, "{path}"),
    }
}

fn nodes(n: usize) -> Vec<Node> {
    (0..n)
        .map(|i| Node {
            name: format!("node-{i}"),
            labels: [("netrollout.io/rack".to_string(), format!("r{}", i % 3))].into(),
        })
        .collect()
}

#[test]
fn every_sample_parses_validates_and_renders() {
    let mut all = Objects::default();
    let mut files = 0;
    for entry in std::fs::read_dir(repo().join("config/samples")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let o = load(&text, &path.display().to_string());
        all.vrfs.extend(o.vrfs);
        all.layer2s.extend(o.layer2s);
        all.tables.extend(o.tables);
        files += 1;
    }
    assert!(
        files >= 3 && !all.vrfs.is_empty() && !all.layer2s.is_empty() && !all.tables.is_empty()
    );
    let snapshot = from_objects(&all.vrfs, &all.layer2s, &all.tables);
    Revision::of(&snapshot).unwrap();
    let rendered = render(&snapshot, &nodes(3)).unwrap();
    let r1 = rendered.config("node-1").unwrap();
    let r0 = rendered.config("node-0").unwrap();
    assert_eq!(
        r1.vrfs[0].policies.len(),
        2,
        "rack r1 gets both m2m policies"
    );
    assert_eq!(r0.vrfs[0].policies.len(), 1);
    assert_eq!(r0.vrfs[0].vrf_interface, "vr.m2m");
    assert_eq!(r0.vrfs[0].table_id, 2002026);
    assert_eq!(
        r0.layer2s.iter().map(|l| l.id).collect::<Vec<_>>(),
        [501, 502]
    );
    assert_eq!(r0.routing_tables[0].interface, "tb.100");
}

/// Every manifest in the Go operator's format (the repository's fixtures; the third-party ones of
/// `NETROLLOUT_COMPAT_DIR` too when it is set) is accepted after changing only its `apiVersion`:
/// every field parses without loss, the set validates, hashes and renders, and every input without
/// a node selector reaches every node.
#[test]
fn the_go_operators_manifests_are_accepted_after_changing_only_the_api_version() {
    for m in manifests::all() {
        let o = load(&m.migrated(), &m.name);
        assert!(
            !(o.vrfs.is_empty() && o.layer2s.is_empty() && o.tables.is_empty()),
            "{}: no input objects",
            m.name
        );
        let snapshot = from_objects(&o.vrfs, &o.layer2s, &o.tables);
        Revision::of(&snapshot).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        let rendered = render(&snapshot, &nodes(3)).unwrap_or_else(|e| panic!("{}: {e}", m.name));
        for node in nodes(3) {
            let config = rendered.config(&node.name).unwrap();
            for vrf in o.vrfs.iter().filter(|v| v.spec.node_selector.is_none()) {
                assert!(
                    config.vrfs.iter().any(|v| v.name == vrf.spec.vrf),
                    "{}: VRF {} is not on {}",
                    m.name,
                    vrf.spec.vrf,
                    node.name
                );
            }
            for l2 in o.layer2s.iter().filter(|l| l.spec.node_selector.is_none()) {
                assert!(
                    config.layer2s.iter().any(|l| i32::from(l.id) == l2.spec.id),
                    "{}: VLAN {} is not on {}",
                    m.name,
                    l2.spec.id,
                    node.name
                );
            }
        }
    }
}

/// The repository's own fixtures render as their selectors say: node-0 (rack r0) gets the
/// payments VRF with one policy, node-1 (rack r1, the border) both policies and its loopbacks.
#[test]
fn the_go_operator_fixture_renders_per_node_as_its_selectors_say() {
    let fixture = manifests::fixtures()
        .into_iter()
        .find(|m| m.name == "fixture-tenant-fabric")
        .expect("tests/data/go-operator/tenant-fabric.yaml");
    let o = load(&fixture.migrated(), &fixture.name);
    let snapshot = from_objects(&o.vrfs, &o.layer2s, &o.tables);
    let rendered = render(&snapshot, &nodes(3)).unwrap();
    let r0 = rendered.config("node-0").unwrap();
    let r1 = rendered.config("node-1").unwrap();
    let pay =
        |c: &netrollout_api::NodeConfig| c.vrfs.iter().find(|v| v.name == "payments").cloned();
    assert_eq!(pay(&r0).unwrap().policies.len(), 1, "{r0:?}");
    assert_eq!(pay(&r1).unwrap().policies.len(), 2, "{r1:?}");
    assert_eq!(pay(&r1).unwrap().loopbacks.len(), 2, "{r1:?}");
    assert_eq!(
        r0.layer2s.iter().map(|l| l.id).collect::<Vec<_>>(),
        [610, 620]
    );
    assert_eq!(r0.routing_tables[0].interface, "tb.200");
}

/// The fixtures hold every field the CRDs of the three input kinds define (so a field the Go
/// operator's users set is never missing from the migration tests).
#[test]
fn the_go_operator_fixtures_set_every_field_of_every_input_kind() {
    let mut have = std::collections::BTreeSet::new();
    for m in manifests::fixtures() {
        for doc in serde_saphyr::from_str_multiple::<Value, Vec<Value>>(&m.text).unwrap() {
            if doc.is_null() {
                continue;
            }
            let kind = doc["kind"].as_str().unwrap().to_string();
            value_paths(&doc["spec"], &format!("{kind}.spec"), &mut have);
        }
    }
    let mut missing = Vec::new();
    for (kind, file) in [
        ("VRFRouteConfiguration", "vrfrouteconfigurations"),
        ("Layer2NetworkConfiguration", "layer2networkconfigurations"),
        ("RoutingTable", "routingtables"),
    ] {
        let path = repo().join(format!("config/crd/{file}.yaml"));
        let crd: Value = serde_saphyr::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let schema = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"];
        let mut want = std::collections::BTreeSet::new();
        schema_paths(schema, &format!("{kind}.spec"), &mut want);
        missing.extend(want.difference(&have).cloned());
    }
    assert!(
        missing.is_empty(),
        "fields no fixture under tests/data/go-operator/ sets: {missing:?}"
    );
}

/// The leaf paths of a schema (`a.b[].c`); maps with free keys end at the map.
fn schema_paths(schema: &Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    if let Some(props) = schema["properties"].as_object() {
        for (k, v) in props {
            schema_paths(v, &format!("{path}.{k}"), out);
        }
    } else if schema["items"].is_object() {
        schema_paths(&schema["items"], &format!("{path}[]"), out);
    } else {
        out.insert(path.to_string());
    }
}

/// The leaf paths of a value, in the same form.
fn value_paths(value: &Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    match value {
        Value::Object(map) if !path.ends_with("matchLabels") => {
            for (k, v) in map {
                value_paths(v, &format!("{path}.{k}"), out);
            }
        }
        Value::Array(items) => {
            for v in items {
                value_paths(v, &format!("{path}[]"), out);
            }
        }
        _ => {
            out.insert(path.to_string());
        }
    }
}

fn arb_objects() -> impl Strategy<Value = Objects> {
    (1usize..6, 0usize..8, 0usize..4).prop_map(|(v, l, t)| {
        let vrfs = (0..v)
            .map(|i| {
                let mut o = VRFRouteConfiguration::new(
                    &format!("vrf-{i}"),
                    netrollout_api::VRFRouteConfigurationSpec {
                        vrf: format!("v{}", i % 3),
                        seq: 10 + i as i32,
                        ..Default::default()
                    },
                );
                o.spec.export.push(netrollout_api::PrefixItem {
                    cidr: format!("10.{i}.0.0/16"),
                    ..Default::default()
                });
                o
            })
            .collect();
        let layer2s = (0..l)
            .map(|i| {
                Layer2NetworkConfiguration::new(
                    &format!("l2-{i}"),
                    netrollout_api::Layer2NetworkConfigurationSpec {
                        id: 100 + i as i32,
                        vni: 5000 + i as i64,
                        mtu: 1500,
                        vrf: Some("v0".into()),
                        ..Default::default()
                    },
                )
            })
            .collect();
        let tables = (0..t)
            .map(|i| {
                RoutingTable::new(
                    &format!("t-{i}"),
                    netrollout_api::RoutingTableSpec {
                        table_id: 300 + i as i64,
                    },
                )
            })
            .collect();
        Objects {
            vrfs,
            layer2s,
            tables,
        }
    })
}

proptest! {
    #[test]
    fn the_same_inputs_in_any_order_give_the_same_hash(
        objects in arb_objects(),
        seed in any::<u64>(),
    ) {
        let base = Revision::of(&from_objects(&objects.vrfs, &objects.layer2s, &objects.tables)).unwrap();
        let mut vrfs = objects.vrfs.clone();
        let mut layer2s = objects.layer2s.clone();
        let mut tables = objects.tables.clone();
        shuffle(&mut vrfs, seed);
        shuffle(&mut layer2s, seed.rotate_left(17));
        shuffle(&mut tables, seed.rotate_left(33));
        let shuffled = Revision::of(&from_objects(&vrfs, &layer2s, &tables)).unwrap();
        prop_assert_eq!(&base, &shuffled);
        // And any change of content changes the hash.
        if let Some(first) = vrfs.first_mut() {
            first.spec.seq += 1000;
            let changed = Revision::of(&from_objects(&vrfs, &layer2s, &tables)).unwrap();
            prop_assert_ne!(base.hash, changed.hash);
        }
    }
}

fn shuffle<T>(items: &mut [T], mut seed: u64) {
    for i in (1..items.len()).rev() {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        items.swap(i, (seed >> 33) as usize % (i + 1));
    }
}

#[test]
fn objects_being_deleted_are_treated_as_gone() {
    let keep = RoutingTable::new("keep", netrollout_api::RoutingTableSpec { table_id: 300 });
    let mut going = RoutingTable::new("going", netrollout_api::RoutingTableSpec { table_id: 301 });
    going.metadata.deletion_timestamp = Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
        k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
    ));
    let snapshot = from_objects(&[], &[], &[keep.clone(), going]);
    assert_eq!(snapshot, from_objects(&[], &[], &[keep]));
}
