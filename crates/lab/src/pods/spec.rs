//! A pod template onto `podman run`, as a kubelet runs it on a lab node (pure).
//!
//! What it maps, and how:
//! - command and args (`$(VAR)` expanded from the container's environment, as the kubelet does);
//! - env: values (`$(VAR)` of earlier entries expanded), `fieldRef` of `spec.nodeName`,
//!   `status.hostIP`, `status.podIP`, `metadata.name` and `metadata.namespace`; the service
//!   environment `KUBERNETES_SERVICE_HOST`/`PORT` of the API server;
//! - the security context (pod and container, the container's winning): `runAsUser`,
//!   `runAsGroup`, `runAsNonRoot` (checked), `supplementalGroups`, capabilities, `privileged`,
//!   `allowPrivilegeEscalation: false` (no-new-privileges), `readOnlyRootFilesystem` (without
//!   podman's extra tmpfs mounts: Kubernetes adds none), seccomp `RuntimeDefault` (podman's
//!   default profile) or `Unconfined`;
//! - volumes: `hostPath` onto the lab node's own directory for that path (`Directory` must
//!   exist, `DirectoryOrCreate` is created), `emptyDir` onto a fresh directory of the pod (a
//!   tmpfs with `medium: Memory`); the service account's token, CA and namespace at
//!   `/var/run/secrets/kubernetes.io/serviceaccount` unless `automountServiceAccountToken` is
//!   false;
//! - `resources.limits.memory`; `hostNetwork` (the node's namespace, hostname the node's name)
//!   or the pod's own namespace; `terminationGracePeriodSeconds`;
//! - liveness and readiness `httpGet` probes (named ports looked up), with Kubernetes' defaults.
//!
//! Anything else that would change how the container runs (init containers, a second
//! container, other volume or probe kinds, other field references) is refused with the field
//! named, so the lab never runs a pod that differs silently from the bundle's.

use std::collections::BTreeMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::core::v1::{Container, Probe};

use super::Template;
use super::probe::{HttpProbe, http_probe};

/// Where the service account's files are mounted in a pod.
pub const SERVICE_ACCOUNT_DIR: &str = "/var/run/secrets/kubernetes.io/serviceaccount";

/// What the lab gives one pod: who and where it is, and the lab's own settings laid over the
/// template as an overlay would.
#[derive(Clone, Debug)]
pub struct Placement {
    /// The container's name (starts with [`super::CONTAINER_PREFIX`]).
    pub container: String,
    /// `metadata.name`.
    pub pod_name: String,
    /// `metadata.namespace`.
    pub namespace: String,
    /// `spec.nodeName`.
    pub node_name: String,
    /// `status.hostIP`: the node's address.
    pub host_ip: Ipv4Addr,
    /// `status.podIP`: the address of the pod's network namespace.
    pub pod_ip: Ipv4Addr,
    /// The network namespace (under `/run/netns`) the pod runs in: the node's with
    /// `hostNetwork`, else the pod's own.
    pub netns: String,
    /// Per hostPath of the template, the lab node's directory standing for it.
    pub host_paths: BTreeMap<String, PathBuf>,
    /// Where the pod's emptyDir volumes go (a directory per volume).
    pub pod_dir: PathBuf,
    /// A directory holding `token`, `ca.crt` and `namespace` of the pod's service account.
    pub service_account: PathBuf,
    /// The API server (`KUBERNETES_SERVICE_HOST`, `KUBERNETES_SERVICE_PORT`).
    pub api: SocketAddr,
    /// The lab's patches of the template.
    pub overlay: Overlay,
}

/// The lab's settings laid over a template, as a kustomize overlay would patch it.
#[derive(Clone, Debug, Default)]
pub struct Overlay {
    /// The image instead of the template's (the upgrade scenario's new version).
    pub image: Option<String>,
    /// Flags: each replaces the template's `--FLAG=...` or `--FLAG ...` argument, or is added.
    pub flags: Vec<(String, String)>,
    /// Environment variables added after the template's.
    pub env: Vec<(String, String)>,
    /// `securityContext.supplementalGroups` of the pod, in place of the template's.
    pub supplemental_groups: Option<Vec<i64>>,
}

/// How one container of a pod runs.
#[derive(Clone, Debug)]
pub struct Run {
    /// The container's name.
    pub name: String,
    /// `podman run` arguments, the image and its arguments included (not the `run` itself).
    pub args: Vec<String>,
    /// The image.
    pub image: String,
    /// Directories to create before the start (`DirectoryOrCreate` hostPaths, emptyDirs).
    pub create: Vec<PathBuf>,
    /// The memory limit in bytes.
    pub memory_limit: Option<u64>,
    /// The liveness probe.
    pub liveness: Option<HttpProbe>,
    /// The readiness probe.
    pub readiness: Option<HttpProbe>,
    /// `terminationGracePeriodSeconds`.
    pub grace: Duration,
}

/// The template's one container; more than one is refused.
pub fn container(t: &Template) -> Result<&Container> {
    if t.spec
        .init_containers
        .as_ref()
        .is_some_and(|c| !c.is_empty())
    {
        bail!(
            "{}: spec.template.spec.initContainers: the lab runs no init containers",
            t.origin
        );
    }
    match t.spec.containers.as_slice() {
        [c] => Ok(c),
        cs => bail!(
            "{}: spec.template.spec.containers: the lab runs pods of one container, this one has {}",
            t.origin,
            cs.len()
        ),
    }
}

/// `podman run` arguments for the template placed as `p` says.
pub fn run(t: &Template, p: &Placement) -> Result<Run> {
    let c = container(t)?;
    let at = |field: &str| format!("{}: containers[{}].{field}", t.origin, c.name);
    let mut args: Vec<String> = ["--name", &p.container, "--pull", "never", "--rm"]
        .map(String::from)
        .to_vec();
    let mut create = Vec::new();
    let pod = t.spec.security_context.clone().unwrap_or_default();
    let sc = c.security_context.clone().unwrap_or_default();

    // Environment: the template's, then the overlay's, then the service environment.
    let mut env: Vec<(String, String)> = Vec::new();
    for e in c.env.iter().flatten() {
        let value = match (&e.value, &e.value_from) {
            (_, Some(from)) => {
                let field = (from.field_ref.as_ref()).with_context(|| {
                    format!(
                        "{}: only fieldRef sources are modelled",
                        at(&format!("env[{}].valueFrom", e.name))
                    )
                })?;
                match field.field_path.as_str() {
                    "spec.nodeName" => p.node_name.clone(),
                    "status.hostIP" => p.host_ip.to_string(),
                    "status.podIP" => p.pod_ip.to_string(),
                    "metadata.name" => p.pod_name.clone(),
                    "metadata.namespace" => p.namespace.clone(),
                    other => bail!(
                        "{}: field {other} is not modelled by the lab (spec.nodeName, status.hostIP, status.podIP, metadata.name, metadata.namespace are)",
                        at(&format!("env[{}].valueFrom.fieldRef", e.name))
                    ),
                }
            }
            (v, None) => expand(v.as_deref().unwrap_or_default(), &env),
        };
        env.push((e.name.clone(), value));
    }
    env.extend(p.overlay.env.iter().cloned());
    env.push(("KUBERNETES_SERVICE_HOST".into(), p.api.ip().to_string()));
    env.push(("KUBERNETES_SERVICE_PORT".into(), p.api.port().to_string()));
    for (k, v) in &env {
        args.extend(["--env".into(), format!("{k}={v}")]);
    }

    // Security context.
    let user = sc.run_as_user.or(pod.run_as_user);
    let group = sc.run_as_group.or(pod.run_as_group);
    if sc.run_as_non_root.or(pod.run_as_non_root) == Some(true) {
        match user {
            Some(0) => bail!(
                "{}: runAsNonRoot with runAsUser 0: the kubelet would not start it",
                at("securityContext")
            ),
            None => bail!(
                "{}: runAsNonRoot without runAsUser: the lab does not read the image's user; set runAsUser",
                at("securityContext")
            ),
            Some(_) => {}
        }
    }
    if let Some(uid) = user {
        args.extend([
            "--user".into(),
            match group {
                Some(gid) => format!("{uid}:{gid}"),
                None => uid.to_string(),
            },
        ]);
    }
    let groups = (p.overlay.supplemental_groups.clone()).or(pod.supplemental_groups.clone());
    for g in groups.iter().flatten() {
        args.extend(["--group-add".into(), g.to_string()]);
    }
    if let Some(caps) = &sc.capabilities {
        for d in caps.drop.iter().flatten() {
            args.extend(["--cap-drop".into(), d.clone()]);
        }
        for a in caps.add.iter().flatten() {
            args.extend(["--cap-add".into(), a.clone()]);
        }
    }
    if sc.privileged == Some(true) {
        args.push("--privileged".into());
    }
    if sc.allow_privilege_escalation == Some(false) {
        args.extend(["--security-opt".into(), "no-new-privileges".into()]);
    }
    if sc.read_only_root_filesystem == Some(true) {
        args.extend(["--read-only".into(), "--read-only-tmpfs=false".into()]);
    }
    let seccomp = (sc.seccomp_profile.as_ref()).or(pod.seccomp_profile.as_ref());
    match seccomp.map(|s| s.type_.as_str()) {
        None | Some("RuntimeDefault") => {}
        Some("Unconfined") => args.extend(["--security-opt".into(), "seccomp=unconfined".into()]),
        Some(other) => bail!(
            "{}: seccomp profile {other} is not modelled (RuntimeDefault, Unconfined are)",
            at("securityContext.seccompProfile")
        ),
    }

    // Volumes.
    let volumes: BTreeMap<&str, _> = (t.spec.volumes.iter().flatten())
        .map(|v| (v.name.as_str(), v))
        .collect();
    for m in c.volume_mounts.iter().flatten() {
        let v = volumes
            .get(m.name.as_str())
            .with_context(|| format!("{}: no volume {} in the pod", at("volumeMounts"), m.name))?;
        let ro = if m.read_only == Some(true) { ":ro" } else { "" };
        if let Some(h) = &v.host_path {
            let dir = p.host_paths.get(&h.path).with_context(|| {
                format!(
                    "{}: volume {}: the lab has no directory for hostPath {} on a node",
                    t.origin, v.name, h.path
                )
            })?;
            match h.type_.as_deref() {
                Some("DirectoryOrCreate") => create.push(dir.clone()),
                Some("Directory") | None | Some("") => {}
                Some(other) => bail!(
                    "{}: volume {}: hostPath type {other} is not modelled",
                    t.origin,
                    v.name
                ),
            }
            args.extend([
                "--volume".into(),
                format!("{}:{}{ro}", dir.display(), m.mount_path),
            ]);
        } else if let Some(e) = &v.empty_dir {
            if e.medium.as_deref() == Some("Memory") {
                args.extend(["--tmpfs".into(), m.mount_path.clone()]);
            } else {
                let dir = p.pod_dir.join("volumes").join(&v.name);
                create.push(dir.clone());
                args.extend([
                    "--volume".into(),
                    format!("{}:{}{ro}", dir.display(), m.mount_path),
                ]);
            }
        } else {
            bail!(
                "{}: volume {}: only hostPath and emptyDir volumes are modelled",
                t.origin,
                v.name
            );
        }
    }
    if t.spec.automount_service_account_token != Some(false) {
        args.extend([
            "--volume".into(),
            format!("{}:{SERVICE_ACCOUNT_DIR}:ro", p.service_account.display()),
        ]);
    }

    // Resources, network, grace.
    let memory_limit = match (c.resources.as_ref())
        .and_then(|r| r.limits.as_ref())
        .and_then(|l| l.get("memory"))
    {
        Some(q) => Some(quantity(&q.0).with_context(|| at("resources.limits.memory"))?),
        None => None,
    };
    if let Some(bytes) = memory_limit {
        args.extend(["--memory".into(), bytes.to_string()]);
    }
    args.extend(["--network".into(), format!("ns:/run/netns/{}", p.netns)]);
    let hostname = match t.spec.host_network {
        Some(true) => &p.node_name,
        _ => &p.pod_name,
    };
    args.extend(["--hostname".into(), hostname.clone()]);
    let grace = Duration::from_secs(
        u64::try_from(t.spec.termination_grace_period_seconds.unwrap_or(30)).unwrap_or(30),
    );
    args.extend(["--stop-timeout".into(), grace.as_secs().to_string()]);

    // Command and args.
    let image = match &p.overlay.image {
        Some(i) => i.clone(),
        None => c.image.clone().with_context(|| at("image"))?,
    };
    let mut cargs: Vec<String> = c.args.iter().flatten().map(|a| expand(a, &env)).collect();
    overlay_flags(&mut cargs, &p.overlay.flags);
    if let Some(command) = &c.command {
        let command: Vec<String> = command.iter().map(|a| expand(a, &env)).collect();
        args.extend(["--entrypoint".into(), serde_json::to_string(&command)?]);
    }
    args.push(image.clone());
    args.extend(cargs);

    let probe = |which: &str, probe: &Option<Probe>| -> Result<Option<HttpProbe>> {
        probe
            .as_ref()
            .map(|pr| http_probe(pr, c, p.pod_ip, &at(which)))
            .transpose()
    };
    Ok(Run {
        name: p.container.clone(),
        args,
        image,
        create,
        memory_limit,
        liveness: probe("livenessProbe", &c.liveness_probe)?,
        readiness: probe("readinessProbe", &c.readiness_probe)?,
        grace,
    })
}

/// Expands `$(NAME)` references to variables of `env` as the kubelet does: an unknown name stays
/// as written, `$$(NAME)` escapes to `$(NAME)`.
pub fn expand(s: &str, env: &[(String, String)]) -> String {
    let mut out = String::new();
    let mut rest = s;
    while let Some(i) = rest.find('$') {
        out.push_str(&rest[..i]);
        let tail = &rest[i..];
        if let Some(t) = tail.strip_prefix("$$") {
            out.push('$');
            rest = t;
        } else if let Some(inner) = tail.strip_prefix("$(")
            && let Some(end) = inner.find(')')
        {
            let name = &inner[..end];
            match env.iter().rev().find(|(k, _)| k == name) {
                Some((_, v)) => out.push_str(v),
                None => out.push_str(&tail[..end + 3]),
            }
            rest = &inner[end + 1..];
        } else {
            out.push('$');
            rest = &tail[1..];
        }
    }
    out.push_str(rest);
    out
}

/// Lays `flags` over `args`: a `--FLAG=V` or `--FLAG V` of the template gets the overlay's value,
/// a flag the template lacks is added.
fn overlay_flags(args: &mut Vec<String>, flags: &[(String, String)]) {
    for (flag, value) in flags {
        let eq = format!("{flag}=");
        if let Some(i) = args.iter().position(|a| a.starts_with(&eq)) {
            args[i] = format!("{flag}={value}");
        } else if let Some(i) = args.iter().position(|a| a == flag) {
            match args.get_mut(i + 1) {
                Some(v) => *v = value.clone(),
                None => args.push(value.clone()),
            }
        } else {
            args.push(format!("{flag}={value}"));
        }
    }
}

/// A resource quantity in bytes: `256Mi`, `1G`, `1048576`.
pub fn quantity(q: &str) -> Result<u64> {
    let units: [(&str, u64); 8] = [
        ("Ki", 1 << 10),
        ("Mi", 1 << 20),
        ("Gi", 1 << 30),
        ("Ti", 1 << 40),
        ("k", 1000),
        ("M", 1_000_000),
        ("G", 1_000_000_000),
        ("T", 1_000_000_000_000),
    ];
    let (num, mult) = units
        .iter()
        .find_map(|(u, m)| q.strip_suffix(u).map(|n| (n, *m)))
        .unwrap_or((q, 1));
    let n: u64 = num
        .parse()
        .with_context(|| format!("quantity {q}: write a whole number with a unit such as 256Mi"))?;
    n.checked_mul(mult)
        .with_context(|| format!("quantity {q} is too large"))
}

#[cfg(test)]
#[path = "spec_tests.rs"]
mod tests;
