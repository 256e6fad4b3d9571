//! The checks of one migrated spec against netrollout's own rules: the CRD's schema (unknown
//! fields, limits and CEL rules as the API server checks them), the configurator's checks of an
//! object on its own, and the typed round trip. `migrate` (the parent) does the conversion and
//! reports what these find, per object and field.

use serde_json::Value;

use super::TARGET_API_VERSION;

/// The CRD schema (`openAPIV3Schema`) of `kind` as JSON.
pub(super) fn spec_schema(kind: &str) -> Option<Value> {
    netrollout_api::crds::all()
        .into_iter()
        .find(|c| c.spec.names.kind == kind)
        .and_then(|c| c.spec.versions.into_iter().next())
        .and_then(|v| v.schema?.open_api_v3_schema)
        .and_then(|s| serde_json::to_value(s).ok())
}

/// The limits the CRD of `kind` enforces (schema and CEL rules, as the API server checks them):
/// one `field: message` per failure.
pub(super) fn check_limits(kind: &str, name: &str, spec: &Value) -> Vec<String> {
    let Some(schema) = spec_schema(kind) else {
        return vec![];
    };
    let object = serde_json::json!({
        "apiVersion": TARGET_API_VERSION, "kind": kind, "metadata": {"name": name}, "spec": spec,
    });
    netrollout_crdcheck::check_custom_object(&schema, &object)
        .into_iter()
        .map(|(field, message)| format!("{field}: {message}"))
        .collect()
}

/// The paths of the fields in `value` that `schema` does not define (`spec.x`,
/// `spec.import[0].y`); maps with free keys (label selectors' `matchLabels`) take any key.
pub(super) fn unknown_fields(schema: &Value, value: &Value, path: &str, out: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            let props = schema.get("properties").and_then(Value::as_object);
            let free = schema.get("additionalProperties").is_some()
                || schema.get("x-kubernetes-preserve-unknown-fields") == Some(&Value::Bool(true));
            for (k, v) in map {
                match props.and_then(|p| p.get(k)) {
                    Some(field) => unknown_fields(field, v, &format!("{path}.{k}"), out),
                    None if free => {}
                    None => out.push(format!("{path}.{k}")),
                }
            }
        }
        Value::Array(items) => {
            if let Some(item) = schema.get("items") {
                for (i, v) in items.iter().enumerate() {
                    unknown_fields(item, v, &format!("{path}[{i}]"), out);
                }
            }
        }
        _ => {}
    }
}

/// The configurator's checks of one object on its own (`netrollout_render::compile`): what the
/// CRD cannot express, such as a broadcast address as anycast gateway or a community FRR
/// refuses. A layer-2 network's VRF and a peering's layer-2 network count as defined (they may
/// be migrated from another file).
pub(super) fn check_alone(kind: &str, name: &str, spec: &Value) -> Vec<String> {
    use netrollout_api::{
        Layer2NetworkConfigurationSpec, NamedInput, Snapshot, VRFRouteConfigurationSpec,
    };
    fn named<S: serde::de::DeserializeOwned>(name: &str, spec: &Value) -> Option<NamedInput<S>> {
        let spec = serde_json::from_value(spec.clone()).ok()?;
        Some(NamedInput {
            name: name.to_string(),
            spec,
        })
    }
    let mut snapshot = Snapshot::default();
    match kind {
        "VRFRouteConfiguration" => snapshot.vrf_route_configurations.extend(named(name, spec)),
        "Layer2NetworkConfiguration" => {
            let input: Option<NamedInput<Layer2NetworkConfigurationSpec>> = named(name, spec);
            if let Some(vrf) = input.as_ref().and_then(|i| i.spec.vrf.clone()) {
                snapshot.vrf_route_configurations.push(NamedInput {
                    name: format!("{name}-vrf"),
                    spec: VRFRouteConfigurationSpec {
                        vrf,
                        seq: 1,
                        ..Default::default()
                    },
                });
            }
            snapshot.layer2_network_configurations.extend(input);
        }
        "BGPPeering" => snapshot.bgp_peerings.extend(named(name, spec)),
        _ => snapshot.routing_tables.extend(named(name, spec)),
    }
    match netrollout_render::compile(&snapshot) {
        // A peering's layer-2 network may be migrated from another file: whether it exists is
        // checked when the objects are applied together.
        Err(netrollout_render::Error::Invalid(invalid)) => invalid
            .for_object(kind, name)
            .filter(|p| p.field != "spec.peeringVlan.name")
            .map(|p| format!("{}: {}", p.field, p.message))
            .collect(),
        _ => vec![],
    }
}

/// The spec as netrollout's type reads and writes it back.
pub(super) fn typed_spec(kind: &str, spec: &Value) -> Result<Value, serde_json::Error> {
    use netrollout_api::{
        BGPPeeringSpec as Peering, Layer2NetworkConfigurationSpec as L2, RoutingTableSpec as Rt,
        VRFRouteConfigurationSpec as Vrf,
    };
    let v = spec.clone();
    match kind {
        "VRFRouteConfiguration" => serde_json::to_value(serde_json::from_value::<Vrf>(v)?),
        "Layer2NetworkConfiguration" => serde_json::to_value(serde_json::from_value::<L2>(v)?),
        "BGPPeering" => serde_json::to_value(serde_json::from_value::<Peering>(v)?),
        _ => serde_json::to_value(serde_json::from_value::<Rt>(v)?),
    }
}
