//! Supervised background tasks: [`Tasks`], a `JoinSet` whose tasks have names and say whether
//! they run for the life of the process ([`Life::Process`]: the status writer, a watch, a
//! server) or may finish their job and end ([`Life::Job`]: removing startup taints once).
//!
//! A task that panics, or a [`Life::Process`] task that returns, is dead: [`Tasks::dead`]
//! yields it with a message naming it, and the binary ends with a non-zero exit (the kubelet
//! or the user restarts it) instead of running on without it. The `on_death` hook runs the
//! moment the task dies — while the task's panic unwinds, before anyone joins it — so a
//! health endpoint can fail at once, even while the binary's main loop is busy.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Arc;

use tokio::task::{Id, JoinError, JoinSet};

/// How long a task is meant to run.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Life {
    /// For the life of the process: returning is a death.
    Process,
    /// Until its job is done: returning is fine; only a panic is a death.
    Job,
}

/// Called with the message of a task's death.
pub type OnDeath = Arc<dyn Fn(&str) + Send + Sync>;

/// Named, supervised tasks.
pub struct Tasks {
    set: JoinSet<()>,
    names: HashMap<Id, (String, Life)>,
    on_death: OnDeath,
}

impl std::fmt::Debug for Tasks {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Tasks")
            .field("names", &self.names)
            .finish_non_exhaustive()
    }
}

/// Runs the death hook when a task's future is dropped by a panic.
struct Sentinel {
    name: String,
    on_death: OnDeath,
}

impl Drop for Sentinel {
    fn drop(&mut self) {
        if std::thread::panicking() {
            (self.on_death)(&format!("task {} panicked", self.name));
        }
    }
}

impl Tasks {
    /// No tasks yet; `on_death` is told of each death as it happens.
    pub fn new(on_death: OnDeath) -> Self {
        Self {
            set: JoinSet::new(),
            names: HashMap::new(),
            on_death,
        }
    }

    /// Spawns `task` as `name`.
    pub fn spawn(
        &mut self,
        name: impl Into<String>,
        life: Life,
        task: impl Future<Output = ()> + Send + 'static,
    ) {
        let name = name.into();
        let sentinel = Sentinel {
            name: name.clone(),
            on_death: self.on_death.clone(),
        };
        let handle = self.set.spawn(async move {
            // tokio drops a task's future while its panic unwinds: the sentinel's drop then
            // sees the panic.
            let sentinel = sentinel;
            task.await;
            if life == Life::Process {
                (sentinel.on_death)(&format!("task {} returned", sentinel.name));
            }
        });
        self.names.insert(handle.id(), (name, life));
    }

    /// Waits for the next death and says which task and how; a [`Life::Job`] task that
    /// finished is logged and waited past. Pending for ever when no task is left (a
    /// `select!` branch).
    pub async fn dead(&mut self) -> String {
        loop {
            let Some(joined) = self.set.join_next_with_id().await else {
                return std::future::pending().await;
            };
            let id = match &joined {
                Ok((id, ())) => *id,
                Err(e) => e.id(),
            };
            let (name, life) =
                (self.names.remove(&id)).unwrap_or_else(|| ("unnamed".into(), Life::Process));
            match (joined, life) {
                (Ok(_), Life::Job) => tracing::info!(task = %name, "task finished its job"),
                (Ok(_), Life::Process) => return format!("task {name} returned"),
                (Err(e), _) => return describe(&name, &e),
            }
        }
    }

    /// Aborts every task and waits for them to end.
    pub async fn shutdown(&mut self) {
        self.set.shutdown().await;
    }
}

/// A task's death by `e`: a panic with its message, or a cancellation.
fn describe(name: &str, e: &JoinError) -> String {
    if !e.is_panic() {
        return format!("task {name} was cancelled");
    }
    format!("task {name} panicked: {e}")
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;
    use std::time::Duration;

    use super::*;

    fn hooked() -> (Tasks, Arc<Mutex<Vec<String>>>) {
        let seen = Arc::new(Mutex::new(Vec::new()));
        let s = seen.clone();
        let tasks = Tasks::new(Arc::new(move |m: &str| s.lock().unwrap().push(m.into())));
        (tasks, seen)
    }

    #[tokio::test]
    async fn a_task_that_panics_is_dead_at_once_and_named() {
        let (mut tasks, seen) = hooked();
        tasks.spawn("watch", Life::Process, std::future::pending());
        let (go, wait) = tokio::sync::oneshot::channel::<()>();
        tasks.spawn("reporter", Life::Process, async move {
            let _ = wait.await;
            panic!("boom");
        });
        go.send(()).unwrap();
        // The hook hears of it before anyone joins the task.
        tokio::time::timeout(Duration::from_secs(5), async {
            while seen.lock().unwrap().is_empty() {
                tokio::time::sleep(Duration::from_millis(5)).await;
            }
        })
        .await
        .unwrap();
        assert_eq!(*seen.lock().unwrap(), ["task reporter panicked"]);
        let dead = tasks.dead().await;
        assert!(dead.starts_with("task reporter panicked"), "{dead}");
        assert!(dead.contains("boom"), "{dead}");
        tasks.shutdown().await;
        assert_eq!(seen.lock().unwrap().len(), 1, "a shutdown is no death");
    }

    #[tokio::test]
    async fn a_process_task_that_returns_is_dead_and_a_finished_job_is_not() {
        let (mut tasks, seen) = hooked();
        tasks.spawn("taints", Life::Job, async {});
        tasks.spawn("watch", Life::Process, async {
            tokio::time::sleep(Duration::from_millis(50)).await;
        });
        assert_eq!(tasks.dead().await, "task watch returned");
        assert_eq!(*seen.lock().unwrap(), ["task watch returned"]);
        // Nothing left: no death comes.
        let none = tokio::time::timeout(Duration::from_millis(50), tasks.dead()).await;
        assert!(none.is_err());
    }
}
