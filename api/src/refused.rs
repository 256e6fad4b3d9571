//! Kinds of the Go operator's `v1alpha1` API that netrollout does not carry: `MirrorTarget` and
//! `MirrorSelector`. Their CRDs exist only so that `kubectl apply` of such an
//! object with its `apiVersion` changed to `netrollout.io/v1alpha1` is refused saying why and
//! what to do (a CEL rule that never holds), where kubectl would otherwise answer "no matches
//! for kind"; `kubectl netrollout migrate` refuses the old objects with the same words. Nothing
//! reads these kinds.

use std::borrow::Cow;

use kube::CustomResource;
use schemars::{JsonSchema, Schema, SchemaGenerator};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// Why traffic mirroring (`MirrorTarget`, `MirrorSelector`) is refused, and what to do.
pub const MIRRORING_REFUSED: &str = "netrollout does not carry traffic mirroring (the Go operator's GRE tunnel to a collector in a VRF and its tc mirror rules on the source network), so the mirror would stop without a word; keep the Go operator on the clusters that mirror traffic and leave the MirrorTarget and MirrorSelector objects out of what you migrate (docs/migration.md)";

/// The spec of a refused kind: whatever the Go operator's object holds, kept unread; the
/// schema's rule refuses every object.
fn refusing_schema(message: &str) -> Schema {
    schemars::json_schema!({
        "type": "object",
        "x-kubernetes-preserve-unknown-fields": true,
        "x-kubernetes-validations": [{ "rule": "false", "message": message }],
    })
}

macro_rules! refused_kind {
    ($spec:ident, $kind:literal, $plural:literal, $short:literal, $why:ident) => {
        #[doc = concat!("A `", $kind, "` of the Go operator: refused by its CRD (see [`", stringify!($why), "`]).")]
        #[derive(CustomResource, Serialize, Deserialize, Clone, Debug, PartialEq, Default)]
        #[kube(
            group = "netrollout.io",
            version = "v1alpha1",
            kind = $kind,
            plural = $plural,
            shortname = $short,
            printcolumn(
                name = "Age",
                type_ = "date",
                json_path = ".metadata.creationTimestamp"
            )
        )]
        #[serde(transparent)]
        pub struct $spec(pub Map<String, Value>);

        impl JsonSchema for $spec {
            fn schema_name() -> Cow<'static, str> {
                stringify!($spec).into()
            }

            fn json_schema(_: &mut SchemaGenerator) -> Schema {
                refusing_schema($why)
            }
        }
    };
}

refused_kind!(
    MirrorTargetSpec,
    "MirrorTarget",
    "mirrortargets",
    "mirrortarget",
    MIRRORING_REFUSED
);
refused_kind!(
    MirrorSelectorSpec,
    "MirrorSelector",
    "mirrorselectors",
    "mirrorselector",
    MIRRORING_REFUSED
);

/// Why a kind of the Go operator that users write cannot be carried, or `None` for the kinds
/// netrollout has (or generates itself).
pub fn why_refused(kind: &str) -> Option<&'static str> {
    match kind {
        "MirrorTarget" | "MirrorSelector" => Some(MIRRORING_REFUSED),
        _ => None,
    }
}
