//! Inputs → revisions ("Revisions" in docs/contract.md), the I/O half: gather the live inputs and
//! the revisions, check the merged snapshot, let [`lifecycle::decide()`] choose, and carry its
//! [`RevisionAction`]s out as API writes, log lines, Events and metrics, in order, stopping at
//! the first failed write.

use std::collections::HashMap;
use std::sync::Arc;

use k8s_openapi::api::core::v1::ObjectReference;
use kube::Resource;
use kube::api::{Api, ObjectMeta, Patch, PatchParams, PostParams};
use netrollout_api::{
    Layer2NetworkConfiguration, NetworkConfigRevision, NetworkConfigRevisionSpec, RETRY_ANNOTATION,
    RevisionPhase, RoutingTable, Snapshot, VRFRouteConfiguration,
};
use netrollout_render::{Node as RenderNode, Revision};
use tracing::Instrument;

use crate::accepted;
use crate::conditions::{self, Refusal};
use crate::context::Context;
use crate::convert;
use crate::error::{Error, Result};
use crate::lifecycle::model::{layer2_status, table_status, vrf_status};
use crate::lifecycle::{
    self, Candidate, InputKind, InputObject, InputRef, RaiseReason, RevisionAction, RevisionView,
};
use crate::memo::CandidateKey;
use crate::spans;

pub use netrollout_api::RETRIED_ANNOTATION;

type KeyPart = (InputKind, String, Option<String>, bool);

/// The input objects of one pass, as the watch caches hold them.
struct Live {
    vrfs: Vec<Arc<VRFRouteConfiguration>>,
    layer2s: Vec<Arc<Layer2NetworkConfiguration>>,
    tables: Vec<Arc<RoutingTable>>,
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
    fn views(&self) -> Vec<InputObject> {
        let mut out = InputObject::live(
            InputKind::Vrf,
            self.vrfs.iter().map(AsRef::as_ref),
            vrf_status,
        );
        out.extend(InputObject::live(
            InputKind::Layer2,
            self.layer2s.iter().map(AsRef::as_ref),
            layer2_status,
        ));
        out.extend(InputObject::live(
            InputKind::Table,
            self.tables.iter().map(AsRef::as_ref),
            table_status,
        ));
        out
    }

    /// The live inputs merged, validated, hashed and rendered for `nodes`. When they are
    /// invalid, clashes are blamed on the inputs that changed since `accepted`, the snapshot of
    /// the newest revision (see `netrollout_render::compile_against`).
    fn check(&self, nodes: &[RenderNode], accepted: Option<&Snapshot>) -> Result<Candidate> {
        let snapshot = netrollout_render::from_objects(
            &Self::live(&self.vrfs),
            &Self::live(&self.layer2s),
            &Self::live(&self.tables),
        );
        let checked = Revision::of(&snapshot).and_then(|revision| {
            netrollout_render::render(&snapshot, nodes)?;
            Ok(revision)
        });
        match checked {
            Ok(revision) => Ok(Candidate::Valid { revision, snapshot }),
            Err(netrollout_render::Error::Invalid(invalid)) => {
                let blamed = accepted.map(|a| netrollout_render::compile_against(&snapshot, a));
                Ok(Candidate::Invalid(match blamed {
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
    fn key(&self, nodes: u64, base: Option<String>) -> CandidateKey {
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
            .collect();
        inputs.sort();
        CandidateKey {
            nodes,
            inputs,
            base,
        }
    }

    /// A reference to `input` for an Event.
    fn reference(&self, input: &InputRef) -> Option<ObjectReference> {
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
        }
    }
}

/// Carries out retries asked for with [`RETRY_ANNOTATION`], makes sure a revision exists for
/// the current inputs and is the newest by sequence (unless it is Failed), and sets every
/// input's `Accepted` condition — as [`lifecycle::decide()`] decides.
///
/// A name clash ([`Error::NameClash`]) is reported on the inputs and in the metrics, and the
/// pass goes on without a new revision. Returns the Failed revision the inputs are identical
/// to, if they are, for its `InputsRefused` condition.
///
/// # Errors
/// API errors; a snapshot that cannot be serialised.
pub async fn sync(ctx: &Context, generation: u64, nodes: &[RenderNode]) -> Result<Option<Refusal>> {
    let cached = ctx.read().inputs();
    let live = Live {
        vrfs: cached.vrfs,
        layer2s: cached.layer2s,
        tables: cached.tables,
    };
    let inputs = live.views();
    let current = ctx.read().revisions();
    let views: Vec<RevisionView> = current.iter().map(|r| RevisionView::of(r)).collect();
    // Checking renders the snapshot for every node: done again only when an input or the
    // nodes' names and labels changed.
    let accepted = current
        .iter()
        .filter(|r| r.metadata.deletion_timestamp.is_none())
        .max_by_key(|r| r.spec.sequence);
    let base = accepted.and_then(|r| r.metadata.name.clone());
    let accepted = accepted.map(|r| &r.spec.snapshot);
    let candidate = ctx
        .candidate_memo()
        .get_or(live.key(generation, base), || live.check(nodes, accepted))?;
    let candidate = candidate.as_ref();
    if let Candidate::Invalid(invalid) = candidate
        && !inputs.is_empty()
    {
        tracing::warn!(
            problems = invalid.problems.len(),
            "inputs rejected, no revision created: {invalid}"
        );
    }
    let actions = lifecycle::decide(&inputs, &views, candidate, convert::now());
    let refusal = actions.iter().find_map(|a| match a {
        RevisionAction::NoteIdentical { revision, .. } => Some(refusal(revision, &inputs)),
        _ => None,
    });
    let mut exec = Executor {
        ctx,
        live: &live,
        revisions: current
            .into_iter()
            .filter_map(|r| Some((r.metadata.name.clone()?, r)))
            .collect(),
    };
    for action in actions {
        let span = spans::lifecycle(&action);
        exec.one(action).instrument(span).await?;
    }
    Ok(refusal)
}

/// Inputs named in an `InputsRefused` message; the rest are counted.
const NAMED_INPUTS: usize = 10;

/// What the Failed revision `revision` says while `inputs` are identical to it.
fn refusal(revision: &str, inputs: &[InputObject]) -> Refusal {
    let mut names: Vec<String> = inputs
        .iter()
        .take(NAMED_INPUTS)
        .map(|i| i.input.to_string())
        .collect();
    if inputs.len() > NAMED_INPUTS {
        names.push(format!("and {} more", inputs.len() - NAMED_INPUTS));
    }
    let names = if names.is_empty() {
        "no inputs at all".to_string()
    } else {
        names.join(", ")
    };
    Refusal {
        revision: revision.to_string(),
        message: format!(
            "the current inputs ({names}) are identical to this Failed revision and are refused: \
             nothing is rolled out until a person retries it (kubectl netrollout retry {revision}, \
             i.e. annotate it {RETRY_ANNOTATION})"
        ),
    }
}

/// Carries out lifecycle actions; keeps the revisions as the last write left them.
struct Executor<'a> {
    ctx: &'a Context,
    live: &'a Live,
    revisions: HashMap<String, Arc<NetworkConfigRevision>>,
}

impl Executor<'_> {
    fn api(&self) -> Api<NetworkConfigRevision> {
        self.ctx.writer().api()
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

    async fn one(&mut self, action: RevisionAction) -> Result<()> {
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
                snapshot,
            } => self.create(name, hash, size, sequence, snapshot).await,
            RevisionAction::WaitForDeletion { revision } => {
                tracing::info!(revision = %revision, "waiting: the revision for these inputs is being deleted; it is never adopted");
                Ok(())
            }
            RevisionAction::ReportClash {
                revision,
                existing,
                wanted,
            } => {
                let err = Error::NameClash {
                    name: revision.clone(),
                    existing,
                    wanted,
                };
                // Never overwritten; the rollout of existing revisions goes on meanwhile.
                tracing::error!(revision = %revision, "{err}");
                self.ctx.metrics().error(&err);
                Ok(())
            }
            RevisionAction::NoteIdentical { revision, message } => {
                if self.ctx.noted_memo().first_time(&revision, &message) {
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
                accepted::write(self.ctx, &input, &update, reference.as_ref()).await
            }
        }
    }

    async fn clear_failed(&mut self, name: &str) -> Result<()> {
        let message = "retried by a person: rolled out again as the newest revision";
        let existing = self.revision(name)?;
        let fields = conditions::for_phase(
            &existing,
            RevisionPhase::Pending,
            message,
            self.ctx.read().globally_paused(),
            None,
        );
        let patch = serde_json::json!({ "status": {
            "phase": RevisionPhase::Pending,
            "message": message,
            "failedNodes": [],
            "conditions": fields["conditions"],
            "observedGeneration": fields["observedGeneration"],
        }});
        let cleared = self
            .ctx
            .writer()
            .write_revision(
                || format!("clear Failed on NetworkConfigRevision {name}"),
                self.api()
                    .patch_status(name, &PatchParams::default(), &Patch::Merge(&patch)),
            )
            .await?;
        self.written(cleared);
        Ok(())
    }

    async fn raise(
        &mut self,
        name: &str,
        from: i64,
        to: i64,
        reason: RaiseReason,
        retried: Option<String>,
    ) -> Result<()> {
        let existing = self.revision(name)?;
        let mut annotations = serde_json::json!({ RETRY_ANNOTATION: null });
        if let Some(v) = retried {
            annotations[RETRIED_ANNOTATION] = v.into();
        }
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
        let msg = format!(
            "{}: sequence raised from {from} to {to}, which makes it the target again",
            reason.as_str()
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
        snapshot: Snapshot,
    ) -> Result<()> {
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
        let msg =
            format!("created revision {name} (sequence {sequence}, {size} bytes) from the inputs");
        tracing::info!(revision = %name, sequence, "{msg}");
        self.ctx
            .writer()
            .event(created.as_ref(), false, "Created", "CreateRevision", &msg)
            .await;
        self.written(created);
        Ok(())
    }
}
