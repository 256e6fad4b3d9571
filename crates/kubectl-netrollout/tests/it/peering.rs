//! `BGPPeering` through kubectl and `migrate`: the Go operator's object converts by its
//! `apiVersion` and applies; the CRD refuses what FRR could not take, naming the field (real
//! kubectl against the lab API server, which checks the CRD's schema and CEL rules).

use crate::common;
use common::PluginLab as _;

fn doc(group: &str, name: &str, spec: &str) -> String {
    format!(
        "apiVersion: {group}/v1alpha1\nkind: BGPPeering\nmetadata:\n  name: {name}\nspec: {spec}\n"
    )
}

/// The Go operator's fields, every one set.
const FULL: &str = "{peeringVlan: {name: vlan501}, remoteASN: 65511, enableBFD: true, \
    maximumPrefixes: 16, holdTime: 1m30s, keepaliveTime: 30s, \
    import: [{cidr: 10.250.3.0/24, le: 32, action: permit}], \
    export: [{cidr: 0.0.0.0/0, action: permit}, {cidr: '::/0', action: permit}], \
    nodeSelector: {matchLabels: {rack: a}}}";

#[tokio::test]
async fn a_go_operator_bgp_peering_migrates_and_applies() {
    let lab = common::LabApi::netrollout().await;
    let file = lab.dir.path().join("old.yaml");
    std::fs::write(&file, doc("network.t-caas.telekom.com", "lb", FULL)).unwrap();
    let run = lab.plugin(&["migrate", "-f", file.to_str().unwrap()]).await;
    let converted = run.expect_code(0).to_string();
    assert!(
        converted.contains("apiVersion: netrollout.io/v1alpha1")
            && converted.contains("kind: BGPPeering")
            && converted.contains("remoteASN: 65511")
            && converted.contains("holdTime: 1m30s"),
        "{converted}"
    );
    let applied = lab
        .kubectl_run(&["apply", "-f", "-"], Some(&converted))
        .await;
    assert!(applied.expect_code(0).contains("lb created"));
    let loopback = doc(
        "netrollout.io",
        "lo",
        "{loopbackPeer: {ips: [10.250.7.1, 'fd00:7::1']}, remoteASN: 4200000000, enableBFD: false, import: [], export: []}",
    );
    let applied = lab
        .kubectl_run(&["apply", "-f", "-"], Some(&loopback))
        .await;
    assert!(applied.expect_code(0).contains("lo created"));
}

#[tokio::test]
async fn kubectl_apply_refuses_a_bgp_peering_naming_the_field_and_why() {
    let lab = common::LabApi::netrollout().await;
    let vlan = "peeringVlan: {name: v}";
    let cases: Vec<(String, &str, &str)> = vec![
        (format!("{{{vlan}, remoteASN: 0}}"), "spec.remoteASN", "1"),
        (
            format!("{{{vlan}, remoteASN: 4294967296}}"),
            "spec.remoteASN",
            "4294967295",
        ),
        (
            "{remoteASN: 65000}".into(),
            "spec.peeringVlan",
            "needs peeringVlan",
        ),
        (
            format!("{{{vlan}, loopbackPeer: {{ips: [10.0.0.1]}}, remoteASN: 65000}}"),
            "spec.loopbackPeer",
            "exclude each other",
        ),
        (
            format!("{{{vlan}, remoteASN: 65000, holdTime: 90s}}"),
            "spec.holdTime",
            "set together",
        ),
        (
            format!("{{{vlan}, remoteASN: 65000, holdTime: 2s, keepaliveTime: 1s}}"),
            "spec.holdTime",
            "0s or from 3s to 65535s",
        ),
        (
            format!("{{{vlan}, remoteASN: 65000, holdTime: 90s, keepaliveTime: 70000s}}"),
            "spec.keepaliveTime",
            "from 0s to 65535s",
        ),
        (
            format!("{{{vlan}, remoteASN: 65000, holdTime: 1.5s, keepaliveTime: 1s}}"),
            "spec.holdTime",
            "should match",
        ),
        (
            format!("{{{vlan}, remoteASN: 65000, maximumPrefixes: 0}}"),
            "spec.maximumPrefixes",
            "1",
        ),
        (
            "{loopbackPeer: {ips: [10.0.0.1, 10.0.0.2]}, remoteASN: 65000}".into(),
            "spec.loopbackPeer.ips",
            "not two of one family",
        ),
        (
            "{loopbackPeer: {ips: [10.0.0.1/32]}, remoteASN: 65000}".into(),
            "spec.loopbackPeer.ips",
            "without prefix length",
        ),
        (
            format!(
                "{{{vlan}, remoteASN: 65000, import: [{{cidr: 10.0.0.1/24, action: permit}}]}}"
            ),
            "spec.import[0].cidr",
            "host bits",
        ),
    ];
    for (spec, field, words) in cases {
        let run = lab
            .kubectl_run(
                &["apply", "-f", "-"],
                Some(&doc("netrollout.io", "bad", &spec)),
            )
            .await;
        assert_ne!(run.code, 0, "kubectl apply accepted {spec}");
        assert!(
            run.stderr.contains(field) && run.stderr.contains(words),
            "the refusal of {spec} does not name {field} with {words:?}: {}",
            run.stderr
        );
    }
}
