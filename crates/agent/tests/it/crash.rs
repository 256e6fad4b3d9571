//! The real agent in a network namespace against the lab API server: `kill -9` at random points
//! never leaves a half-applied config; a journal left by one crash retries the revision once, one
//! left by a second crash reports it Failed; corrupt state files are reported and never applied.

use crate::common;

use std::collections::BTreeMap;
use std::time::Duration;

use common::AgentLab as _;
use common::{Lab, layer2s};
use netrollout_agent::convert::{managed, to_desired};
use netrollout_agent::store::{FAILED_FILE, JOURNAL_FILE, Journal, LKG_FILE, Store};
use netrollout_api::{NodeConfig, NodePhase};
use netrollout_dataplane::Dataplane;
use rand::RngExt;

const ITERATIONS: u32 = 20;

#[tokio::test]
async fn kill_9_at_random_points_during_apply_leaves_a_whole_config_after_restart() {
    let mut lab = common::lab().await;
    lab.extra_args = vec!["--probe-tcp".into(), lab.api_target()];
    let a = layer2s(600, 40);
    let b = layer2s(620, 40);
    let mut configs: BTreeMap<String, NodeConfig> = BTreeMap::new();
    configs.insert("rev-0".into(), a.clone());
    lab.set_spec("rev-0", a.clone()).await;
    lab.start_agent();
    lab.wait_finished("rev-0", 30).await;
    lab.kill_agent();

    let mut rng = rand::rng();
    let (mut provisioned, mut crashed) = (0, 0);
    for i in 1..=ITERATIONS {
        let rev = format!("rev-{i}");
        let config = if i % 2 == 1 { b.clone() } else { a.clone() };
        configs.insert(rev.clone(), config.clone());
        lab.set_spec(&rev, config.clone()).await;
        // Every fifth revision is killed twice: the second death marks it failed.
        let kills = if i % 5 == 0 { 2 } else { 1 };
        for _ in 0..kills {
            lab.start_agent();
            tokio::time::sleep(Duration::from_millis(rng.random_range(0..400))).await;
            lab.kill_agent();
        }
        lab.start_agent();
        let nnc = lab.wait_finished(&rev, 60).await;
        let status = nnc.status.unwrap();
        lab.kill_agent();
        match status.phase {
            Some(NodePhase::Provisioned) => {
                provisioned += 1;
                assert!(
                    lab.holds(&config).await,
                    "{rev} provisioned but not in place"
                );
            }
            Some(NodePhase::Failed) => {
                crashed += 1;
                assert_eq!(status.reason.as_deref(), Some("AgentCrashed"), "{status:?}");
                let lkg = status.last_known_good_revision.expect("a last-known-good");
                assert!(
                    lab.holds(&configs[&lkg]).await,
                    "{rev} failed but {lkg} is not restored"
                );
            }
            other => panic!("{rev}: phase {other:?}"),
        }
    }
    let log = lab.log();
    let interrupted = log.matches("journal says an apply was interrupted").count();
    eprintln!(
        "{ITERATIONS} revisions: {provisioned} provisioned, {crashed} failed after two crashes, \
         {interrupted} restarts found an interrupted apply"
    );
    assert!(
        interrupted >= 3,
        "too few kills landed mid-apply ({interrupted}) for the test to mean anything"
    );
    assert!(!lab.state_dir().join(JOURNAL_FILE).exists());
}

/// A node that committed `rev-1` and then died in the middle of applying `rev-2` for the
/// `attempt`-th time: the journal on disk says so, and the kernel holds `rev-1` plus part of
/// `rev-2`. The agent is not running. Returns (rev-1's config, rev-2's config).
#[allow(clippy::unwrap_used)]
async fn crashed_while_applying_rev_2(lab: &mut Lab, attempt: u32) -> (NodeConfig, NodeConfig) {
    let (good, next) = (layer2s(800, 2), layer2s(810, 2));
    lab.set_spec("rev-1", good.clone()).await;
    lab.start_agent();
    let status = lab.wait_finished("rev-1", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    lab.kill_agent();

    Store::open(lab.state_dir())
        .unwrap()
        .set_journal(&Journal {
            revision: "rev-2".into(),
            attempt,
            retry: None,
        })
        .unwrap();
    let mut half = good.clone();
    half.layer2s.push(next.layer2s[0].clone());
    let dataplane = Dataplane::in_netns(&lab.ns, managed().unwrap()).unwrap();
    dataplane
        .apply(&to_desired(&half, &lab.vtep()).unwrap())
        .await
        .unwrap();
    assert!(lab.holds(&half).await && !lab.holds(&good).await);
    lab.set_spec("rev-2", next.clone()).await;
    (good, next)
}

/// The agent log's lines of an attempt (step `journal`) of `rev`.
fn attempts(lab: &Lab, rev: &str) -> Vec<String> {
    let quoted = format!("\"{rev}\"");
    lab.log()
        .lines()
        .filter(|l| l.contains("\"step\":\"journal\"") && l.contains(&quoted))
        .map(String::from)
        .collect()
}

#[tokio::test]
async fn a_journal_of_a_second_crash_on_start_restores_last_known_good_and_reports_the_revision_failed()
 {
    let mut lab = common::lab().await;
    let (good, _) = crashed_while_applying_rev_2(&mut lab, 2).await;
    lab.start_agent();
    let status = lab.wait_finished("rev-2", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Failed), "{status:?}");
    assert_eq!(status.reason.as_deref(), Some("AgentCrashed"), "{status:?}");
    let message = status.message.clone().unwrap_or_default();
    assert!(
        message.contains("agent crashed while applying rev-2")
            && message.contains("restored last-known-good rev-1"),
        "{message}"
    );
    assert_eq!(status.last_known_good_revision.as_deref(), Some("rev-1"));
    assert!(lab.holds(&good).await, "the kernel does not hold rev-1");
    assert!(!lab.state_dir().join(JOURNAL_FILE).exists());
    let failures = Store::open(lab.state_dir()).unwrap().failures().unwrap();
    assert!(failures.revisions.contains_key("rev-2"), "{FAILED_FILE}");

    // It stays failed: a restart neither applies it again nor changes the verdict.
    lab.kill_agent();
    lab.start_agent();
    lab.wait_log("state recovered", 2, 30).await;
    // Give a wrong second try the time it would need (an apply here takes milliseconds).
    tokio::time::sleep(Duration::from_secs(1)).await;
    let status = lab.wait_finished("rev-2", 30).await.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("AgentCrashed"), "{status:?}");
    assert!(lab.holds(&good).await);
    assert_eq!(
        attempts(&lab, "rev-2"),
        Vec::<String>::new(),
        "rev-2 was tried"
    );
}

#[tokio::test]
async fn a_journal_of_a_first_crash_on_start_restores_last_known_good_and_tries_the_revision_once_more()
 {
    let mut lab = common::lab().await;
    let (_, next) = crashed_while_applying_rev_2(&mut lab, 1).await;
    lab.start_agent();
    let status = lab.wait_finished("rev-2", 30).await.status.unwrap();
    assert_eq!(status.phase, Some(NodePhase::Provisioned), "{status:?}");
    assert!(lab.holds(&next).await, "rev-2 is not in place");
    let tried = attempts(&lab, "rev-2");
    assert!(
        tried.len() == 1 && tried[0].contains("\"attempt\":2"),
        "rev-2 was not tried exactly once, as attempt 2: {tried:?}"
    );
    assert!(lab.log().contains("restored last-known-good"));
}

#[tokio::test]
async fn a_corrupt_backup_or_journal_is_reported_and_nothing_is_applied_from_it() {
    let mut lab = common::lab().await;
    lab.set_spec("rev-1", layer2s(700, 2)).await;
    lab.start_agent();
    lab.wait_finished("rev-1", 30).await;
    lab.kill_agent();

    // A truncated last-known-good file.
    let lkg_path = lab.state_dir().join(LKG_FILE);
    let text = std::fs::read(&lkg_path).unwrap();
    std::fs::write(&lkg_path, &text[..text.len() / 2]).unwrap();
    lab.set_spec("rev-2", layer2s(710, 2)).await;
    lab.start_agent();
    let message = wait_corrupt(&lab).await;
    assert!(
        message.contains(LKG_FILE) && message.contains("delete"),
        "{message}"
    );
    assert!(lab.holds(&layer2s(700, 2)).await, "something was applied");
    let status = lab.status().await;
    assert_eq!(status.observed_revision.as_deref(), Some("rev-1"));
    assert_eq!(status.reason.as_deref(), Some("StateCorrupt"));
    lab.kill_agent();

    // Deleting the file (as the message says) lets the agent start over.
    std::fs::remove_file(&lkg_path).unwrap();
    lab.start_agent();
    lab.wait_finished("rev-2", 30).await;
    assert!(lab.holds(&layer2s(710, 2)).await);
    lab.kill_agent();

    // A journal whose checksum does not match its content.
    let store = Store::open(lab.state_dir()).unwrap();
    store
        .set_journal(&Journal {
            revision: "rev-2".into(),
            attempt: 1,
            retry: None,
        })
        .unwrap();
    let path = lab.state_dir().join(JOURNAL_FILE);
    let forged = std::fs::read_to_string(&path)
        .unwrap()
        .replace("rev-2", "rev-9");
    std::fs::write(&path, forged).unwrap();
    lab.set_spec("rev-3", layer2s(720, 2)).await;
    lab.start_agent();
    let message = wait_corrupt(&lab).await;
    assert!(
        message.contains(JOURNAL_FILE) && message.contains("checksum"),
        "{message}"
    );
    assert!(lab.holds(&layer2s(710, 2)).await, "something was applied");
}

/// Waits for the Node condition to say the state is corrupt; returns its message.
async fn wait_corrupt(lab: &Lab) -> String {
    for _ in 0..300 {
        if let Some((status, reason, message)) = lab.node_condition().await
            && status == "False"
            && reason == "StateCorrupt"
        {
            return message;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("no StateCorrupt condition; agent log:\n{}", lab.log());
}
