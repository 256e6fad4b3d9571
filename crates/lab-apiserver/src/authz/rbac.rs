//! Authorization: the Kubernetes RBAC authorizer over the Roles, ClusterRoles, RoleBindings
//! and ClusterRoleBindings stored in the server (`rbac.authorization.k8s.io/v1`). A request is
//! allowed when a binding that names the user, one of its groups or its ServiceAccount grants a
//! rule matching the API group, resource (with subresource), verb and object name. Members of
//! `system:masters` are always allowed; any authenticated user may read discovery documents
//! (the built-in `system:discovery` role). Denials are 403 in the authorizer's words.

use serde_json::Value;

use crate::authz::auth::Identity;
use crate::error::ApiError;
use crate::storage::State;

/// What a request does, as the authorizer sees it.
#[derive(Debug, Clone)]
pub struct Attributes<'a> {
    /// `get`, `list`, `watch`, `create`, `update`, `patch`, `delete`, `deletecollection`.
    pub verb: &'a str,
    /// API group (`""` for core).
    pub group: &'a str,
    /// Plural resource name.
    pub resource: &'a str,
    /// Subresource (`status`).
    pub sub: Option<&'a str>,
    /// Namespace of the request, if namespaced.
    pub ns: Option<&'a str>,
    /// Object name from the URL, or from a `metadata.name=` field selector of a list or watch.
    pub name: Option<&'a str>,
}

const ROLES: &str = "rbac.authorization.k8s.io/roles";
const CLUSTER_ROLES: &str = "rbac.authorization.k8s.io/clusterroles";
const ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/rolebindings";
const CLUSTER_ROLE_BINDINGS: &str = "rbac.authorization.k8s.io/clusterrolebindings";

/// Allows the request or returns the 403 a real API server returns.
pub fn authorize(st: &State, user: &Identity, a: &Attributes<'_>) -> Result<(), ApiError> {
    if allowed(st, user, a) {
        return Ok(());
    }
    Err(ApiError::forbidden(
        &user.username,
        a.verb,
        a.group,
        a.resource,
        a.sub,
        a.ns,
        a.name,
    ))
}

/// Whether any binding of the user grants the request.
pub fn allowed(st: &State, user: &Identity, a: &Attributes<'_>) -> bool {
    if user.is_master() {
        return true;
    }
    let cluster_grants = st
        .list(CLUSTER_ROLE_BINDINGS, None)
        .map(|(_, b)| b.value())
        .filter(|b| binds(b, user))
        .filter_map(|b| role_rules(st, &b, None))
        .any(|rules| rules_allow(&rules, a));
    if cluster_grants {
        return true;
    }
    let Some(ns) = a.ns else {
        return false;
    };
    st.list(ROLE_BINDINGS, Some(ns))
        .map(|(_, b)| b.value())
        .filter(|b| binds(b, user))
        .filter_map(|b| role_rules(st, &b, Some(ns)))
        .any(|rules| rules_allow(&rules, a))
}

/// Whether a binding's subjects include the user.
fn binds(binding: &Value, user: &Identity) -> bool {
    let sa = user.service_account_of();
    binding["subjects"]
        .as_array()
        .into_iter()
        .flatten()
        .any(|s| {
            let name = s["name"].as_str().unwrap_or_default();
            match s["kind"].as_str().unwrap_or_default() {
                "User" => name == user.username,
                "Group" => user.groups.iter().any(|g| g == name),
                "ServiceAccount" => sa == Some((s["namespace"].as_str().unwrap_or_default(), name)),
                _ => false,
            }
        })
}

/// The rules of the role a binding refers to (a RoleBinding's Role lives in its namespace).
fn role_rules(st: &State, binding: &Value, ns: Option<&str>) -> Option<Vec<Value>> {
    let r = &binding["roleRef"];
    let name = r["name"].as_str()?;
    let (key, role_ns) = match (r["kind"].as_str()?, ns) {
        ("ClusterRole", _) => (CLUSTER_ROLES, ""),
        ("Role", Some(ns)) => (ROLES, ns),
        _ => return None,
    };
    let role = st.stored_key(key, role_ns, name)?.value();
    role["rules"].as_array().cloned()
}

fn rules_allow(rules: &[Value], a: &Attributes<'_>) -> bool {
    rules.iter().any(|r| rule_allows(r, a))
}

fn strings(v: &Value) -> impl Iterator<Item = &str> {
    v.as_array().into_iter().flatten().filter_map(Value::as_str)
}

/// One PolicyRule against the request, with RBAC's wildcards (`*`, `resource/*`, `*/sub`).
fn rule_allows(rule: &Value, a: &Attributes<'_>) -> bool {
    let verb = strings(&rule["verbs"]).any(|v| v == "*" || v == a.verb);
    let group = strings(&rule["apiGroups"]).any(|g| g == "*" || g == a.group);
    let resource = strings(&rule["resources"]).any(|r| match a.sub {
        None => r == "*" || r == a.resource,
        Some(sub) => {
            r == "*"
                || r == format!("{}/{sub}", a.resource)
                || r == format!("{}/*", a.resource)
                || r == format!("*/{sub}")
        }
    });
    let names: Vec<&str> = strings(&rule["resourceNames"]).collect();
    let name = names.is_empty() || a.name.is_some_and(|n| names.contains(&n));
    verb && group && resource && name
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn attrs<'a>(verb: &'a str, resource: &'a str, name: Option<&'a str>) -> Attributes<'a> {
        Attributes {
            verb,
            group: "coordination.k8s.io",
            resource,
            sub: None,
            ns: Some("ns1"),
            name,
        }
    }

    #[test]
    fn resource_names_limit_a_rule_to_named_requests() {
        let rule = json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
            "resourceNames": ["mine"], "verbs": ["get", "update"]});
        assert!(rule_allows(&rule, &attrs("get", "leases", Some("mine"))));
        assert!(!rule_allows(&rule, &attrs("get", "leases", Some("theirs"))));
        assert!(!rule_allows(&rule, &attrs("list", "leases", None)));
        assert!(!rule_allows(
            &rule,
            &attrs("delete", "leases", Some("mine"))
        ));
    }

    #[test]
    fn a_subresource_needs_its_own_rule() {
        let rule = json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"], "verbs": ["patch"]});
        let mut a = attrs("patch", "leases", Some("x"));
        assert!(rule_allows(&rule, &a));
        a.sub = Some("status");
        assert!(!rule_allows(&rule, &a));
    }

    #[test]
    fn subjects_match_by_user_group_and_service_account() {
        let sa = Identity::service_account("ns1", "agent");
        let b = |s: Value| json!({"subjects": [s]});
        assert!(binds(
            &b(json!({"kind": "ServiceAccount", "name": "agent", "namespace": "ns1"})),
            &sa
        ));
        assert!(!binds(
            &b(json!({"kind": "ServiceAccount", "name": "agent", "namespace": "ns2"})),
            &sa
        ));
        assert!(binds(
            &b(json!({"kind": "Group", "name": "system:serviceaccounts:ns1"})),
            &sa
        ));
        assert!(binds(
            &b(json!({"kind": "User", "name": "alice"})),
            &Identity::user("alice", &[])
        ));
    }
}
