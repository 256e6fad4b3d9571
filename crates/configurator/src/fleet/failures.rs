//! [`FailureIndex`]: per revision, the nodes whose agent reported it Failed and the number of
//! node configs still on it without a final report — what `late_failures` needs to bring a
//! Failed revision's status up to date, kept per node config as its reports arrive so no pass
//! walks every config for it.

use std::collections::{BTreeSet, HashMap};

use netrollout_api::NodePhase;

use crate::views::NodeConfigView;

/// What one node config contributes.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
struct Contribution {
    /// The revision its agent reported Failed (`observedRevision` with phase Failed).
    failed: Option<String>,
    /// Its spec revision, while the agent has not reported it Provisioned or Failed.
    unfinished: Option<String>,
}

impl Contribution {
    fn of(nnc: &NodeConfigView) -> Self {
        let reported = nnc.status.as_ref().and_then(|s| {
            let revision = s.observed_revision.as_deref()?;
            Some((revision, s.phase?))
        });
        let mut c = Contribution::default();
        let mut finished_spec = false;
        if let Some((revision, phase)) = reported {
            finished_spec = revision == nnc.spec.revision
                && matches!(phase, NodePhase::Failed | NodePhase::Provisioned);
            if phase == NodePhase::Failed {
                c.failed = Some(revision.to_string());
            }
        }
        if !finished_spec {
            c.unfinished = Some(nnc.spec.revision.clone());
        }
        c
    }
}

/// Failure reports and unfinished configs by revision.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct FailureIndex {
    by_node: HashMap<String, Contribution>,
    failed: HashMap<String, BTreeSet<String>>,
    unfinished: HashMap<String, usize>,
}

impl FailureIndex {
    /// The index of `configs`, built from scratch.
    pub fn from_configs<'a>(
        configs: impl IntoIterator<Item = &'a std::sync::Arc<NodeConfigView>>,
    ) -> Self {
        let mut index = FailureIndex::default();
        for c in configs {
            if let Some(name) = c.metadata.name.as_deref() {
                index.set(name, Some(c));
            }
        }
        index
    }

    /// Node config `name` is now `config` (`None`: gone).
    pub fn set(&mut self, name: &str, config: Option<&NodeConfigView>) {
        let new = config.map(Contribution::of).unwrap_or_default();
        let old = self.by_node.get(name).cloned().unwrap_or_default();
        if old == new {
            return;
        }
        if let Some(r) = &old.failed
            && let Some(set) = self.failed.get_mut(r)
        {
            set.remove(name);
            if set.is_empty() {
                self.failed.remove(r);
            }
        }
        if let Some(r) = &old.unfinished
            && let Some(n) = self.unfinished.get_mut(r)
        {
            *n -= 1;
            if *n == 0 {
                self.unfinished.remove(r);
            }
        }
        if let Some(r) = &new.failed {
            self.failed
                .entry(r.clone())
                .or_default()
                .insert(name.to_string());
        }
        if let Some(r) = &new.unfinished {
            *self.unfinished.entry(r.clone()).or_default() += 1;
        }
        if new == Contribution::default() {
            self.by_node.remove(name);
        } else {
            self.by_node.insert(name.to_string(), new);
        }
    }

    /// The nodes that reported `revision` Failed, by name.
    pub fn failed(&self, revision: &str) -> impl Iterator<Item = &str> {
        self.failed
            .get(revision)
            .into_iter()
            .flat_map(|s| s.iter().map(String::as_str))
    }

    /// Node configs on `revision` without a final report for it.
    pub fn unfinished(&self, revision: &str) -> usize {
        self.unfinished.get(revision).copied().unwrap_or(0)
    }
}
