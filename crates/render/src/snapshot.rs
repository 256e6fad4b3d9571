//! Building the merged snapshot from input objects, and its content address.

use netrollout_api::{
    BGPPeering, BGPPeeringSpec, Layer2NetworkConfiguration, NamedInput, RoutingTable, Snapshot,
    VRFRouteConfiguration,
};
use serde::Serialize;
use serde_json::Value;
use sha2::{Digest, Sha256};

/// Builds the snapshot of the given input objects: objects being deleted (`deletionTimestamp`
/// set) are treated as already gone, and every list is sorted by object name, so the same inputs
/// in any order give the same snapshot.
pub fn from_objects(
    vrfs: &[VRFRouteConfiguration],
    layer2s: &[Layer2NetworkConfiguration],
    tables: &[RoutingTable],
) -> Snapshot {
    Snapshot {
        vrf_route_configurations: live(vrfs, |o| (&o.metadata, &o.spec)),
        layer2_network_configurations: live(layer2s, |o| (&o.metadata, &o.spec)),
        routing_tables: live(tables, |o| (&o.metadata, &o.spec)),
        bgp_peerings: Vec::new(),
    }
}

/// The snapshot's `bgpPeerings` from these objects, like [`from_objects`] builds the other
/// kinds': `from_objects(..)` then `snapshot.bgp_peerings = peerings(&objects)`.
pub fn peerings(objects: &[BGPPeering]) -> Vec<NamedInput<BGPPeeringSpec>> {
    live(objects, |o| (&o.metadata, &o.spec))
}

fn live<O, S: Clone>(
    objects: &[O],
    parts: impl Fn(
        &O,
    ) -> (
        &k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta,
        &S,
    ),
) -> Vec<NamedInput<S>> {
    let mut out: Vec<NamedInput<S>> = objects
        .iter()
        .map(&parts)
        .filter(|(meta, _)| meta.deletion_timestamp.is_none())
        .map(|(meta, spec)| NamedInput {
            name: meta.name.clone().unwrap_or_default(),
            spec: spec.clone(),
        })
        .collect();
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Canonical JSON: object keys sorted, no insignificant whitespace. The same value always gives
/// the same bytes, whatever map type or serde_json features a build uses.
pub fn canonical_json<T: Serialize>(value: &T) -> Result<String, serde_json::Error> {
    let value = serde_json::to_value(value)?;
    let mut out = String::new();
    write_canonical(&value, &mut out)?;
    Ok(out)
}

fn write_canonical(value: &Value, out: &mut String) -> Result<(), serde_json::Error> {
    match value {
        Value::Object(map) => {
            let mut entries: Vec<(&String, &Value)> = map.iter().collect();
            entries.sort_by(|a, b| a.0.cmp(b.0));
            out.push('{');
            for (i, (key, value)) in entries.into_iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                out.push_str(&serde_json::to_string(key)?);
                out.push(':');
                write_canonical(value, out)?;
            }
            out.push('}');
        }
        Value::Array(items) => {
            out.push('[');
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.push(',');
                }
                write_canonical(item, out)?;
            }
            out.push(']');
        }
        scalar => out.push_str(&serde_json::to_string(scalar)?),
    }
    Ok(())
}

/// The content address of canonical JSON bytes: `sha256:<64 hex digits>`.
pub fn hash_canonical(canonical: &str) -> String {
    format!(
        "sha256:{}",
        hex::encode(Sha256::digest(canonical.as_bytes()))
    )
}

/// The name of the revision with this hash: `ncr-` and the first 16 hex digits. A name clash
/// with different content is detected by comparing `spec.hash`, never by the name alone.
pub fn revision_name(hash: &str) -> String {
    let digits = hash.strip_prefix("sha256:").unwrap_or(hash);
    format!("ncr-{}", &digits[..digits.len().min(16)])
}

/// A stable 64-bit FNV-1a hash of a string (the same on every build and machine).
pub(crate) fn stable_hash(s: &str) -> u64 {
    s.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn canonical_json_sorts_keys_at_every_depth() {
        let v = serde_json::json!({"b": 1, "a": {"d": [3, {"z": 1, "y": 2}], "c": "x"}});
        assert_eq!(
            canonical_json(&v).unwrap(),
            r#"{"a":{"c":"x","d":[3,{"y":2,"z":1}]},"b":1}"#
        );
    }

    #[test]
    fn the_revision_name_derives_from_the_hash() {
        let hash = hash_canonical("{}");
        assert_eq!(
            hash,
            "sha256:44136fa355b3678a1146ad16f7e8649e94fb4fc21fe77e8310c060f61caaff8a"
        );
        assert_eq!(revision_name(&hash), "ncr-44136fa355b3678a");
    }
}
