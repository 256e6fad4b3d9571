//! A CRD's `x-kubernetes-validations`, compiled once and evaluated only where they are.
//!
//! `kube-cel`'s walker converts the value at every schema node it visits into a CEL value,
//! whether or not the node has a rule, so a write of a NodeNetworkConfig (rules four levels
//! down in `spec.config.vrfs[].policies[]`) converted its whole object, then its whole spec,
//! and so on down, for every node of the schema. Two steps keep the result the same and the
//! work where the rules are:
//!
//! - [`compile`] drops the schema subtrees that hold no rule, except below a node that has
//!   rules (a rule sees its whole value, defaults and formats included, so nothing under it is
//!   dropped). A dropped subtree could only have produced errors from rules, and it has none.
//! - [`validate`] walks down plain object nodes without rules itself (no conversion) and hands
//!   the validator the first node that has rules, an array, a map or a combinator, then puts
//!   the path walked in front of each error's field path. Where a missing child has a schema
//!   default (the validator would default it into existence first) it hands over at that node.

use kube_cel::{CompiledSchema, ValidationError, Validator};
use serde_json::Value;

/// Compiles the rules of `schema` and drops the subtrees that hold none.
pub fn compile(schema: &Value) -> CompiledSchema {
    let mut compiled = kube_cel::compile_schema(schema);
    prune(&mut compiled);
    compiled
}

/// Keeps only what a rule can see; returns whether `s` holds any rule (or compile error).
fn prune(s: &mut CompiledSchema) -> bool {
    if !s.validations.is_empty() {
        return true;
    }
    s.properties.retain(|_, c| prune(c));
    if s.items.as_mut().is_some_and(|i| !prune(i)) {
        s.items = None;
    }
    if s.additional_properties.as_mut().is_some_and(|a| !prune(a)) {
        s.additional_properties = None;
    }
    s.all_of.retain_mut(prune);
    s.one_of.retain_mut(prune);
    s.any_of.retain_mut(prune);
    !s.properties.is_empty() || !only_properties(s)
}

/// Whether `s` has no sub-schema other than named properties: no items, no additional
/// properties, no combinator.
fn only_properties(s: &CompiledSchema) -> bool {
    s.items.is_none()
        && s.additional_properties.is_none()
        && s.all_of.is_empty()
        && s.one_of.is_empty()
        && s.any_of.is_empty()
}

/// Evaluates the rules of `compiled` on `object` (`old` on update); the errors as the
/// validator reports them from the root.
pub fn validate(
    validator: &Validator,
    compiled: &CompiledSchema,
    object: &Value,
    old: Option<&Value>,
) -> Vec<ValidationError> {
    let mut errors = vec![];
    walk(validator, compiled, object, old, "", &mut errors);
    errors
}

fn walk(
    validator: &Validator,
    s: &CompiledSchema,
    value: &Value,
    old: Option<&Value>,
    path: &str,
    errors: &mut Vec<ValidationError>,
) {
    let plain = s.validations.is_empty() && only_properties(s);
    let defaulted_child = s
        .properties
        .iter()
        .any(|(k, c)| c.default.is_some() && value.get(k).is_none());
    let Some(obj) = value.as_object().filter(|_| plain && !defaulted_child) else {
        if let Err(e) = validator.validate_compiled(s, value, old) {
            errors.extend(e.into_vec().into_iter().map(|mut e| {
                e.field_path = join(path, &e.field_path);
                e
            }));
        }
        return;
    };
    // In the map's order, as the validator walks properties too.
    for (name, child) in &s.properties {
        if let Some(v) = obj.get(name) {
            let o = old.and_then(|o| o.get(name));
            walk(validator, child, v, o, &join(path, name), errors);
        }
    }
}

fn join(base: &str, rest: &str) -> String {
    match (base.is_empty(), rest.is_empty()) {
        (true, _) => rest.to_string(),
        (false, true) => base.to_string(),
        // A rule's `fieldPath` starts with `.` (`.ge`): `spec.import[0].ge`, as Kubernetes says.
        (false, false) if rest.starts_with('[') || rest.starts_with('.') => format!("{base}{rest}"),
        (false, false) => format!("{base}.{rest}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({
            "type": "object",
            "properties": {
                "metadata": {"type": "object"},
                "status": {"type": "object", "properties": {"phase": {"type": "string"}}},
                "spec": {"type": "object", "properties": {
                    "note": {"type": "string"},
                    "level": {"type": "integer", "default": 3,
                        "x-kubernetes-validations": [{"rule": "self < 10", "message": "level under 10"}]},
                    "frozen": {"type": "string",
                        "x-kubernetes-validations": [{"rule": "self == oldSelf", "message": "immutable"}]},
                    "routes": {"type": "array", "items": {"type": "object",
                        "x-kubernetes-validations": [{"rule": "!has(self.ge) || self.ge <= 32", "message": "ge at most 32"}],
                        "properties": {
                            "cidr": {"type": "string",
                                "x-kubernetes-validations": [{"rule": "isCIDR(self)", "message": "cidr must be a network"}]},
                            "ge": {"type": "integer"},
                            "tag": {"type": "object", "properties": {"x": {"type": "string", "default": "d"}}}
                        }}}
                }}
            }
        })
    }

    fn sorted(mut e: Vec<ValidationError>) -> Vec<(String, String)> {
        e.sort_by(|a, b| (&a.field_path, &a.message).cmp(&(&b.field_path, &b.message)));
        e.into_iter().map(|e| (e.field_path, e.message)).collect()
    }

    #[test]
    fn a_rule_field_path_is_joined_to_the_path_walked_without_a_double_dot() {
        assert_eq!(
            join("spec", ".advertiseNeighbors"),
            "spec.advertiseNeighbors"
        );
        assert_eq!(join("spec.import", "[0]"), "spec.import[0]");
        assert_eq!(join("spec", "ge"), "spec.ge");
    }

    #[test]
    fn the_pruned_walk_reports_what_the_full_walk_reports() {
        let full = kube_cel::compile_schema(&schema());
        let pruned = compile(&schema());
        assert!(
            !pruned.properties.contains_key("status"),
            "rule-free subtree kept"
        );
        assert!(
            !pruned.properties.contains_key("metadata"),
            "rule-free subtree kept"
        );
        let v = Validator::new();
        let old = json!({"metadata": {"name": "a"}, "spec": {"frozen": "x", "routes": []}});
        let cases = [
            json!({"metadata": {"name": "a"}, "status": {"phase": "ok"},
                   "spec": {"frozen": "y", "level": 12, "routes": [
                       {"cidr": "10.0.0.0/8", "ge": 40, "tag": {}},
                       {"cidr": "nope"}]}}),
            json!({"metadata": {"name": "a"}, "spec": {"frozen": "x", "routes": [{"cidr": "::/0"}]}}),
            json!({"metadata": {"name": "a"}}),
            json!({"metadata": {"name": "a"}, "spec": {}}),
        ];
        for obj in &cases {
            for o in [None, Some(&old)] {
                let want = match v.validate_compiled(&full, obj, o) {
                    Ok(()) => vec![],
                    Err(e) => e.into_vec(),
                };
                let got = validate(&v, &pruned, obj, o);
                assert_eq!(sorted(got), sorted(want), "object {obj} old {o:?}");
            }
        }
        // The first case really fails, with the paths named from the root.
        let got = sorted(validate(&v, &pruned, &cases[0], Some(&old)));
        let paths: Vec<&str> = got.iter().map(|(p, _)| p.as_str()).collect();
        assert_eq!(
            paths,
            [
                "spec.frozen",
                "spec.level",
                "spec.routes[0]",
                "spec.routes[1].cidr"
            ]
        );
    }
}
