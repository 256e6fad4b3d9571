//! The schemas of the Kubernetes types the CRDs embed: `LabelSelector`, `Condition` and `Time`.
//!
//! k8s-openapi derives these only behind its `schemars` feature, which adds a schema function
//! to every one of its hundreds of types: 40 % of that crate's build (docs/building.md). The
//! three schemas are written out here instead, as that feature generated them for Kubernetes
//! 1.33 (`schema/*.json`); the CRD drift test (`tests/crds.rs`) keeps the generated CRDs equal
//! to `config/crd/`. The `LabelSelector` carries bounds Kubernetes' own does not (at most 32
//! `matchExpressions` with 256 `values` each, 64 `matchLabels`, label lengths, the four
//! operators), so that no list of an input is unbounded (docs/contract.md).

use schemars::{Schema, SchemaGenerator};
use serde_json::Value;

fn parse(text: &str) -> Schema {
    // The texts are this crate's own files, checked by the CRD drift test: they always parse.
    serde_json::from_str::<Value>(text)
        .ok()
        .and_then(|v| Schema::try_from(v).ok())
        .unwrap_or_default()
}

/// An optional `LabelSelector` (a field of type `Option<LabelSelector>`).
pub(crate) fn label_selector(_: &mut SchemaGenerator) -> Schema {
    parse(include_str!("schema/label_selector.json"))
}

/// A list of `Condition`s (a field of type `Vec<Condition>`).
pub(crate) fn conditions(_: &mut SchemaGenerator) -> Schema {
    let mut list = schemars::json_schema!({ "type": "array" });
    list.insert(
        "items".into(),
        parse(include_str!("schema/condition.json")).into(),
    );
    list
}

/// An optional `Time` (a field of type `Option<Time>`): an RFC 3339 date-time string.
pub(crate) fn time(_: &mut SchemaGenerator) -> Schema {
    schemars::json_schema!({ "type": "string", "format": "date-time", "nullable": true })
}
