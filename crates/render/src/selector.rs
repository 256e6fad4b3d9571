//! Kubernetes label-selector semantics (`matchLabels` and `matchExpressions`), compiled once and
//! evaluated against many nodes.

use std::collections::{BTreeMap, BTreeSet};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;

/// A validated label selector. `Selector::default()` matches every node, as does a missing or
/// empty `nodeSelector`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Requirement {
    In(String, BTreeSet<String>),
    NotIn(String, BTreeSet<String>),
    Exists(String),
    DoesNotExist(String),
}

impl Selector {
    /// Compiles a selector, or lists every problem with it as `(field, message)` pairs relative to
    /// the selector (`matchLabels.rack`, `matchExpressions[0].operator`, ...).
    pub fn compile(selector: Option<&LabelSelector>) -> Result<Self, Vec<(String, String)>> {
        let Some(selector) = selector else {
            return Ok(Self::default());
        };
        let mut problems = Vec::new();
        let mut requirements = Vec::new();
        for (key, value) in selector.match_labels.iter().flatten() {
            let field = format!("matchLabels.{key}");
            check_key(key, &field, &mut problems);
            check_value(value, &field, &mut problems);
            requirements.push(Requirement::In(
                key.clone(),
                BTreeSet::from([value.clone()]),
            ));
        }
        for (i, expr) in selector.match_expressions.iter().flatten().enumerate() {
            let field = format!("matchExpressions[{i}]");
            check_key(&expr.key, &format!("{field}.key"), &mut problems);
            let values: BTreeSet<String> = expr.values.iter().flatten().cloned().collect();
            for value in &values {
                check_value(value, &format!("{field}.values"), &mut problems);
            }
            let key = expr.key.clone();
            let requirement = match expr.operator.as_str() {
                "In" | "NotIn" if values.is_empty() => {
                    problems.push((
                        format!("{field}.values"),
                        format!("operator {} needs at least one value", expr.operator),
                    ));
                    continue;
                }
                "Exists" | "DoesNotExist" if !values.is_empty() => {
                    problems.push((
                        format!("{field}.values"),
                        format!("operator {} takes no values; remove them", expr.operator),
                    ));
                    continue;
                }
                "In" => Requirement::In(key, values),
                "NotIn" => Requirement::NotIn(key, values),
                "Exists" => Requirement::Exists(key),
                "DoesNotExist" => Requirement::DoesNotExist(key),
                other => {
                    problems.push((
                        format!("{field}.operator"),
                        format!(
                            "unknown operator {other:?}; use In, NotIn, Exists or DoesNotExist"
                        ),
                    ));
                    continue;
                }
            };
            requirements.push(requirement);
        }
        if !problems.is_empty() {
            return Err(problems);
        }
        requirements.sort();
        requirements.dedup();
        Ok(Self { requirements })
    }

    /// Whether a node with these labels is selected.
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| match r {
            Requirement::In(key, values) => labels.get(key).is_some_and(|v| values.contains(v)),
            Requirement::NotIn(key, values) => labels.get(key).is_none_or(|v| !values.contains(v)),
            Requirement::Exists(key) => labels.contains_key(key),
            Requirement::DoesNotExist(key) => !labels.contains_key(key),
        })
    }
}

/// `[prefix/]name`: prefix a DNS subdomain (≤ 253), name ≤ 63 alphanumerics with `-_.` inside.
fn check_key(key: &str, field: &str, problems: &mut Vec<(String, String)>) {
    let (prefix, name) = match key.split_once('/') {
        Some((prefix, name)) => (Some(prefix), name),
        None => (None, key),
    };
    let prefix_ok = prefix.is_none_or(|p| {
        !p.is_empty()
            && p.len() <= 253
            && p.split('.').all(|part| {
                !part.is_empty()
                    && part.len() <= 63
                    && part
                        .bytes()
                        .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
                    && !part.starts_with('-')
                    && !part.ends_with('-')
            })
    });
    if !prefix_ok || name.is_empty() || !is_label_value(name) {
        problems.push((
            field.to_string(),
            format!(
                "invalid label key {key:?}: use an optional DNS-subdomain prefix and '/', then at most \
                 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit"
            ),
        ));
    }
}

fn check_value(value: &str, field: &str, problems: &mut Vec<(String, String)>) {
    if !value.is_empty() && !is_label_value(value) {
        problems.push((
            field.to_string(),
            format!(
                "invalid label value {value:?}: at most 63 letters, digits, '-', '_' or '.', \
                 starting and ending with a letter or digit"
            ),
        ));
    }
}

fn is_label_value(s: &str) -> bool {
    let bytes = s.as_bytes();
    s.len() <= 63
        && bytes.first().is_some_and(u8::is_ascii_alphanumeric)
        && bytes.last().is_some_and(u8::is_ascii_alphanumeric)
        && bytes
            .iter()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelectorRequirement;

    use super::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    fn expr(key: &str, op: &str, values: &[&str]) -> LabelSelectorRequirement {
        LabelSelectorRequirement {
            key: key.into(),
            operator: op.into(),
            values: (!values.is_empty()).then(|| values.iter().map(|v| v.to_string()).collect()),
        }
    }

    #[test]
    fn a_missing_or_empty_selector_matches_every_node() {
        let node = labels(&[("rack", "r1")]);
        assert!(Selector::compile(None).unwrap().matches(&node));
        let empty = LabelSelector::default();
        assert!(Selector::compile(Some(&empty)).unwrap().matches(&node));
        assert!(
            Selector::compile(Some(&empty))
                .unwrap()
                .matches(&labels(&[]))
        );
    }

    #[test]
    fn match_labels_and_expressions_must_all_hold() {
        let sel = LabelSelector {
            match_labels: Some([("zone".to_string(), "a".to_string())].into()),
            match_expressions: Some(vec![
                expr("rack", "In", &["r1", "r2"]),
                expr("tier", "NotIn", &["edge"]),
                expr("gpu", "DoesNotExist", &[]),
                expr("netrollout.io/managed", "Exists", &[]),
            ]),
        };
        let sel = Selector::compile(Some(&sel)).unwrap();
        let base = [("zone", "a"), ("rack", "r2"), ("netrollout.io/managed", "")];
        assert!(sel.matches(&labels(&base)));
        assert!(!sel.matches(&labels(&[
            ("zone", "b"),
            ("rack", "r2"),
            ("netrollout.io/managed", "")
        ])));
        assert!(!sel.matches(&labels(&[
            ("zone", "a"),
            ("rack", "r3"),
            ("netrollout.io/managed", "")
        ])));
        let mut edge = labels(&base);
        edge.insert("tier".into(), "edge".into());
        assert!(!sel.matches(&edge));
        let mut gpu = labels(&base);
        gpu.insert("gpu".into(), "yes".into());
        assert!(!sel.matches(&gpu));
        assert!(!sel.matches(&labels(&[("zone", "a"), ("rack", "r2")])));
    }

    #[test]
    fn a_bad_selector_reports_every_problem_with_its_field() {
        let sel = LabelSelector {
            match_labels: Some([("bad key!".to_string(), "ok".to_string())].into()),
            match_expressions: Some(vec![
                expr("rack", "In", &[]),
                expr("rack", "Exists", &["x"]),
                expr("rack", "Like", &["x"]),
            ]),
        };
        let problems = Selector::compile(Some(&sel)).unwrap_err();
        let fields: Vec<&str> = problems.iter().map(|(f, _)| f.as_str()).collect();
        assert_eq!(
            fields,
            [
                "matchLabels.bad key!",
                "matchExpressions[0].values",
                "matchExpressions[1].values",
                "matchExpressions[2].operator"
            ]
        );
        assert!(problems[3].1.contains("unknown operator \"Like\""));
    }
}
