//! The executor of the lifecycle's actions: API writes, log lines, Events and metrics, in
//! order; it keeps the revisions as its own last write left them.

use std::collections::HashMap;
use std::sync::Arc;

use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use netrollout_api::{
    NetworkConfigRevision, NetworkConfigRevisionSpec, RETRIED_ANNOTATION, RETRY_ANNOTATION,
    RevisionPhase, UNDO_ANNOTATION,
};
use netrollout_rollout::lifecycle::{NameClash, RaiseReason, Retried, RevisionAction};

use super::Memos;
use super::live::{Checked, Live};
use crate::accepted;
use crate::conditions;
use crate::context::{Context, StatusPatch};
use crate::convert;
use crate::error::{Error, Result};

/// Carries out lifecycle actions; keeps the revisions as the last write left them.
pub(super) struct Executor<'a> {
    ctx: &'a Context,
    memos: &'a Memos,
    live: &'a Live,
    checked: &'a Checked,
    revisions: HashMap<String, Arc<NetworkConfigRevision>>,
}

impl<'a> Executor<'a> {
    /// An executor over the pass's `live` inputs, their `checked` merge and the `current`
    /// revisions.
    pub(super) fn new(
        ctx: &'a Context,
        memos: &'a Memos,
        live: &'a Live,
        checked: &'a Checked,
        current: Vec<Arc<NetworkConfigRevision>>,
    ) -> Self {
        Self {
            ctx,
            memos,
            live,
            checked,
            revisions: current
                .into_iter()
                .filter_map(|r| Some((r.metadata.name.clone()?, r)))
                .collect(),
        }
    }

    fn api(&self) -> Api<NetworkConfigRevision> {
        self.ctx.writer().api()
    }

    /// The snapshot of the newest revision by sequence but `name`: the target before `name`
    /// became it (the change record compares against it).
    fn previous_target(&self, name: &str) -> Option<netrollout_api::Snapshot> {
        (self.revisions.values())
            .filter(|r| r.metadata.name.as_deref() != Some(name))
            .max_by_key(|r| r.spec.sequence)
            .map(|r| r.spec.snapshot.clone())
    }

    /// Writes the change record of revision `name` (`status.changes`) and returns the revision.
    async fn write_changes(
        &mut self,
        name: &str,
        changes: &[netrollout_api::InputChange],
    ) -> Result<Arc<NetworkConfigRevision>> {
        let write = StatusPatch {
            revision: name.to_string(),
            status: serde_json::json!({ "changes": changes }),
            what: "record the changes of",
        };
        let patched = self.ctx.writer().patch_status(&write).await?;
        self.written(patched.clone());
        Ok(patched)
    }

    fn revision(&self, name: &str) -> Result<Arc<NetworkConfigRevision>> {
        self.revisions
            .get(name)
            .cloned()
            .ok_or_else(|| Error::UnknownRevision(name.to_string()))
    }

    /// Keeps `obj` as the last write left it (the writer lays it over the cache).
    fn written(&mut self, obj: Arc<NetworkConfigRevision>) {
        if let Some(name) = obj.metadata.name.clone() {
            self.revisions.insert(name, obj);
        }
    }

    pub(super) async fn one(&mut self, action: RevisionAction) -> Result<()> {
        match action {
            RevisionAction::ClearFailed { revision } => self.clear_failed(&revision).await,
            RevisionAction::RaiseSequence {
                revision,
                from,
                to,
                reason,
                retried,
            } => self.raise(&revision, from, to, reason, retried).await,
            RevisionAction::DropRetry { revision } => self.drop_retry(&revision).await,
            RevisionAction::Create {
                name,
                hash,
                size,
                sequence,
            } => self.create(name, hash, size, sequence).await,
            RevisionAction::WaitForDeletion { revision } => {
                tracing::info!(revision = %revision, "waiting: the revision for these inputs is being deleted; it is never adopted");
                Ok(())
            }
            RevisionAction::ReportClash {
                revision,
                existing,
                wanted,
            } => {
                let err = Error::NameClash(NameClash {
                    name: revision.clone(),
                    existing,
                    wanted,
                });
                // Never overwritten; the rollout of existing revisions goes on meanwhile.
                tracing::error!(revision = %revision, "{err}");
                self.ctx.metrics().error(&err);
                Ok(())
            }
            RevisionAction::NoteIdentical { revision, message } => {
                if self.memos.noted.first_time(&revision, &message) {
                    tracing::warn!(revision = %revision, "inputs {message}");
                    let failed = self.revision(&revision)?;
                    self.ctx
                        .writer()
                        .event(
                            failed.as_ref(),
                            true,
                            "IdenticalToFailed",
                            "Block",
                            &message,
                        )
                        .await;
                }
                Ok(())
            }
            RevisionAction::SetAccepted { input, update } => {
                let reference = self.live.reference(&input);
                let conditions = self.live.conditions(&input);
                accepted::write(
                    self.ctx,
                    &self.memos.accepted,
                    &input,
                    &update,
                    &conditions,
                    reference.as_ref(),
                )
                .await
            }
        }
    }

    async fn clear_failed(&mut self, name: &str) -> Result<()> {
        let message = "retried by a person: rolled out again as the newest revision";
        let existing = self.revision(name)?;
        let fields = conditions::for_retry(&existing, message, self.ctx.read().globally_paused());
        let write = StatusPatch {
            revision: name.to_string(),
            status: serde_json::json!({
                "phase": RevisionPhase::Pending,
                "message": message,
                "failedNodes": [],
                // The analysis is measured afresh: a retry rolls it out again from its first wave.
                "analysis": null,
                "conditions": fields["conditions"],
                "observedGeneration": fields["observedGeneration"],
            }),
            what: "clear Failed on",
        };
        let cleared = self.ctx.writer().patch_status(&write).await?;
        self.written(cleared);
        Ok(())
    }

    async fn raise(
        &mut self,
        name: &str,
        from: i64,
        to: i64,
        reason: RaiseReason,
        retried: Option<Retried>,
    ) -> Result<()> {
        let existing = self.revision(name)?;
        let before = self.previous_target(name);
        let changes = super::record::changes(before.as_ref(), &existing.spec.snapshot, self.live);
        let mut annotations = serde_json::json!({ RETRY_ANNOTATION: null });
        match retried {
            Some(Retried::Value(v)) => annotations[RETRIED_ANNOTATION] = v.into(),
            Some(Retried::At(t)) => annotations[RETRIED_ANNOTATION] = convert::format_ts(t).into(),
            None => {}
        }
        // An undo to known-good is never held by the maintenance schedule: mark the sequence
        // it gets; any other raise clears the mark.
        let was_good =
            existing.status.as_ref().and_then(|s| s.phase) == Some(RevisionPhase::Succeeded);
        annotations[UNDO_ANNOTATION] = match reason {
            RaiseReason::InputsEqualAgain if was_good => to.to_string().into(),
            _ => serde_json::Value::Null,
        };
        let patch = serde_json::json!({
            "metadata": {
                "resourceVersion": existing.metadata.resource_version,
                "annotations": annotations,
            },
            "spec": { "sequence": to },
        });
        let patched = self
            .ctx
            .writer()
            .write_revision(
                || format!("raise the sequence of NetworkConfigRevision {name}"),
                self.api()
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await?;
        self.written(patched);
        let patched = self.write_changes(name, &changes).await?;
        let msg = format!(
            "{}: sequence raised from {from} to {to}, which makes it the target again{}",
            reason.as_str(),
            super::record::note(&changes)
        );
        tracing::info!(revision = %name, sequence = to, "{msg}");
        self.ctx
            .writer()
            .event(
                patched.as_ref(),
                false,
                "SequenceRaised",
                "RaiseSequence",
                &msg,
            )
            .await;
        self.written(patched);
        Ok(())
    }

    async fn drop_retry(&mut self, name: &str) -> Result<()> {
        let patch =
            serde_json::json!({ "metadata": { "annotations": { RETRY_ANNOTATION: null } } });
        let patched = self
            .ctx
            .writer()
            .write_revision(
                || format!("remove the retry annotation of NetworkConfigRevision {name}"),
                self.api()
                    .patch(name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await?;
        let msg = format!(
            "retry of revision {name} ignored: only a Failed or Blocked revision is retried; the annotation was removed"
        );
        tracing::info!(revision = %name, "{msg}");
        self.ctx
            .writer()
            .event(patched.as_ref(), false, "RetryIgnored", "DropRetry", &msg)
            .await;
        self.written(patched);
        Ok(())
    }

    async fn create(
        &mut self,
        name: String,
        hash: String,
        size: usize,
        sequence: i64,
    ) -> Result<()> {
        // The lifecycle creates only the revision of the valid candidate it was given.
        let Checked::Valid { revision, snapshot } = self.checked else {
            return Err(Error::UnknownRevision(name));
        };
        if revision.name != name {
            return Err(Error::UnknownRevision(name));
        }
        let snapshot = snapshot.clone();
        let changes =
            super::record::changes(self.previous_target(&name).as_ref(), &snapshot, self.live);
        let analysis = crate::analysis::snapshot(self.ctx).await?;
        let obj = NetworkConfigRevision {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                labels: Some(
                    [(
                        netrollout_api::MANAGED_BY_LABEL.to_string(),
                        "netrollout-configurator".to_string(),
                    )]
                    .into(),
                ),
                ..ObjectMeta::default()
            },
            spec: NetworkConfigRevisionSpec {
                sequence,
                hash,
                paused: false,
                snapshot,
                analysis,
                promotion: None,
            },
            status: None,
        };
        let created = self
            .ctx
            .writer()
            .write_revision(
                || format!("create NetworkConfigRevision {name}"),
                self.api().create(&PostParams::default(), &obj),
            )
            .await?;
        let gates: Vec<&str> = created
            .spec
            .analysis
            .iter()
            .map(|a| a.name.as_str())
            .collect();
        let gated = if gates.is_empty() {
            String::new()
        } else {
            format!(", each wave gated by RolloutAnalysis {}", gates.join(", "))
        };
        self.written(created);
        let created = self.write_changes(&name, &changes).await?;
        let msg = format!(
            "created revision {name} (sequence {sequence}, {size} bytes) from the inputs{gated}{}",
            super::record::note(&changes)
        );
        tracing::info!(revision = %name, sequence, "{msg}");
        self.ctx
            .writer()
            .event(created.as_ref(), false, "Created", "CreateRevision", &msg)
            .await;
        self.written(created);
        Ok(())
    }
}
