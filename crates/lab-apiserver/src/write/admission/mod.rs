//! CEL admission, as a real API server runs it after schema validation: the CRD's
//! `x-kubernetes-validations` (with `oldSelf` transition rules on update) and every
//! `ValidatingAdmissionPolicy` bound by a `ValidatingAdmissionPolicyBinding` (match
//! constraints, match conditions, variables, validations with `messageExpression` and `reason`;
//! `request`, `object`, `oldObject` bound). Expressions are evaluated by the `cel` crate with
//! the Kubernetes CEL libraries of `kube-cel` (`isCIDR`, `cidr(...)`, `isIP`, strings, lists,
//! sets, regex). Programs are compiled once: a CRD's rules when the CRD is written (kept in its
//! [`ResourceType`]), a policy's expressions on first use (kept by expression text, so a
//! changed policy compiles its new expressions and no stale program is run). Not supported: `params` (paramKind), `authorizer`, `namespaceObject`, binding
//! `matchResources`, and `DELETE`/`CONNECT` operations (nothing in this product uses them).

use std::borrow::Cow;

use kube_cel::cel::{Context, Value as CelValue};
use serde_json::{Value, json};

use crate::authz::auth::Identity;
use crate::error::ApiError;
use crate::object::same_but_status;
use crate::resources::{Builtin, ResourceType};
use crate::storage::State;

mod cel;

use cel::{LIBRARY, bind, eval, eval_bool};
use netrollout_crdcheck::cel_causes;

const POLICIES: &str = "admissionregistration.k8s.io/validatingadmissionpolicies";
const BINDINGS: &str = "admissionregistration.k8s.io/validatingadmissionpolicybindings";

/// One write as admission sees it.
#[derive(Debug)]
pub struct Attempt<'a> {
    /// `CREATE` or `UPDATE`.
    pub operation: &'static str,
    /// The type written.
    pub rt: &'a ResourceType,
    /// Subresource (`status`).
    pub sub: Option<&'a str>,
    /// Namespace, empty for cluster-scoped objects.
    pub ns: &'a str,
    /// Who writes.
    pub user: &'a Identity,
    /// The object as it would be stored.
    pub object: &'a Value,
    /// The stored object, on update.
    pub old: Option<&'a Value>,
}

/// Runs the CRD's CEL rules and the bound admission policies; the first denial is returned.
pub fn admit(st: &State, a: &Attempt<'_>) -> Result<(), ApiError> {
    let object = as_seen(a.rt, a.sub, a.object, a.old);
    let old = a.old.map(|o| as_seen(a.rt, None, o, None));
    crd_rules(a.rt, &object, old.as_deref())?;
    policies(st, a, &object, old.as_deref())
}

/// The object the policies see: for a status write, the stored object with the new status
/// (the server ignores the rest; of a Node, only the spec); built-in kinds show empty
/// `spec`/`status` like typed objects.
/// Borrowed when that is the object as written (a status write that changed only the status).
fn as_seen<'a>(
    rt: &ResourceType,
    sub: Option<&str>,
    obj: &'a Value,
    old: Option<&Value>,
) -> Cow<'a, Value> {
    let mut seen = match (sub, old) {
        // A Node's status write may change its metadata too; only the spec stays.
        (Some("status"), Some(old)) if rt.builtin == Some(Builtin::Node) => {
            let mut o = obj.clone();
            o["spec"] = old.get("spec").cloned().unwrap_or(json!({}));
            Cow::Owned(o)
        }
        (Some("status"), Some(old)) if !same_but_status(obj, old) => {
            let mut o = old.clone();
            o["status"] = obj.get("status").cloned().unwrap_or(json!({}));
            Cow::Owned(o)
        }
        _ => Cow::Borrowed(obj),
    };
    let no_status = sub == Some("status") && old.is_some() && obj.get("status").is_none();
    if (rt.builtin == Some(Builtin::Node) || no_status)
        && let Some(m) = seen.to_mut().as_object_mut()
    {
        let empty = if rt.builtin == Some(Builtin::Node) {
            &["spec", "status"][..]
        } else {
            &["status"][..]
        };
        for k in empty {
            m.entry(*k).or_insert_with(|| json!({}));
        }
    }
    seen
}

/// `x-kubernetes-validations` of a custom resource's schema; 422 naming each failing field.
fn crd_rules(rt: &ResourceType, object: &Value, old: Option<&Value>) -> Result<(), ApiError> {
    let Some(compiled) = &rt.cel else {
        return Ok(());
    };
    let causes = cel_causes(compiled, object, old);
    if causes.is_empty() {
        return Ok(());
    }
    let name = object["metadata"]["name"].as_str().unwrap_or_default();
    Err(ApiError::invalid(&rt.group, &rt.kind, name, &causes))
}

/// Every binding whose policy matches the request, evaluated in name order.
fn policies(
    st: &State,
    a: &Attempt<'_>,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    LIBRARY.with(|library| policies_in(library, st, a, object, old))
}

fn policies_in(
    library: &Context<'static>,
    st: &State,
    a: &Attempt<'_>,
    object: &Value,
    old: Option<&Value>,
) -> Result<(), ApiError> {
    let bindings: Vec<Value> = st
        .list(BINDINGS, None)
        .map(|(_, b)| (*b.value()).clone())
        .collect();
    if bindings.is_empty() {
        return Ok(());
    }
    let request = request_value(a);
    for binding in &bindings {
        let actions: Vec<&str> = strs(&binding["spec"]["validationActions"]).collect();
        if !actions.contains(&"Deny") {
            continue;
        }
        let policy_name = binding["spec"]["policyName"].as_str().unwrap_or_default();
        let Some(policy) = st
            .stored_key(POLICIES, "", policy_name)
            .map(|p| (*p.value()).clone())
        else {
            continue;
        };
        if !matches_resource(&policy["spec"]["matchConstraints"], a) {
            continue;
        }
        let deny = |code: u16, message: String| {
            let binding_name = binding["metadata"]["name"].as_str().unwrap_or_default();
            let what = match (a.rt.group.as_str(), object["metadata"]["name"].as_str()) {
                ("", Some(n)) => format!("{} \"{n}\"", a.rt.plural),
                (g, Some(n)) => format!("{}.{g} \"{n}\"", a.rt.plural),
                (_, None) => a.rt.plural.clone(),
            };
            ApiError::denied_by_policy(
                code,
                format!(
                    "{what} is forbidden: ValidatingAdmissionPolicy '{policy_name}' with binding \
                     '{binding_name}' denied request: {message}"
                ),
            )
        };
        let fail_closed = policy["spec"]["failurePolicy"].as_str() != Some("Ignore");
        let mut ctx = library.new_inner_scope();
        let bound = bind(&mut ctx, "request", &request)
            .and_then(|()| bind(&mut ctx, "object", object))
            .and_then(|()| bind(&mut ctx, "oldObject", old.unwrap_or(&Value::Null)))
            .and_then(|()| bind(&mut ctx, "params", &Value::Null));
        if let Err(e) = bound {
            return Err(deny(500, format!("cannot bind the request for CEL: {e}")));
        }
        // matchConditions: all must hold; an error fails the request (failurePolicy Fail).
        let mut applies = true;
        for c in policy["spec"]["matchConditions"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let expr = c["expression"].as_str().unwrap_or("false");
            match eval_bool(&ctx, expr) {
                Ok(true) => {}
                Ok(false) => {
                    applies = false;
                    break;
                }
                Err(e) if fail_closed => return Err(deny(403, e)),
                Err(_) => {
                    applies = false;
                    break;
                }
            }
        }
        if !applies {
            continue;
        }
        // variables, in order; later ones may use earlier ones.
        let mut cel_vars = std::collections::HashMap::new();
        for v in policy["spec"]["variables"].as_array().into_iter().flatten() {
            let name = v["name"].as_str().unwrap_or_default().to_string();
            let expr = v["expression"].as_str().unwrap_or("null");
            match eval(&ctx, expr) {
                Ok(val) => {
                    cel_vars.insert(name, val);
                }
                Err(e) if fail_closed => {
                    return Err(deny(403, format!("variable {name}: {e}")));
                }
                Err(_) => {}
            }
            ctx.add_variable_from_value("variables", cel_vars.clone());
        }
        for v in policy["spec"]["validations"]
            .as_array()
            .into_iter()
            .flatten()
        {
            let expr = v["expression"].as_str().unwrap_or("false");
            let code = if v["reason"].as_str() == Some("Forbidden") {
                403
            } else {
                422
            };
            match eval_bool(&ctx, expr) {
                Ok(true) => {}
                Ok(false) => {
                    let message = v["messageExpression"]
                        .as_str()
                        .and_then(|m| match eval(&ctx, m) {
                            Ok(CelValue::String(s)) => Some(s.to_string()),
                            _ => None,
                        })
                        .or_else(|| v["message"].as_str().map(str::to_string))
                        .unwrap_or_else(|| format!("failed expression: {expr}"));
                    return Err(deny(code, message));
                }
                Err(e) if fail_closed => return Err(deny(code, e)),
                Err(_) => {}
            }
        }
    }
    Ok(())
}

fn strs(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

/// `matchConstraints.resourceRules` against the request (group, version, operation,
/// resource with subresource; `*` wildcards).
fn matches_resource(constraints: &Value, a: &Attempt<'_>) -> bool {
    let resource = match a.sub {
        Some(s) => format!("{}/{s}", a.rt.plural),
        None => a.rt.plural.clone(),
    };
    strs_rules(constraints).any(|r| {
        let any = |field: &str, want: &str| strs(&r[field]).any(|x| x == "*" || x == want);
        any("apiGroups", &a.rt.group)
            && any("apiVersions", &a.rt.version)
            && any("operations", a.operation)
            && strs(&r["resources"]).any(|x| {
                x == "*/*"
                    || x == resource
                    || (a.sub.is_none() && x == "*")
                    || (a.sub.is_some() && x == format!("{}/*", a.rt.plural))
            })
    })
}

fn strs_rules(constraints: &Value) -> impl Iterator<Item = &Value> {
    constraints["resourceRules"]
        .as_array()
        .into_iter()
        .flatten()
}

/// `request` as admission policies see it.
fn request_value(a: &Attempt<'_>) -> Value {
    json!({
        "operation": a.operation,
        "name": a.object["metadata"]["name"],
        "namespace": a.ns,
        "kind": {"group": a.rt.group, "version": a.rt.version, "kind": a.rt.kind},
        "resource": {"group": a.rt.group, "version": a.rt.version, "resource": a.rt.plural},
        "subResource": a.sub.unwrap_or_default(),
        "dryRun": false,
        "userInfo": {
            "username": a.user.username,
            "uid": a.user.uid,
            "groups": a.user.groups,
            "extra": a.user.extra,
        },
    })
}
