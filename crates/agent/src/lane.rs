//! A lane: the one way the agent hands work to a part of the node (the kernel, FRR, the state
//! directory), one piece at a time, in the order handed in.
//!
//! Each piece runs as a task of its own that first waits for the piece before it. The step
//! that handed it in waits for the answer only until its deadline ([`crate::agent`]); the
//! piece itself is never cancelled: a netlink request the kernel has not answered is still
//! queued on its lock, an FRR reload half-way through must end as FRR ends it, a state-file
//! write must not be cut between its rename and its sync. So work given up on at a deadline
//! goes on, and the next piece (the restore after a failed apply, the retry after a refused
//! write) starts only once the part answered it: a part that answers late never applies old
//! work over newer work. What a part still owes is in [`Steps`] (`part_busy_seconds`, the wait
//! message).

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::oneshot;
use tokio::task::JoinHandle;

use crate::steps::Steps;
use crate::txn::Part;

/// One part's queue of work.
#[derive(Debug)]
pub struct Lane {
    part: Part,
    steps: Arc<Steps>,
    /// The last piece handed in (the next one waits for it).
    tail: Mutex<Option<JoinHandle<()>>>,
}

/// The lane's task ended without answering: a panic in the work (a bug).
#[derive(Debug, thiserror::Error)]
#[error("the work handed to {} ended without an answer (a panic in the agent)", .0.describe())]
pub struct Lost(pub Part);

impl Lane {
    /// A lane to `part`, reporting what it owes to `steps`.
    pub fn new(part: Part, steps: Arc<Steps>) -> Self {
        Self {
            part,
            steps,
            tail: Mutex::new(None),
        }
    }

    /// Hands `work` (described by `what`, e.g. `netlink apply of rev-2`) to the part: it
    /// starts once every piece handed in before it ended, and runs to its end whether or not
    /// the answer is still awaited. Must be called inside a tokio runtime.
    pub fn submit<T: Send + 'static>(
        &self,
        what: String,
        work: impl Future<Output = T> + Send + 'static,
    ) -> Answer<T> {
        let (tx, rx) = oneshot::channel();
        let owed = self.steps.owe(self.part, what);
        let mut tail = self.tail.lock().unwrap_or_else(PoisonError::into_inner);
        let before = tail.take();
        *tail = Some(tokio::spawn(async move {
            if let Some(before) = before {
                // A piece that panicked is over all the same.
                let _ = before.await;
            }
            let out = work.await;
            drop(owed);
            let _ = tx.send(out);
        }));
        Answer {
            part: self.part,
            rx,
        }
    }
}

/// The answer to a piece of work, to await (or drop: the work goes on).
#[derive(Debug)]
pub struct Answer<T> {
    part: Part,
    rx: oneshot::Receiver<T>,
}

impl<T> Answer<T> {
    /// Waits for the answer.
    pub async fn get(self) -> Result<T, Lost> {
        self.rx.await.map_err(|_| Lost(self.part))
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn work_given_up_on_goes_on_and_the_next_piece_waits_for_it() {
        let steps = Arc::new(Steps::default());
        let lane = Lane::new(Part::Kernel, steps.clone());
        let log = Arc::new(Mutex::new(Vec::new()));
        let (release, held) = oneshot::channel::<()>();
        let l = log.clone();
        let first = lane.submit("netlink apply of rev-2".into(), async move {
            let _ = held.await;
            l.lock().unwrap().push("apply");
        });
        // The step gives up on it (its deadline).
        let gave_up = tokio::time::timeout(Duration::from_millis(20), first.get()).await;
        assert!(gave_up.is_err());
        assert_eq!(
            steps.oldest(Part::Kernel).map(|b| b.what),
            Some("netlink apply of rev-2".into())
        );
        let l = log.clone();
        let second = lane.submit("netlink restore of rev-2".into(), async move {
            l.lock().unwrap().push("restore");
            7
        });
        tokio::time::sleep(Duration::from_millis(20)).await;
        assert!(log.lock().unwrap().is_empty(), "the restore waits");
        release.send(()).unwrap();
        assert_eq!(second.get().await.unwrap(), 7);
        assert_eq!(*log.lock().unwrap(), ["apply", "restore"]);
        assert_eq!(steps.oldest(Part::Kernel), None);
    }

    #[tokio::test]
    async fn a_piece_that_panics_is_lost_and_the_lane_goes_on() {
        let lane = Lane::new(Part::Disk, Arc::new(Steps::default()));
        let bad = lane.submit("write journal.json".into(), async { panic!("boom") });
        assert!(matches!(bad.get().await, Err(Lost(Part::Disk))));
        let good = lane.submit("write journal.json".into(), async { 1 });
        assert_eq!(good.get().await.unwrap(), 1);
    }
}
