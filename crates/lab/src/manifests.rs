//! `--manifests DIR`: the user's own input files instead of the samples, so a team can try its
//! real config in the lab before a cluster sees it.
//!
//! Every `*.yaml`, `*.yml` and `*.json` file directly in the directory (as `kubectl apply -f DIR`
//! reads it: not recursive, in name order) is read; each document must be one of the four input
//! kinds. Manifests in the Go operator's `v1alpha1` API groups are taken as they are with their
//! `apiVersion` changed to `netrollout.io/v1alpha1` (what `kubectl netrollout migrate` does for a
//! cluster). Anything else is refused before the lab starts, naming the file, the document and
//! what to do: nothing is applied from a directory with one bad document.

use std::path::{Path, PathBuf};

use serde_json::Value;

/// The kinds the lab applies.
pub const KINDS: [&str; 4] = [
    "VRFRouteConfiguration",
    "Layer2NetworkConfiguration",
    "RoutingTable",
    "BGPPeering",
];

/// The Go operator's API groups, converted by changing `apiVersion`.
pub const LEGACY_GROUPS: [&str; 2] = ["network.schiff.telekom.de", "network.t-caas.telekom.com"];

/// One input document and where it came from (`dir/file.yaml, document 2`).
#[derive(Clone, Debug, PartialEq)]
pub struct Doc {
    pub origin: String,
    pub value: Value,
}

/// The documents of a manifest directory, and how many were converted from a legacy group.
#[derive(Clone, Debug, PartialEq)]
pub struct Manifests {
    pub dir: PathBuf,
    pub docs: Vec<Doc>,
    pub converted: usize,
}

/// Why a manifest directory cannot be used.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("cannot read the directory: {0}")]
    Dir(std::io::Error),
    #[error(
        "no *.yaml, *.yml or *.json file in it; put your VRFRouteConfiguration, \
         Layer2NetworkConfiguration, RoutingTable and BGPPeering manifests there"
    )]
    Empty,
    #[error("{origin}: {message}")]
    Doc { origin: String, message: String },
}

impl Manifests {
    /// Reads and checks every manifest file directly in `dir`.
    pub fn read(dir: &Path) -> Result<Self, Error> {
        let mut files = Vec::new();
        for entry in std::fs::read_dir(dir).map_err(Error::Dir)? {
            let path = entry.map_err(Error::Dir)?.path();
            let manifest = path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| matches!(e, "yaml" | "yml" | "json"));
            if manifest && path.is_file() {
                files.push(path);
            }
        }
        files.sort();
        if files.is_empty() {
            return Err(Error::Empty);
        }
        let mut manifests = Manifests {
            dir: dir.to_path_buf(),
            docs: Vec::new(),
            converted: 0,
        };
        for file in files {
            let text = std::fs::read_to_string(&file).map_err(|e| Error::Doc {
                origin: file.display().to_string(),
                message: format!("cannot read it: {e}"),
            })?;
            manifests.add_file(&file.display().to_string(), &text)?;
        }
        Ok(manifests)
    }

    fn add_file(&mut self, file: &str, text: &str) -> Result<(), Error> {
        let docs =
            serde_saphyr::from_str_multiple::<Value, Vec<Value>>(text).map_err(|e| Error::Doc {
                origin: file.to_string(),
                message: format!("not valid YAML or JSON: {e}"),
            })?;
        let mut n = 0;
        for value in docs {
            if value.is_null() {
                continue;
            }
            n += 1;
            let origin = format!("{file}, document {n}");
            let (value, converted) = check(value).map_err(|message| Error::Doc {
                origin: origin.clone(),
                message,
            })?;
            self.converted += usize::from(converted);
            self.docs.push(Doc { origin, value });
        }
        Ok(())
    }
}

/// Checks one document; a legacy group's `apiVersion` becomes `netrollout.io/v1alpha1` (and
/// the second value says so). Metadata keeps name, labels and annotations: the input kinds are
/// cluster-scoped, and what the API server sets (uid, resourceVersion, ...) or a controller owns
/// (finalizers, ownerReferences) does not belong in an apply.
fn check(mut doc: Value) -> Result<(Value, bool), String> {
    let kind = doc["kind"].as_str().unwrap_or_default().to_string();
    let api_version = doc["apiVersion"].as_str().unwrap_or_default().to_string();
    let name = doc["metadata"]["name"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    if !KINDS.contains(&kind.as_str()) {
        return Err(format!(
            "kind {kind:?} is not an input the lab applies; use one of {} (the lab creates \
             everything else itself)",
            KINDS.join(", ")
        ));
    }
    if name.is_empty() {
        return Err(format!(
            "{kind} has no metadata.name; give it one (generateName is not supported)"
        ));
    }
    let (group, version) = api_version.split_once('/').unwrap_or(("", &api_version));
    if version != "v1alpha1" {
        return Err(format!(
            "{kind}/{name}: apiVersion {api_version:?} is not v1alpha1; write \
             netrollout.io/v1alpha1"
        ));
    }
    let converted = LEGACY_GROUPS.contains(&group);
    if !converted && group != netrollout_api::GROUP {
        return Err(format!(
            "{kind}/{name}: apiVersion {api_version:?} is neither netrollout.io/v1alpha1 nor \
             the Go operator's ({}); write netrollout.io/v1alpha1",
            LEGACY_GROUPS.map(|g| format!("{g}/v1alpha1")).join(", ")
        ));
    }
    off_the_fabric(&kind, &name, &doc["spec"])?;
    doc["apiVersion"] = Value::from(format!("{}/v1alpha1", netrollout_api::GROUP));
    let meta = &doc["metadata"];
    let mut kept = serde_json::Map::new();
    for key in ["name", "labels", "annotations"] {
        if !meta[key].is_null() {
            kept.insert(key.into(), meta[key].clone());
        }
    }
    doc["metadata"] = Value::Object(kept);
    Ok((doc, converted))
}

/// Refuses a network that overlaps the lab's own fabric (`10.77.0.0/24`): a node given an
/// address on it (an anycast gateway `10.77.0.1/24`, a VRF loopback's subnet) loses its way to
/// the lab API server, and every node's probes fail once it is rolled out.
fn off_the_fabric(kind: &str, name: &str, spec: &Value) -> Result<(), String> {
    let networks: Vec<(String, &str)> = match kind {
        "Layer2NetworkConfiguration" => (spec["anycastGateways"].as_array().into_iter())
            .flatten()
            .enumerate()
            .filter_map(|(i, g)| Some((format!("spec.anycastGateways[{i}]"), g.as_str()?)))
            .collect(),
        "VRFRouteConfiguration" => (spec["loopbacks"].as_array().into_iter())
            .flatten()
            .enumerate()
            .filter_map(|(i, l)| {
                Some((format!("spec.loopbacks[{i}].subnet"), l["subnet"].as_str()?))
            })
            .collect(),
        _ => Vec::new(),
    };
    let fabric = (crate::fabric::HOST_IP, crate::fabric::PREFIX_LEN);
    for (field, network) in networks {
        let Some((addr, len)) = ipv4_network(network) else {
            continue; // Not IPv4 with a prefix length: the API server's validation says so.
        };
        let common = u32::from(len.min(fabric.1));
        let mask = u32::MAX.checked_shl(32 - common).unwrap_or(0);
        if u32::from(addr) & mask == u32::from(fabric.0) & mask {
            return Err(format!(
                "{kind}/{name}: {field} {network} overlaps the lab's own fabric {}/{} (the nodes                  reach the lab API server at {} over it{}); pick a network outside {}/{}",
                crate::fabric::network(),
                fabric.1,
                fabric.0,
                if addr == fabric.0 {
                    format!(", and {addr} is that very address")
                } else {
                    String::new()
                },
                crate::fabric::network(),
                fabric.1,
            ));
        }
    }
    Ok(())
}

/// `a.b.c.d/len` as its address and prefix length.
fn ipv4_network(s: &str) -> Option<(std::net::Ipv4Addr, u8)> {
    let (addr, len) = s.split_once('/')?;
    let len: u8 = len.parse().ok().filter(|l| *l <= 32)?;
    Some((addr.parse().ok()?, len))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(files: &[(&str, &str)]) -> Result<Manifests, Error> {
        let dir = std::env::temp_dir().join(format!(
            "netrollout-lab-manifests-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        for (name, text) in files {
            std::fs::write(dir.join(name), text).unwrap();
        }
        let result = Manifests::read(&dir);
        std::fs::remove_dir_all(&dir).unwrap();
        result
    }

    const L2: &str = "apiVersion: netrollout.io/v1alpha1\nkind: Layer2NetworkConfiguration\n\
                      metadata: {name: net1}\nspec: {id: 10, vni: 100010, mtu: 1500}\n";

    #[test]
    fn every_manifest_file_is_read_in_name_order_and_other_files_are_ignored() {
        let rt = "apiVersion: netrollout.io/v1alpha1\nkind: RoutingTable\nmetadata: {name: t1}\n\
                  spec: {tableId: 200}\n";
        let m = read(&[
            ("b.yaml", L2),
            ("a.yml", &format!("{rt}---\n")),
            ("README.md", "not a manifest"),
        ])
        .unwrap();
        let names: Vec<_> = m
            .docs
            .iter()
            .map(|d| d.value["metadata"]["name"].as_str().unwrap())
            .collect();
        assert_eq!(names, ["t1", "net1"]);
        assert!(m.docs[0].origin.ends_with("a.yml, document 1"), "{m:?}");
        assert_eq!(m.converted, 0);
    }

    #[test]
    fn the_go_operators_groups_are_converted_and_server_owned_metadata_dropped() {
        let legacy = "apiVersion: network.t-caas.telekom.com/v1alpha1\nkind: RoutingTable\n\
                      metadata: {name: t1, namespace: default, uid: x, resourceVersion: '7', \
                      finalizers: [network.t-caas.telekom.com/cleanup], labels: {a: b}}\n\
                      spec: {tableId: 200}\n";
        let m = read(&[("legacy.yaml", legacy)]).unwrap();
        assert_eq!(m.converted, 1);
        let doc = &m.docs[0].value;
        assert_eq!(doc["apiVersion"], "netrollout.io/v1alpha1");
        assert_eq!(
            doc["metadata"],
            serde_json::json!({"name": "t1", "labels": {"a": "b"}})
        );
        assert_eq!(doc["spec"]["tableId"], 200);
    }

    #[test]
    fn a_directory_with_one_bad_document_is_refused_naming_file_document_and_fix() {
        let other_kind = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n";
        let err = read(&[
            ("a.yaml", L2),
            ("b.yaml", &format!("{L2}---\n{other_kind}")),
        ])
        .unwrap_err()
        .to_string();
        assert!(err.contains("b.yaml, document 2"), "{err}");
        assert!(err.contains("kind \"ConfigMap\""), "{err}");
        assert!(err.contains("use one of VRFRouteConfiguration"), "{err}");

        let foreign = L2.replace("netrollout.io", "example.com");
        let err = read(&[("a.yaml", &foreign)]).unwrap_err().to_string();
        assert!(
            err.contains("Layer2NetworkConfiguration/net1") && err.contains("example.com"),
            "{err}"
        );
        assert!(err.contains("write netrollout.io/v1alpha1"), "{err}");

        let nameless = L2.replace("{name: net1}", "{generateName: n-}");
        let err = read(&[("a.yaml", &nameless)]).unwrap_err().to_string();
        assert!(err.contains("no metadata.name"), "{err}");

        let err = read(&[("a.yaml", "kind: [unclosed")])
            .unwrap_err()
            .to_string();
        assert!(err.contains("a.yaml: not valid YAML or JSON"), "{err}");
    }

    #[test]
    fn a_network_on_the_lab_fabric_is_refused_before_the_lab_starts_naming_the_address() {
        let gateway = |g: &str| {
            L2.replace(
                "mtu: 1500}",
                &format!("mtu: 1500, anycastGateways: [10.250.0.1/24, {g}]}}"),
            )
        };
        let err = read(&[("a.yaml", &gateway("10.77.0.1/24"))])
            .unwrap_err()
            .to_string();
        for part in [
            "a.yaml, document 1",
            "Layer2NetworkConfiguration/net1",
            "spec.anycastGateways[1] 10.77.0.1/24",
            "overlaps the lab's own fabric 10.77.0.0/24",
            "10.77.0.1 is that very address",
            "pick a network outside 10.77.0.0/24",
        ] {
            assert!(err.contains(part), "{part}: {err}");
        }
        // A wider network that holds the fabric, and a loopback subnet inside it.
        let err = read(&[("a.yaml", &gateway("10.0.0.1/8"))])
            .unwrap_err()
            .to_string();
        assert!(err.contains("10.0.0.1/8 overlaps"), "{err}");
        assert!(!err.contains("very address"), "{err}");
        let vrf = "apiVersion: netrollout.io/v1alpha1\nkind: VRFRouteConfiguration\n\
                   metadata: {name: v1}\nspec: {vrf: mir, seq: 1, \
                   loopbacks: [{name: lo.mir, subnet: 10.77.0.128/25}]}\n";
        let err = read(&[("v.yaml", vrf)]).unwrap_err().to_string();
        assert!(
            err.contains("VRFRouteConfiguration/v1: spec.loopbacks[0].subnet 10.77.0.128/25"),
            "{err}"
        );
        // Next to it, not on it: accepted.
        assert!(read(&[("a.yaml", &gateway("10.77.1.1/24"))]).is_ok());
    }

    #[test]
    fn an_empty_or_missing_directory_says_what_to_put_there() {
        let err = read(&[("notes.txt", "x")]).unwrap_err().to_string();
        assert!(err.contains("no *.yaml, *.yml or *.json file"), "{err}");
        let err = Manifests::read(Path::new("/nonexistent/netrollout"))
            .unwrap_err()
            .to_string();
        assert!(err.starts_with("cannot read the directory:"), "{err}");
    }
}
