//! No input field is silently dropped. The test walks every field of the four input kinds'
//! JSON schemas (the samples and `tests/data/peerings.yaml` are the objects changed) and requires an entry in [`CONSUMERS`] saying where the field goes, then proves it:
//!
//! - `Frr`: changing the field (in the repo's samples) changes the rendered FRR text;
//! - `Kernel`: changing it changes the node's `NodeConfig`, and every changed `NodeConfig` field is
//!   read by the agent's conversion to kernel objects (`crates/agent/src/convert.rs`);
//! - `KernelAndFrr`: both: the FRR text changes, and every changed `NodeConfig` field is read by
//!   the kernel conversion or the FRR renderer (a VRF loopback: a dummy device, and its host route
//!   in the export prefix list);
//!
//! A new field without an entry, or an entry whose consumer does not react, fails the test.

use crate::common;

use std::collections::BTreeSet;

use netrollout_api::{
    BGPPeeringSpec, Layer2NetworkConfigurationSpec, NodeConfig, RoutingTableSpec,
    VRFRouteConfigurationSpec,
};
use netrollout_render::{Error, render};
use serde_json::{Value, json};

#[derive(Debug)]
enum Consumer {
    Frr,
    Kernel,
    KernelAndFrr,
}
use Consumer::*;

/// One field: kind, schema path, consumer, the sample object changed, the JSON pointer (under
/// `spec`) set, the value it gets first in both runs (`None`: the sample's), and the changed value.
type Entry = (
    &'static str,
    &'static str,
    Consumer,
    &'static str,
    &'static str,
    Option<fn() -> Value>,
    fn() -> Value,
);

const VRF: &str = "VRFRouteConfiguration";
const L2: &str = "Layer2NetworkConfiguration";
const TABLE: &str = "RoutingTable";
const PEER: &str = "BGPPeering";

fn loopback(name: &str, subnet: &str) -> Value {
    json!([{"name": name, "subnet": subnet}])
}

#[rustfmt::skip]
const CONSUMERS: &[Entry] = &[
    (VRF, "vrf", Frr, "m2m-rack-r1", "/vrf", None, || json!("other")),
    (VRF, "routeTarget", Frr, "m2m", "/routeTarget", None, || json!("65188:9999")),
    (VRF, "vni", Frr, "m2m", "/vni", None, || json!(2002099)),
    (VRF, "import", Frr, "m2m", "/import", None, || json!([])),
    (VRF, "import[].cidr", Frr, "m2m", "/import/0/cidr", None, || json!("10.103.0.0/24")),
    (VRF, "import[].seq", Frr, "m2m", "/import/0/seq", None, || json!(7)),
    (VRF, "import[].ge", Frr, "m2m", "/import/0/ge", None, || json!(25)),
    (VRF, "import[].le", Frr, "m2m", "/import/0/le", None, || json!(31)),
    (VRF, "import[].action", Frr, "m2m", "/import/0/action", None, || json!("deny")),
    (VRF, "export", Frr, "m2m", "/export", None, || json!([{"cidr": "10.250.0.0/24", "action": "permit"}])),
    (VRF, "export[].cidr", Frr, "m2m", "/export/0/cidr", None, || json!("10.250.8.0/24")),
    (VRF, "export[].seq", Frr, "m2m", "/export/0/seq", None, || json!(9)),
    (VRF, "export[].ge", Frr, "m2m", "/export/0/ge", None, || json!(26)),
    (VRF, "export[].le", Frr, "m2m", "/export/0/le", None, || json!(30)),
    (VRF, "export[].action", Frr, "m2m", "/export/0/action", None, || json!("deny")),
    (VRF, "aggregate", Frr, "m2m", "/aggregate", None, || json!(["10.250.5.0/24", "fd94::/48"])),
    (VRF, "sbrPrefixes", Kernel, "m2m", "/sbrPrefixes", None, || json!(["10.250.9.0/24"])),
    (VRF, "seq", Frr, "m2m", "/seq", None, || json!(11)),
    (VRF, "community", Frr, "m2m", "/community", None, || json!("65188:101")),
    (VRF, "communities", Frr, "m2m", "/communities", None, || json!(["65188:102", "no-export"])),
    (VRF, "mtu", Kernel, "m2m", "/mtu", None, || json!(1400)),
    (VRF, "loopbacks", KernelAndFrr, "m2m", "/loopbacks", None, || loopback("lo.m2m", "10.9.0.0/24")),
    (VRF, "loopbacks[].name", Kernel, "m2m", "/loopbacks", Some(|| loopback("lo.a", "10.9.0.0/24")), || loopback("lo.b", "10.9.0.0/24")),
    (VRF, "loopbacks[].subnet", KernelAndFrr, "m2m", "/loopbacks", Some(|| loopback("lo.a", "10.9.0.0/24")), || loopback("lo.a", "10.8.0.0/24")),
    (VRF, "nodeSelector", Frr, "m2m-rack-r1", "/nodeSelector", None, || json!({"matchLabels": {"netrollout.io/rack": "r9"}})),
    (L2, "id", Kernel, "vlan501", "/id", None, || json!(601)),
    (L2, "mtu", Kernel, "vlan501", "/mtu", None, || json!(1400)),
    (L2, "vni", Kernel, "vlan501", "/vni", None, || json!(4000099)),
    (L2, "anycastMac", Kernel, "vlan501", "/anycastMac", None, || json!("02:00:00:00:00:01")),
    (L2, "anycastGateways", Kernel, "vlan501", "/anycastGateways", None, || json!(["10.250.0.2/24"])),
    (L2, "advertiseNeighbors", Kernel, "vlan501", "/advertiseNeighbors", None, || json!(true)),
    (L2, "createMacVLANInterface", Kernel, "vlan501", "/createMacVLANInterface", None, || json!(true)),
    (L2, "neighSuppression", Kernel, "vlan501", "/neighSuppression", None, || json!(false)),
    (L2, "disableSegmentation", Kernel, "vlan501", "/disableSegmentation", None, || json!(true)),
    (L2, "vrf", Kernel, "vlan501", "/vrf", None, || Value::Null),
    (L2, "nodeSelector", Kernel, "vlan501", "/nodeSelector", None, || json!({"matchLabels": {"netrollout.io/rack": "r9"}})),
    (TABLE, "tableId", Frr, "taas-100", "/tableId", None, || json!(101)),
    (PEER, "peeringVlan.name", Frr, "ingress", "/peeringVlan/name", None, || json!("vlan501")),
    (PEER, "loopbackPeer.ips", Frr, "calico", "/loopbackPeer/ips", None, || json!(["10.250.7.2"])),
    (PEER, "remoteASN", Frr, "metallb", "/remoteASN", None, || json!(65000)),
    (PEER, "enableBFD", Frr, "metallb", "/enableBFD", None, || json!(false)),
    (PEER, "maximumPrefixes", Frr, "metallb", "/maximumPrefixes", None, || json!(17)),
    (PEER, "holdTime", Frr, "metallb", "/holdTime", None, || json!("91s")),
    (PEER, "keepaliveTime", Frr, "metallb", "/keepaliveTime", None, || json!("31s")),
    (PEER, "import", Frr, "metallb", "/import", None, || json!([])),
    (PEER, "import[].cidr", Frr, "metallb", "/import/0/cidr", None, || json!("10.250.62.0/24")),
    (PEER, "import[].seq", Frr, "metallb", "/import/0/seq", None, || json!(7)),
    (PEER, "import[].ge", Frr, "metallb", "/import/0/ge", None, || json!(25)),
    (PEER, "import[].le", Frr, "metallb", "/import/0/le", None, || json!(31)),
    (PEER, "import[].action", Frr, "metallb", "/import/0/action", None, || json!("deny")),
    (PEER, "export", Frr, "metallb", "/export", None, || json!([])),
    (PEER, "export[].cidr", Frr, "metallb", "/export/0/cidr", None, || json!("10.0.0.0/8")),
    (PEER, "export[].seq", Frr, "metallb", "/export/0/seq", None, || json!(9)),
    (PEER, "export[].ge", Frr, "metallb", "/export/0/ge", None, || json!(8)),
    (PEER, "export[].le", Frr, "metallb", "/export/0/le", None, || json!(30)),
    (PEER, "export[].action", Frr, "metallb", "/export/0/action", None, || json!("deny")),
    (PEER, "nodeSelector", Frr, "calico", "/nodeSelector", None, || json!({"matchLabels": {"netrollout.io/rack": "r9"}})),
];

/// Field paths of a JSON schema: `a`, `a[].b`; a `nodeSelector` (a Kubernetes label selector,
/// consumed as a whole by node selection) is one field.
fn paths(schema: &Value, root: &Value, prefix: &str, out: &mut BTreeSet<String>) {
    let schema = resolve(schema, root);
    if let Some(items) = schema.get("items") {
        // A list of objects has fields of its own; a list of scalars is one field.
        if resolve(items, root).get("properties").is_some() {
            paths(items, root, &format!("{prefix}[]"), out);
        }
        return;
    }
    let Some(props) = schema.get("properties").and_then(Value::as_object) else {
        if !prefix.is_empty() {
            out.insert(prefix.to_string());
        }
        return;
    };
    for (name, sub) in props {
        let path = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        if name == "nodeSelector" {
            out.insert(path);
        } else {
            // Lists are fields of their own as well as their items' fields.
            if resolve(sub, root).get("items").is_some() {
                out.insert(path.clone());
            }
            paths(sub, root, &path, out);
        }
    }
}

fn resolve<'a>(schema: &'a Value, root: &'a Value) -> &'a Value {
    if let Some(r) = schema.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap();
        return resolve(&root["$defs"][name], root);
    }
    // `Option<T>` of a referenced type: `anyOf: [{$ref}, {type: null}]`.
    if let Some(any) = schema.get("anyOf").and_then(Value::as_array)
        && let Some(inner) = any.iter().find(|s| s.get("$ref").is_some())
    {
        return resolve(inner, root);
    }
    schema
}

fn schema_paths<T: schemars::JsonSchema>() -> BTreeSet<String> {
    let root = serde_json::to_value(schemars::schema_for!(T)).unwrap();
    let mut out = BTreeSet::new();
    paths(&root, &root, "", &mut out);
    out
}

/// Renders the samples and the peerings with one object's field set; the worker node's config
/// and FRR text.
fn render_with(
    kind: &str,
    object: &str,
    pointer: &str,
    value: Option<Value>,
) -> Result<(NodeConfig, String), Error> {
    let mut docs = common::docs_of(&common::samples_text());
    docs.extend(common::docs_of(&common::peerings_text()));
    if let Some(value) = value {
        let doc = docs
            .iter_mut()
            .find(|d| d["kind"] == kind && d["metadata"]["name"] == object)
            .unwrap_or_else(|| panic!("no sample {kind} {object}"));
        set(&mut doc["spec"], pointer, value);
    }
    let rendered = render(&common::snapshot_of_docs(docs), &common::nodes())?;
    let config = rendered.config("worker-r1").unwrap();
    let text = netrollout_frr::render(&config, &common::settings());
    Ok((config, text))
}

/// Sets `pointer` in `doc`, creating the last key.
fn set(doc: &mut Value, pointer: &str, value: Value) {
    let (parent, last) = pointer.rsplit_once('/').unwrap();
    let parent = doc
        .pointer_mut(parent)
        .unwrap_or_else(|| panic!("{parent} is not in the sample"));
    match parent {
        Value::Array(a) => a[last.parse::<usize>().unwrap()] = value,
        Value::Object(o) => {
            o.insert(last.to_string(), value);
        }
        other => panic!("cannot set {pointer} in {other}"),
    }
}

/// Keys (last path element) whose values differ between two JSON values.
fn changed(a: &Value, b: &Value, key: &str, out: &mut BTreeSet<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for k in x.keys().chain(y.keys()) {
                let null = Value::Null;
                changed(x.get(k).unwrap_or(&null), y.get(k).unwrap_or(&null), k, out);
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (p, q) in x.iter().zip(y) {
                changed(p, q, key, out);
            }
        }
        (p, q) if p != q => {
            out.insert(key.to_string());
        }
        _ => {}
    }
}

fn snake(camel: &str) -> String {
    let mut s = String::new();
    for c in camel.chars() {
        if c.is_ascii_uppercase() {
            s.push('_');
            s.push(c.to_ascii_lowercase());
        } else {
            s.push(c);
        }
    }
    s
}

fn convert_source() -> String {
    let path = common::repo().join("crates/agent/src/convert.rs");
    std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

/// The FRR renderer's sources, for the fields it reads (the files of `src/`; its directories
/// are the daemons' start's, no renderer).
fn frr_source() -> String {
    let frr_dir = common::repo().join("crates/frr/src");
    std::fs::read_dir(&frr_dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.is_file())
        .map(|p| std::fs::read_to_string(p).unwrap())
        .collect()
}

#[test]
fn every_input_field_has_a_consumer_that_reacts_to_it() {
    let mut in_schema: BTreeSet<(String, String)> = BTreeSet::new();
    for (kind, fields) in [
        (VRF, schema_paths::<VRFRouteConfigurationSpec>()),
        (L2, schema_paths::<Layer2NetworkConfigurationSpec>()),
        (TABLE, schema_paths::<RoutingTableSpec>()),
        (PEER, schema_paths::<BGPPeeringSpec>()),
    ] {
        in_schema.extend(fields.into_iter().map(|f| (kind.to_string(), f)));
    }
    let listed: BTreeSet<(String, String)> = CONSUMERS
        .iter()
        .map(|e| (e.0.to_string(), e.1.to_string()))
        .collect();
    let missing: Vec<_> = in_schema.difference(&listed).collect();
    assert!(
        missing.is_empty(),
        "input fields without a consumer (add them to the kernel conversion, the FRR renderer or \
         render's validation, and to CONSUMERS): {missing:?}"
    );
    let stale: Vec<_> = listed.difference(&in_schema).collect();
    assert!(
        stale.is_empty(),
        "CONSUMERS lists fields the API lacks: {stale:?}"
    );

    let convert = convert_source();
    for (kind, field, consumer, object, pointer, before, after) in CONSUMERS {
        let what = format!("{kind}.spec.{field}");
        let base = render_with(kind, object, pointer, before.map(|f| f()));
        let (base_config, base_text) =
            base.unwrap_or_else(|e| panic!("{what}: the baseline does not render: {e}"));
        let result = render_with(kind, object, pointer, Some(after()));
        match consumer {
            Frr => {
                let (_, text) = result.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_ne!(
                    text, base_text,
                    "{what}: changing it does not change the FRR text"
                );
            }
            KernelAndFrr => {
                let (config, text) = result.unwrap_or_else(|e| panic!("{what}: {e}"));
                assert_ne!(
                    text, base_text,
                    "{what}: changing it does not change the FRR text"
                );
                let frr = frr_source();
                let mut keys = BTreeSet::new();
                changed(
                    &serde_json::to_value(&base_config).unwrap(),
                    &serde_json::to_value(&config).unwrap(),
                    "",
                    &mut keys,
                );
                for key in keys.iter().filter(|k| *k != "source") {
                    let read = format!(".{}", snake(key));
                    assert!(
                        convert.contains(&read) || frr.contains(&read),
                        "{what}: changes NodeConfig field {key}, which neither convert.rs nor the FRR renderer reads ({read})"
                    );
                }
            }
            Kernel => {
                let (config, _) = result.unwrap_or_else(|e| panic!("{what}: {e}"));
                let mut keys = BTreeSet::new();
                changed(
                    &serde_json::to_value(&base_config).unwrap(),
                    &serde_json::to_value(&config).unwrap(),
                    "",
                    &mut keys,
                );
                assert!(
                    !keys.is_empty(),
                    "{what}: changing it does not change the NodeConfig"
                );
                for key in keys.iter().filter(|k| *k != "source") {
                    let read = format!(".{}", snake(key));
                    assert!(
                        convert.contains(&read),
                        "{what}: changes NodeConfig field {key}, which convert.rs never reads ({read})"
                    );
                }
            }
        }
    }
}

#[test]
fn every_node_config_field_is_read_by_the_kernel_conversion_or_the_frr_renderer() {
    let root = serde_json::to_value(schemars::schema_for!(NodeConfig)).unwrap();
    let mut keys = BTreeSet::new();
    for def in root["$defs"].as_object().unwrap().values().chain([&root]) {
        if let Some(props) = def.get("properties").and_then(Value::as_object) {
            keys.extend(props.keys().cloned());
        }
    }
    let convert = convert_source();
    let frr = frr_source();
    // `source` names the input object for messages; the agent reports it, nothing configures it.
    let unread: Vec<_> = keys
        .iter()
        .filter(|k| *k != "source")
        .filter(|k| {
            let read = format!(".{}", snake(k));
            !convert.contains(&read) && !frr.contains(&read)
        })
        .collect();
    assert!(
        unread.is_empty(),
        "NodeConfig fields nobody reads: {unread:?}"
    );
}
