//! The red-team table: bad values for every field of every input kind, each with the field path
//! its error must name. Each case changes one field of a valid object ([`base`]).

use serde_json::{Value, json};

/// The input kinds, as `kubectl` and the CRDs name them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Vrf,
    Layer2,
    Table,
    Analysis,
}

impl Kind {
    pub fn name(self) -> &'static str {
        match self {
            Kind::Vrf => "VRFRouteConfiguration",
            Kind::Layer2 => "Layer2NetworkConfiguration",
            Kind::Table => "RoutingTable",
            Kind::Analysis => "RolloutAnalysis",
        }
    }
}

/// One bad input: `path` (dotted, `[i]` for list items, under `spec`) set to `value`, or removed
/// when `value` is `None`; `field` is what the error must name.
#[derive(Clone, Debug)]
pub struct Case {
    pub kind: Kind,
    pub path: &'static str,
    pub value: Option<Value>,
    pub field: &'static str,
}

/// A valid object of `kind` that uses every field.
pub fn base(kind: Kind, name: &str) -> Value {
    let spec = match kind {
        Kind::Vrf => json!({
            "vrf": "red", "seq": 10, "vni": 1000, "routeTarget": "65000:1000", "mtu": 9000,
            "import": [{"cidr": "10.1.0.0/16", "ge": 24, "le": 32, "seq": 5, "action": "permit"}],
            "export": [{"cidr": "10.2.0.0/16", "action": "permit"}, {"cidr": "fd00::/64", "le": 128, "action": "deny"}],
            "aggregate": ["10.2.0.0/16"], "sbrPrefixes": ["10.3.0.0/24"],
            "community": "65000:1", "communities": ["no-export"],
            "loopbacks": [{"name": "lo.red", "subnet": "10.9.0.0/24"}],
            "nodeSelector": {"matchLabels": {"rack": "a"},
                "matchExpressions": [{"key": "zone", "operator": "In", "values": ["z1"]}]},
        }),
        Kind::Layer2 => json!({
            "id": 100, "mtu": 1500, "vni": 5000, "vrf": "red",
            "anycastMac": "1a:ee:cf:2f:a7:a8",
            "anycastGateways": ["10.250.0.1/24", "fd94::1/64"],
            "neighSuppression": true, "createMacVLANInterface": true,
            "nodeSelector": {"matchLabels": {"rack": "a"}},
        }),
        Kind::Table => json!({ "tableId": 300 }),
        Kind::Analysis => json!({ "checks": [
            {"name": "tenant-loss", "query": "sum(netrollout_tenant_lost)", "successCondition": "result == 0",
             "intervalSeconds": 10, "inconclusiveLimit": 3, "failureLimit": 0, "initialDelaySeconds": 30},
            {"name": "bgp-down", "query": "count(frr_bgp_peer_down)", "successCondition": "result < 1"},
        ]}),
    };
    json!({
        "apiVersion": "netrollout.io/v1alpha1",
        "kind": kind.name(),
        "metadata": {"name": name},
        "spec": spec,
    })
}

/// `base` with the case applied.
pub fn object(case: &Case, name: &str) -> Value {
    let mut obj = base(case.kind, name);
    let mut parts: Vec<String> = vec!["spec".into()];
    for p in case.path.split('.') {
        match p.split_once('[') {
            Some((field, index)) => {
                parts.push(field.to_string());
                parts.push(index.trim_end_matches(']').to_string());
            }
            None => parts.push(p.to_string()),
        }
    }
    let (last, parents) = parts.split_last().expect("a path");
    let mut at = &mut obj;
    for p in parents {
        at = match p.parse::<usize>() {
            Ok(i) => &mut at[i],
            Err(_) => &mut at[p.as_str()],
        };
    }
    match (&case.value, last.parse::<usize>()) {
        (Some(v), Ok(i)) => at[i] = v.clone(),
        (Some(v), Err(_)) => at[last.as_str()] = v.clone(),
        (None, _) => {
            at.as_object_mut().expect("an object").remove(last.as_str());
        }
    }
    obj
}

pub fn c(kind: Kind, path: &'static str, value: Value, field: &'static str) -> Case {
    Case {
        kind,
        path,
        value: Some(value),
        field,
    }
}

pub fn many(n: usize, item: impl Fn(usize) -> Value) -> Value {
    Value::Array((0..n).map(item).collect())
}

/// Every case.
pub fn cases() -> Vec<Case> {
    use Kind::*;
    let mut out = crate::vrf_cases::cases();
    out.extend(crate::analysis_cases::cases());
    out.extend([
        // Layer2NetworkConfiguration
        c(Layer2, "id", json!(0), "spec.id"),
        c(Layer2, "id", json!(4095), "spec.id"),
        c(Layer2, "id", json!("100"), "spec.id"),
        c(Layer2, "mtu", json!(999), "spec.mtu"),
        c(Layer2, "mtu", json!(9001), "spec.mtu"),
        c(Layer2, "vni", json!(0), "spec.vni"),
        c(Layer2, "vni", json!(16_777_216), "spec.vni"),
        c(
            Layer2,
            "anycastMac",
            json!("zz:ee:cf:2f:a7:a8"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("1a:ee:cf:2f:a7"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("1a-ee-cf-2f-a7-a8"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("01:00:5e:00:00:01"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("33:33:00:00:00:01"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("ff:ff:ff:ff:ff:ff"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastMac",
            json!("00:00:00:00:00:00"),
            "spec.anycastMac",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["10.250.0.0/24"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["fd94::/64"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["10.250.0.1/24", "10.250.0.1/24"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["10.250.0.1"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["010.250.0.1/24"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["fe80::1%eth0/64"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!(["::ffff:10.0.0.1/120"]),
            "spec.anycastGateways",
        ),
        c(
            Layer2,
            "anycastGateways",
            json!([""]),
            "spec.anycastGateways[0]",
        ),
        c(
            Layer2,
            "anycastGateways",
            many(65, |i| json!(format!("10.{i}.0.1/24"))),
            "spec.anycastGateways",
        ),
        c(Layer2, "vrf", json!(""), "spec.vrf"),
        c(Layer2, "vrf", json!("bad name"), "spec.vrf"),
        c(Layer2, "vrf", json!("thirteen-char"), "spec.vrf"),
        c(
            Layer2,
            "advertiseNeighbors",
            json!("yes"),
            "spec.advertiseNeighbors",
        ),
        c(
            Layer2,
            "disableSegmentation",
            json!("no"),
            "spec.disableSegmentation",
        ),
        c(
            Layer2,
            "neighSuppression",
            json!("yes"),
            "spec.neighSuppression",
        ),
        c(
            Layer2,
            "createMacVLANInterface",
            json!(1),
            "spec.createMacVLANInterface",
        ),
        c(
            Layer2,
            "nodeSelector.matchExpressions",
            many(
                33,
                |i| json!({"key": format!("k{i}"), "operator": "Exists"}),
            ),
            "spec.nodeSelector.matchExpressions",
        ),
        c(
            Layer2,
            "nodeSelector.matchLabels",
            json!({"rack": 5}),
            "spec.nodeSelector.matchLabels.rack",
        ),
        // RoutingTable
        c(Table, "tableId", json!(0), "spec.tableId"),
        c(Table, "tableId", json!(252), "spec.tableId"),
        c(Table, "tableId", json!(253), "spec.tableId"),
        c(Table, "tableId", json!(254), "spec.tableId"),
        c(Table, "tableId", json!(255), "spec.tableId"),
        c(Table, "tableId", json!(-1), "spec.tableId"),
        c(Table, "tableId", json!(4_294_967_296u64), "spec.tableId"),
        c(Table, "tableId", json!("300"), "spec.tableId"),
    ]);
    for (kind, path, field) in [
        (Vrf, "vrf", "spec.vrf"),
        (Vrf, "seq", "spec.seq"),
        (Vrf, "import[0].cidr", "spec.import[0].cidr"),
        (Vrf, "export[0].action", "spec.export[0].action"),
        (Vrf, "loopbacks[0].name", "spec.loopbacks[0].name"),
        (Vrf, "loopbacks[0].subnet", "spec.loopbacks[0].subnet"),
        (
            Vrf,
            "nodeSelector.matchExpressions[0].key",
            "spec.nodeSelector.matchExpressions[0].key",
        ),
        (Layer2, "id", "spec.id"),
        (Layer2, "mtu", "spec.mtu"),
        (Layer2, "vni", "spec.vni"),
        (Table, "tableId", "spec.tableId"),
    ] {
        // Required fields.
        out.push(Case {
            kind,
            path,
            value: None,
            field,
        });
    }
    out
}
