//! The real agent in a network namespace against the lab API server, its state directory a
//! small tmpfs: full (filled by the test) or remounted read-only, before an apply and in the
//! middle of one (journal written, the commit's backup write fails). The agent applies nothing
//! without a backup and journal it can trust, says so in the node's status (reason
//! `StateUnavailable`, the directory, the errno, what to do), leaves no half-written file, and
//! applies on its own once the directory takes writes again.

#![allow(clippy::unwrap_used, clippy::expect_used)] // test helpers: a failed step is the test failure

use crate::common;

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use common::AgentLab as _;
use common::{Lab, layer2s};
use netrollout_agent::store::{JOURNAL_FILE, LKG_FILE, Store};
use netrollout_api::{NodeNetworkConfig, NodePhase};

/// A tmpfs mounted on a directory for one test, unmounted when dropped.
struct Tmpfs {
    path: PathBuf,
}

impl Tmpfs {
    /// Mounts a tmpfs of `size` (e.g. `256k`) on `path` (created if missing).
    fn mount(path: &Path, size: &str) -> Self {
        std::fs::create_dir_all(path).unwrap();
        mount(
            &["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"],
            path,
        );
        Self { path: path.into() }
    }

    /// `mount -o remount,ro` or `rw`.
    fn remount(&self, opt: &str) {
        mount(&["-o", &format!("remount,{opt}")], &self.path);
    }

    /// Writes zeros to a file in it until the file system says it is full.
    fn fill(&self) {
        let mut f = std::fs::File::create(self.path.join("filler")).unwrap();
        let chunk = vec![0u8; 4096];
        loop {
            if let Err(e) = f.write_all(&chunk) {
                assert_eq!(e.raw_os_error(), Some(28), "filling the tmpfs: {e}");
                return;
            }
        }
    }

    /// Frees the space [`Tmpfs::fill`] took.
    fn free(&self) {
        std::fs::remove_file(self.path.join("filler")).unwrap();
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg("-l").arg(&self.path).status();
    }
}

fn mount(args: &[&str], path: &Path) {
    let out = Command::new("mount").args(args).arg(path).output().unwrap();
    assert!(
        out.status.success(),
        "mount {args:?} {} (needs root): {}",
        path.display(),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A lab whose agent's state directory is a fresh 256 KiB tmpfs, rev-1 committed.
async fn lab_on_tmpfs(hold: &str) -> (Lab, Tmpfs) {
    let mut lab = common::lab().await;
    let tmpfs = Tmpfs::mount(&lab.state_dir(), "256k");
    lab.extra_args = ["--probe-interval", "100ms", "--probe-hold", hold]
        .map(String::from)
        .to_vec();
    lab.set_spec("rev-1", layer2s(100, 2)).await;
    lab.start_agent();
    let nnc = lab.wait_finished("rev-1", 30).await;
    assert_eq!(phase(&nnc), Some(NodePhase::Provisioned));
    (lab, tmpfs)
}

fn phase(nnc: &NodeNetworkConfig) -> Option<NodePhase> {
    nnc.status.as_ref().and_then(|s| s.phase)
}

/// Waits for the agent to report `StateUnavailable`; returns the object.
async fn wait_unavailable(lab: &Lab) -> NodeNetworkConfig {
    lab.wait_nnc(30, "the agent to report StateUnavailable", |o| {
        o.status
            .as_ref()
            .is_some_and(|s| s.reason.as_deref() == Some("StateUnavailable"))
    })
    .await
}

/// The report names the directory and the errno and says what to do; the Node's condition
/// says it too.
async fn check_report(lab: &Lab, nnc: &NodeNetworkConfig, errno: &str) {
    let message = nnc.status.as_ref().unwrap().message.clone().unwrap();
    let dir = lab.state_dir().display().to_string();
    assert!(
        message.contains(&format!("state file {dir}/"))
            && message.contains(errno)
            && message.contains(&format!("free space in {dir} or make it writable")),
        "{message}"
    );
    // The Node's condition is written right after the object's status.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    loop {
        let (cond, reason, _) = lab.node_condition().await.unwrap();
        if (cond.as_str(), reason.as_str()) == ("False", "StateUnavailable") {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "Node condition {cond} {reason}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

/// Every file in the directory is a whole record (or the test's filler), none temporary; the
/// backup says `lkg` and the journal `journal`.
fn check_disk(lab: &Lab, lkg: &str, journal: Option<&str>) {
    let dir = lab.state_dir();
    let names: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().all(|n| !n.ends_with(".tmp")),
        "a half-written temporary file is left: {names:?}"
    );
    let store = Store::open(&dir).unwrap();
    let backup = store.last_known_good().expect("a whole backup");
    assert_eq!(backup.revision.as_deref(), Some(lkg), "{names:?}");
    let on_disk = store.journal().expect("a whole journal, or none");
    assert_eq!(on_disk.map(|j| j.revision).as_deref(), journal, "{names:?}");
    assert!(names.contains(&LKG_FILE.to_string()));
    assert_eq!(names.contains(&JOURNAL_FILE.to_string()), journal.is_some());
}

/// Whether the agent logged `step` for `rev`.
fn logged(lab: &Lab, step: &str, rev: &str) -> bool {
    let step = format!("\"step\":\"{step}\"");
    let rev = format!("\"revision\":\"{rev}\"");
    lab.log()
        .lines()
        .any(|l| l.contains(&step) && l.contains(&rev))
}

#[tokio::test]
async fn a_full_state_directory_stops_the_apply_before_the_kernel_and_it_applies_once_space_returns()
 {
    let (lab, tmpfs) = lab_on_tmpfs("0s").await;
    tmpfs.fill();
    lab.set_spec("rev-2", layer2s(110, 2)).await;
    let nnc = wait_unavailable(&lab).await;
    check_report(&lab, &nnc, "ENOSPC").await;
    // Phase and revision stay those of the last verdict: this is no verdict on rev-2.
    let status = nnc.status.clone().unwrap();
    assert_eq!(status.observed_revision.as_deref(), Some("rev-1"));
    assert_eq!(status.phase, Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(100, 2)).await, "the kernel was touched");
    check_disk(&lab, "rev-1", None);
    assert!(!logged(&lab, "apply", "rev-2"), "{}", lab.log());

    // Space returns: the agent applies on its own (no new spec).
    tmpfs.free();
    let nnc = lab.wait_finished("rev-2", 30).await;
    assert_eq!(phase(&nnc), Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(110, 2)).await);
    check_disk(&lab, "rev-2", None);
}

#[tokio::test]
async fn a_read_only_state_directory_stops_the_apply_before_the_kernel_and_it_applies_once_writable()
 {
    let (lab, tmpfs) = lab_on_tmpfs("0s").await;
    tmpfs.remount("ro");
    lab.set_spec("rev-2", layer2s(120, 2)).await;
    let nnc = wait_unavailable(&lab).await;
    check_report(&lab, &nnc, "EROFS").await;
    assert_eq!(phase(&nnc), Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(100, 2)).await, "the kernel was touched");
    check_disk(&lab, "rev-1", None);

    tmpfs.remount("rw");
    let nnc = lab.wait_finished("rev-2", 30).await;
    assert_eq!(phase(&nnc), Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(120, 2)).await);
    check_disk(&lab, "rev-2", None);
}

#[tokio::test]
async fn a_disk_that_fills_during_the_probe_hold_stops_the_commit_and_it_commits_once_space_returns()
 {
    let (lab, tmpfs) = lab_on_tmpfs("2s").await;
    lab.set_spec("rev-2", layer2s(130, 2)).await;
    lab.wait_applying(Duration::from_secs(30)).await;
    // The journal is written; the disk fills before the commit writes the new backup.
    tmpfs.fill();
    let nnc = wait_unavailable(&lab).await;
    check_report(&lab, &nnc, "ENOSPC").await;
    // Not committed: no Provisioned for rev-2, the backup is still rev-1 and the journal still
    // says "applying rev-2" (a crash now restores rev-1, as after any interrupted apply).
    let status = nnc.status.clone().unwrap();
    assert_eq!(status.observed_revision.as_deref(), Some("rev-2"));
    assert_eq!(status.phase, Some(NodePhase::Provisioning), "{status:?}");
    check_disk(&lab, "rev-1", Some("rev-2"));
    assert!(!logged(&lab, "commit", "rev-2"), "{}", lab.log());

    tmpfs.free();
    let nnc = lab.wait_finished("rev-2", 30).await;
    assert_eq!(phase(&nnc), Some(NodePhase::Provisioned));
    assert!(lab.holds(&layer2s(130, 2)).await);
    check_disk(&lab, "rev-2", None);
}
