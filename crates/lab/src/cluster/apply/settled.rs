//! When a set the lab applied in VM mode has been judged by the configurator: every object's
//! `Accepted` condition observes the generation applied, and the objects it accepted name one
//! revision (the configurator writes the conditions one by one after it made the revision, so
//! a read between two writes may see an older revision on some: not judged yet).

use kube::api::DynamicObject;
use kube::core::ApiResource;
use netrollout_api::ACCEPTED_CONDITION;

/// One object as the lab applied it.
#[derive(Clone, Debug)]
pub struct Applied {
    /// Its kind's resource.
    pub resource: ApiResource,
    /// Its name.
    pub name: String,
    /// Its `metadata.generation` as stored by the apply.
    pub generation: Option<i64>,
}

/// What the configurator has not judged yet of `applied`, one line per object, given the
/// objects as read back now (`seen`, in the same order); empty once the set is judged.
pub fn pending(applied: &[Applied], seen: &[DynamicObject]) -> Vec<String> {
    let mut pending = Vec::new();
    let mut revisions = Vec::new();
    for (a, obj) in applied.iter().zip(seen) {
        let what = format!("{} {}", a.resource.kind, a.name);
        // A later write (someone else's) moves the generation on: judge that one.
        let generation = obj.metadata.generation.or(a.generation);
        let condition = obj.data["status"]["conditions"]
            .as_array()
            .and_then(|cs| cs.iter().find(|c| c["type"] == ACCEPTED_CONDITION));
        let Some(c) = condition else {
            pending.push(format!("{what} has no Accepted condition yet"));
            continue;
        };
        let observed = c["observedGeneration"].as_i64();
        if observed != generation {
            pending.push(format!(
                "{what}'s Accepted condition observes generation {} of {}",
                observed.map_or("none".into(), |g| g.to_string()),
                generation.map_or("none".into(), |g| g.to_string()),
            ));
            continue;
        }
        if c["status"] == "True" {
            let revision = obj.data["status"]["revision"].as_str().unwrap_or_default();
            revisions.push((what, revision.to_string()));
        }
    }
    let distinct: std::collections::BTreeSet<&String> = revisions.iter().map(|(_, r)| r).collect();
    if pending.is_empty() && distinct.len() > 1 {
        pending.extend(
            revisions
                .iter()
                .map(|(what, revision)| format!("{what} is accepted into revision {revision:?}")),
        );
    }
    pending
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube::core::GroupVersionKind;
    use serde_json::json;

    fn applied(name: &str, generation: i64) -> Applied {
        let gvk = GroupVersionKind::gvk("netrollout.io", "v1alpha1", "Layer2NetworkConfiguration");
        Applied {
            resource: ApiResource::from_gvk_with_plural(&gvk, "layer2networkconfigurations"),
            name: name.into(),
            generation: Some(generation),
        }
    }

    fn seen(generation: i64, accepted: Option<(&str, i64)>, revision: &str) -> DynamicObject {
        let mut obj: DynamicObject = serde_json::from_value(json!({
            "apiVersion": "netrollout.io/v1alpha1",
            "kind": "Layer2NetworkConfiguration",
            "metadata": {"name": "x", "generation": generation},
        }))
        .unwrap();
        if let Some((status, observed)) = accepted {
            obj.data["status"] = json!({
                "revision": revision,
                "conditions": [
                    {"type": "Other", "status": "True", "observedGeneration": generation},
                    {"type": "Accepted", "status": status, "observedGeneration": observed},
                ],
            });
        }
        obj
    }

    #[test]
    fn a_set_is_judged_once_every_object_observes_its_generation_in_one_revision() {
        let set = [applied("a", 2), applied("b", 1)];
        let p = pending(
            &set,
            &[seen(2, Some(("True", 1)), "r-1"), seen(1, None, "")],
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].contains(
                "Layer2NetworkConfiguration a's Accepted condition observes generation 1 of 2"
            ),
            "{p:?}"
        );
        assert!(p[1].contains("b has no Accepted condition yet"), "{p:?}");
        // Both judged, but a still names the partial revision: not yet.
        let p = pending(
            &set,
            &[
                seen(2, Some(("True", 2)), "r-1"),
                seen(1, Some(("True", 1)), "r-2"),
            ],
        );
        assert_eq!(p.len(), 2, "{p:?}");
        assert!(
            p[0].contains("a is accepted into revision \"r-1\""),
            "{p:?}"
        );
        assert!(
            p[1].contains("b is accepted into revision \"r-2\""),
            "{p:?}"
        );
        let p = pending(
            &set,
            &[
                seen(2, Some(("True", 2)), "r-2"),
                seen(1, Some(("True", 1)), "r-2"),
            ],
        );
        assert!(p.is_empty(), "{p:?}");
    }

    #[test]
    fn a_refused_object_is_judged_too_and_a_later_generation_is_the_one_waited_for() {
        let set = [applied("a", 1), applied("b", 1)];
        let p = pending(
            &set,
            &[
                seen(1, Some(("False", 1)), ""),
                seen(1, Some(("False", 1)), ""),
            ],
        );
        assert!(p.is_empty(), "refusals are verdicts: {p:?}");
        // Someone changed b after the apply: its new generation is what counts.
        let p = pending(
            &set,
            &[
                seen(1, Some(("True", 1)), "r-3"),
                seen(2, Some(("True", 1)), "r-3"),
            ],
        );
        assert_eq!(p.len(), 1, "{p:?}");
        assert!(p[0].contains("observes generation 1 of 2"), "{p:?}");
    }
}
