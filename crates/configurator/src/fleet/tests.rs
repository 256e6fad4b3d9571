//! The fleet kept up to date from changes equals the fleet read afresh, whatever the order of
//! the changes and of the passes in between.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{NodeCondition, NodeStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use netrollout_api::{NodeNetworkConfig, NodeNetworkConfigSpec, NodePhase as ApiNodePhase};
use netrollout_testkit::objects::{node as kube_node, node_status};
use proptest::prelude::*;

use super::*;

/// The caches as a plain map.
#[derive(Default)]
struct Fake {
    nodes: BTreeMap<String, Arc<KubeNode>>,
    configs: BTreeMap<String, Arc<NodeConfigView>>,
}

impl Source for Fake {
    fn all_nodes(&self) -> Vec<Arc<KubeNode>> {
        self.nodes.values().cloned().collect()
    }
    fn all_configs(&self) -> Vec<Arc<NodeConfigView>> {
        self.configs.values().cloned().collect()
    }
    fn node(&self, name: &str) -> Option<Arc<KubeNode>> {
        self.nodes.get(name).cloned()
    }
    fn config(&self, name: &str) -> Option<Arc<NodeConfigView>> {
        self.configs.get(name).cloned()
    }
    fn expired(&self) -> Vec<String> {
        Vec::new()
    }
}

/// One change to the caches.
#[derive(Debug, Clone)]
enum Op {
    Node {
        node: u8,
        ready: bool,
        deleting: bool,
        zone: u8,
    },
    DeleteNode(u8),
    Config {
        node: u8,
        spec: u8,
        status: Option<(u8, u8)>,
        unresponsive: bool,
    },
    DeleteConfig(u8),
    Pass,
}

fn name(i: u8) -> String {
    format!("node-{i}")
}

fn rev(i: u8) -> String {
    format!("ncr-{i}")
}

fn make_node(i: u8, ready: bool, deleting: bool, zone: u8) -> KubeNode {
    let zone = format!("zone-{zone}");
    let mut n = kube_node(&name(i), &[(netrollout_api::ZONE_LABEL, zone.as_str())]);
    n.status = Some(NodeStatus {
        conditions: Some(vec![NodeCondition {
            type_: "Ready".into(),
            status: if ready { "True" } else { "False" }.into(),
            ..NodeCondition::default()
        }]),
        ..NodeStatus::default()
    });
    if deleting {
        n.metadata.deletion_timestamp = Some(Time(jiff::Timestamp::UNIX_EPOCH));
    }
    n
}

fn make_config(i: u8, spec: u8, status: Option<(u8, u8)>, unresponsive: bool) -> NodeConfigView {
    let mut c = NodeNetworkConfig::new(
        &name(i),
        NodeNetworkConfigSpec {
            revision: rev(spec),
            config: Default::default(),
        },
    );
    c.status = status.map(|(observed, phase)| {
        let phase = match phase % 3 {
            0 => ApiNodePhase::Provisioning,
            1 => ApiNodePhase::Provisioned,
            _ => ApiNodePhase::Failed,
        };
        node_status(&rev(observed), phase, Some("m"))
    });
    if unresponsive {
        c.metadata.annotations = Some(
            [(
                netrollout_api::UNRESPONSIVE_ANNOTATION.to_string(),
                "2026-01-01T00:00:00.000Z".to_string(),
            )]
            .into(),
        );
    }
    NodeConfigView::of(&c)
}

fn arb_op() -> impl Strategy<Value = Op> {
    let node = 0u8..8;
    prop_oneof![
        (
            node.clone(),
            any::<bool>(),
            prop::bool::weighted(0.2),
            0u8..3
        )
            .prop_map(|(node, ready, deleting, zone)| Op::Node {
                node,
                ready,
                deleting,
                zone
            }),
        node.clone().prop_map(Op::DeleteNode),
        (
            node.clone(),
            0u8..3,
            prop::option::of((0u8..3, 0u8..3)),
            prop::bool::weighted(0.2)
        )
            .prop_map(|(node, spec, status, unresponsive)| Op::Config {
                node,
                spec,
                status,
                unresponsive
            }),
        node.prop_map(Op::DeleteConfig),
        Just(Op::Pass),
    ]
}

/// Applies `op` to the caches and marks it as the watches would.
fn apply(fake: &mut Fake, changes: &Changes, op: &Op) {
    match *op {
        Op::Node {
            node,
            ready,
            deleting,
            zone,
        } => {
            fake.nodes
                .insert(name(node), Arc::new(make_node(node, ready, deleting, zone)));
            changes.mark(&name(node));
        }
        Op::DeleteNode(node) => {
            fake.nodes.remove(&name(node));
            changes.mark(&name(node));
        }
        Op::Config {
            node,
            spec,
            status,
            unresponsive,
        } => {
            let c = make_config(node, spec, status, unresponsive);
            fake.configs.insert(name(node), Arc::new(c));
            changes.mark(&name(node));
        }
        Op::DeleteConfig(node) => {
            fake.configs.remove(&name(node));
            changes.mark(&name(node));
        }
        Op::Pass => {}
    }
}

fn rebuilt(fake: &Fake, own: Option<&str>) -> View {
    View::build(fake, &convert::Reading::on(own), &View::default())
}

#[test]
fn a_new_fleet_reads_everything_and_then_only_what_is_marked() {
    let changes = Arc::new(Changes::default());
    let fleet = Fleet::new(convert::Reading::default(), changes.clone());
    let mut fake = Fake::default();
    apply(
        &mut fake,
        &changes,
        &Op::Node {
            node: 1,
            ready: true,
            deleting: false,
            zone: 0,
        },
    );
    apply(
        &mut fake,
        &changes,
        &Op::Node {
            node: 0,
            ready: true,
            deleting: false,
            zone: 1,
        },
    );
    let (generation, render) = {
        let view = fleet.refresh(&fake);
        let names: Vec<&str> = view.nodes.nodes().map(|n| n.name.as_str()).collect();
        assert_eq!(names, ["node-0", "node-1"]);
        view.render_nodes()
    };
    assert_eq!(render.len(), 2);
    // A change the watches did not report is not seen: the fleet reads only marked names.
    fake.configs
        .insert(name(0), Arc::new(make_config(0, 1, None, false)));
    assert_eq!(
        fleet
            .refresh(&fake)
            .nodes
            .get(&name(0))
            .unwrap()
            .spec_revision,
        None
    );
    changes.mark(&name(0));
    let view = fleet.refresh(&fake);
    assert_eq!(
        view.nodes.get(&name(0)).unwrap().spec_revision.as_deref(),
        Some("ncr-1")
    );
    assert_eq!(view.failures.unfinished("ncr-1"), 1);
    // A new config is no change of the nodes' names or labels.
    assert_eq!(view.render_nodes().0, generation);
}

#[test]
fn a_relabelled_or_leaving_node_changes_the_render_nodes() {
    let changes = Arc::new(Changes::default());
    let fleet = Fleet::new(convert::Reading::default(), changes.clone());
    let mut fake = Fake::default();
    let up = |zone| Op::Node {
        node: 0,
        ready: true,
        deleting: false,
        zone,
    };
    apply(&mut fake, &changes, &up(0));
    let g0 = fleet.refresh(&fake).render_nodes().0;
    apply(&mut fake, &changes, &up(0));
    let g1 = fleet.refresh(&fake).render_nodes().0;
    assert_eq!(g0, g1, "the same labels again");
    apply(&mut fake, &changes, &up(2));
    let g2 = fleet.refresh(&fake).render_nodes().0;
    assert_ne!(g1, g2, "relabelled");
    apply(&mut fake, &changes, &Op::DeleteNode(0));
    let view = fleet.refresh(&fake);
    assert_ne!(view.render_nodes().0, g2, "gone");
    assert!(view.render_nodes().1.is_empty());
    assert!(view.nodes.is_empty());
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    /// After any sequence of changes, with passes anywhere in between, the fleet kept up to
    /// date equals the fleet read afresh (planner nodes in name order with their index by
    /// state, render nodes, failure index, unresponsive count, the configs lacking
    /// capabilities), and its planner nodes equal `convert::state`'s.
    #[test]
    fn the_incremental_fleet_equals_a_rebuild(
        ops in proptest::collection::vec(arb_op(), 0..60),
        own in prop::option::of(0u8..8),
    ) {
        let own = own.map(name);
        let changes = Arc::new(Changes::default());
        let fleet = Fleet::new(convert::Reading::on(own.as_deref()), changes.clone());
        let mut fake = Fake::default();
        for op in &ops {
            apply(&mut fake, &changes, op);
            if matches!(op, Op::Pass) {
                let view = fleet.refresh(&fake);
                prop_assert!(view.same_as(&rebuilt(&fake, own.as_deref())));
            }
        }
        let view = fleet.refresh(&fake);
        let fresh = rebuilt(&fake, own.as_deref());
        prop_assert!(view.same_as(&fresh), "{:#?}\n{:#?}", view.nodes, fresh.nodes);
        let mut scratch = convert::state(&fake.all_nodes(), &fake.all_configs(), &[], own.as_deref());
        scratch.nodes.sort_by(|a, b| a.name.cmp(&b.name));
        let kept: Vec<_> = view.nodes.nodes().cloned().collect();
        prop_assert_eq!(&kept, &scratch.nodes);
        for r in 0..3 {
            let failed: Vec<&str> = fake
                .configs
                .values()
                .filter(|c| c.status.as_ref().is_some_and(|s| {
                    s.phase == Some(ApiNodePhase::Failed) && s.observed_revision == Some(rev(r))
                }))
                .filter_map(|c| c.metadata.name.as_deref())
                .collect();
            prop_assert_eq!(view.failures.failed(&rev(r)).collect::<Vec<_>>(), failed);
        }
    }
}

/// Whether `wait` completes now (a stored notification counts).
fn ready_now(wait: impl std::future::Future<Output = ()>) -> bool {
    use futures::FutureExt;
    wait.now_or_never().is_some()
}

/// Whether `all_reported` is ready now.
fn all_reported_now(changes: &Changes) -> bool {
    ready_now(changes.all_reported())
}

#[test]
fn the_last_awaited_report_wakes_the_next_pass_once() {
    let changes = Changes::default();
    changes.await_reports(&["a".into(), "b".into()]);
    changes.reported("a");
    changes.reported("c"); // not awaited
    assert!(!all_reported_now(&changes), "b has not reported yet");
    changes.reported("b");
    assert!(all_reported_now(&changes), "a and b reported");
    changes.reported("b");
    assert!(
        !all_reported_now(&changes),
        "a second report of b wakes nothing"
    );
}

#[test]
fn a_report_that_came_while_the_pass_ran_is_not_awaited_again() {
    let changes = Changes::default();
    // The pass takes the marks and reads its view; b reports before the pass arms its plan,
    // which (from the older view) still counts a and b in flight.
    let _ = changes.take();
    changes.reported("b");
    changes.await_reports(&["a".into(), "b".into()]);
    assert!(!all_reported_now(&changes));
    changes.reported("a");
    assert!(all_reported_now(&changes), "b was not awaited again");
    // Both reported during the pass: the next pass is due at once.
    let _ = changes.take();
    changes.reported("a");
    changes.reported("b");
    changes.await_reports(&["a".into(), "b".into()]);
    assert!(all_reported_now(&changes));
    // A report seen by the pass's view (before it took the marks) does not carry over.
    changes.reported("c");
    let _ = changes.take();
    changes.await_reports(&["c".into()]);
    assert!(
        !all_reported_now(&changes),
        "c is awaited for its next outcome"
    );
}

/// Whether `slot_freed` is ready now.
fn slot_freed_now(changes: &Changes) -> bool {
    ready_now(changes.slot_freed())
}

#[test]
fn each_awaited_report_frees_a_slot_and_only_an_input_change_is_timed() {
    let changes = Changes::default();
    changes.await_reports(&["a".into(), "b".into()]);
    assert!(!slot_freed_now(&changes), "nothing reported yet");
    changes.reported("c");
    assert!(!slot_freed_now(&changes), "c was not in flight");
    changes.reported("a");
    assert!(slot_freed_now(&changes), "a's slot is free");
    assert!(!slot_freed_now(&changes), "one wake-up per report");
    // b reports while the next pass runs, before it arms its plan (which still counts b).
    let _ = changes.take();
    changes.reported("b");
    let _ = slot_freed_now(&changes);
    changes.await_reports(&["b".into(), "d".into()]);
    assert!(
        slot_freed_now(&changes),
        "b's slot is free: the next pass is due"
    );
    assert_eq!(changes.since_input(), None);
    changes.input_changed();
    assert!(
        changes
            .since_input()
            .is_some_and(|d| d < std::time::Duration::from_secs(5))
    );
}
