//! A custom object checked against its CRD's `openAPIV3Schema` as a Kubernetes API server checks
//! it: the structural schema (types, ranges, patterns, lengths, item limits, unknown fields) and
//! the CEL rules (`x-kubernetes-validations`, with `oldSelf` on update). Pure: JSON in, the
//! failures out, no server, client or runtime.
//!
//! Two users: the lab API server runs these checks on every write of a custom object, and
//! `kubectl netrollout migrate` runs [`check_custom_object`] on each converted object before it
//! writes anything, so both report the same fields with the same messages.
//!
//! Layout:
//! - [`schema`]: the structural schema ([`schema::validate`], which can also prune unknown
//!   fields).
//! - [`cel_rules`]: a CRD's rules compiled without the rule-free subtrees, walked to where they
//!   are, with Kubernetes' strict IP and CIDR parsing.
//! - here: [`check_custom_object`] (both, as on create) and [`cel_causes`] (the rules' failures
//!   as `(field, message)` in the API server's words).
#![forbid(unsafe_code)]

use kube_cel::{CompiledSchema, Validator};
use serde_json::Value;

pub mod cel_rules;
pub mod schema;

thread_local! {
    /// The Kubernetes CEL function library for CRD rules, registered once per thread.
    static VALIDATOR: Validator = Validator::new();
}

/// Checks a custom object against its CRD version's `openAPIV3Schema` as the server does on
/// create: the schema (types, ranges, patterns, lengths, item limits) and the CEL rules. Returns
/// `(field path, message)` for every failure, e.g. `("spec.import[0].cidr", "Invalid value:
/// \"string\": cidr must be a network ...")`; empty when the object is valid.
pub fn check_custom_object(schema: &Value, object: &Value) -> Vec<(String, String)> {
    let mut copy = object.clone();
    let out = schema::validate(schema, &mut copy, false);
    let mut causes = out.invalid;
    if causes.is_empty() {
        let compiled = cel_rules::compile(schema);
        causes.extend(cel_causes(&compiled, object, None));
    }
    causes
}

/// The failures of the CEL rules of `compiled` (from [`cel_rules::compile`]) on `object` (`old`
/// on update), as `(field path, "Invalid value: \"TYPE\": MESSAGE")`; `<root>` for a rule on the
/// object itself.
pub fn cel_causes(
    compiled: &CompiledSchema,
    object: &Value,
    old: Option<&Value>,
) -> Vec<(String, String)> {
    let errors = VALIDATOR.with(|v| cel_rules::validate(v, compiled, object, old));
    errors
        .iter()
        .map(|e| {
            let field = if e.field_path.is_empty() {
                "<root>".to_string()
            } else {
                e.field_path.clone()
            };
            let value = e
                .field_path
                .split('.')
                .try_fold(object, |v, seg| step(v, seg))
                .map(type_name)
                .unwrap_or("object");
            (field, format!("Invalid value: \"{value}\": {}", e.message))
        })
        .collect()
}

/// One path segment (`import[0]` or `cidr`) into a JSON value.
fn step<'v>(v: &'v Value, seg: &str) -> Option<&'v Value> {
    match seg.split_once('[') {
        Some((key, idx)) => {
            let base = if key.is_empty() { v } else { v.get(key)? };
            let i: usize = idx.trim_end_matches(']').parse().ok()?;
            base.get(i)
        }
        None => v.get(seg),
    }
}

fn type_name(v: &Value) -> &'static str {
    match v {
        Value::String(_) => "string",
        Value::Number(_) => "integer",
        Value::Bool(_) => "boolean",
        Value::Array(_) => "array",
        Value::Null => "null",
        Value::Object(_) => "object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {"spec": {"type": "object", "properties": {
            "seq": {"type": "integer", "maximum": 10},
            "import": {"type": "array", "items": {"type": "object", "properties": {
                "cidr": {"type": "string", "x-kubernetes-validations":
                    [{"rule": "isCIDR(self)", "message": "cidr must be a network"}]}}}}}}}})
    }

    #[test]
    fn a_cel_rule_failure_names_the_field_and_the_type_of_its_value() {
        let object = json!({"spec": {"seq": 1, "import": [{"cidr": "10.0.0.0/8"}, {"cidr": "010.0.0.0/8"}]}});
        assert_eq!(
            check_custom_object(&schema(), &object),
            vec![(
                "spec.import[1].cidr".to_string(),
                "Invalid value: \"string\": cidr must be a network".to_string()
            )]
        );
    }

    #[test]
    fn schema_failures_are_reported_without_the_cel_rules_as_on_create() {
        let object = json!({"spec": {"seq": 11, "import": [{"cidr": "nonsense"}]}});
        let causes = check_custom_object(&schema(), &object);
        let fields: Vec<&str> = causes.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(fields, ["spec.seq"], "{causes:?}");
    }

    #[test]
    fn a_valid_object_has_no_failures() {
        let object = json!({"spec": {"seq": 10, "import": [{"cidr": "fd00::/64"}]}});
        assert_eq!(check_custom_object(&schema(), &object), vec![]);
    }
}
