//! Who the lab's processes are: every agent and configurator runs under its own identity with
//! exactly the RBAC and admission policies of the deploy bundle, as in a cluster. The bundle's
//! ServiceAccounts, Roles, ClusterRoles, bindings and ValidatingAdmissionPolicies are applied to
//! the lab API server as they are (the bundle is compiled in, so the lab enforces what ships);
//! each agent gets a token of ServiceAccount `netrollout-agent` with its node in the
//! `authentication.kubernetes.io/node-name` claim, each configurator one of
//! `netrollout-configurator`, written into a kubeconfig of its own. People keep the admin
//! kubeconfig.

use std::path::{Path, PathBuf};

use anyhow::{Context as _, Result};
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use kube::core::{ApiResource, GroupVersionKind};
use netrollout_lab_apiserver::{Identity, LabServer};
use serde_json::Value;

/// The deploy bundle, as `kubectl kustomize config/default` renders it.
const BUNDLE: &str = include_str!("../../../deploy/netrollout.yaml");

/// Kinds of the bundle that decide who may do what.
const SECURITY_KINDS: [&str; 7] = [
    "ServiceAccount",
    "ClusterRole",
    "Role",
    "ClusterRoleBinding",
    "RoleBinding",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// Applies the bundle's ServiceAccounts, RBAC and admission policies (as the admin).
pub async fn install(client: &kube::Client) -> Result<()> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(BUNDLE).context("reading the compiled-in deploy bundle")?;
    let pp = PatchParams::apply("netrollout-lab").force();
    for doc in docs
        .into_iter()
        .filter(|d| SECURITY_KINDS.contains(&d["kind"].as_str().unwrap_or_default()))
    {
        let obj: DynamicObject = serde_json::from_value(doc)?;
        let types = obj
            .types
            .clone()
            .context("a bundle document without kind")?;
        let gvk = GroupVersionKind::try_from(&types)?;
        let plural = format!("{}s", gvk.kind.to_lowercase()).replace("policys", "policies");
        let ar = ApiResource::from_gvk_with_plural(&gvk, &plural);
        let name = obj.metadata.name.clone().unwrap_or_default();
        let api: Api<DynamicObject> = match &obj.metadata.namespace {
            Some(ns) => Api::namespaced_with(client.clone(), ns, &ar),
            None => Api::all_with(client.clone(), &ar),
        };
        api.patch(&name, &pp, &Patch::Apply(&obj))
            .await
            .with_context(|| format!("applying {} {name} of the bundle", gvk.kind))?;
    }
    Ok(())
}

/// Writes the kubeconfig of the agent on `node` (ServiceAccount `netrollout-agent` of
/// `namespace`, bound to that node) and returns its path.
pub fn agent_kubeconfig(
    server: &LabServer,
    state_dir: &Path,
    namespace: &str,
    node: &str,
) -> Result<PathBuf> {
    let path = state_dir.join("identities").join(format!("agent-{node}"));
    write(
        server,
        &path,
        Identity::service_account(namespace, "netrollout-agent").on_node(node),
    )?;
    Ok(path)
}

/// Writes the kubeconfig of configurator replica `id` (ServiceAccount
/// `netrollout-configurator` of `namespace`) and returns its path.
pub fn configurator_kubeconfig(
    server: &LabServer,
    state_dir: &Path,
    namespace: &str,
    id: &str,
) -> Result<PathBuf> {
    let path = state_dir
        .join("identities")
        .join(format!("configurator-{id}"));
    write(
        server,
        &path,
        Identity::service_account(namespace, "netrollout-configurator"),
    )?;
    Ok(path)
}

fn write(server: &LabServer, path: &Path, identity: Identity) -> Result<()> {
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    server
        .write_kubeconfig_for(path, identity)
        .with_context(|| format!("writing {}", path.display()))
}
