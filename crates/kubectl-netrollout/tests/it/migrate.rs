//! Migration from the Go network operator: manifests in its format (the repository's fixtures in
//! `tests/data/go-operator/`; the third-party ones of `NETROLLOUT_COMPAT_DIR` too when set)
//! convert with `kubectl netrollout migrate`, apply unchanged but for `apiVersion` to the lab API server with kubectl (strict
//! field validation against the CRD schemas), and render for a fleet.

use crate::common;

use common::PluginLab as _;

use kube::Api;
use kube::api::ListParams;
use netrollout_api::{Layer2NetworkConfiguration, RoutingTable, VRFRouteConfiguration};
use netrollout_testkit::manifests;
use serde_json::Value;

/// Every manifest in the Go operator's format (the repository's fixtures; the third-party ones of
/// `NETROLLOUT_COMPAT_DIR` too when it is set), each into a lab API server of its own.
#[tokio::test]
async fn the_go_operators_manifests_migrate_by_changing_api_version_alone_and_render() {
    for m in manifests::all() {
        migrates_and_renders(&m).await;
    }
}

async fn migrates_and_renders(m: &manifests::Manifest) {
    let name = &m.name;
    let original: Vec<Value> = serde_saphyr::from_multiple::<Value>(&m.text)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect();
    let lab = common::LabApi::netrollout().await;
    let run = lab
        .plugin(&["migrate", "-f", m.path.to_str().unwrap()])
        .await;
    let yaml = run.expect_code(0).to_string();
    assert!(
        run.stderr
            .contains(&format!("converted {} object(s)", original.len())),
        "{name}: {}",
        run.stderr
    );

    let converted: Vec<Value> = serde_saphyr::from_multiple::<Value>(&yaml)
        .unwrap()
        .into_iter()
        .filter(|v| !v.is_null())
        .collect();
    assert_eq!(converted.len(), original.len(), "{name}");
    for (new, old) in converted.iter().zip(&original) {
        let old_version = old["apiVersion"].as_str().unwrap();
        assert!(
            old_version.starts_with("network.t-caas.telekom.com/")
                || old_version.starts_with("network.schiff.telekom.de/"),
            "{name}: {old_version}"
        );
        assert_eq!(new["apiVersion"], "netrollout.io/v1alpha1", "{name}");
        assert_eq!(new["kind"], old["kind"], "{name}");
        assert_eq!(new["metadata"]["name"], old["metadata"]["name"], "{name}");
        assert_eq!(
            new["spec"], old["spec"],
            "{name}: the spec is carried over unchanged"
        );
    }

    let applied = lab.kubectl_run(&["apply", "-f", "-"], Some(&yaml)).await;
    let out = applied.expect_code(0);
    assert_eq!(
        out.lines().filter(|l| l.ends_with(" created")).count(),
        original.len(),
        "{name}: {out}"
    );

    let lp = ListParams::default();
    let vrfs = Api::<VRFRouteConfiguration>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    let l2s = Api::<Layer2NetworkConfiguration>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    let tables = Api::<RoutingTable>::all(lab.client.clone())
        .list(&lp)
        .await
        .unwrap()
        .items;
    assert_eq!(
        vrfs.len() + l2s.len() + tables.len(),
        original.len(),
        "{name}"
    );
    let snapshot = netrollout_render::from_objects(&vrfs, &l2s, &tables);
    let nodes: Vec<netrollout_render::Node> = ["node-a", "node-b", "node-c"]
        .iter()
        .map(|n| netrollout_render::Node {
            name: (*n).into(),
            labels: Default::default(),
        })
        .collect();
    let rendered = netrollout_render::render(&snapshot, &nodes)
        .unwrap_or_else(|e| panic!("{name}: the migrated inputs render: {e}"));
    let config = rendered.config("node-a").unwrap();
    // Inputs without a node selector reach every node.
    for vrf in vrfs.iter().filter(|v| v.spec.node_selector.is_none()) {
        assert!(
            config.vrfs.iter().any(|v| v.name == vrf.spec.vrf),
            "{name}: VRF {} missing: {config:?}",
            vrf.spec.vrf
        );
    }
    for l2 in l2s.iter().filter(|l| l.spec.node_selector.is_none()) {
        assert!(
            config.layer2s.iter().any(|l| i32::from(l.id) == l2.spec.id),
            "{name}: VLAN {} missing: {config:?}",
            l2.spec.id
        );
    }
    netrollout_render::Revision::of(&snapshot).unwrap();
}

#[tokio::test]
async fn migrate_reads_stdin_and_refuses_fields_netrollout_does_not_know() {
    let bad = "apiVersion: network.schiff.telekom.de/v1alpha1\nkind: Layer2NetworkConfiguration\nmetadata:\n  name: l2\nspec:\n  id: 5\n  mtu: 1500\n  vni: 5\n  vlanSegmentation: true\n";
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kubectl-netrollout"))
        .args(["migrate", "-f", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let run = feed(out, bad).await;
    run.expect_code(1);
    assert!(
        run.stderr.contains("spec.vlanSegmentation"),
        "{}",
        run.stderr
    );
}

/// `advertiseNeighbors: true` on a network without a VRF (which has no VRF to announce the host
/// routes in) is refused where the user first meets it: `kubectl apply` of a netrollout object
/// (the CRD's CEL rules, naming the field and why) and `migrate` of the Go operator's manifest
/// (per object and field); with a VRF it applies and migrates, `false` applies, and so does
/// `disableSegmentation: true`, which netrollout carries out.
#[tokio::test]
async fn unsupported_layer2_settings_are_refused_by_kubectl_apply_and_by_migrate_naming_the_field()
{
    let lab = common::LabApi::netrollout().await;
    let doc = |group: &str, name: &str, field: &str, value: bool| {
        format!(
            "apiVersion: {group}/v1alpha1\nkind: Layer2NetworkConfiguration\nmetadata:\n  name: {name}\n\
             spec:\n  id: 5\n  mtu: 1500\n  vni: 5005\n  {field}: {value}\n"
        )
    };
    for (field, why) in [(
        "advertiseNeighbors",
        netrollout_api::ADVERTISE_NEIGHBORS_NEEDS_VRF,
    )] {
        let refused = lab
            .kubectl_run(
                &["apply", "-f", "-"],
                Some(&doc("netrollout.io", "l2", field, true)),
            )
            .await;
        assert_ne!(refused.code, 0, "kubectl apply accepted {field}: true");
        assert!(
            refused.stderr.contains(&format!("spec.{field}")) && refused.stderr.contains(why),
            "kubectl's refusal does not name spec.{field} and why: {}",
            refused.stderr
        );

        let legacy = doc("network.t-caas.telekom.com", "legacy-l2", field, true);
        let file = lab.dir.path().join("old.yaml");
        std::fs::write(&file, &legacy).unwrap();
        let run = lab.plugin(&["migrate", "-f", file.to_str().unwrap()]).await;
        run.expect_code(1);
        assert!(
            run.stderr.contains("Layer2NetworkConfiguration legacy-l2")
                && run.stderr.contains(&format!("spec.{field}: "))
                && run.stderr.contains(why),
            "migrate does not name the object, the field and why: {}",
            run.stderr
        );
        assert!(run.stdout.is_empty(), "{}", run.stdout);

        let in_vrf = |d: String| d.replace("  id: 5\n", "  id: 5\n  vrf: mir\n");
        std::fs::write(&file, in_vrf(legacy)).unwrap();
        let run = lab.plugin(&["migrate", "-f", file.to_str().unwrap()]).await;
        run.expect_code(0);
        assert!(
            run.stdout.contains(&format!("{field}: true")),
            "{}",
            run.stdout
        );
        let accepted = lab
            .kubectl_run(
                &["apply", "-f", "-"],
                Some(&in_vrf(doc("netrollout.io", "l2-in-vrf", field, true))),
            )
            .await;
        accepted.expect_code(0);
    }
    let accepted = lab
        .kubectl_run(
            &["apply", "-f", "-"],
            Some(&doc("netrollout.io", "l2", "advertiseNeighbors", false)),
        )
        .await;
    accepted.expect_code(0);
    assert!(
        accepted.stdout.contains("l2 created"),
        "{}",
        accepted.stdout
    );
    let offload = lab
        .kubectl_run(
            &["apply", "-f", "-"],
            Some(&doc("netrollout.io", "l2", "disableSegmentation", true)),
        )
        .await;
    offload.expect_code(0);
    assert!(
        offload.stdout.contains("l2 configured"),
        "{}",
        offload.stdout
    );
}

/// The Go operator's kinds netrollout does not carry, with `apiVersion` changed the way a
/// migration by hand would: `kubectl apply` refuses each, naming the kind and what to do (their
/// CRDs' rule), where it would otherwise say "no matches for kind".
#[tokio::test]
async fn kubectl_apply_refuses_mirroring_saying_what_to_do() {
    let lab = common::LabApi::netrollout().await;
    for (kind, spec, why) in [
        (
            "MirrorTarget",
            "{type: l3gre, destinationIP: 10.250.90.100, key: 1001, destinationVrf: mirror, sourceLoopback: lo.mir}",
            netrollout_api::refused::MIRRORING_REFUSED,
        ),
        (
            "MirrorSelector",
            "{mirrorTarget: {kind: MirrorTarget, name: c}, mirrorSource: {kind: Layer2NetworkConfiguration, name: vlan501}, direction: ingress}",
            netrollout_api::refused::MIRRORING_REFUSED,
        ),
    ] {
        let doc = format!(
            "apiVersion: netrollout.io/v1alpha1\nkind: {kind}\nmetadata:\n  name: x\nspec: {spec}\n"
        );
        let refused = lab.kubectl_run(&["apply", "-f", "-"], Some(&doc)).await;
        assert_ne!(refused.code, 0, "kubectl apply accepted a {kind}");
        assert!(
            refused.stderr.contains(kind) && refused.stderr.contains(why),
            "kubectl's refusal of a {kind} does not say why: {}",
            refused.stderr
        );
    }
}

async fn feed(mut child: tokio::process::Child, input: &str) -> common::Run {
    use tokio::io::AsyncWriteExt;
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(input.as_bytes()).await.unwrap();
    drop(stdin);
    common::Run::from(child.wait_with_output().await.unwrap())
}
