//! The analysis gate's step of a pass (docs/contract.md, "Analysis gates"; the data is in
//! [`crate::analysis`]).
//!
//! A revision with checks rolls out wave by wave: the first wave is dispatched as any other;
//! every later one only once no node of the revision is in flight and the checks passed with
//! all the nodes that run it ([`Pass::analysis_gate`]); it is Succeeded only once the last
//! wave passed too ([`Pass::analysis_passed`]). A failed analysis fails the revision
//! ([`Pass::fail_by_analysis`]); the rollback that follows is the one after any failure. Only
//! a verdict reached under the revision's current sequence counts: a raised revision (an undo,
//! inputs returning to its content, a retry) is measured afresh ([`Analysis::verdict_at`]).
//!
//! [`Analysis::verdict_at`]: crate::analysis::Analysis::verdict_at

use super::{Decision, Pass};
use crate::action::Mode;
use crate::analysis::{Gate, Verdict};
use crate::state::RevisionPhase;

impl Pass<'_> {
    /// Fail every revision rolling out (Pending or Progressing) whose analysis failed (no node
    /// is listed as failed: the Event says `AnalysisFailed`).
    pub(super) fn fail_by_analysis(&mut self) {
        for i in 0..self.revs.len() {
            let r = &self.revs[i];
            let Verdict::Failed { message } = r.analysis.verdict_at(r.sequence) else {
                continue;
            };
            if !matches!(
                self.phases[i],
                RevisionPhase::Pending | RevisionPhase::Progressing
            ) {
                continue;
            }
            let name = &self.revs[i].name;
            let good = (0..self.revs.len())
                .filter(|&g| g != i && self.phases[g] == RevisionPhase::Succeeded)
                .max_by_key(|&g| self.revs[g].sequence)
                .map(|g| self.revs[g].name.as_str());
            let next = match good {
                Some(g) => format!("its nodes return to known-good revision {g}"),
                None => "there is no known-good revision to return to, so nothing moves".into(),
            };
            let why = format!(
                "analysis of revision {name} failed: {message}; {next}; retry it once the cause is found"
            );
            self.set_phase(i, RevisionPhase::Failed, why, Vec::new());
        }
    }

    /// Whether the goal `g` may be Succeeded as far as its analysis goes: it has no checks, or
    /// they passed with every node that runs it.
    pub(super) fn analysis_passed(&self, g: usize) -> bool {
        let r = &self.revs[g];
        !r.analysis.gated() || r.analysis.passed_for(r.sequence, self.tally[g].nodes)
    }

    /// Where the goal's gate stands: `None` unless a revision with checks is rolling out (a
    /// raised one too, from the pass that raised it: [`Pass::rolling_out`]).
    pub(super) fn analysis_gate(&self, d: &Decision) -> Option<Gate> {
        let (Some(g), Mode::RollingOut) = (d.goal, &d.mode) else {
            return None;
        };
        let r = &self.revs[g];
        if !r.analysis.gated() || !self.rolling_out(g) {
            return None;
        }
        let nodes = self.tally[g].nodes;
        let gate = |due: bool, held: bool, reason: String| {
            Some(Gate {
                revision: r.name.clone(),
                sequence: r.sequence,
                nodes,
                due,
                held,
                reason,
            })
        };
        if let Verdict::Unavailable { message } = r.analysis.verdict_at(r.sequence) {
            return gate(
                false,
                true,
                format!(
                    "revision {} is not dispatched to any node: its analysis cannot run: {message}",
                    r.name
                ),
            );
        }
        if nodes == 0 {
            return gate(false, false, String::new());
        }
        let in_flight = self
            .in_flight_at
            .iter()
            .filter(|n| n.spec_revision.as_deref() == Some(r.name.as_str()))
            .count();
        if in_flight > 0 {
            return gate(
                false,
                true,
                format!(
                    "waiting for the {in_flight} node(s) of revision {} in flight to finish; then its analysis runs before the next wave",
                    r.name
                ),
            );
        }
        if r.analysis.passed_for(r.sequence, nodes) {
            return gate(false, false, String::new());
        }
        let wait = match r.analysis.initial_delay_seconds {
            0 => String::new(),
            s => format!(" ({s}s after its last node finished: initialDelaySeconds)"),
        };
        gate(
            true,
            true,
            format!(
                "analysis of revision {} with {nodes} node(s) on it is due{wait}; no further node gets it until it passes",
                r.name
            ),
        )
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use crate::analysis::{Analysis, Verdict};
    use crate::{
        Action, DispatchKind, Mode, Node, NodePhase, NodeStatus, Revision, RevisionPhase, Settings,
        State, Timestamp, UpdateLimit, plan,
    };

    const NOW: Timestamp = Timestamp::from_millis(1_000_000);

    fn gated(name: &str, seq: u64, phase: RevisionPhase, verdict: Verdict) -> Revision {
        Revision {
            phase,
            analysis: Analysis {
                checks: 1,
                verdict,
                sequence: Some(seq),
                ..Analysis::default()
            },
            ..Revision::new(name, seq, format!("hash-{name}"))
        }
    }

    fn on(name: &str, rev: &str, phase: NodePhase) -> Node {
        let mut n = Node::new(name);
        n.spec_revision = Some(rev.into());
        n.status = Some(NodeStatus {
            observed_revision: rev.into(),
            phase,
            started_at: None,
            finished_at: None,
            reason: None,
            message: None,
        });
        n
    }

    /// Four nodes on known-good `good`; `on_new` of them already run `new` (Provisioned).
    fn fleet(on_new: usize, new: Revision) -> State {
        let nodes = (0..4)
            .map(|i| {
                let rev = if i < on_new {
                    new.name.as_str()
                } else {
                    "good"
                };
                on(&format!("n{i}"), rev, NodePhase::Provisioned)
            })
            .collect();
        State {
            revisions: vec![
                Revision {
                    phase: RevisionPhase::Succeeded,
                    ..Revision::new("good", 1, "hash-good")
                },
                new,
            ],
            nodes,
        }
    }

    fn settings() -> Settings {
        Settings {
            update_limit: UpdateLimit::Count(2),
            apply_timeout: Duration::from_secs(60),
            ..Settings::default()
        }
    }

    fn dispatched(p: &crate::Plan, kind: DispatchKind) -> Vec<String> {
        p.actions
            .iter()
            .filter_map(|a| match a {
                Action::Dispatch { kind: k, nodes, .. } if *k == kind => Some(nodes),
                _ => None,
            })
            .flatten()
            .map(|n| n.node.clone())
            .collect()
    }

    #[test]
    fn the_first_wave_of_a_gated_revision_goes_out_without_waiting_for_analysis() {
        let p = plan(
            &fleet(0, gated("new", 2, RevisionPhase::Pending, Verdict::None)),
            NOW,
            &settings(),
        );
        assert_eq!(dispatched(&p, DispatchKind::Rollout).len(), 2);
        let g = p.summary.analysis.unwrap();
        assert!(!g.held && !g.due, "{g:?}");
    }

    #[test]
    fn no_wave_follows_until_the_analysis_passed_with_every_node_on_the_revision() {
        let new = gated("new", 2, RevisionPhase::Progressing, Verdict::None);
        let p = plan(&fleet(2, new), NOW, &settings());
        assert!(dispatched(&p, DispatchKind::Rollout).is_empty(), "{p:?}");
        let g = p.summary.analysis.unwrap();
        assert!(g.due && g.held && g.nodes == 2, "{g:?}");
        assert!(g.reason.contains("is due;"), "{}", g.reason);
        // With an initial delay the reason says when it is measured.
        let mut waits = gated("new", 2, RevisionPhase::Progressing, Verdict::None);
        waits.analysis.initial_delay_seconds = 30;
        let g = plan(&fleet(2, waits), NOW, &settings())
            .summary
            .analysis
            .unwrap();
        assert!(g.due && g.held, "{g:?}");
        assert!(
            g.reason
                .contains("is due (30s after its last node finished: initialDelaySeconds)"),
            "{}",
            g.reason
        );

        let stale = gated(
            "new",
            2,
            RevisionPhase::Progressing,
            Verdict::Passed { nodes: 1 },
        );
        let p = plan(&fleet(2, stale), NOW, &settings());
        assert!(dispatched(&p, DispatchKind::Rollout).is_empty());

        let passed = gated(
            "new",
            2,
            RevisionPhase::Progressing,
            Verdict::Passed { nodes: 2 },
        );
        let p = plan(&fleet(2, passed), NOW, &settings());
        assert_eq!(dispatched(&p, DispatchKind::Rollout), ["n2", "n3"]);
    }

    #[test]
    fn a_wave_in_flight_holds_the_next_and_is_not_yet_analysed() {
        let new = gated("new", 2, RevisionPhase::Progressing, Verdict::None);
        let mut state = fleet(1, new);
        state.nodes[0].status.as_mut().unwrap().phase = NodePhase::Provisioning;
        let p = plan(
            &state,
            NOW,
            &Settings {
                update_limit: UpdateLimit::Count(3),
                ..settings()
            },
        );
        assert!(dispatched(&p, DispatchKind::Rollout).is_empty(), "{p:?}");
        let g = p.summary.analysis.unwrap();
        assert!(g.held && !g.due, "{g:?}");
    }

    #[test]
    fn a_revision_is_succeeded_only_once_its_last_wave_passed_analysis() {
        let new = gated(
            "new",
            2,
            RevisionPhase::Progressing,
            Verdict::Passed { nodes: 2 },
        );
        let p = plan(&fleet(4, new), NOW, &settings());
        assert!(!p.actions.iter().any(|a| matches!(
            a,
            Action::SetRevisionPhase {
                phase: RevisionPhase::Succeeded,
                ..
            }
        )));
        assert!(p.summary.analysis.unwrap().due);

        let new = gated(
            "new",
            2,
            RevisionPhase::Progressing,
            Verdict::Passed { nodes: 4 },
        );
        let p = plan(&fleet(4, new), NOW, &settings());
        assert!(p.actions.iter().any(|a| matches!(
            a,
            Action::SetRevisionPhase {
                phase: RevisionPhase::Succeeded,
                ..
            }
        )));
    }

    #[test]
    fn a_failed_analysis_fails_the_revision_and_returns_its_nodes_to_the_known_good_one() {
        let failed = Verdict::Failed {
            message: "check tenants/lost: result 3, wanted result == 0".into(),
        };
        let new = gated("new", 2, RevisionPhase::Progressing, failed);
        let p = plan(&fleet(2, new), NOW, &settings());
        let reason = p
            .actions
            .iter()
            .find_map(|a| match a {
                Action::SetRevisionPhase {
                    phase: RevisionPhase::Failed,
                    reason,
                    ..
                } => Some(reason.clone()),
                _ => None,
            })
            .expect("the revision fails");
        assert!(
            reason.starts_with("analysis of revision new failed: check tenants/lost: result 3")
                && reason.contains("return to known-good revision good"),
            "{reason}"
        );
        assert_eq!(p.summary.mode, Mode::RollingBack);
        assert_eq!(dispatched(&p, DispatchKind::Rollback), ["n0", "n1"]);
    }

    #[test]
    fn without_prometheus_a_gated_revision_is_dispatched_to_no_node_and_says_why() {
        let unavailable = Verdict::Unavailable {
            message: "no --prometheus-url".into(),
        };
        let p = plan(
            &fleet(0, gated("new", 2, RevisionPhase::Pending, unavailable)),
            NOW,
            &settings(),
        );
        assert!(dispatched(&p, DispatchKind::Rollout).is_empty());
        let g = p.summary.analysis.unwrap();
        assert!(g.held && g.reason.contains("no --prometheus-url"), "{g:?}");
    }

    #[test]
    fn a_revision_without_checks_is_never_gated() {
        let new = Revision {
            phase: RevisionPhase::Progressing,
            ..Revision::new("new", 2, "hash-new")
        };
        let p = plan(&fleet(2, new), NOW, &settings());
        assert_eq!(dispatched(&p, DispatchKind::Rollout), ["n2", "n3"]);
        assert_eq!(p.summary.analysis, None);
    }
}
