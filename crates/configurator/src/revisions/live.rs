//! The live inputs of one pass and their conversion into the lifecycle's types
//! ([`netrollout_rollout::lifecycle`]): the inputs and revisions as it sees them, and the
//! merged snapshot, checked ([`Checked`]) and reduced to a [`Candidate`].

use std::sync::{Arc, Mutex, PoisonError};

use k8s_openapi::api::core::v1::ObjectReference;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition;
use kube::Resource;
use netrollout_api::{
    ACCEPTED_CONDITION, BGPPeering, InputStatus, Layer2NetworkConfiguration, NetworkConfigRevision,
    RETRY_ANNOTATION, RevisionPhase as ApiPhase, RoutingTable, Snapshot, VRFRouteConfiguration,
};
use netrollout_render::{Node as RenderNode, Revision};
use netrollout_rollout::RevisionPhase;
use netrollout_rollout::lifecycle::{
    AcceptedShown, Candidate, Content, InputKind, InputObject, InputRef, Invalid, RevisionView,
};

use crate::error::{Error, Result};

type KeyPart = (InputKind, String, Option<String>, bool);

/// The live inputs merged into one snapshot and checked: what the renderer said, with the
/// snapshot a new revision is created from.
#[derive(Clone, Debug, PartialEq)]
pub enum Checked {
    /// The snapshot is valid: this is the revision it makes.
    Valid {
        /// Name, hash and size.
        revision: Revision,
        /// The snapshot itself.
        snapshot: Snapshot,
    },
    /// The snapshot is invalid; every problem is listed.
    Invalid(Invalid),
}

impl Checked {
    /// The lifecycle's view: the revision without its snapshot, or the problems.
    pub fn candidate(&self) -> Candidate {
        match self {
            Checked::Valid { revision, .. } => Candidate::Valid(Content {
                name: revision.name.clone(),
                hash: revision.hash.clone(),
                size: revision.size,
            }),
            Checked::Invalid(invalid) => Candidate::Invalid(invalid.clone()),
        }
    }
}

/// The input objects of one pass, as the watch caches hold them.
#[derive(Debug)]
pub struct Live {
    pub vrfs: Vec<Arc<VRFRouteConfiguration>>,
    pub layer2s: Vec<Arc<Layer2NetworkConfiguration>>,
    pub tables: Vec<Arc<RoutingTable>>,
    pub peerings: Vec<Arc<BGPPeering>>,
}

impl Live {
    /// The objects not being deleted (inputs being deleted count as gone).
    fn live<K: Resource + Clone>(objs: &[Arc<K>]) -> Vec<K> {
        objs.iter()
            .filter(|o| o.meta().deletion_timestamp.is_none())
            .map(|o| (**o).clone())
            .collect()
    }

    /// The lifecycle's view of the live inputs, kind by kind.
    pub fn views(&self) -> Vec<InputObject> {
        fn of<K: Resource>(
            kind: InputKind,
            objs: &[Arc<K>],
            status: impl Fn(&K) -> Option<&InputStatus>,
        ) -> impl Iterator<Item = InputObject> {
            objs.iter()
                .filter(|o| o.meta().deletion_timestamp.is_none())
                .map(move |o| input_view(kind, o.as_ref(), status(o)))
        }
        of(InputKind::Vrf, &self.vrfs, |o| o.status.as_ref())
            .chain(of(InputKind::Layer2, &self.layer2s, |o| o.status.as_ref()))
            .chain(of(InputKind::Table, &self.tables, |o| o.status.as_ref()))
            .chain(of(InputKind::Peering, &self.peerings, |o| {
                o.status.as_ref()
            }))
            .collect()
    }

    /// The live inputs merged, validated, hashed and rendered for `nodes`. When they are
    /// invalid, clashes are blamed on the inputs that changed since `accepted`, the snapshot of
    /// the newest revision (see `netrollout_render::compile_against`).
    pub fn check(&self, nodes: &[RenderNode], accepted: Option<&Snapshot>) -> Result<Checked> {
        let mut snapshot = netrollout_render::from_objects(
            &Self::live(&self.vrfs),
            &Self::live(&self.layer2s),
            &Self::live(&self.tables),
        );
        snapshot.bgp_peerings = netrollout_render::peerings(&Self::live(&self.peerings));
        let checked = Revision::of(&snapshot).and_then(|revision| {
            netrollout_render::render(&snapshot, nodes)?;
            Ok(revision)
        });
        match checked {
            Ok(revision) => Ok(Checked::Valid { revision, snapshot }),
            Err(netrollout_render::Error::Invalid(invalid)) => {
                let blamed = accepted.map(|a| netrollout_render::compile_against(&snapshot, a));
                Ok(Checked::Invalid(match blamed {
                    Some(Err(netrollout_render::Error::Invalid(blamed))) => blamed,
                    _ => invalid,
                }))
            }
            Err(source) => Err(Error::Render {
                revision: "(new)".into(),
                source,
            }),
        }
    }

    /// What the candidate is made of: every input's identity and version, and the nodes'.
    pub fn key(&self, nodes: u64, base: Option<String>) -> CandidateKey {
        fn of<K: Resource>(kind: InputKind, objs: &[Arc<K>]) -> impl Iterator<Item = KeyPart> {
            objs.iter().map(move |o| {
                let m = o.meta();
                (
                    kind,
                    m.name.clone().unwrap_or_default(),
                    m.resource_version.clone(),
                    m.deletion_timestamp.is_some(),
                )
            })
        }
        let mut inputs: Vec<KeyPart> = of(InputKind::Vrf, &self.vrfs)
            .chain(of(InputKind::Layer2, &self.layer2s))
            .chain(of(InputKind::Table, &self.tables))
            .chain(of(InputKind::Peering, &self.peerings))
            .collect();
        inputs.sort();
        CandidateKey {
            nodes,
            inputs,
            base,
        }
    }

    /// A reference to `input` for an Event.
    pub fn reference(&self, input: &InputRef) -> Option<ObjectReference> {
        fn find<K: Resource<DynamicType = ()>>(
            objs: &[Arc<K>],
            name: &str,
        ) -> Option<ObjectReference> {
            objs.iter()
                .find(|o| o.meta().name.as_deref() == Some(name))
                .map(|o| o.object_ref(&()))
        }
        match input.kind {
            InputKind::Vrf => find(&self.vrfs, &input.name),
            InputKind::Layer2 => find(&self.layer2s, &input.name),
            InputKind::Table => find(&self.tables, &input.name),
            InputKind::Peering => find(&self.peerings, &input.name),
        }
    }

    /// The `status.conditions` of the live `input` (empty when it has none).
    pub fn conditions(&self, input: &InputRef) -> Vec<Condition> {
        fn find<K: Resource>(
            objs: &[Arc<K>],
            name: &str,
            status: impl Fn(&K) -> Option<&InputStatus>,
        ) -> Vec<Condition> {
            objs.iter()
                .filter(|o| o.meta().deletion_timestamp.is_none())
                .find(|o| o.meta().name.as_deref() == Some(name))
                .and_then(|o| status(o).map(|s| s.conditions.clone()))
                .unwrap_or_default()
        }
        match input.kind {
            InputKind::Vrf => find(&self.vrfs, &input.name, |o| o.status.as_ref()),
            InputKind::Layer2 => find(&self.layer2s, &input.name, |o| o.status.as_ref()),
            InputKind::Table => find(&self.tables, &input.name, |o| o.status.as_ref()),
            InputKind::Peering => find(&self.peerings, &input.name, |o| o.status.as_ref()),
        }
    }
}

/// The lifecycle's view of one input object of `kind`.
fn input_view<K: Resource>(kind: InputKind, obj: &K, status: Option<&InputStatus>) -> InputObject {
    let accepted = status
        .and_then(|s| s.conditions.iter().find(|c| c.type_ == ACCEPTED_CONDITION))
        .map(|c| AcceptedShown {
            status: c.status.clone(),
            reason: c.reason.clone(),
            message: c.message.clone(),
            observed_generation: c.observed_generation,
        });
    InputObject {
        input: InputRef {
            kind,
            name: obj.meta().name.clone().unwrap_or_default(),
        },
        generation: obj.meta().generation,
        accepted,
        revision: status.and_then(|s| s.revision.clone()),
    }
}

/// The lifecycle's view of a revision.
pub fn revision_view(ncr: &NetworkConfigRevision) -> RevisionView {
    RevisionView {
        name: ncr.metadata.name.clone().unwrap_or_default(),
        hash: ncr.spec.hash.clone(),
        sequence: ncr.spec.sequence,
        phase: ncr.status.as_ref().and_then(|s| s.phase).map(|p| match p {
            ApiPhase::Pending => RevisionPhase::Pending,
            ApiPhase::Progressing => RevisionPhase::Progressing,
            ApiPhase::Succeeded => RevisionPhase::Succeeded,
            ApiPhase::Failed => RevisionPhase::Failed,
            ApiPhase::Superseded => RevisionPhase::Superseded,
            ApiPhase::Blocked => RevisionPhase::Blocked,
        }),
        deleting: ncr.metadata.deletion_timestamp.is_some(),
        retry: ncr
            .metadata
            .annotations
            .as_ref()
            .and_then(|a| a.get(RETRY_ANNOTATION))
            .cloned(),
    }
}

/// What a candidate revision is made from: the render nodes' generation and each input's
/// kind, name, resourceVersion and whether it is being deleted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandidateKey {
    /// [`crate::fleet::View::render_nodes`]' generation.
    pub nodes: u64,
    /// Every input (sorted).
    pub inputs: Vec<(InputKind, String, Option<String>, bool)>,
    /// The newest revision, whose snapshot decides whom a clash is blamed on.
    pub base: Option<String>,
}

/// The candidate last checked (merged, validated, hashed, rendered for every node), so that a
/// pass whose inputs and nodes did not change does not render the whole fleet again.
#[derive(Debug, Default)]
pub struct CandidateMemo {
    last: Mutex<Option<(CandidateKey, Arc<Checked>)>>,
}

impl CandidateMemo {
    /// The candidate for `key`: remembered, or made by `check` (and remembered if it is Ok).
    ///
    /// # Errors
    /// `check`'s.
    pub fn get_or(
        &self,
        key: CandidateKey,
        check: impl FnOnce() -> Result<Checked>,
    ) -> Result<Arc<Checked>> {
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((k, c)) = last.as_ref()
            && *k == key
        {
            return Ok(c.clone());
        }
        let c = Arc::new(check()?);
        *last = Some((key, c.clone()));
        Ok(c)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table(name: &str, conditions: serde_json::Value, deleting: bool) -> Arc<RoutingTable> {
        let mut obj = serde_json::json!({
            "apiVersion": "netrollout.io/v1alpha1",
            "kind": "RoutingTable",
            "metadata": { "name": name, "generation": 3 },
            "spec": { "tableId": 100 },
            "status": { "conditions": conditions, "revision": "ncr-1" },
        });
        if deleting {
            obj["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z".into();
        }
        Arc::new(serde_json::from_value(obj).unwrap())
    }

    fn condition(type_: &str, status: &str) -> serde_json::Value {
        serde_json::json!({
            "type": type_, "status": status, "reason": "R", "message": "m",
            "observedGeneration": 2, "lastTransitionTime": "2026-01-01T00:00:00Z",
        })
    }

    #[test]
    fn inputs_are_seen_with_their_accepted_condition_and_inputs_being_deleted_are_not() {
        let live = Live {
            vrfs: vec![],
            layer2s: vec![],
            peerings: vec![],
            tables: vec![
                table(
                    "t1",
                    serde_json::json!([condition("Other", "True"), condition("Accepted", "False")]),
                    false,
                ),
                table("gone", serde_json::json!([]), true),
            ],
        };
        let views = live.views();
        assert_eq!(views.len(), 1, "{views:?}");
        let v = &views[0];
        assert_eq!(v.input.to_string(), "RoutingTable t1");
        assert_eq!(v.generation, Some(3));
        assert_eq!(v.revision.as_deref(), Some("ncr-1"));
        assert_eq!(
            v.accepted,
            Some(AcceptedShown {
                status: "False".into(),
                reason: "R".into(),
                message: "m".into(),
                observed_generation: Some(2),
            })
        );
        // The write keeps the other conditions: they are read from the same object.
        let conditions = live.conditions(&v.input);
        let types: Vec<&str> = conditions.iter().map(|c| c.type_.as_str()).collect();
        assert_eq!(types, ["Other", "Accepted"]);
    }

    #[test]
    fn a_candidate_is_checked_again_only_when_what_it_is_made_of_changed() {
        let memo = CandidateMemo::default();
        let key = |nodes, rv: &str| CandidateKey {
            nodes,
            inputs: vec![(InputKind::Table, "t".into(), Some(rv.into()), false)],
            base: None,
        };
        let invalid = || {
            Ok(Checked::Invalid(netrollout_render::Invalid::new(
                netrollout_render::LIMITS,
            )))
        };
        let mut checks = 0;
        for k in [
            key(1, "1"),
            key(1, "1"),
            key(2, "1"),
            key(2, "2"),
            key(2, "2"),
        ] {
            memo.get_or(k, || {
                checks += 1;
                invalid()
            })
            .unwrap();
        }
        assert_eq!(checks, 3);
    }
}
