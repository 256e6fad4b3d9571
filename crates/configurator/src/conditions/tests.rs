//! Each phase's conditions, pauses, transition times, refusals and when a write is due.

use super::*;

fn t(secs: i64) -> Time {
    Time(jiff::Timestamp::from_second(secs).unwrap())
}

fn facts(phase: RevisionPhase) -> Facts<'static> {
    Facts {
        phase: Some(phase),
        message: Some("why"),
        pause: Pause::No,
        refused: None,
        bake: None,
        schedule: None,
        hold: None,
    }
}

/// `(type, status, reason)` of each condition.
fn summary(list: &[Condition]) -> Vec<(String, String, String)> {
    list.iter()
        .map(|c| (c.type_.clone(), c.status.clone(), c.reason.clone()))
        .collect()
}

fn expect(rows: &[(&str, &str, &str)]) -> Vec<(String, String, String)> {
    rows.iter()
        .map(|(a, b, c)| (a.to_string(), b.to_string(), c.to_string()))
        .collect()
}

#[test]
fn every_phase_maps_to_the_kstatus_conditions_of_the_contract_table() {
    use RevisionPhase::*;
    let table = [
        (Pending, ["False", "True", "False"]),
        (Progressing, ["False", "True", "False"]),
        (Succeeded, ["True", "False", "False"]),
        (Failed, ["False", "False", "True"]),
        (Superseded, ["False", "False", "False"]),
        (Blocked, ["False", "False", "True"]),
    ];
    for (phase, [ready, reconciling, stalled]) in table {
        let list = conditions(&[], Some(4), &facts(phase), &t(10));
        let word = phase_word(phase);
        assert_eq!(
            summary(&list),
            expect(&[
                ("Ready", ready, word),
                ("Reconciling", reconciling, word),
                ("Stalled", stalled, word),
            ]),
            "{phase:?}"
        );
        for c in &list {
            assert_eq!(c.observed_generation, Some(4), "{phase:?}");
            assert_eq!(c.message, "why");
            assert_eq!(c.last_transition_time, t(10));
        }
    }
    let none = Facts {
        phase: None,
        message: None,
        ..facts(Pending)
    };
    let list = conditions(&[], None, &none, &t(10));
    assert_eq!(
        list[1].status, "True",
        "no phase yet is Pending: reconciling"
    );
    assert!(!list[1].message.is_empty());
}

#[test]
fn a_paused_revision_in_progress_is_reconciling_with_reason_paused_and_a_finished_one_is_not() {
    for pause in [Pause::Revision, Pause::Global] {
        let paused = Facts {
            pause,
            ..facts(RevisionPhase::Progressing)
        };
        let list = conditions(&[], Some(2), &paused, &t(1));
        assert_eq!(
            summary(&list),
            expect(&[
                ("Ready", "False", "Paused"),
                ("Reconciling", "True", "Paused"),
                ("Stalled", "False", "Paused"),
            ])
        );
        assert!(list[0].message.contains("paused"), "{}", list[0].message);
        let done = Facts {
            pause,
            ..facts(RevisionPhase::Succeeded)
        };
        let list = conditions(&[], Some(2), &done, &t(1));
        assert_eq!(list[0].reason, "Succeeded");
    }
}

#[test]
fn the_transition_time_changes_only_when_a_condition_changes_status() {
    let first = conditions(&[], Some(1), &facts(RevisionPhase::Pending), &t(1));
    // Pending -> Progressing: the same statuses, other reason and message.
    let moving = Facts {
        message: Some("rolling out"),
        ..facts(RevisionPhase::Progressing)
    };
    let second = conditions(&first, Some(2), &moving, &t(2));
    assert!(second.iter().all(|c| c.last_transition_time == t(1)));
    assert_eq!(second[1].message, "rolling out");
    assert!(second.iter().all(|c| c.observed_generation == Some(2)));
    // Progressing -> Succeeded: Ready and Reconciling flip, Stalled stays False.
    let third = conditions(&second, Some(2), &facts(RevisionPhase::Succeeded), &t(3));
    let times: Vec<Time> = third
        .iter()
        .map(|c| c.last_transition_time.clone())
        .collect();
    assert_eq!(times, [t(3), t(3), t(1)]);
}

#[test]
fn refused_inputs_are_said_on_the_failed_revision_and_cleared_when_they_change_or_it_is_retried() {
    let failed = conditions(&[], Some(1), &facts(RevisionPhase::Failed), &t(1));
    assert_eq!(failed.len(), 3, "never refused: no InputsRefused condition");
    let refused = Facts {
        refused: Some("RoutingTable extra is identical"),
        ..facts(RevisionPhase::Failed)
    };
    let on = conditions(&failed, Some(1), &refused, &t(2));
    assert_eq!(
        summary(&on[3..]),
        expect(&[("InputsRefused", "True", "IdenticalContentRefused")])
    );
    assert_eq!(on[3].message, "RoutingTable extra is identical");
    assert_eq!(on[2].reason, "Failed", "Stalled keeps the failure");
    assert_eq!(on[2].last_transition_time, t(1));

    let changed = conditions(&on, Some(1), &facts(RevisionPhase::Failed), &t(3));
    assert_eq!(
        summary(&changed[3..]),
        expect(&[("InputsRefused", "False", "InputsChanged")])
    );
    assert_eq!(changed[3].last_transition_time, t(3));

    let retried = conditions(&on, Some(2), &facts(RevisionPhase::Pending), &t(4));
    assert_eq!(
        summary(&retried[3..]),
        expect(&[("InputsRefused", "False", "Retried")])
    );
    // Once False, it keeps its reason through later phases (a retry that fails again).
    let failed_again = conditions(&retried, Some(2), &facts(RevisionPhase::Failed), &t(5));
    assert_eq!(failed_again[3], retried[3]);
    // A refusal named for a revision that is not Failed is not written.
    let not_failed = Facts {
        refused: Some("x"),
        ..facts(RevisionPhase::Succeeded)
    };
    assert_eq!(conditions(&[], Some(1), &not_failed, &t(1)).len(), 3);
}

#[test]
fn conditions_up_to_date_need_no_write_and_a_new_generation_or_refusal_does() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.metadata.generation = Some(1);
    ncr.status = Some(netrollout_api::NetworkConfigRevisionStatus {
        phase: Some(RevisionPhase::Failed),
        message: Some("2 node(s) failed".into()),
        ..Default::default()
    });
    let apply = |ncr: &mut NetworkConfigRevision, fields: serde_json::Value| {
        let s = ncr.status.as_mut().unwrap();
        s.conditions = serde_json::from_value(fields["conditions"].clone()).unwrap();
        s.observed_generation = fields["observedGeneration"].as_i64();
    };
    let fields = update(&ncr, false, None).expect("never written");
    apply(&mut ncr, fields);
    assert_eq!(update(&ncr, false, None), None, "nothing changed");
    assert_eq!(
        update(&ncr, true, None),
        None,
        "a pause does not touch a Failed one"
    );

    let refusal = Refusal {
        revision: "ncr-a".into(),
        message: "identical".into(),
    };
    let other = Refusal {
        revision: "ncr-b".into(),
        ..refusal.clone()
    };
    assert_eq!(update(&ncr, false, Some(&other)), None, "another revision");
    let fields = update(&ncr, false, Some(&refusal)).expect("refused now");
    apply(&mut ncr, fields);
    assert_eq!(update(&ncr, false, Some(&refusal)), None);

    ncr.metadata.generation = Some(2);
    let fields = update(&ncr, false, Some(&refusal)).expect("a new generation");
    assert_eq!(fields["observedGeneration"], 2);
    assert_eq!(fields["conditions"][0]["observedGeneration"], 2);
}

/// A revision at sequence 1 (generation 1) in `phase` whose analysis passed under sequence 1.
fn passed(phase: RevisionPhase) -> NetworkConfigRevision {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.spec.sequence = 1;
    ncr.metadata.generation = Some(1);
    let mut list = conditions(&[], Some(1), &facts(phase), &t(10));
    list.push(Condition {
        type_: ANALYSIS_CONDITION.into(),
        status: "True".into(),
        reason: "ChecksPassed".into(),
        message: "every check passed".into(),
        last_transition_time: t(5),
        observed_generation: Some(1),
    });
    ncr.status = Some(netrollout_api::NetworkConfigRevisionStatus {
        phase: Some(phase),
        message: Some("why".into()),
        conditions: list,
        observed_generation: Some(1),
        analysis: Some(netrollout_api::RevisionAnalysis {
            nodes: 4,
            sequence: Some(1),
            ..Default::default()
        }),
        ..Default::default()
    });
    ncr
}

#[test]
fn a_raised_revision_drops_the_analysis_of_its_earlier_rollout_in_the_next_write() {
    // Its own rollout's verdict: kept, nothing to write.
    let mut ncr = passed(RevisionPhase::Succeeded);
    assert_eq!(update(&ncr, false, None), None);
    // Raised (an undo, inputs returning to it): sequence and generation 2. The verdict and its
    // condition speak for the rollout under sequence 1: both go, in the conditions' write and
    // in a phase write alike.
    ncr.spec.sequence = 2;
    ncr.metadata.generation = Some(2);
    assert!(!netrollout_api::analysis_is_current(&ncr));
    let fields = update(&ncr, false, None).expect("a write");
    assert_eq!(fields["analysis"], serde_json::Value::Null);
    assert!(fields.as_object().unwrap().contains_key("analysis"));
    let phase = for_phase(&ncr, RevisionPhase::Progressing, "again", false, None);
    for f in [&fields, &phase] {
        let list = f["conditions"].as_array().unwrap();
        assert!(!list.iter().any(|c| c["type"] == ANALYSIS_CONDITION), "{f}");
        assert_eq!(list.len(), 3, "the standard conditions stay: {f}");
    }
    // Only the analysis moved on: a pause (a new generation, the same sequence) keeps it.
    let mut paused = passed(RevisionPhase::Progressing);
    paused.spec.paused = true;
    paused.metadata.generation = Some(2);
    let fields = update(&paused, false, None).expect("a new generation");
    assert!(
        !fields.as_object().unwrap().contains_key("analysis"),
        "{fields}"
    );
    // Once the raised revision's first verdict is written, nothing is due.
    let mut measured = passed(RevisionPhase::Progressing);
    measured.spec.sequence = 2;
    measured.metadata.generation = Some(2);
    let status = measured.status.as_mut().unwrap();
    status.analysis.as_mut().unwrap().sequence = Some(2);
    status.observed_generation = Some(2);
    for c in &mut status.conditions {
        c.observed_generation = Some(2);
    }
    assert_eq!(update(&measured, false, None), None);
}

#[test]
fn a_retry_drops_the_analysis_verdict_of_the_attempt_before_and_keeps_the_other_conditions() {
    let ncr = passed(RevisionPhase::Failed);

    let fields = for_retry(&ncr, "retried", false);
    let after: Vec<Condition> = serde_json::from_value(fields["conditions"].clone()).unwrap();
    assert_eq!(
        summary(&after),
        expect(&[
            ("Ready", "False", "Pending"),
            ("Reconciling", "True", "Pending"),
            ("Stalled", "False", "Pending"),
        ]),
        "the standard conditions for Pending, and no AnalysisPassed"
    );
    // What a plain phase write keeps: the analysis condition is another type's, kept after the
    // standard ones; only a retry drops it.
    let kept = for_phase(&ncr, RevisionPhase::Pending, "retried", false, None);
    assert!(
        kept["conditions"]
            .as_array()
            .unwrap()
            .iter()
            .any(|c| c["type"] == ANALYSIS_CONDITION)
    );
}

fn nodes_capable(status: &str, message: &str, since: i64) -> Condition {
    Condition {
        type_: NODES_CAPABLE_CONDITION.into(),
        status: status.into(),
        reason: "NodesLackCapabilities".into(),
        message: message.into(),
        observed_generation: Some(1),
        last_transition_time: t(since),
    }
}

#[test]
fn a_held_revision_that_stops_rolling_out_says_its_capability_check_is_no_longer_made() {
    use RevisionPhase::*;
    let held = nodes_capable("False", "node n-1 lacks vrf", 5);
    for phase in [Superseded, Failed, Blocked] {
        let list = conditions(std::slice::from_ref(&held), Some(2), &facts(phase), &t(10));
        let c = list
            .iter()
            .find(|c| c.type_ == NODES_CAPABLE_CONDITION)
            .unwrap();
        assert_eq!(
            (c.status.as_str(), c.reason.as_str()),
            ("Unknown", NOT_ROLLING_OUT),
            "{phase:?}"
        );
        assert!(
            c.message.contains(phase_word(phase))
                && c.message
                    .ends_with("the last check said: node n-1 lacks vrf"),
            "{}",
            c.message
        );
        assert_eq!(
            (c.observed_generation, c.last_transition_time.clone()),
            (Some(2), t(10))
        );
        // Written once: the next write keeps it as it is.
        let again = conditions(&list, Some(2), &facts(phase), &t(20));
        assert_eq!(again, list, "{phase:?}");
    }
    // Rolling out, or the Succeeded target whose pre-flight names a joining node: as it is.
    for phase in [Pending, Progressing, Succeeded] {
        let list = conditions(std::slice::from_ref(&held), Some(2), &facts(phase), &t(10));
        assert!(list.contains(&held), "{phase:?}: still False");
    }
    let capable = nodes_capable("True", "every node has what it needs", 5);
    let list = conditions(
        std::slice::from_ref(&capable),
        Some(2),
        &facts(Superseded),
        &t(10),
    );
    assert!(list.contains(&capable), "a True one stays");
}

#[test]
fn the_write_that_ends_a_rollout_clears_its_hold_and_one_that_goes_on_keeps_it() {
    let mut ncr = NetworkConfigRevision::new("ncr-a", Default::default());
    ncr.status = Some(netrollout_api::NetworkConfigRevisionStatus {
        phase: Some(RevisionPhase::Progressing),
        hold: Some(RevisionHold {
            reason: netrollout_api::reason::AWAITING_PROMOTION.into(),
            sequence: 1,
            gate: Some(2),
            gates: Some(2),
            nodes: Some(2),
            message: "paused at approval gate 2 of 2".into(),
        }),
        ..Default::default()
    });
    use RevisionPhase::*;
    for phase in [Succeeded, Failed, Superseded, Blocked] {
        let fields = for_phase(&ncr, phase, "done", false, None);
        let hold = fields.as_object().unwrap().get("hold");
        assert_eq!(hold, Some(&serde_json::Value::Null), "{phase:?}: {fields}");
    }
    for phase in [Pending, Progressing] {
        let fields = for_phase(&ncr, phase, "again", false, None);
        assert!(
            !fields.as_object().unwrap().contains_key("hold"),
            "{phase:?}: {fields}"
        );
        let list: Vec<Condition> = serde_json::from_value(fields["conditions"].clone()).unwrap();
        let reconciling = list.iter().find(|c| c.type_ == RECONCILING_CONDITION);
        assert_eq!(
            reconciling.map(|c| c.reason.as_str()),
            Some(netrollout_api::reason::AWAITING_PROMOTION),
            "{phase:?}: still held"
        );
    }
}
