//! Scratch checks of what the kernel can do beyond the model's link kinds, and of the VRF
//! driver without a VRF device (the agent's capability detection,
//! `crates/agent/src/capabilities.rs`, tries the other modelled kinds with
//! [`Dataplane::apply`]).

use netlink_packet_route::RouteNetlinkMessage;
use netlink_packet_route::link::{
    InfoBridge, InfoData, InfoKind, LinkAttribute, LinkInfo, LinkMessage,
};
use rtnetlink::packet_core::{NLM_F_ACK, NLM_F_CREATE, NLM_F_EXCL, NLM_F_REQUEST};

use super::{Dataplane, send};
use crate::error::{Error, Result};

/// The kernel's answer to a link without its kind's required attributes.
const EINVAL: i32 = 22;

impl Dataplane {
    /// Whether the kernel has the VRF driver, asked without a VRF device ever existing:
    /// `ip link add NAME type vrf` without a table, which the driver refuses (`EINVAL`, "VRF
    /// table id is missing") before the device is registered, while a kernel without the
    /// driver answers `EOPNOTSUPP` (after trying to load its module). No device comes and goes,
    /// so FRR sees nothing: FRR's bfdd (8.4 and 10.3) exits when a VRF it is told about is gone
    /// before it binds its sockets to it ("udp-shop: socket: No such device"), which a scratch
    /// VRF created and deleted at once made happen. `name` must carry a prefix this connection
    /// owns.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a name this connection does not own; [`Error::Kernel`] with the
    /// kernel's answer when it is not the driver's refusal (`EOPNOTSUPP`: no driver).
    pub async fn try_vrf_driver(&self, name: &str) -> Result<()> {
        self.check_owned(name)?;
        let mut m = LinkMessage::default();
        m.attributes.push(LinkAttribute::IfName(name.to_string()));
        m.attributes
            .push(LinkAttribute::LinkInfo(vec![LinkInfo::Kind(InfoKind::Vrf)]));
        let flags = NLM_F_REQUEST | NLM_F_ACK | NLM_F_CREATE | NLM_F_EXCL;
        let errno = send(self.handle.clone(), RouteNetlinkMessage::NewLink(m), flags).await?;
        let object = || format!("link {name} (vrf without a table)");
        match errno {
            EINVAL => Ok(()),
            0 => {
                // A kernel that took it after all: it has the driver; the device goes again.
                self.delete_scratch(name, &object()).await?;
                Ok(())
            }
            errno => Err(Error::Kernel {
                op: "create link",
                object: object(),
                source: std::io::Error::from_raw_os_error(errno),
            }),
        }
    }

    fn check_owned(&self, name: &str) -> Result<()> {
        if self.managed.owns(name) {
            return Ok(());
        }
        Err(Error::Invalid {
            object: format!("link {name}"),
            reason: "is not a managed name of this connection".into(),
        })
    }

    async fn delete_scratch(&self, name: &str, object: &str) -> Result<()> {
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
                object: object.to_string(),
                source: std::io::Error::from_raw_os_error(errno),
            });
        }
        Ok(())
    }

    /// `ip link add NAME type bridge vlan_filtering 1; ip link del NAME`: whether the kernel
    /// has bridge VLAN filtering (`CONFIG_BRIDGE_VLAN_FILTERING`; without it the kernel refuses
    /// the bridge with `EOPNOTSUPP`). `name` must carry a prefix this connection owns.
    ///
    /// # Errors
    /// [`Error::Invalid`] for a name this connection does not own; [`Error::Kernel`] with the
    /// kernel's answer when it refuses the bridge.
    pub async fn try_bridge_vlan_filtering(&self, name: &str) -> Result<()> {
        self.check_owned(name)?;
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
        self.delete_scratch(name, &object()).await
    }
}
