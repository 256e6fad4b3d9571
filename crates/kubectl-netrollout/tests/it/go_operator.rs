//! The Go operator's own manifests as an outside check. `NETROLLOUT_GO_OPERATOR_DIR` names a
//! checkout of the Go network operator's repository (never copied into this one); every YAML
//! file in it (but `vendor/` and its CRD definitions), and every ```` ```yaml ```` block of its
//! Markdown documents, that holds objects of the operator's
//! `v1alpha1` groups goes through `migrate`, object by object: each converts, or is refused with
//! an error naming its kind and name and saying why. What converts applies to the lab API server
//! with kubectl (the CRDs' schemas and CEL rules) and renders for a fleet. The repository's own
//! manifests of refused kinds (`tests/data/refused.yaml`, written for this project) always run;
//! the test prints one line per object, which the migration notes quote.
//!
//! With `NETROLLOUT_GO_OPERATOR_OUT=DIR` it also writes, per file, a row of `DIR/report.tsv`
//! (file, its objects' kinds, how many converted, the refused ones with why, the directory of
//! its converted objects) and the converted objects to `DIR/NN/inputs.yaml`, for
//! `hack/go-operator-manifests.sh`, which rolls them out in the lab and prints the table.

use std::path::{Path, PathBuf};

use kube::Api;
use kube::api::ListParams;
use kubectl_netrollout::migrate::{LEGACY_GROUPS, convert};
use netrollout_api::{BGPPeering, Layer2NetworkConfiguration, RoutingTable, VRFRouteConfiguration};
use serde_json::Value;

use crate::common;

/// The environment variable naming a checkout of the Go operator.
const OPERATOR_DIR_VAR: &str = "NETROLLOUT_GO_OPERATOR_DIR";
/// The environment variable naming where the per-file report and converted objects go.
const OUT_VAR: &str = "NETROLLOUT_GO_OPERATOR_OUT";

/// What became of one object.
#[derive(Debug)]
enum Outcome {
    Converted(Value),
    Refused(String),
    /// A kind `migrate` leaves out with a note (generated or not an input): the note.
    Skipped(String),
}

fn yaml_files(dir: &Path, out: &mut Vec<PathBuf>) {
    let mut entries: Vec<PathBuf> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        let name = path.file_name().unwrap().to_string_lossy().to_string();
        if path.is_dir() {
            if !matches!(name.as_str(), "vendor" | ".git" | "crd") {
                yaml_files(&path, out);
            }
        } else if [".yaml", ".yml", ".md"].iter().any(|e| name.ends_with(e)) {
            out.push(path);
        }
    }
}

/// The YAML of a file: the file itself, or each of a Markdown file's ```` ```yaml ```` blocks.
fn yaml_of(path: &Path, text: &str) -> Vec<String> {
    if path.extension().is_some_and(|e| e == "md") {
        let mut blocks = Vec::new();
        let mut block: Option<String> = None;
        for line in text.lines() {
            match &mut block {
                None if line.trim_start().starts_with("```yaml") => block = Some(String::new()),
                Some(_) if line.trim_start().starts_with("```") => {
                    blocks.extend(block.take());
                }
                Some(b) => {
                    b.push_str(line);
                    b.push('\n');
                }
                None => {}
            }
        }
        blocks
    } else {
        vec![text.to_string()]
    }
}

/// The documents of `text` in the operator's groups.
fn legacy_docs(text: &str) -> Vec<Value> {
    let Ok(docs) = serde_saphyr::from_multiple::<Value>(text) else {
        return Vec::new();
    };
    docs.into_iter()
        .filter(|d| {
            d["apiVersion"]
                .as_str()
                .and_then(|v| v.split_once('/'))
                .is_some_and(|(g, _)| LEGACY_GROUPS.contains(&g))
        })
        .collect()
}

/// Each object of one file through `migrate` on its own.
fn outcomes(file: &str, docs: &[Value]) -> Vec<(String, Outcome)> {
    let mut out = Vec::new();
    for (i, doc) in docs.iter().enumerate() {
        let kind = doc["kind"].as_str().unwrap_or_default();
        let name = doc["metadata"]["name"].as_str().unwrap_or_default();
        let label = format!("{kind} {name}");
        let text = serde_saphyr::to_string(doc).unwrap();
        let at = format!("{file} object {}", i + 1);
        match convert(&at, &text) {
            Ok(m) => {
                // Generated kinds are skipped with a note; nothing else may vanish.
                assert!(
                    m.objects.len() == 1 || !m.notes.is_empty(),
                    "{label}: neither converted nor noted"
                );
                match m.objects.into_iter().next() {
                    Some(o) => out.push((label, Outcome::Converted(o))),
                    None => out.push((label, Outcome::Skipped(m.notes.join(" ")))),
                }
            }
            Err(e) => {
                let e = e.to_string();
                assert!(
                    e.contains(&format!("{kind} {name}")) || (name.is_empty() && e.contains(kind)),
                    "{at}: the refusal names no object: {e}"
                );
                out.push((label, Outcome::Refused(e)));
            }
        }
    }
    out
}

#[tokio::test]
async fn the_go_operators_manifests_migrate_or_are_refused_naming_each_object() {
    let mut files = vec![
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data/refused.yaml")
            .to_path_buf(),
    ];
    if let Some(dir) = std::env::var_os(OPERATOR_DIR_VAR) {
        let before = files.len();
        yaml_files(Path::new(&dir), &mut files);
        assert!(
            files.len() > before,
            "{OPERATOR_DIR_VAR}={} holds no YAML files; unset it or point it at a checkout",
            PathBuf::from(&dir).display()
        );
    }
    let mut report = Vec::new();
    let out = std::env::var_os(OUT_VAR).map(PathBuf::from);
    let mut rows = Vec::new();
    let (mut converted_total, mut refused_total) = (0, 0);
    for path in &files {
        let text = std::fs::read_to_string(path).unwrap();
        let docs: Vec<Value> = (yaml_of(path, &text).iter())
            .flat_map(|y| legacy_docs(y))
            .collect();
        if docs.is_empty() {
            continue;
        }
        let file = path.display().to_string();
        let results = outcomes(&file, &docs);
        let converted: Vec<Value> = (results.iter())
            .filter_map(|(_, o)| match o {
                Outcome::Converted(v) => Some(v.clone()),
                Outcome::Refused(_) | Outcome::Skipped(_) => None,
            })
            .collect();
        for (label, o) in &results {
            match o {
                Outcome::Converted(_) => report.push(format!("{file}: {label}: converted")),
                Outcome::Refused(e) => {
                    refused_total += 1;
                    report.push(format!("{file}: {label}: REFUSED: {e}"));
                }
                Outcome::Skipped(note) => report.push(format!("{file}: {label}: skipped: {note}")),
            }
        }
        converted_total += converted.len();
        if !converted.is_empty() {
            applies_and_renders(&file, &converted).await;
            report.push(format!(
                "{file}: {} converted object(s) applied and rendered",
                converted.len()
            ));
        }
        if let Some(dir) = &out {
            rows.push(row(dir, rows.len() + 1, &file, &docs, &results, &converted));
        }
    }
    if let Some(dir) = &out {
        std::fs::write(dir.join("report.tsv"), rows.concat()).unwrap();
    }
    println!("{}", report.join("\n"));
    println!("{converted_total} converted, {refused_total} refused");
    assert!(
        refused_total >= 2,
        "the repository's refused kinds were refused"
    );
}

/// File number `n`'s row of `report.tsv` (file, kinds, converted, refused with why, the
/// directory of its converted objects, which it writes).
fn row(
    dir: &Path,
    n: usize,
    file: &str,
    docs: &[Value],
    results: &[(String, Outcome)],
    converted: &[Value],
) -> String {
    let mut kinds: Vec<(String, usize)> = Vec::new();
    for d in docs {
        let kind = d["kind"].as_str().unwrap_or("?").to_string();
        match kinds.iter_mut().find(|(k, _)| *k == kind) {
            Some((_, count)) => *count += 1,
            None => kinds.push((kind, 1)),
        }
    }
    let kinds: Vec<String> = kinds.iter().map(|(k, c)| format!("{k} x{c}")).collect();
    // A table cell: at most three names, then how many more.
    let cell = |names: &[String], what: &str| match names.len() {
        0..=3 => names.join(", "),
        n => format!("{}, and {} more {what}", names[..2].join(", "), n - 2),
    };
    // The gist of a refusal or note, its first clause; objects with one gist share it.
    let gist = |label: &str, text: &str| {
        let why = text.lines().next().unwrap_or_default();
        let why = why.rsplit(&format!("{label}: ")).next().unwrap_or(why);
        let why = [";", " (", ", expected"]
            .iter()
            .fold(why, |w, cut| w.split(cut).next().unwrap_or(w));
        why.trim().to_string()
    };
    let mut refused: Vec<(String, Vec<String>)> = Vec::new();
    for (label, o) in results {
        let why = match o {
            Outcome::Refused(e) => format!("refused: {}", gist(label, e)),
            Outcome::Skipped(note) => format!("skipped: {}", gist(label, note)),
            Outcome::Converted(_) => continue,
        };
        match refused.iter_mut().find(|(w, _)| *w == why) {
            Some((_, labels)) => labels.push(label.clone()),
            None => refused.push((why, vec![label.clone()])),
        }
    }
    let refused: Vec<String> = (refused.iter())
        .map(|(why, labels)| format!("{} {why}", cell(labels, "objects")))
        .collect();
    let sub = match converted.is_empty() {
        true => "-".to_string(),
        false => {
            let sub = dir.join(format!("{n:02}"));
            std::fs::create_dir_all(&sub).unwrap();
            let yaml = serde_saphyr::to_string_multiple(converted).unwrap();
            std::fs::write(sub.join("inputs.yaml"), yaml).unwrap();
            sub.display().to_string()
        }
    };
    format!(
        "{file}\t{}\t{}\t{}\t{sub}\n",
        cell(&kinds, "kinds"),
        converted.len(),
        if refused.is_empty() {
            "-".to_string()
        } else {
            refused.join("; ")
        },
    )
}

/// The converted objects of one file apply with kubectl and render for three nodes.
async fn applies_and_renders(file: &str, objects: &[Value]) {
    let lab = common::LabApi::netrollout().await;
    let yaml = serde_saphyr::to_string_multiple(objects).unwrap();
    let applied = lab.kubectl_run(&["apply", "-f", "-"], Some(&yaml)).await;
    let out = applied.expect_code(0);
    assert_eq!(
        out.lines().filter(|l| l.ends_with(" created")).count(),
        objects.len(),
        "{file}: {out}"
    );
    let lp = ListParams::default();
    let client = lab.client.clone();
    let vrfs = (Api::<VRFRouteConfiguration>::all(client.clone()).list(&lp))
        .await
        .unwrap()
        .items;
    let l2s = (Api::<Layer2NetworkConfiguration>::all(client.clone()).list(&lp))
        .await
        .unwrap()
        .items;
    let tables = (Api::<RoutingTable>::all(client.clone()).list(&lp))
        .await
        .unwrap()
        .items;
    let peerings = (Api::<BGPPeering>::all(client).list(&lp))
        .await
        .unwrap()
        .items;
    let mut snapshot = netrollout_render::from_objects(&vrfs, &l2s, &tables);
    snapshot.bgp_peerings = netrollout_render::peerings(&peerings);
    let nodes: Vec<netrollout_render::Node> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|n| netrollout_render::Node {
            name: (*n).into(),
            labels: Default::default(),
        })
        .collect();
    netrollout_render::render(&snapshot, &nodes)
        .unwrap_or_else(|e| panic!("{file}: the migrated inputs render: {e}"));
}
