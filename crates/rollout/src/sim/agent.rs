//! A simulated agent: picks up its node's spec, applies it over some steps and reports status.
//! Misbehaviours: hanging before pickup, hanging mid-apply, crashing mid-apply (retry once, then
//! Failed), failing probes, and losing the API server (status writes held back, spec unseen).

use std::collections::{HashMap, HashSet};

use crate::{Node, NodePhase, NodeStatus, Timestamp};

use super::rng::Rng;

/// How an agent behaves.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Behavior {
    /// Applies every revision; fails only revisions whose content is bad.
    Healthy,
    /// Never picks anything up.
    Hang,
    /// Reports Provisioning, then never finishes.
    HangApplying,
    /// Crashes mid-apply now and then; a second crash on the same revision reports Failed.
    Crashy,
    /// Probes fail on this node whatever the revision.
    FailProbe,
}

/// One node's agent.
#[derive(Debug, Clone)]
pub struct Agent {
    pub behavior: Behavior,
    /// Agent steps an apply takes after reporting Provisioning (at least 1).
    pub apply_steps: u32,
    /// Steps left without the API server.
    pub api_down: u32,
    /// Last-known-good revision on the node.
    pub applied: Option<String>,
    /// The spec revision last acted on.
    seen: Option<String>,
    applying: Option<(String, u32)>,
    failed: HashSet<String>,
    crashes: HashMap<String, u32>,
    /// A status write held back while the API server is unreachable.
    outbox: Option<NodeStatus>,
}

impl Agent {
    pub fn new(behavior: Behavior, apply_steps: u32) -> Self {
        Self {
            behavior,
            apply_steps: apply_steps.max(1),
            api_down: 0,
            applied: None,
            seen: None,
            applying: None,
            failed: HashSet::new(),
            crashes: HashMap::new(),
            outbox: None,
        }
    }

    /// An agent that already runs `rev` successfully (an existing, converged node).
    pub fn converged(rev: &str, apply_steps: u32) -> Self {
        let mut a = Self::new(Behavior::Healthy, apply_steps);
        a.applied = Some(rev.to_owned());
        a.seen = Some(rev.to_owned());
        a
    }

    /// Whether it has unfinished business (an apply or a held-back status).
    pub fn busy(&self) -> bool {
        self.applying.is_some() || self.outbox.is_some()
    }

    /// Heal: behave from now on; a hung apply finishes on the next step.
    pub fn heal(&mut self) {
        self.behavior = Behavior::Healthy;
        self.api_down = 0;
        if let Some((_, left)) = &mut self.applying {
            *left = 1;
        }
    }

    fn report(&mut self, node: &mut Node, status: NodeStatus) {
        if self.api_down > 0 {
            self.outbox = Some(status);
        } else {
            node.status = Some(status);
        }
    }

    /// One step of the agent on `node` at `now`; `bad` names revisions whose probes fail.
    pub fn step(&mut self, node: &mut Node, now: Timestamp, bad: &HashSet<String>, rng: &mut Rng) {
        if self.api_down > 0 {
            self.api_down -= 1;
        } else if let Some(s) = self.outbox.take() {
            node.status = Some(s);
        }
        // A failure carries the real agent's reason word and a message.
        let status = |rev: &str, phase, failure: Option<(&str, &str)>| NodeStatus {
            observed_revision: rev.to_owned(),
            phase,
            started_at: Some(now),
            finished_at: (phase != NodePhase::Provisioning).then_some(now),
            reason: failure.map(|f| f.0.to_owned()),
            message: failure.map(|f| f.1.to_owned()),
        };
        if self.behavior == Behavior::Hang {
            return;
        }
        if let Some((rev, left)) = self.applying.clone() {
            match self.behavior {
                Behavior::HangApplying => {}
                Behavior::Crashy if rng.chance(40) => {
                    self.applying = None;
                    let n = self.crashes.entry(rev.clone()).or_default();
                    *n += 1;
                    if *n >= 2 {
                        self.failed.insert(rev.clone());
                        let s = status(
                            &rev,
                            NodePhase::Failed,
                            Some(("AgentCrashed", "agent crashed while applying")),
                        );
                        self.report(node, s);
                    } else {
                        // Restarts, restores last-known-good, then tries the revision once more.
                        self.seen = None;
                    }
                }
                _ if left > 1 => self.applying = Some((rev, left - 1)),
                _ => {
                    self.applying = None;
                    let s = if bad.contains(&rev) || self.behavior == Behavior::FailProbe {
                        self.failed.insert(rev.clone());
                        status(
                            &rev,
                            NodePhase::Failed,
                            Some(("ProbeFailed", "probe failed after apply")),
                        )
                    } else {
                        self.applied = Some(rev.clone());
                        status(&rev, NodePhase::Provisioned, None)
                    };
                    self.report(node, s);
                }
            }
            return;
        }
        if self.api_down > 0 || node.spec_revision == self.seen {
            return;
        }
        self.seen = node.spec_revision.clone();
        let Some(rev) = node.spec_revision.clone() else {
            return;
        };
        let s = if self.failed.contains(&rev) {
            status(
                &rev,
                NodePhase::Failed,
                Some(("ProbeFailed", "failed before on this node; not retried")),
            )
        } else if self.applied.as_deref() == Some(rev.as_str()) {
            status(&rev, NodePhase::Provisioned, None)
        } else {
            self.applying = Some((rev.clone(), self.apply_steps));
            status(&rev, NodePhase::Provisioning, None)
        };
        self.report(node, s);
    }
}
