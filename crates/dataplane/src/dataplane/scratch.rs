//! Scratch checks of what the kernel can do beyond the model's link kinds (the agent's
//! capability detection, `crates/agent/src/capabilities.rs`, tries the modelled kinds with
//! [`Dataplane::apply`]).

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, LinkAttribute, LinkInfo, LinkMessage,
};
use rtnetlink::packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST};

use super::{Dataplane, send};
use crate::error::{Error, Result};

impl Dataplane {
    /// `ip link add NAME type bridge vlan_filtering 1; ip link del NAME`: whether the kernel
    /// has bridge VLAN filtering (`CONFIG_BRIDGE_VLAN_FILTERING`; without it the kernel refuses
    /// the bridge with `EOPNOTSUPP`). `name` must carry a prefix this connection owns.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a name this connection does not own; [`Error::Kernel`] with the
    /// kernel's answer when it refuses the bridge.
    pub async fn try_bridge_vlan_filtering(&self, name: &str) -> Result<()> {
        if !self.managed.owns(name) {
            return Err(Error::Invalid {
                object: format!("link {name}"),
                reason: "is not a managed name of this connection".into(),
            });
        }
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes.push(LinkAttribute::LinkInfo(vec![
            LinkInfo::Kind(InfoKind::Bridge),
            LinkInfo::Data(InfoData::Bridge(vec![InfoBridge::VlanFiltering(true)])),
        ]));
        let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        let errno = send(self.handle.clone(), RouteNetlinkMessage::NewLink(m), flags).await?;
        let object = || format!("link {name} (bridge vlan_filtering 1)");
        if errno != 0 {
            return Err(Error::Kernel {
                op: "create link",
                object: object(),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        let mut del = LinkMessage::default();
        del.attributes.push(LinkAttribute::IfName(name.to_string()));
        let errno = send(
            self.handle.clone(),
            RouteNetlinkMessage::DelLink(del),
            NLM_F_REQUEST | NLM_F_ACK,
        )
        .await?;
        if errno != 0 {
            return Err(Error::Kernel {
                op: "delete link",
                object: object(),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        Ok(())
    }
}
