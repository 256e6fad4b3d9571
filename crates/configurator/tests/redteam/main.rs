//! Red-team inputs: bad values for every field of every input kind, applied with the real
//! `kubectl apply` to a lab API server that holds the deploy bundle's CRDs and admission
//! policies. Each must be refused at admission with an error naming the object and the field
//! ([`table`]). What one object cannot show (a VNI or VLAN used twice, subnets that overlap,
//! a broadcast gateway) is checked through the configurator: the newcomer gets
//! `Accepted=False` naming its field and the object it clashes with, and the objects that were
//! accepted before are not blamed ([`cross`]).
//!
//! One lab API server per part; the admission cases run eight at a time.

// A test crate: its helpers may panic (clippy.toml allows this only inside `#[test]` functions).
#![allow(clippy::unwrap_used, clippy::expect_used)]

mod analysis_cases;
mod cross;
#[allow(dead_code)]
#[path = "../e2e/lab.rs"]
mod lab;
mod table;
mod vrf_cases;

use std::path::Path;
use std::time::Duration;

use futures::StreamExt;
use netrollout_testkit::apiserver::LabApi;
use serde_json::Value;

/// Kinds of the bundle that decide what an input may be.
const ADMISSION_KINDS: [&str; 4] = [
    "Namespace",
    "CustomResourceDefinition",
    "ValidatingAdmissionPolicy",
    "ValidatingAdmissionPolicyBinding",
];

/// A lab API server with the bundle's CRDs, namespace and admission policies, applied with
/// kubectl from `deploy/netrollout.yaml`; returns when the input kinds are served.
async fn lab_with_bundle() -> LabApi {
    let lab = LabApi::start().await;
    let bundle = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/netrollout.yaml"),
    )
    .unwrap();
    let docs: String = bundle
        .split_inclusive("\n---\n")
        .filter(|doc| {
            ADMISSION_KINDS.iter().any(|k| {
                doc.contains(&format!("\nkind: {k}\n")) || doc.starts_with(&format!("kind: {k}\n"))
            })
        })
        .collect();
    assert!(
        docs.contains("kind: CustomResourceDefinition"),
        "the bundle holds the CRDs"
    );
    lab.ok_in(&["apply", "-f", "-"], Some(&docs)).await;
    lab::eventually(Duration::from_secs(10), || async {
        let run = lab
            .kubectl_run(&["get", "vrf,layer2,taas,analysis", "--no-headers"], None)
            .await;
        Ok(run.code == 0)
    })
    .await
    .unwrap();
    lab
}

#[tokio::test]
async fn every_bad_input_is_refused_at_kubectl_apply_naming_the_object_and_its_field() {
    let lab = lab_with_bundle().await;
    // The valid objects the cases start from are accepted: a case fails only for its change.
    for kind in [
        table::Kind::Vrf,
        table::Kind::Layer2,
        table::Kind::Table,
        table::Kind::Analysis,
    ] {
        let base = table::base(kind, &format!("base-{}", kind.name().to_lowercase()));
        lab.ok_in(&["apply", "-f", "-"], Some(&base.to_string()))
            .await;
    }
    let cases = table::cases();
    assert!(cases.len() >= 100, "{} cases", cases.len());
    let lab = &lab;
    let failures: Vec<String> = futures::stream::iter(cases.iter().enumerate())
        .map(|(i, case)| async move {
            let name = format!("case-{i}");
            let obj: Value = table::object(case, &name);
            let run = lab
                .kubectl_run(&["apply", "-f", "-"], Some(&obj.to_string()))
                .await;
            let what = format!(
                "case {i}: {} spec.{} = {}",
                case.kind.name(),
                case.path,
                case.value.as_ref().map_or("(removed)".to_string(), |v| {
                    let s = v.to_string();
                    if s.len() > 60 {
                        format!("{}…", s.chars().take(60).collect::<String>())
                    } else {
                        s
                    }
                })
            );
            if run.code == 0 {
                return Some(format!("{what}: accepted"));
            }
            let named = run.stderr.contains(&format!("\"{name}\""));
            let field = run.stderr.contains(&format!("{}:", case.field))
                || run.stderr.contains(&format!("{} ", case.field))
                || run.stderr.contains(&format!("\"{}\"", case.field));
            (!(named && field)).then(|| {
                format!(
                    "{what}: refused without naming {} and {name}: {}",
                    case.field,
                    run.stderr.trim()
                )
            })
        })
        .buffer_unordered(8)
        .filter_map(|f| async { f })
        .collect()
        .await;
    assert!(
        failures.is_empty(),
        "{} of {} bad inputs were not refused as they should be:\n{}",
        failures.len(),
        cases.len(),
        failures.join("\n")
    );
}
