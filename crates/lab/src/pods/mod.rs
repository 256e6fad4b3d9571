//! Container mode (`--containers`): the agents and configurators run as their images under
//! podman, in the shape the deploy bundle gives their pods.
//!
//! The pod templates are read from `deploy/netrollout.yaml` (compiled in, as
//! [`crate::identities`] reads its RBAC): the DaemonSet `netrollout-agent` and the Deployment
//! `netrollout-configurator`. [`spec`] maps a template onto `podman run` arguments as a kubelet
//! would run it on a lab node (command and args with `$(VAR)` expansion, environment with its
//! field references, security context, hostPath and emptyDir volumes, the service account's
//! token, the memory limit); [`kubelet`] runs the container, polls its liveness and readiness
//! probes as the kubelet does and restarts it when its liveness fails or it exits.
//!
//! What is not modelled: admission of the pod itself, scheduling, requests, CPU limits and
//! every other cgroup limit but memory, DNS, image pulls (the images are built on this machine
//! by `hack/images.sh`).

use std::path::{Path, PathBuf};
use std::process::Stdio;

use anyhow::{Context as _, Result, bail};
use k8s_openapi::api::apps::v1::{DaemonSet, Deployment};
use k8s_openapi::api::core::v1::PodSpec;
use netrollout_frr::daemons::Version;
use serde_json::Value;
use tokio::process::Command;

pub mod kubelet;
mod probe;
pub mod spec;

/// The deploy bundle, as `kubectl kustomize config/default` renders it.
const BUNDLE: &str = include_str!("../../../../deploy/netrollout.yaml");

/// Prefix of every container the lab starts (`netrollout-lab down` removes them by it).
pub const CONTAINER_PREFIX: &str = "nrlab-";

/// A workload's pod template, read from the bundle.
#[derive(Clone, Debug)]
pub struct Template {
    /// `DaemonSet/netrollout-agent` or `Deployment/netrollout-configurator`: where it came from.
    pub origin: String,
    /// The pod spec.
    pub spec: PodSpec,
}

/// The kustomize component that gives the agent NET_RAW for ICMP probes, which the lab's
/// health-check files use (as docs/operations.md tells an operator to use it).
const ICMP_PROBES: &str =
    include_str!("../../../../config/components/icmp-probes/kustomization.yaml");

/// The agent's pod template: the bundle's DaemonSet `netrollout-agent`.
pub fn agent() -> Result<Template> {
    agent_with(&[])
}

/// The agent's pod template with the ICMP probes component applied (the lab's agents probe
/// with ICMP).
pub fn agent_with_icmp_probes() -> Result<Template> {
    agent_with(&[("config/components/icmp-probes", ICMP_PROBES)])
}

fn agent_with(components: &[(&str, &str)]) -> Result<Template> {
    let mut doc = document("DaemonSet", "netrollout-agent")?;
    for (name, text) in components {
        component(&mut doc, "DaemonSet", "netrollout-agent", text)
            .with_context(|| format!("applying {name}"))?;
    }
    let ds: DaemonSet =
        serde_json::from_value(doc).context("reading DaemonSet netrollout-agent of the bundle")?;
    let spec = ds.spec.and_then(|s| s.template.spec);
    Ok(Template {
        origin: "DaemonSet/netrollout-agent".into(),
        spec: spec.context("the bundle's DaemonSet netrollout-agent has no pod spec")?,
    })
}

/// The configurator's pod template: the bundle's Deployment `netrollout-configurator`.
pub fn configurator() -> Result<Template> {
    let d: Deployment = workload("Deployment", "netrollout-configurator")?;
    let spec = d.spec.and_then(|s| s.template.spec);
    Ok(Template {
        origin: "Deployment/netrollout-configurator".into(),
        spec: spec.context("the bundle's Deployment netrollout-configurator has no pod spec")?,
    })
}

fn workload<T: serde::de::DeserializeOwned>(kind: &str, name: &str) -> Result<T> {
    serde_json::from_value(document(kind, name)?)
        .with_context(|| format!("reading {kind} {name} of the bundle"))
}

fn document(kind: &str, name: &str) -> Result<Value> {
    let docs: Vec<Value> =
        serde_saphyr::from_multiple(BUNDLE).context("reading the compiled-in deploy bundle")?;
    (docs.into_iter())
        .find(|d| d["kind"] == kind && d["metadata"]["name"] == name)
        .with_context(|| format!("the deploy bundle has no {kind} {name}"))
}

/// Applies a kustomize component's JSON patches that target `kind` `name` to `doc` (the
/// operations the component uses: `add`, `-` appending to a list).
fn component(doc: &mut Value, kind: &str, name: &str, text: &str) -> Result<()> {
    let c: Value = serde_saphyr::from_str(text)?;
    for p in c["patches"].as_array().into_iter().flatten() {
        if p["target"]["kind"] != kind || p["target"]["name"] != name {
            continue;
        }
        let ops: Vec<Value> = serde_saphyr::from_str(p["patch"].as_str().unwrap_or_default())?;
        for op in ops {
            let path = op["path"].as_str().unwrap_or_default();
            if op["op"] != "add" {
                bail!("patch {op}: the lab applies `add` operations only");
            }
            let (parent, last) = path.rsplit_once('/').unwrap_or_default();
            let target = doc
                .pointer_mut(parent)
                .with_context(|| format!("patch {path}: no {parent} in the bundle"))?;
            match (target, last) {
                (Value::Array(a), "-") => a.push(op["value"].clone()),
                (Value::Object(o), key) => {
                    o.insert(key.to_string(), op["value"].clone());
                }
                _ => bail!("patch {path}: the lab cannot apply it"),
            }
        }
    }
    Ok(())
}

/// The image of the template's one container.
pub fn image(template: &Template) -> Result<String> {
    let c = spec::container(template)?;
    c.image
        .clone()
        .with_context(|| format!("{}: container {} has no image", template.origin, c.name))
}

/// The agent's image for FRR `version` when it is not the template's: FRR 10.3's is the one
/// built on Debian 13 (`hack/images.sh` tags it with `-trixie` after the version).
pub fn agent_image(template: &Template, version: Version) -> Result<Option<String>> {
    Ok(match version {
        Version::V8_4 => None,
        Version::V10_3 => Some(format!("{}-trixie", image(template)?)),
    })
}

/// A `podman` command using `conf` (the lab's containers.conf: runc, no default ulimits).
pub fn podman(conf: &Path) -> Command {
    let mut cmd = Command::new("podman");
    cmd.env("CONTAINERS_CONF", conf)
        .stdin(Stdio::null())
        .kill_on_drop(true);
    cmd
}

/// Writes the lab's containers.conf into `state_dir` and returns its path: containers run with
/// runc (crun refuses some machines' cgroup layout) and without podman's default ulimits
/// (raising them fails where the lab's own limits are lower).
pub fn containers_conf(state_dir: &Path) -> Result<PathBuf> {
    let path = state_dir.join("containers.conf");
    std::fs::write(
        &path,
        "[containers]\ndefault_ulimits = []\n\n[engine]\nruntime = \"runc\"\n",
    )
    .with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// Checks that podman runs and that the bundle's images (the agent's of FRR `frr`) exist on
/// this machine; says how to get them.
pub fn preflight(frr: Version) -> Result<()> {
    let agent = agent()?;
    let agent_image = agent_image(&agent, frr)?.map_or_else(|| image(&agent), Ok)?;
    let images = [agent_image, image(&configurator()?)?];
    let podman = || {
        let mut cmd = std::process::Command::new("podman");
        cmd.stdin(Stdio::null()).stderr(Stdio::null());
        cmd
    };
    let out = podman().arg("--version").output();
    if !out.is_ok_and(|o| o.status.success()) {
        bail!(
            "--containers runs the agents and configurators under podman, which is not \
             installed: hack/images.sh installs it (with runc) and builds the images"
        );
    }
    for image in &images {
        let ok = podman()
            .args(["image", "exists", image])
            .status()
            .is_ok_and(|s| s.success());
        if !ok {
            bail!(
                "--containers needs the image {image}, which this machine does not have: \
                 build the images with hack/images.sh (e.g. `hack/images.sh --bin-dir \
                 target/debug` after `cargo build --bins`; for --frr 10.3 the agent's with \
                 DEBIAN_RELEASE=trixie)"
            );
        }
    }
    Ok(())
}

/// The pid of container `name`'s main process.
pub async fn pid(conf: &Path, name: &str) -> Result<u32> {
    let out = podman(conf)
        .args(["inspect", "--format", "{{.State.Pid}}", name])
        .output()
        .await?;
    String::from_utf8_lossy(&out.stdout)
        .trim()
        .parse()
        .ok()
        .filter(|p| *p != 0)
        .with_context(|| format!("container {name} runs no process"))
}

/// Tags `image` as `tag` too (the upgrade scenario's new version).
pub async fn tag(conf: &Path, image: &str, tag: &str) -> Result<()> {
    let out = podman(conf).args(["tag", image, tag]).output().await?;
    if !out.status.success() {
        bail!(
            "podman tag {image} {tag}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// The body of `GET http://ADDR/PATH` (an agent's `/metrics`).
pub async fn fetch(addr: std::net::SocketAddr, path: &str) -> Result<String> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    let get = async {
        let mut s = tokio::net::TcpStream::connect(addr).await?;
        // HTTP/1.0: the body comes whole, not chunked.
        let req = format!("GET {path} HTTP/1.0\r\nHost: {addr}\r\n\r\n");
        s.write_all(req.as_bytes()).await?;
        let mut body = String::new();
        s.read_to_string(&mut body).await?;
        anyhow::Ok(body)
    };
    let text = tokio::time::timeout(std::time::Duration::from_secs(5), get)
        .await
        .with_context(|| format!("GET http://{addr}{path}: no answer within 5 s"))?
        .with_context(|| format!("GET http://{addr}{path}"))?;
    match text.split_once("\r\n\r\n") {
        Some((head, body)) if head.split_whitespace().nth(1) == Some("200") => Ok(body.to_string()),
        _ => bail!(
            "GET http://{addr}{path}: {}",
            text.lines().next().unwrap_or_default()
        ),
    }
}

/// Removes every container of a lab (named [`CONTAINER_PREFIX`]...); returns their names. Does
/// nothing when podman is not installed.
pub fn remove_all(conf: Option<&Path>) -> Vec<String> {
    let mut cmd = std::process::Command::new("podman");
    if let Some(conf) = conf {
        cmd.env("CONTAINERS_CONF", conf);
    }
    let Ok(out) = cmd
        .args(["ps", "-a", "--format", "{{.Names}}"])
        .stderr(Stdio::null())
        .output()
    else {
        return Vec::new();
    };
    let names: Vec<String> = String::from_utf8_lossy(&out.stdout)
        .lines()
        .filter(|n| n.starts_with(CONTAINER_PREFIX))
        .map(String::from)
        .collect();
    for name in &names {
        let mut rm = std::process::Command::new("podman");
        if let Some(conf) = conf {
            rm.env("CONTAINERS_CONF", conf);
        }
        let _ = rm
            .args(["rm", "-f", "-t", "0", name])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
    }
    names
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bundle_has_both_templates_with_their_images() {
        let a = agent().unwrap();
        assert!(image(&a).unwrap().contains("/netrollout-agent:"), "{a:?}");
        let c = configurator().unwrap();
        assert!(image(&c).unwrap().contains("/netrollout-configurator:"));
    }

    #[test]
    fn the_icmp_component_adds_net_raw_to_the_agent_only() {
        let caps = |t: &Template| {
            t.spec.containers[0]
                .security_context
                .clone()
                .unwrap()
                .capabilities
                .unwrap()
                .add
                .unwrap_or_default()
        };
        assert_eq!(caps(&agent().unwrap()), ["NET_ADMIN"]);
        assert_eq!(
            caps(&agent_with_icmp_probes().unwrap()),
            ["NET_ADMIN", "NET_RAW"]
        );
    }
}
