//! The red-team table's `RolloutAnalysis` cases (see [`crate::table`]).

use serde_json::json;

use crate::table::Kind::Analysis;
use crate::table::{Case, c, many};

/// Bad values for every field of a `RolloutAnalysis`, and a check name given twice (verdicts
/// name their check: the list is keyed by name and the second one is refused at its index).
pub fn cases() -> Vec<Case> {
    let check =
        |name: &str| json!({"name": name, "query": "sum(x)", "successCondition": "result == 0"});
    vec![
        c(
            Analysis,
            "checks[1]",
            check("tenant-loss"),
            "spec.checks[1]",
        ),
        c(
            Analysis,
            "checks[1].name",
            json!("tenant-loss"),
            "spec.checks[1]",
        ),
        c(Analysis, "checks", json!([]), "spec.checks"),
        c(
            Analysis,
            "checks",
            many(33, |i| check(&format!("c{i}"))),
            "spec.checks",
        ),
        c(
            Analysis,
            "checks[0].name",
            json!("Tenant_Loss"),
            "spec.checks[0].name",
        ),
        c(Analysis, "checks[0].name", json!(""), "spec.checks[0].name"),
        c(
            Analysis,
            "checks[0].query",
            json!(""),
            "spec.checks[0].query",
        ),
        c(
            Analysis,
            "checks[0].successCondition",
            json!("result ~ 0"),
            "spec.checks[0].successCondition",
        ),
        c(
            Analysis,
            "checks[0].successCondition",
            json!("value == 0"),
            "spec.checks[0].successCondition",
        ),
        c(
            Analysis,
            "checks[0].intervalSeconds",
            json!(0),
            "spec.checks[0].intervalSeconds",
        ),
        c(
            Analysis,
            "checks[0].inconclusiveLimit",
            json!(101),
            "spec.checks[0].inconclusiveLimit",
        ),
        c(
            Analysis,
            "checks[0].failureLimit",
            json!(-1),
            "spec.checks[0].failureLimit",
        ),
        c(
            Analysis,
            "checks[0].initialDelaySeconds",
            json!(3601),
            "spec.checks[0].initialDelaySeconds",
        ),
        Case {
            kind: Analysis,
            path: "checks[0].query",
            value: None,
            field: "spec.checks[0].query",
        },
    ]
}
