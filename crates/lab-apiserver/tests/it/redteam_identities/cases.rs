//! The red team's table: each request that matters (node configs, nodes, revisions, inputs, the
//! configurator's namespace and the rest of the cluster) and who may make it. The parent tries
//! every case as every identity.

use serde_json::{Value, json};

use crate::common::cluster::{HASH, NS, nnc, owner};

const NNC: &str = "/apis/netrollout.io/v1alpha1/nodenetworkconfigs";
const NCR: &str = "/apis/netrollout.io/v1alpha1/networkconfigrevisions";
const VRF: &str = "/apis/netrollout.io/v1alpha1/vrfrouteconfigurations";
const NODES: &str = "/api/v1/nodes";
const MERGE: &str = "application/merge-patch+json";
const STRATEGIC: &str = "application/strategic-merge-patch+json";
const JSON: &str = "application/json";

/// One request and the identities allowed to make it.
pub(super) struct Case {
    pub(super) what: &'static str,
    pub(super) method: &'static str,
    pub(super) path: String,
    pub(super) content_type: &'static str,
    pub(super) body: Value,
    pub(super) allowed: &'static [&'static str],
}

fn case(
    what: &'static str,
    method: &'static str,
    path: impl Into<String>,
    body: Value,
    allowed: &'static [&'static str],
) -> Case {
    let content_type = match method {
        "PATCH" => MERGE,
        _ => JSON,
    };
    Case {
        what,
        method,
        path: path.into(),
        content_type,
        body,
        allowed,
    }
}

fn strategic(mut c: Case) -> Case {
    c.content_type = STRATEGIC;
    c
}

/// Every case; the uids are those of node-a and of the `default` namespace (owner references).
pub(super) fn cases(node_a_uid: &str, default_uid: &str) -> Vec<Case> {
    let nnc_path = |n: &str| format!("{NNC}/{n}");
    let node = |n: &str| format!("{NODES}/{n}");
    let ncr = |n: &str| format!("{NCR}/{n}");
    let valid_owner = owner("Namespace", "v1", "default", default_uid);
    let condition = json!({"status": {"conditions": [{"type": "NetworkConfigReady", "status": "True",
        "reason": "Provisioned", "message": "ncr-1"}]}});
    let hold = json!({"metadata": {"finalizers": ["example.com/hold"]}});
    let ncr_2 = json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "NetworkConfigRevision",
        "metadata": {"name": "ncr-2"}, "spec": {"sequence": 2, "hash": HASH.replace('0', "2"),
        "paused": false, "snapshot": {"vrfRouteConfigurations": [], "layer2NetworkConfigurations": [], "routingTables": []}}});
    let node_c = json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "node-c"}});
    let vrf = json!({"apiVersion": "netrollout.io/v1alpha1", "kind": "VRFRouteConfiguration",
        "metadata": {"name": "v1"}, "spec": {"vrf": "mir", "seq": 10, "import": [], "export": []}});
    let event = json!({"apiVersion": "events.k8s.io/v1", "kind": "Event",
        "metadata": {"generateName": "x.", "namespace": NS}, "eventTime": "2026-01-01T00:00:00.000000Z",
        "reportingController": "netrollout.io/agent", "reportingInstance": "node-a", "action": "Apply",
        "reason": "Provisioned", "type": "Normal", "regarding": {"kind": "Node", "name": "node-a"}});
    let lease = |ns: &str, name: &str| {
        json!({"apiVersion": "coordination.k8s.io/v1", "kind": "Lease",
            "metadata": {"name": name, "namespace": ns}, "spec": {"holderIdentity": "x"}})
    };
    let escalate = json!({"apiVersion": "rbac.authorization.k8s.io/v1", "kind": "ClusterRoleBinding",
        "metadata": {"name": "me-admin"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "netrollout-configurator"},
        "subjects": [{"kind": "Group", "name": "system:authenticated", "apiGroup": "rbac.authorization.k8s.io"}]});
    vec![
        // Node configs.
        case(
            "read a node config",
            "GET",
            nnc_path("node-a"),
            Value::Null,
            &["agent-a", "agent-b", "configurator", "olga"],
        ),
        case(
            "list node configs",
            "GET",
            NNC,
            Value::Null,
            &["agent-a", "agent-b", "configurator", "olga"],
        ),
        case(
            "report node-a's status",
            "PATCH",
            format!("{}/status", nnc_path("node-a")),
            json!({"status": {"phase": "Provisioned", "observedRevision": "ncr-1"}}),
            &["agent-a"],
        ),
        case(
            "report node-b's status",
            "PATCH",
            format!("{}/status", nnc_path("node-b")),
            json!({"status": {"phase": "Provisioned", "observedRevision": "ncr-1"}}),
            &["agent-b"],
        ),
        case(
            "dispatch a node config's spec",
            "PATCH",
            nnc_path("node-a"),
            json!({"spec": {"revision": "ncr-evil"}}),
            &["configurator"],
        ),
        case(
            "annotate a node config for a retry",
            "PATCH",
            nnc_path("node-a"),
            json!({"metadata": {"annotations": {"netrollout.io/retry": "1"}}}),
            &["configurator", "olga"],
        ),
        case(
            "set a node config's owner",
            "PATCH",
            nnc_path("node-a"),
            owner("Node", "v1", "node-a", node_a_uid),
            &["configurator"],
        ),
        case(
            "put a finalizer on a node config",
            "PATCH",
            nnc_path("node-b"),
            hold.clone(),
            &["configurator"],
        ),
        case(
            "create a node config",
            "POST",
            NNC,
            nnc("node-c"),
            &["configurator"],
        ),
        case(
            "delete a node config",
            "DELETE",
            nnc_path("node-c"),
            Value::Null,
            &["configurator"],
        ),
        // Nodes.
        case(
            "read a node",
            "GET",
            node("node-a"),
            Value::Null,
            &["agent-a", "agent-b", "configurator", "olga"],
        ),
        case(
            "list nodes",
            "GET",
            NODES,
            Value::Null,
            &["configurator", "olga"],
        ),
        strategic(case(
            "set node-a's NetworkConfigReady",
            "PATCH",
            format!("{}/status", node("node-a")),
            condition.clone(),
            &["agent-a"],
        )),
        strategic(case(
            "set node-b's NetworkConfigReady",
            "PATCH",
            format!("{}/status", node("node-b")),
            condition,
            &["agent-b"],
        )),
        case(
            "label a node",
            "PATCH",
            node("node-a"),
            json!({"metadata": {"labels": {"topology.kubernetes.io/zone": "evil"}}}),
            &[],
        ),
        case(
            "annotate a node",
            "PATCH",
            node("node-a"),
            json!({"metadata": {"annotations": {"x": "y"}}}),
            &[],
        ),
        case(
            "set a node's owner",
            "PATCH",
            node("node-a"),
            valid_owner.clone(),
            &[],
        ),
        case(
            "set a node's owner through its status",
            "PATCH",
            format!("{}/status", node("node-a")),
            valid_owner.clone(),
            &[],
        ),
        case(
            "annotate a node through its status",
            "PATCH",
            format!("{}/status", node("node-a")),
            json!({"metadata": {"annotations": {"x": "y"}}}),
            &[],
        ),
        case(
            "put a finalizer on a node",
            "PATCH",
            node("node-a"),
            hold.clone(),
            &[],
        ),
        case(
            "cordon a node",
            "PATCH",
            node("node-a"),
            json!({"spec": {"unschedulable": true}}),
            &[],
        ),
        case("create a node", "POST", NODES, node_c, &[]),
        case("delete a node", "DELETE", node("node-b"), Value::Null, &[]),
        // Revisions.
        case(
            "read a revision",
            "GET",
            ncr("ncr-1"),
            Value::Null,
            &["configurator", "olga"],
        ),
        case(
            "pause a revision",
            "PATCH",
            ncr("ncr-1"),
            json!({"spec": {"paused": true}}),
            &["configurator", "olga"],
        ),
        case(
            "label a revision",
            "PATCH",
            ncr("ncr-1"),
            json!({"metadata": {"labels": {"team": "net"}}}),
            &["configurator", "olga"],
        ),
        case(
            "rewrite a revision's snapshot",
            "PATCH",
            ncr("ncr-1"),
            json!({"spec": {"snapshot": {"routingTables": [{"name": "t", "spec": {"tableId": 100}}]}}}),
            &[],
        ),
        case(
            "set a revision's owner",
            "PATCH",
            ncr("ncr-1"),
            valid_owner,
            &["configurator"],
        ),
        case(
            "put a finalizer on a revision",
            "PATCH",
            ncr("ncr-1"),
            hold,
            &["configurator"],
        ),
        case("create a revision", "POST", NCR, ncr_2, &["configurator"]),
        case(
            "delete a revision",
            "DELETE",
            ncr("ncr-2"),
            Value::Null,
            &["configurator"],
        ),
        // Inputs.
        case("create an input", "POST", VRF, vrf, &["olga"]),
        case(
            "read an input",
            "GET",
            format!("{VRF}/v1"),
            Value::Null,
            &["configurator", "olga"],
        ),
        case(
            "write an input's Accepted status",
            "PATCH",
            format!("{VRF}/v1/status"),
            json!({"status": {"conditions": []}}),
            &["configurator"],
        ),
        case(
            "delete an input",
            "DELETE",
            format!("{VRF}/v1"),
            Value::Null,
            &["olga"],
        ),
        // The configurator's namespace and the rest of the cluster.
        case(
            "read the global pause",
            "GET",
            format!("/api/v1/namespaces/{NS}/configmaps/netrollout-control"),
            Value::Null,
            &["configurator", "olga"],
        ),
        case(
            "set the global pause",
            "PATCH",
            format!("/api/v1/namespaces/{NS}/configmaps/netrollout-control"),
            json!({"data": {"paused": "true"}}),
            &["olga"],
        ),
        case(
            "read another config map",
            "GET",
            format!("/api/v1/namespaces/{NS}/configmaps/someone-elses"),
            Value::Null,
            &[],
        ),
        case(
            "take the leader lease",
            "POST",
            format!("/apis/coordination.k8s.io/v1/namespaces/{NS}/leases"),
            lease(NS, "netrollout-configurator"),
            &["configurator"],
        ),
        case(
            "create a lease in kube-system",
            "POST",
            "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases",
            lease("kube-system", "kube-scheduler"),
            &[],
        ),
        case(
            "record an event",
            "POST",
            format!("/apis/events.k8s.io/v1/namespaces/{NS}/events"),
            event,
            &["agent-a", "agent-b", "configurator"],
        ),
        case(
            "bind a role to everyone",
            "POST",
            "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
            escalate,
            &[],
        ),
        case(
            "remove the agent's admission policy",
            "DELETE",
            "/apis/admissionregistration.k8s.io/v1/validatingadmissionpolicybindings/netrollout-agent-own-node",
            Value::Null,
            &[],
        ),
        case(
            "change a CRD",
            "PATCH",
            "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/networkconfigrevisions.netrollout.io",
            json!({"metadata": {"labels": {"x": "y"}}}),
            &[],
        ),
        case(
            "delete a namespace",
            "DELETE",
            format!("/api/v1/namespaces/{NS}"),
            Value::Null,
            &[],
        ),
    ]
}
