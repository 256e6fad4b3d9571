//! Resource types the server serves: the built-in kinds and the kinds defined by stored
//! CustomResourceDefinitions.

use std::collections::BTreeMap;
use std::sync::Arc;

use kube_cel::CompiledSchema;
use serde_json::Value;

/// How objects of a built-in kind are checked on write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `v1` Node.
    Node,
    /// `v1` Namespace.
    Namespace,
    /// `coordination.k8s.io/v1` Lease.
    Lease,
    /// `v1` Event.
    CoreEvent,
    /// `events.k8s.io/v1` Event.
    Event,
    /// `v1` ConfigMap.
    ConfigMap,
    /// `apiextensions.k8s.io/v1` CustomResourceDefinition.
    Crd,
    /// `v1` ServiceAccount.
    ServiceAccount,
    /// `rbac.authorization.k8s.io/v1` Role.
    Role,
    /// `rbac.authorization.k8s.io/v1` ClusterRole.
    ClusterRole,
    /// `rbac.authorization.k8s.io/v1` RoleBinding.
    RoleBinding,
    /// `rbac.authorization.k8s.io/v1` ClusterRoleBinding.
    ClusterRoleBinding,
    /// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicy.
    Vap,
    /// `admissionregistration.k8s.io/v1` ValidatingAdmissionPolicyBinding.
    VapBinding,
}

/// One printer column (a CRD `additionalPrinterColumns` entry or a built-in column).
#[derive(Debug, Clone)]
pub struct Column {
    /// Header.
    pub name: String,
    /// OpenAPI type: string, integer, number, boolean or date.
    pub type_: String,
    /// Description shown by `kubectl get -o wide` help.
    pub description: String,
    /// 0 shows by default, higher only with `-o wide`.
    pub priority: i64,
    /// Simple JSONPath (`.status.phase`, `.spec.items[*].name`, filters).
    pub json_path: String,
}

/// A servable resource in one group-version.
#[derive(Debug, Clone)]
pub struct ResourceType {
    /// API group ("" for core).
    pub group: String,
    /// Version served.
    pub version: String,
    /// Kind.
    pub kind: String,
    /// Plural resource name used in URLs.
    pub plural: String,
    /// Singular name.
    pub singular: String,
    /// Namespaced or cluster-scoped.
    pub namespaced: bool,
    /// Short names (`kubectl get cm`).
    pub short_names: Vec<String>,
    /// Categories (`kubectl get all`).
    pub categories: Vec<String>,
    /// Whether `/status` is a separate subresource.
    pub status_subresource: bool,
    /// Printer columns beyond NAME.
    pub columns: Vec<Column>,
    /// The CRD version's `openAPIV3Schema`, for custom kinds.
    pub schema: Option<Value>,
    /// The `x-kubernetes-validations` rules of `schema`, compiled once when the CRD is written.
    pub cel: Option<Arc<CompiledSchema>>,
    /// Which built-in kind this is, if any.
    pub builtin: Option<Builtin>,
}

/// The storage key of a resource: all versions of one group and plural share objects.
pub type TypeKey = Arc<str>;

impl ResourceType {
    /// The storage key (`group/plural`).
    pub fn key(&self) -> TypeKey {
        if self.builtin == Some(Builtin::Event) {
            // events.k8s.io/v1 Events are stored as v1 Events (see `convert`).
            return Arc::from("/events");
        }
        Arc::from(format!("{}/{}", self.group, self.plural))
    }

    /// `apiVersion` of objects in this version.
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// `group/version` path prefix (`api/v1` or `apis/g/v`).
    pub fn gv_path(&self) -> String {
        if self.group.is_empty() {
            format!("api/{}", self.version)
        } else {
            format!("apis/{}/{}", self.group, self.version)
        }
    }
}

fn col(name: &str, type_: &str, json_path: &str) -> Column {
    Column {
        name: name.into(),
        type_: type_.into(),
        description: String::new(),
        priority: 0,
        json_path: json_path.into(),
    }
}

#[allow(clippy::too_many_arguments)]
fn builtin(
    group: &str,
    kind: &str,
    plural: &str,
    namespaced: bool,
    short: &[&str],
    status: bool,
    columns: Vec<Column>,
    b: Builtin,
) -> ResourceType {
    ResourceType {
        group: group.into(),
        version: "v1".into(),
        kind: kind.into(),
        plural: plural.into(),
        singular: kind.to_lowercase(),
        namespaced,
        short_names: short.iter().map(|s| s.to_string()).collect(),
        categories: vec![],
        status_subresource: status,
        columns,
        schema: None,
        cel: None,
        builtin: Some(b),
    }
}

/// The built-in kinds.
pub fn builtins() -> Vec<ResourceType> {
    let age = || col("Age", "date", ".metadata.creationTimestamp");
    vec![
        builtin(
            "",
            "Node",
            "nodes",
            false,
            &["no"],
            true,
            vec![
                col("Status", "string", ".status.conditions"),
                age(),
                col("Version", "string", ".status.nodeInfo.kubeletVersion"),
            ],
            Builtin::Node,
        ),
        builtin(
            "",
            "Namespace",
            "namespaces",
            false,
            &["ns"],
            true,
            vec![col("Status", "string", ".status.phase"), age()],
            Builtin::Namespace,
        ),
        builtin(
            "",
            "ConfigMap",
            "configmaps",
            true,
            &["cm"],
            false,
            vec![age()],
            Builtin::ConfigMap,
        ),
        builtin(
            "",
            "Event",
            "events",
            true,
            &["ev"],
            false,
            vec![
                col("Last Seen", "date", ".lastTimestamp"),
                col("Type", "string", ".type"),
                col("Reason", "string", ".reason"),
                col("Object", "string", ".involvedObject"),
                col("Message", "string", ".message"),
            ],
            Builtin::CoreEvent,
        ),
        builtin(
            "events.k8s.io",
            "Event",
            "events",
            true,
            &["ev"],
            false,
            vec![
                col("Last Seen", "date", ".eventTime"),
                col("Type", "string", ".type"),
                col("Reason", "string", ".reason"),
                col("Object", "string", ".regarding"),
                col("Note", "string", ".note"),
            ],
            Builtin::Event,
        ),
        builtin(
            "coordination.k8s.io",
            "Lease",
            "leases",
            true,
            &[],
            false,
            vec![col("Holder", "string", ".spec.holderIdentity"), age()],
            Builtin::Lease,
        ),
        builtin(
            "apiextensions.k8s.io",
            "CustomResourceDefinition",
            "customresourcedefinitions",
            false,
            &["crd", "crds"],
            true,
            vec![col("Created At", "string", ".metadata.creationTimestamp")],
            Builtin::Crd,
        ),
        builtin(
            "",
            "ServiceAccount",
            "serviceaccounts",
            true,
            &["sa"],
            false,
            vec![age()],
            Builtin::ServiceAccount,
        ),
        builtin(
            RBAC,
            "Role",
            "roles",
            true,
            &[],
            false,
            vec![age()],
            Builtin::Role,
        ),
        builtin(
            RBAC,
            "ClusterRole",
            "clusterroles",
            false,
            &[],
            false,
            vec![age()],
            Builtin::ClusterRole,
        ),
        builtin(
            RBAC,
            "RoleBinding",
            "rolebindings",
            true,
            &[],
            false,
            vec![col("Role", "string", ".roleRef.name"), age()],
            Builtin::RoleBinding,
        ),
        builtin(
            RBAC,
            "ClusterRoleBinding",
            "clusterrolebindings",
            false,
            &[],
            false,
            vec![col("Role", "string", ".roleRef.name"), age()],
            Builtin::ClusterRoleBinding,
        ),
        builtin(
            ADMISSION,
            "ValidatingAdmissionPolicy",
            "validatingadmissionpolicies",
            false,
            &[],
            true,
            vec![age()],
            Builtin::Vap,
        ),
        builtin(
            ADMISSION,
            "ValidatingAdmissionPolicyBinding",
            "validatingadmissionpolicybindings",
            false,
            &[],
            false,
            vec![col("Policy", "string", ".spec.policyName"), age()],
            Builtin::VapBinding,
        ),
    ]
}

const RBAC: &str = "rbac.authorization.k8s.io";
const ADMISSION: &str = "admissionregistration.k8s.io";

/// The resource types a CRD object defines (one per served version).
pub fn from_crd(crd: &Value) -> Vec<ResourceType> {
    let spec = &crd["spec"];
    let s = |v: &Value| v.as_str().unwrap_or_default().to_string();
    let strs = |v: &Value| -> Vec<String> {
        v.as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|x| x.as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    let names = &spec["names"];
    let kind = s(&names["kind"]);
    let plural = s(&names["plural"]);
    if kind.is_empty() || plural.is_empty() {
        return vec![];
    }
    let singular = match s(&names["singular"]) {
        x if x.is_empty() => kind.to_lowercase(),
        x => x,
    };
    let mut out = vec![];
    for v in spec["versions"].as_array().into_iter().flatten() {
        if v["served"].as_bool() == Some(false) {
            continue;
        }
        let columns = match v["additionalPrinterColumns"].as_array() {
            Some(cols) => cols
                .iter()
                .map(|c| Column {
                    name: s(&c["name"]),
                    type_: s(&c["type"]),
                    description: s(&c["description"]),
                    priority: c["priority"].as_i64().unwrap_or(0),
                    json_path: s(&c["jsonPath"]),
                })
                .collect(),
            None => vec![col("Age", "date", ".metadata.creationTimestamp")],
        };
        out.push(ResourceType {
            group: s(&spec["group"]),
            version: s(&v["name"]),
            kind: kind.clone(),
            plural: plural.clone(),
            singular: singular.clone(),
            namespaced: spec["scope"].as_str() != Some("Cluster"),
            short_names: strs(&names["shortNames"]),
            categories: strs(&names["categories"]),
            status_subresource: v["subresources"]["status"].is_object(),
            columns,
            schema: Some(v["schema"]["openAPIV3Schema"].clone()),
            cel: Some(Arc::new(netrollout_crdcheck::cel_rules::compile(
                &v["schema"]["openAPIV3Schema"],
            ))),
            builtin: None,
        });
    }
    out
}

/// All servable types, indexed by group, version and plural.
#[derive(Debug, Default, Clone)]
pub struct Registry {
    types: BTreeMap<(String, String, String), Arc<ResourceType>>,
}

impl Registry {
    /// A registry holding the built-in kinds.
    pub fn with_builtins() -> Self {
        let mut r = Self::default();
        for t in builtins() {
            r.insert(t);
        }
        r
    }

    /// Adds or replaces a type.
    pub fn insert(&mut self, t: ResourceType) {
        self.types.insert(
            (t.group.clone(), t.version.clone(), t.plural.clone()),
            Arc::new(t),
        );
    }

    /// Removes every version of `group`/`plural` (a deleted CRD).
    pub fn remove_all(&mut self, group: &str, plural: &str) {
        self.types
            .retain(|(g, _, p), _| !(g == group && p == plural));
    }

    /// The type served at `group`/`version`/`plural`.
    pub fn get(&self, group: &str, version: &str, plural: &str) -> Option<Arc<ResourceType>> {
        self.types
            .get(&(group.to_string(), version.to_string(), plural.to_string()))
            .cloned()
    }

    /// Every type, ordered by group, version and plural.
    pub fn all(&self) -> impl Iterator<Item = &Arc<ResourceType>> {
        self.types.values()
    }

    /// Any version of the type stored under `key`.
    pub fn by_key(&self, key: &str) -> Option<Arc<ResourceType>> {
        self.types.values().find(|t| &*t.key() == key).cloned()
    }
}
