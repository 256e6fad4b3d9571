//! Checking built-in kinds: each body is decoded into its `k8s-openapi` type (types and
//! required fields) and encoded again; fields that did not survive the round trip are the
//! unknown fields, rejected under `fieldValidation=Strict` and dropped otherwise.

use k8s_openapi::api::admissionregistration::v1::{
    ValidatingAdmissionPolicy, ValidatingAdmissionPolicyBinding,
};
use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::{ConfigMap, Event as CoreEvent, Namespace, Node, ServiceAccount};
use k8s_openapi::api::events::v1::Event;
use k8s_openapi::api::rbac::v1::{ClusterRole, ClusterRoleBinding, Role, RoleBinding};
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

use crate::resources::Builtin;

/// The object as the typed decoder understood it, and the paths of fields it did not know.
pub fn check(b: Builtin, obj: &Value) -> Result<(Value, Vec<String>), String> {
    let typed = match b {
        Builtin::Node => round::<Node>(obj),
        Builtin::Namespace => round::<Namespace>(obj),
        Builtin::Lease => round::<Lease>(obj),
        Builtin::CoreEvent => round::<CoreEvent>(obj),
        Builtin::Event => round::<Event>(obj),
        Builtin::ConfigMap => round::<ConfigMap>(obj),
        Builtin::Crd => round::<CustomResourceDefinition>(obj),
        Builtin::ServiceAccount => round::<ServiceAccount>(obj),
        Builtin::Role => round::<Role>(obj),
        Builtin::ClusterRole => round::<ClusterRole>(obj),
        Builtin::RoleBinding => round::<RoleBinding>(obj),
        Builtin::ClusterRoleBinding => round::<ClusterRoleBinding>(obj),
        Builtin::Vap => round::<ValidatingAdmissionPolicy>(obj),
        Builtin::VapBinding => round::<ValidatingAdmissionPolicyBinding>(obj),
    }?;
    let mut unknown = vec![];
    diff(obj, &typed, &mut String::new(), &mut unknown);
    Ok((typed, unknown))
}

/// Checks a custom object's `metadata` the same way (types and unknown fields).
pub fn check_meta(obj: &Value) -> Result<Vec<String>, String> {
    let meta = &obj["metadata"];
    let typed = round::<ObjectMeta>(meta)?;
    let mut unknown = vec![];
    diff(meta, &typed, &mut "metadata".to_string(), &mut unknown);
    Ok(unknown)
}

/// [`check_meta`] of only the metadata fields that differ from `stored` (the metadata of the
/// stored version, which passed the check when it was written), for a write outside strict
/// mode, where the check's only output is an error for a field of the wrong type: the fields of
/// `ObjectMeta` decode independently, so a field that did not change cannot fail, and the
/// first failing field is the one the whole check would report. Nothing is decoded when the
/// metadata is as stored (a status report).
pub fn check_meta_changes(obj: &Value, stored: &Value) -> Result<(), String> {
    let Some(meta) = obj["metadata"].as_object() else {
        return check_meta(obj).map(drop);
    };
    let changed: serde_json::Map<String, Value> = meta
        .iter()
        .filter(|(k, v)| stored.get(k.as_str()) != Some(*v))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    if changed.is_empty() {
        return Ok(());
    }
    round::<ObjectMeta>(&Value::Object(changed)).map(drop)
}

fn round<T: DeserializeOwned + Serialize>(obj: &Value) -> Result<Value, String> {
    // Decoded from the borrowed value: no copy of the whole object first.
    let t = T::deserialize(obj).map_err(|e| e.to_string())?;
    serde_json::to_value(&t).map_err(|e| e.to_string())
}

/// Appends to `out` the path of every field of `orig` that `typed` lacks. `path` is where
/// `orig` sits; it is built up and cut back in place, so a path is only copied when it is
/// reported (this runs on every write).
fn diff(orig: &Value, typed: &Value, path: &mut String, out: &mut Vec<String>) {
    match (orig, typed) {
        (Value::Object(o), Value::Object(t)) => {
            for (k, v) in o {
                let len = path.len();
                if len > 0 {
                    path.push('.');
                }
                path.push_str(k);
                match t.get(k) {
                    Some(tv) => diff(v, tv, path, out),
                    None if v.is_null() => {}
                    None => out.push(path.clone()),
                }
                path.truncate(len);
            }
        }
        (Value::Array(o), Value::Array(t)) => {
            for (i, (ov, tv)) in o.iter().zip(t).enumerate() {
                let len = path.len();
                path.push('[');
                path.push_str(&i.to_string());
                path.push(']');
                diff(ov, tv, path, out);
                path.truncate(len);
            }
        }
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_config_map_with_an_unknown_field_is_reported() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a", "bogus": 1}, "data": {"k": "v"}, "extra": true});
        let (_, unknown) = check(Builtin::ConfigMap, &cm).unwrap();
        assert_eq!(
            unknown,
            vec!["extra".to_string(), "metadata.bogus".to_string()]
        );
    }

    #[test]
    fn a_changed_metadata_field_of_the_wrong_type_fails_as_the_whole_check_fails() {
        let stored = json!({"name": "a", "labels": {"x": "1"}, "annotations": {"y": "2"}});
        let ok =
            json!({"metadata": {"name": "a", "labels": {"x": "2"}, "annotations": {"y": "2"}}});
        assert_eq!(check_meta_changes(&ok, &stored), Ok(()));
        assert_eq!(
            check_meta_changes(&json!({"metadata": stored.clone()}), &stored),
            Ok(())
        );
        for bad in [
            json!({"metadata": {"name": "a", "labels": {"x": 1}, "annotations": {"y": "2"}}}),
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": {"y": "2"}, "finalizers": "f"}}),
            json!({"metadata": {"name": "a", "labels": {"x": "1"}, "annotations": ["y"]}}),
            json!({"metadata": 7}),
        ] {
            let whole = check_meta(&bad).map(drop);
            assert!(whole.is_err(), "{bad}");
            assert_eq!(check_meta_changes(&bad, &stored), whole, "{bad}");
        }
    }

    #[test]
    fn a_config_map_with_a_wrongly_typed_field_does_not_decode() {
        let cm = json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "a"}, "data": {"k": 1}});
        assert!(check(Builtin::ConfigMap, &cm).is_err());
    }
}
