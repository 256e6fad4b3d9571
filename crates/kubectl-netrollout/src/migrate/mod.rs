//! `migrate`: converting the Go network operator's `v1alpha1` manifests (groups
//! `network.schiff.telekom.de` and `network.t-caas.telekom.com`) to `netrollout.io/v1alpha1`.
//!
//! The four input kinds keep their field names, types and ranges, so the conversion changes
//! `apiVersion`, drops what the API server sets (`status`, `uid`, `resourceVersion`, managed
//! fields, the last-applied annotation) and keeps `metadata.name`, `labels` and `annotations`.
//! Every other metadata field (`namespace`: netrollout's kinds are cluster-scoped;
//! `finalizers`, `ownerReferences`, `generateName`, ...) is dropped with a note per object and
//! field saying why. Each spec is checked against netrollout's types: a field netrollout does
//! not know is an error, never silently lost; a value netrollout's CRD refuses is an error
//! naming the object, the field and why (e.g. `advertiseNeighbors: true` without a VRF). Every object is
//! checked before the run fails, so one run lists them all. Kinds users write that netrollout
//! does not carry (`MirrorTarget`, `MirrorSelector`) are errors too, saying what to do; the operator's node configs and revisions, which netrollout generates itself, are
//! skipped with a note.
//!
//! Layout: this module converts and reports; `schema` holds the checks of one spec (the CRD's
//! schema and rules, the configurator's checks, the typed round trip); `refused` the kinds that
//! cannot migrate and why.

use serde_json::{Map, Value};

use crate::diff::changes;

mod refused;
mod schema;

pub use refused::MIRRORING_REFUSED;

use crate::{Error, Result};
use schema::{check_alone, check_limits, spec_schema, typed_spec, unknown_fields};

/// API groups of the Go operator's `v1alpha1` API.
pub const LEGACY_GROUPS: [&str; 2] = ["network.schiff.telekom.de", "network.t-caas.telekom.com"];
/// The kinds that migrate.
pub const INPUT_KINDS: [&str; 4] = [
    "VRFRouteConfiguration",
    "Layer2NetworkConfiguration",
    "RoutingTable",
    "BGPPeering",
];
/// The `apiVersion` they migrate to.
pub const TARGET_API_VERSION: &str = "netrollout.io/v1alpha1";

/// Metadata fields kept.
const KEPT_METADATA: [&str; 3] = ["name", "labels", "annotations"];
/// Metadata fields the API server sets, dropped without a note. Every other field a person (or
/// a controller) set is dropped with a note saying why.
const SERVER_METADATA: [&str; 8] = [
    "uid",
    "resourceVersion",
    "generation",
    "creationTimestamp",
    "managedFields",
    "selfLink",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
];

/// Why a metadata field that is not the API server's is not carried over.
fn dropped_because(field: &str) -> &'static str {
    match field {
        "namespace" => "netrollout's kinds are cluster-scoped",
        "finalizers" => {
            "they name the Go operator's (or another controller's) finalizers, which nothing \
             removes from netrollout's objects, so the object could never be deleted; add \
             finalizers of a controller that handles netrollout's kinds yourself"
        }
        "ownerReferences" => {
            "they point at owners by uid in the old cluster (or namespace), which the new \
             objects cannot have: the garbage collector would delete an object whose owner it \
             does not find; set owners again after applying, if wanted"
        }
        "generateName" => "the object keeps its metadata.name, so no name is generated",
        _ => "netrollout carries over only metadata.name, labels and annotations",
    }
}
const LAST_APPLIED: &str = "kubectl.kubernetes.io/last-applied-configuration";

/// The converted objects and what was skipped or dropped.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Migration {
    /// Converted objects, in input order.
    pub objects: Vec<Value>,
    /// One line per skipped document or dropped field.
    pub notes: Vec<String>,
}

impl Migration {
    /// The converted objects as one multi-document YAML stream.
    ///
    /// # Errors
    /// [`Error::Output`] if serialising fails.
    pub fn to_yaml(&self) -> Result<String> {
        serde_saphyr::to_string_multiple(&self.objects).map_err(|e| Error::Output(e.to_string()))
    }
}

/// Converts every document of a YAML stream (`List`s are unpacked).
///
/// # Errors
/// [`Error::Manifest`] for unparsable YAML, a wrong version, or a spec netrollout cannot hold.
pub fn convert(source_name: &str, text: &str) -> Result<Migration> {
    let docs: Vec<Value> = serde_saphyr::from_multiple(text).map_err(|e| Error::Manifest {
        source_name: source_name.to_string(),
        message: format!("not valid YAML: {e}"),
    })?;
    let mut m = Migration::default();
    // Every object is checked, so that one run names every object that cannot migrate.
    let mut failed = Vec::new();
    for (i, doc) in docs.into_iter().enumerate() {
        let at = format!("{source_name} document {}", i + 1);
        match doc {
            Value::Null => {}
            Value::Object(ref o) if o.get("kind").and_then(Value::as_str) == Some("List") => {
                for item in o
                    .get("items")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                {
                    failed.extend(convert_one(&at, item, &mut m).err());
                }
            }
            other => failed.extend(convert_one(&at, &other, &mut m).err()),
        }
    }
    match failed.len() {
        0 => Ok(m),
        1 => Err(failed.remove(0)),
        n => Err(Error::Manifest {
            source_name: source_name.to_string(),
            message: format!(
                "{n} objects cannot migrate:\n{}",
                failed
                    .iter()
                    .map(|e| format!("  {e}"))
                    .collect::<Vec<_>>()
                    .join("\n")
            ),
        }),
    }
}

fn convert_one(at: &str, doc: &Value, m: &mut Migration) -> Result<()> {
    let bad = |message: String| Error::Manifest {
        source_name: at.to_string(),
        message,
    };
    let api_version = doc
        .get("apiVersion")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let kind = doc.get("kind").and_then(Value::as_str).unwrap_or_default();
    let name = doc
        .pointer("/metadata/name")
        .and_then(Value::as_str)
        .unwrap_or_default();
    let (group, version) = api_version.rsplit_once('/').unwrap_or(("", api_version));
    if !LEGACY_GROUPS.contains(&group) && group != "netrollout.io" {
        m.notes.push(format!(
            "{at}: skipped {api_version} {kind} {name}: not a network operator object"
        ));
        return Ok(());
    }
    if let Some(why) = refused::why_not(kind) {
        return Err(bad(format!("{kind} {name}: {why}")));
    }
    if !INPUT_KINDS.contains(&kind) {
        m.notes.push(format!(
            "{at}: skipped {kind} {name}: netrollout has no such input kind (it generates node configs and revisions itself)"
        ));
        return Ok(());
    }
    if version != "v1alpha1" {
        return Err(bad(format!(
            "{kind} {name}: version {version} is not v1alpha1; convert it to v1alpha1 first"
        )));
    }
    if name.is_empty() {
        return Err(bad(format!("{kind} has no metadata.name")));
    }
    let spec = doc
        .get("spec")
        .cloned()
        .unwrap_or(Value::Object(Map::new()));
    let typed = typed_spec(kind, &spec).map_err(|e| {
        bad(format!(
            "{kind} {name}: spec does not fit netrollout's {kind}: {e}"
        ))
    })?;
    // Fields the CRD does not define. (A round trip through the type would also flag fields set
    // to their default, such as `advertiseNeighbors: false`, which the type does not write back.)
    let lost: Vec<String> =
        match spec_schema(kind).and_then(|s| s.pointer("/properties/spec").cloned()) {
            Some(schema) => {
                let mut out = Vec::new();
                unknown_fields(&schema, &spec, "spec", &mut out);
                out
            }
            None => changes(&spec, &typed)
                .into_iter()
                .filter(|c| c.old.is_some())
                .map(|c| format!("spec.{}", c.path))
                .collect(),
        };
    if !lost.is_empty() {
        return Err(bad(format!(
            "{kind} {name}: netrollout does not know the field(s) {}; remove them or keep the Go operator for this object",
            lost.join(", ")
        )));
    }
    let mut refused = check_limits(kind, name, &spec);
    if refused.is_empty() {
        refused = check_alone(kind, name, &spec);
    }
    if !refused.is_empty() {
        return Err(bad(format!(
            "{kind} {name}: {}; netrollout's CRD refuses these values, fix them before migrating",
            refused.join("; ")
        )));
    }
    let mut metadata = Map::new();
    if let Some(Value::Object(meta)) = doc.get("metadata") {
        for (k, v) in meta {
            if KEPT_METADATA.contains(&k.as_str()) {
                metadata.insert(k.clone(), v.clone());
            } else if !SERVER_METADATA.contains(&k.as_str()) {
                m.notes.push(format!(
                    "{at}: {kind} {name}: dropped metadata.{k} {v}: {}",
                    dropped_because(k)
                ));
            }
        }
    }
    if let Some(Value::Object(ann)) = metadata.get_mut("annotations") {
        ann.remove(LAST_APPLIED);
        if ann.is_empty() {
            metadata.remove("annotations");
        }
    }
    let mut out = Map::new();
    out.insert("apiVersion".into(), TARGET_API_VERSION.into());
    out.insert("kind".into(), kind.into());
    out.insert("metadata".into(), Value::Object(metadata));
    out.insert("spec".into(), spec);
    m.objects.push(Value::Object(out));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn legacy_objects_change_api_version_and_lose_server_fields() {
        let text = "apiVersion: network.schiff.telekom.de/v1alpha1\nkind: RoutingTable\nmetadata:\n  name: t1\n  \
                    namespace: default\n  uid: abc\n  resourceVersion: '5'\n  labels: {team: net}\nspec:\n  tableId: 7\n\
                    status: {}\n";
        let m = convert("t.yaml", text).unwrap();
        assert_eq!(
            m.objects,
            [
                serde_json::json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "RoutingTable",
                "metadata": {"name": "t1", "labels": {"team": "net"}}, "spec": {"tableId": 7}})
            ]
        );
        assert_eq!(m.notes.len(), 1, "{:?}", m.notes);
        assert!(
            m.notes[0].contains("RoutingTable t1: dropped metadata.namespace \"default\"")
                && m.notes[0].contains("cluster-scoped"),
            "{:?}",
            m.notes
        );
    }

    #[test]
    fn values_the_crd_refuses_are_errors_naming_the_field() {
        let text = "apiVersion: network.schiff.telekom.de/v1alpha1\nkind: VRFRouteConfiguration\nmetadata:\n  name: v\n\
                    spec:\n  vrf: mir\n  seq: 10\n  routeTarget: my-target\n  import:\n  - cidr: 10.0.0.0/33\n    action: permit\n";
        let err = convert("in.yaml", text).unwrap_err().to_string();
        assert!(err.contains("spec.routeTarget"), "{err}");
        let text = text.replace("  routeTarget: my-target\n", "");
        let err = convert("in.yaml", &text).unwrap_err().to_string();
        assert!(err.contains("spec.import[0].cidr"), "{err}");
        assert!(
            err.contains("must be a network with prefix length"),
            "{err}"
        );
        let ok = text.replace("10.0.0.0/33", "10.0.0.0/24");
        convert("in.yaml", &ok).unwrap();
    }

    #[test]
    fn user_metadata_other_than_name_labels_and_annotations_is_dropped_with_a_note_per_field() {
        let text = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: RoutingTable\nmetadata:\n  name: t1\n  \
                    generateName: t-\n  finalizers: [network.t-caas.telekom.com/cleanup]\n  ownerReferences:\n  \
                    - {apiVersion: v1, kind: ConfigMap, name: owner, uid: 1234}\n  uid: abc\n  generation: 3\n  \
                    creationTimestamp: '2024-01-01T00:00:00Z'\n  labels: {team: net}\nspec: {tableId: 7}\n";
        let m = convert("t.yaml", text).unwrap();
        assert_eq!(
            m.objects[0]["metadata"],
            serde_json::json!({"name": "t1", "labels": {"team": "net"}})
        );
        let note = |field: &str| {
            m.notes
                .iter()
                .find(|n| n.contains(&format!("RoutingTable t1: dropped metadata.{field} ")))
                .unwrap_or_else(|| panic!("no note on metadata.{field}: {:?}", m.notes))
                .clone()
        };
        assert!(note("finalizers").contains("could never be deleted"));
        assert!(note("finalizers").contains("network.t-caas.telekom.com/cleanup"));
        assert!(note("ownerReferences").contains("garbage collector"));
        assert!(note("generateName").contains("keeps its metadata.name"));
        // What the API server set is dropped silently: one note per user field, no more.
        assert_eq!(m.notes.len(), 3, "{:?}", m.notes);
        assert!(m.notes.iter().all(|n| n.starts_with("t.yaml document 1: ")));
    }

    #[test]
    fn every_object_the_crd_refuses_is_named_with_its_field_and_why_in_one_run() {
        let l2 = |name: &str, field: &str| {
            format!(
                "apiVersion: network.schiff.telekom.de/v1alpha1\nkind: Layer2NetworkConfiguration\nmetadata: {{name: {name}}}\n\
                 spec: {{id: 5, mtu: 1500, vni: 5, {field}: true}}\n"
            )
        };
        let text = format!(
            "{}---\n{}---\n{}---\n{}",
            l2("l2a", "advertiseNeighbors"),
            l2("l2b", "disableSegmentation"),
            l2("l2c", "createMacVLANInterface"),
            l2("l2d", "advertiseNeighbors"),
        );
        let err = convert("in.yaml", &text).unwrap_err().to_string();
        assert!(err.contains("2 objects cannot migrate"), "{err}");
        let line = |name: &str| {
            err.lines()
                .find(|l| l.contains(&format!("Layer2NetworkConfiguration {name}:")))
                .unwrap_or_else(|| panic!("{name} is not named: {err}"))
                .to_string()
        };
        assert!(line("l2a").contains("in.yaml document 1"), "{err}");
        assert!(line("l2a").contains("spec.advertiseNeighbors: "), "{err}");
        assert!(
            line("l2a").contains(netrollout_api::ADVERTISE_NEIGHBORS_NEEDS_VRF),
            "{err}"
        );
        assert!(line("l2d").contains("in.yaml document 4"), "{err}");
        // Segmentation offload is netrollout's to turn off too: it migrates.
        assert!(!err.contains("l2b") && !err.contains("l2c"), "{err}");
        // With a VRF, neighbours are announced in it: it migrates.
        let in_vrf = text.replace(
            "advertiseNeighbors: true}",
            "advertiseNeighbors: true, vrf: mir}",
        );
        assert_eq!(convert("in.yaml", &in_vrf).unwrap().objects.len(), 4);
        // `false` is what netrollout does, and migrates.
        let ok = text.replace(": true}", ": false}");
        assert_eq!(convert("in.yaml", &ok).unwrap().objects.len(), 4);
    }

    #[test]
    fn what_kubernetes_or_the_configurator_would_refuse_is_an_error_naming_the_field() {
        let vrf = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: VRFRouteConfiguration\nmetadata: {name: v}\n\
                   spec:\n  vrf: mir\n  seq: 10\n  import:\n  - {cidr: 010.050.000.000/16, action: permit}\n";
        let err = convert("in.yaml", vrf).unwrap_err().to_string();
        assert!(err.contains("spec.import[0].cidr"), "{err}");
        let l2 = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: Layer2NetworkConfiguration\nmetadata: {name: net1}\n\
                  spec: {id: 10, mtu: 1500, vni: 100, vrf: elsewhere, anycastGateways: [10.0.0.255/24]}\n";
        let err = convert("in.yaml", l2).unwrap_err().to_string();
        assert!(
            err.contains("spec.anycastGateways[0]") && err.contains("broadcast"),
            "{err}"
        );
        assert!(
            !err.contains("spec.vrf"),
            "a VRF from another file is not an error: {err}"
        );
        convert("in.yaml", &l2.replace("10.0.0.255/24", "10.0.0.1/24")).unwrap();
    }

    #[test]
    fn unknown_spec_fields_are_errors_not_silent_losses() {
        let text = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: RoutingTable\nmetadata: {name: t}\n\
                    spec: {tableId: 7, color: blue}\n";
        let err = convert("t.yaml", text).unwrap_err().to_string();
        assert!(err.contains("spec.color"), "{err}");
    }

    #[test]
    fn flags_set_to_their_default_are_kept_and_nested_unknown_fields_are_errors() {
        let text = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: Layer2NetworkConfiguration\n\
                    metadata: {name: l2}\nspec: {id: 5, mtu: 1500, vni: 5, advertiseNeighbors: false, \
                    createMacVLANInterface: false, disableSegmentation: false}\n";
        let m = convert("l2.yaml", text).unwrap();
        assert_eq!(
            m.objects[0]["spec"]["advertiseNeighbors"], false,
            "{:?}",
            m.objects
        );
        let text = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: VRFRouteConfiguration\n\
                    metadata: {name: v}\nspec: {vrf: mir, seq: 10, import: [{cidr: 10.0.0.0/8, action: permit, \
                    weight: 3}], nodeSelector: {matchLabels: {any-key: x}}}\n";
        let err = convert("v.yaml", text).unwrap_err().to_string();
        assert!(err.contains("spec.import[0].weight"), "{err}");
        assert!(!err.contains("any-key"), "{err}");
    }

    #[test]
    fn other_kinds_are_skipped_with_a_note() {
        let text = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: NodeConfig\nmetadata: {name: n}\n---\n\
                    apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
        let m = convert("t.yaml", text).unwrap();
        assert!(m.objects.is_empty());
        assert_eq!(m.notes.len(), 2, "{:?}", m.notes);
    }
}
