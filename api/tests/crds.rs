//! The committed CRD YAML under `config/crd/` is exactly what the types generate.

#![allow(clippy::unwrap_used, clippy::expect_used)] // tests may panic

use std::path::Path;

#[test]
fn committed_crd_yaml_matches_the_types() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/crd");
    let files = netrollout_api::crds::files().unwrap();
    for (name, generated) in &files {
        let committed = std::fs::read_to_string(dir.join(name)).unwrap_or_default();
        assert!(
            committed == *generated,
            "config/crd/{name} is out of date; run `cargo run -p netrollout-api --example crdgen` and commit"
        );
    }
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    on_disk.sort();
    let mut expected: Vec<String> = files.into_iter().map(|(n, _)| n).collect();
    expected.sort();
    assert_eq!(
        on_disk, expected,
        "config/crd/ holds files the types do not generate"
    );
}

#[test]
fn every_crd_is_cluster_scoped_with_short_name_status_and_printer_columns() {
    let mut short_names = Vec::new();
    for crd in netrollout_api::crds::all() {
        assert_eq!(crd.spec.group, "netrollout.io");
        assert_eq!(crd.spec.scope, "Cluster", "{}", crd.spec.names.kind);
        let version = &crd.spec.versions[0];
        assert_eq!(version.name, "v1alpha1");
        // A RolloutAnalysis and a MaintenanceSchedule are written by people only, and the Go
        // operator's kinds netrollout refuses are never stored: they have no status.
        let refused = netrollout_api::refused::why_refused(&crd.spec.names.kind).is_some();
        let people_only = ["RolloutAnalysis", "MaintenanceSchedule"];
        if !people_only.contains(&crd.spec.names.kind.as_str()) && !refused {
            assert!(version.subresources.as_ref().unwrap().status.is_some());
        }
        let columns: Vec<&str> = version
            .additional_printer_columns
            .iter()
            .flatten()
            .map(|c| c.name.as_str())
            .collect();
        assert!(
            columns.contains(&"Age"),
            "{}: {columns:?}",
            crd.spec.names.kind
        );
        short_names.extend(crd.spec.names.short_names.clone().unwrap());
    }
    assert_eq!(
        short_names,
        [
            "vrf",
            "layer2",
            "taas",
            "bgppeering",
            "ncr",
            "nnc",
            "analysis",
            "mschedule",
            "mirrortarget",
            "mirrorselector"
        ]
    );
}

#[test]
fn revision_and_node_config_columns_show_progress_at_a_glance() {
    let columns = |kind: &str| -> Vec<(String, String)> {
        let crd = netrollout_api::crds::all()
            .into_iter()
            .find(|c| c.spec.names.kind == kind)
            .unwrap();
        crd.spec.versions[0]
            .additional_printer_columns
            .clone()
            .unwrap()
            .into_iter()
            .filter(|c| c.priority.unwrap_or(0) == 0)
            .map(|c| (c.name, c.json_path))
            .collect()
    };
    let ncr: Vec<String> = columns("NetworkConfigRevision")
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(ncr, ["Sequence", "Phase", "Ready", "Failed", "Age"]);
    let nnc: Vec<String> = columns("NodeNetworkConfig")
        .into_iter()
        .map(|c| c.0)
        .collect();
    assert_eq!(nnc, ["Revision", "Observed", "Phase", "Age"]);
}

#[test]
fn the_schema_enforces_ranges_lengths_patterns_and_cel_rules() {
    let yaml = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../config/crd/layer2networkconfigurations.yaml"),
    )
    .unwrap();
    for needle in [
        "maximum: 16777215",
        "maximum: 9000",
        "minimum: 1000",
        "maximum: 4094",
        "pattern: ^([0-9A-Fa-f]{2}:){5}",
    ] {
        assert!(yaml.contains(needle), "layer2 CRD lacks {needle}");
    }
    let vrf = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/crd/vrfrouteconfigurations.yaml"),
    )
    .unwrap();
    assert!(vrf.contains("maxLength: 12"));
    assert!(vrf.contains("maximum: 65534"));
    assert!(vrf.contains("self.ge <= self.le"));
    let tables = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/crd/routingtables.yaml"),
    )
    .unwrap();
    assert!(tables.contains("self in [252, 253, 254, 255]"));
}

/// Every schema node of an input kind's spec, with its path.
fn walk<'a>(
    path: String,
    schema: &'a serde_json::Value,
    out: &mut Vec<(String, &'a serde_json::Value)>,
) {
    out.push((path.clone(), schema));
    if let Some(props) = schema["properties"].as_object() {
        for (k, v) in props {
            walk(format!("{path}.{k}"), v, out);
        }
    }
    if schema["items"].is_object() {
        walk(format!("{path}[]"), &schema["items"], out);
    }
    if schema["additionalProperties"].is_object() {
        walk(format!("{path}.*"), &schema["additionalProperties"], out);
    }
}

fn input_specs() -> Vec<(String, serde_json::Value)> {
    netrollout_api::crds::all()
        .into_iter()
        .filter(|c| {
            [
                "VRFRouteConfiguration",
                "Layer2NetworkConfiguration",
                "RoutingTable",
                "BGPPeering",
            ]
            .contains(&c.spec.names.kind.as_str())
        })
        .map(|c| {
            let schema = c.spec.versions[0]
                .schema
                .clone()
                .unwrap()
                .open_api_v3_schema
                .unwrap();
            let schema = serde_json::to_value(schema).unwrap();
            (c.spec.names.kind, schema["properties"]["spec"].clone())
        })
        .collect()
}

#[test]
fn every_list_and_map_of_an_input_is_bounded() {
    for (kind, spec) in input_specs() {
        let mut nodes = vec![];
        walk("spec".into(), &spec, &mut nodes);
        for (path, s) in nodes {
            if s["type"] == "array" {
                assert!(
                    s["maxItems"].is_u64(),
                    "{kind} {path}: a list without maxItems"
                );
            }
            if s["type"] == "object" && s["additionalProperties"].is_object() {
                assert!(
                    s["maxProperties"].is_u64(),
                    "{kind} {path}: a map without maxProperties"
                );
            }
            if s["type"] == "string" && s["enum"].is_null() {
                assert!(
                    s["maxLength"].is_u64() || s["pattern"].is_string(),
                    "{kind} {path}: a string without maxLength"
                );
            }
        }
    }
}

#[test]
fn every_rule_on_an_object_names_the_field_it_is_about() {
    // A rule on an object without fieldPath reports the object (`spec`, `spec.import[0]`), not
    // the field the user must change.
    for (kind, spec) in input_specs() {
        let mut nodes = vec![];
        walk("spec".into(), &spec, &mut nodes);
        for (path, s) in nodes {
            if s["type"] != "object" {
                continue;
            }
            for rule in s["x-kubernetes-validations"]
                .as_array()
                .into_iter()
                .flatten()
            {
                assert!(
                    rule["fieldPath"].is_string(),
                    "{kind} {path}: rule {} has no fieldPath",
                    rule["rule"]
                );
            }
        }
    }
}
