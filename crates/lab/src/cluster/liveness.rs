//! Whether a running lab is still there: `netrollout-lab down` run from another terminal while
//! `up` shows a lab (as a new user does) stops its processes and removes its fabric, and `up`
//! must say so and end instead of waiting on a server address that no longer exists.

use super::{Cluster, pods::Proc};
use crate::fabric;

impl Cluster {
    /// Why the lab is gone, if it is: its fabric bridge was removed (a local lab), or an agent
    /// or configurator process ended (the lab ends none while it runs).
    pub fn gone(&mut self) -> Option<String> {
        if self.vm.is_none()
            && !self.opts.containers
            && !std::path::Path::new("/sys/class/net")
                .join(fabric::BRIDGE)
                .exists()
        {
            return Some(format!("its fabric bridge {} was removed", fabric::BRIDGE));
        }
        let agents = (self.nodes.iter_mut()).filter_map(|(n, (_, p))| Some((n, p.as_mut()?)));
        let mut procs = agents.chain(self.configurators.iter_mut());
        procs.find_map(|(name, proc)| match proc {
            Proc::Process(child) => match child.try_wait() {
                Ok(Some(status)) => Some(format!("the process of {name} ended ({status})")),
                Ok(None) | Err(_) => None,
            },
            Proc::Pod(_) => None,
        })
    }
}
