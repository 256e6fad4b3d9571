//! `undo`: rewrite the input objects to an older revision's `spec.snapshot`.
//!
//! The configurator then finds that the inputs hash to the older revision and raises its
//! sequence, which makes it the target again (docs/contract.md, "Revisions" rule 5): no new name, the
//! same known-good content. The plan (create, update, delete per object) is shown before
//! anything is written; `--dry-run` stops there, and writing needs `--yes` or a "y" on a
//! terminal. Metadata of updated objects (labels, annotations) is kept; only `spec` changes.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Debug;

use kube::api::{DeleteParams, PostParams};
use kube::{Api, Resource};
use netrollout_api::{
    BGPPeering, Layer2NetworkConfiguration, NamedInput, NetworkConfigRevision, RevisionPhase,
    RoutingTable, VRFRouteConfiguration,
};
use serde::Serialize;
use serde::de::DeserializeOwned;

use crate::cluster::{FIELD_MANAGER, Inputs, find, name, phase};
use crate::diff::{Change, changes};
use crate::{Error, Result};

/// What happens to one input object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub enum Action {
    /// The older revision has it; the cluster does not.
    Create,
    /// Both have it with different specs.
    Update,
    /// The cluster has it; the older revision does not.
    Delete,
}

/// One object's change.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Step {
    /// Kind of the object.
    pub kind: &'static str,
    /// Its name.
    pub name: String,
    /// What happens to it.
    pub action: Action,
    /// Its spec changes (`spec.…` paths).
    pub changes: Vec<Change>,
}

impl Step {
    /// `update VRFRouteConfiguration m2m` and the indented spec changes.
    pub fn describe(&self) -> String {
        let verb = match self.action {
            Action::Create => "create",
            Action::Update => "update",
            Action::Delete => "delete",
        };
        let mut s = format!("{verb} {} {}\n", self.kind, self.name);
        for c in &self.changes {
            s.push_str(&format!("    {c}\n"));
        }
        s
    }
}

/// The revision `undo` goes back to: `to` (a name, sequence or hash prefix), or else the newest
/// Succeeded revision older than the newest one.
///
/// # Errors
/// [`Error::Refused`] for a Failed or Blocked target or when there is no earlier Succeeded one.
pub fn choose<'a>(
    revisions: &'a [NetworkConfigRevision],
    to: Option<&str>,
) -> Result<&'a NetworkConfigRevision> {
    let rev = match to {
        Some(wanted) => find(revisions, wanted)?,
        None => revisions
            .iter()
            .skip(1)
            .find(|r| phase(r) == RevisionPhase::Succeeded)
            .ok_or_else(|| {
                Error::Refused(
                    "there is no Succeeded revision older than the newest one; name one with --to-revision \
                     (`kubectl netrollout history` lists them)"
                        .into(),
                )
            })?,
    };
    match phase(rev) {
        p @ (RevisionPhase::Failed | RevisionPhase::Blocked) => Err(Error::Refused(format!(
            "revision {} is {p:?}; undo goes back only to revisions that did not fail (use `retry` to try it again)",
            name(rev)
        ))),
        _ => Ok(rev),
    }
}

/// Every step that makes `inputs` equal to `target`'s snapshot, kind by kind, in name order.
///
/// # Errors
/// [`Error::Refused`] when an object to create is still being deleted.
pub fn plan(inputs: &Inputs, target: &NetworkConfigRevision) -> Result<Vec<Step>> {
    let s = &target.spec.snapshot;
    let mut steps = plan_kind(
        "VRFRouteConfiguration",
        &inputs.vrfs,
        |o| &o.spec,
        &s.vrf_route_configurations,
    )?;
    steps.extend(plan_kind(
        "Layer2NetworkConfiguration",
        &inputs.layer2s,
        |o| &o.spec,
        &s.layer2_network_configurations,
    )?);
    steps.extend(plan_kind(
        "RoutingTable",
        &inputs.tables,
        |o| &o.spec,
        &s.routing_tables,
    )?);
    steps.extend(plan_kind(
        "BGPPeering",
        &inputs.peerings,
        |o| &o.spec,
        &s.bgp_peerings,
    )?);
    Ok(steps)
}

fn plan_kind<K: Resource, S: Serialize + PartialEq>(
    kind: &'static str,
    objects: &[K],
    spec: impl Fn(&K) -> &S,
    target: &[NamedInput<S>],
) -> Result<Vec<Step>> {
    let value = |v: &S| serde_json::json!({ "spec": v });
    let live: BTreeMap<&str, &K> = objects
        .iter()
        .filter(|o| o.meta().deletion_timestamp.is_none())
        .map(|o| (o.meta().name.as_deref().unwrap_or_default(), o))
        .collect();
    let deleting: BTreeSet<&str> = objects
        .iter()
        .filter(|o| o.meta().deletion_timestamp.is_some())
        .filter_map(|o| o.meta().name.as_deref())
        .collect();
    let mut steps = vec![];
    for t in target {
        match live.get(t.name.as_str()) {
            Some(o) if spec(o) == &t.spec => {}
            Some(o) => steps.push(Step {
                kind,
                name: t.name.clone(),
                action: Action::Update,
                changes: changes(&value(spec(o)), &value(&t.spec)),
            }),
            None if deleting.contains(t.name.as_str()) => {
                return Err(Error::Refused(format!(
                    "{kind} {} is being deleted; wait until it is gone, then run undo again",
                    t.name
                )));
            }
            None => steps.push(Step {
                kind,
                name: t.name.clone(),
                action: Action::Create,
                changes: changes(&serde_json::json!({}), &value(&t.spec)),
            }),
        }
    }
    for (n, o) in &live {
        if !target.iter().any(|t| t.name == *n) {
            steps.push(Step {
                kind,
                name: (*n).to_string(),
                action: Action::Delete,
                changes: changes(&value(spec(o)), &serde_json::json!({})),
            });
        }
    }
    steps.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(steps)
}

/// What `undo` writes into the change record of each input it creates or updates.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Stamp {
    /// The user the API server authenticated (`netrollout.io/changed-by`; `None`: the
    /// annotation is removed, since the previous one would name someone else).
    pub by: Option<String>,
    /// `netrollout.io/change-reason`.
    pub reason: String,
}

impl Stamp {
    /// Sets the change annotations on `meta` (and drops a ticket of an earlier change).
    fn on(&self, meta: &mut kube::api::ObjectMeta) {
        let a = meta.annotations.get_or_insert_with(Default::default);
        match &self.by {
            Some(by) => a.insert(netrollout_api::CHANGED_BY_ANNOTATION.into(), by.clone()),
            None => a.remove(netrollout_api::CHANGED_BY_ANNOTATION),
        };
        a.insert(
            netrollout_api::CHANGE_REASON_ANNOTATION.into(),
            self.reason.clone(),
        );
        a.remove(netrollout_api::TICKET_ANNOTATION);
    }
}

/// Carries out the steps; returns one line per object written.
///
/// # Errors
/// [`Error::Api`] at the first failed write (earlier writes stay; running undo again finishes).
pub async fn execute(
    client: &kube::Client,
    inputs: &Inputs,
    target: &NetworkConfigRevision,
    steps: &[Step],
    stamp: &Stamp,
) -> Result<Vec<String>> {
    let s = &target.spec.snapshot;
    let mut done = vec![];
    for step in steps {
        let line = match step.kind {
            "VRFRouteConfiguration" => {
                write(
                    Api::all(client.clone()),
                    step,
                    &inputs.vrfs,
                    &s.vrf_route_configurations,
                    VRFRouteConfiguration::new,
                    |o, v| o.spec = v,
                    stamp,
                )
                .await?
            }
            "Layer2NetworkConfiguration" => {
                write(
                    Api::all(client.clone()),
                    step,
                    &inputs.layer2s,
                    &s.layer2_network_configurations,
                    Layer2NetworkConfiguration::new,
                    |o, v| o.spec = v,
                    stamp,
                )
                .await?
            }
            "BGPPeering" => {
                write(
                    Api::all(client.clone()),
                    step,
                    &inputs.peerings,
                    &s.bgp_peerings,
                    BGPPeering::new,
                    |o, v| o.spec = v,
                    stamp,
                )
                .await?
            }
            _ => {
                write(
                    Api::all(client.clone()),
                    step,
                    &inputs.tables,
                    &s.routing_tables,
                    RoutingTable::new,
                    |o, v| o.spec = v,
                    stamp,
                )
                .await?
            }
        };
        done.push(line);
    }
    Ok(done)
}

async fn write<K, S>(
    api: Api<K>,
    step: &Step,
    objects: &[K],
    target: &[NamedInput<S>],
    new: impl Fn(&str, S) -> K,
    set: impl Fn(&mut K, S),
    stamp: &Stamp,
) -> Result<String>
where
    K: Resource + Clone + Serialize + DeserializeOwned + Debug,
    S: Clone,
{
    let pp = PostParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..Default::default()
    };
    let what = format!("{} {}", step.kind, step.name);
    let spec = || {
        target
            .iter()
            .find(|t| t.name == step.name)
            .map(|t| t.spec.clone())
    };
    let current = || {
        objects.iter().find(|o| {
            o.meta().name.as_deref() == Some(step.name.as_str())
                && o.meta().deletion_timestamp.is_none()
        })
    };
    let missing = || Error::Refused(format!("{what} changed while undo ran; run undo again"));
    match step.action {
        Action::Create => {
            let mut obj = new(&step.name, spec().ok_or_else(missing)?);
            stamp.on(obj.meta_mut());
            api.create(&pp, &obj)
                .await
                .map_err(Error::api(format!("creating {what}")))?;
            Ok(format!("created {what}"))
        }
        Action::Update => {
            // The listed object carries its resourceVersion: a concurrent edit makes this a
            // Conflict instead of being overwritten.
            let mut obj = current().ok_or_else(missing)?.clone();
            set(&mut obj, spec().ok_or_else(missing)?);
            stamp.on(obj.meta_mut());
            api.replace(&step.name, &pp, &obj)
                .await
                .map_err(Error::api(format!("updating {what}")))?;
            Ok(format!("updated {what}"))
        }
        Action::Delete => {
            api.delete(&step.name, &DeleteParams::default())
                .await
                .map_err(Error::api(format!("deleting {what}")))?;
            Ok(format!("deleted {what}"))
        }
    }
}
