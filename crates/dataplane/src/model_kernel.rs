//! A model of the kernel for tests without root: [`ModelKernel`] executes [`Op`]s on an
//! [`Observed`] state the way the kernel does (refusing a port before its master, releasing the
//! ports of a deleted master, flushing the routes of a re-enslaved device), one op at a time, so
//! that a test can stop it after any op (a crash between two netlink requests) and diff the
//! result. The diff's own tests and the agent's transaction tests run on it.

use crate::model::{Link, LinkKind, Mac, Managed, Observed, ObservedLink, Segmentation};
use crate::op::{LinkChange, Op};

/// The managed objects of a model kernel.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ModelKernel {
    /// What `observe` would read back.
    pub state: Observed,
}

impl ModelKernel {
    /// Executes one op as the kernel would; `Err` names the op and why the kernel refuses it,
    /// and leaves the state as it was.
    pub fn execute(&mut self, op: &Op, managed: &Managed) -> Result<(), String> {
        let mut s = self.state.clone();
        execute(&mut s, op, managed).map_err(|why| format!("{op}: {why}"))?;
        self.state = s;
        Ok(())
    }
}

fn execute(s: &mut Observed, op: &Op, managed: &Managed) -> Result<(), String> {
    match op {
        Op::CreateLink(l) => {
            if s.links.contains_key(&l.name) {
                return Err("File exists (EEXIST)".into());
            }
            let known = |d: &&str| s.links.contains_key(*d) || s.ifindex.contains_key(*d);
            if let Some(dep) = l.dependencies().into_iter().find(|d| !known(d)) {
                return Err(format!("{dep}: No such device (ENODEV)"));
            }
            let mut kind = l.kind.clone();
            if let LinkKind::Vxlan(v) = &mut kind {
                v.neigh_suppress = false;
            }
            let link = Link {
                kind,
                mtu: l.mtu.or(Some(1500)),
                mac: l.mac.or(Some(Mac([2; 6]))),
                segmentation: Segmentation::On,
                ..l.clone()
            };
            s.links
                .insert(l.name.clone(), ObservedLink { link, up: true });
            if let LinkKind::Veth { peer } = &l.kind {
                let back = Link::new(
                    peer,
                    LinkKind::Veth {
                        peer: l.name.clone(),
                    },
                )
                .mtu(1500)
                .mac(Mac([3; 6]))
                .segmentation(Segmentation::On);
                s.links.insert(
                    peer.clone(),
                    ObservedLink {
                        link: back,
                        up: false,
                    },
                );
            }
        }
        Op::DeleteLink(name) => {
            let gone = s.links.remove(name).ok_or("No such device (ENODEV)")?;
            let mut names = vec![name.clone()];
            if let LinkKind::Veth { peer } = gone.link.kind {
                s.links.remove(&peer);
                names.push(peer);
            }
            for n in &names {
                s.addresses.retain(|a| &a.link != n);
                s.routes.retain(|r| r.dev.as_ref() != Some(n));
                let ports: Vec<String> = s
                    .links
                    .values()
                    .filter(|l| l.link.master.as_ref() == Some(n))
                    .map(|l| l.link.name.clone())
                    .collect();
                for p in ports {
                    set_master(s, &p, None)?;
                }
            }
        }
        Op::ModifyLink(c) => modify(s, c)?,
        Op::SetBridgePort {
            link,
            neigh_suppress,
        } => match s.links.get_mut(link).map(|l| &mut l.link.kind) {
            Some(LinkKind::Vxlan(v)) => v.neigh_suppress = *neigh_suppress,
            Some(other) => return Err(format!("neigh_suppress on a {}", other.as_str())),
            None => return Err("No such device (ENODEV)".into()),
        },
        Op::SetSegmentation { link, on } => {
            let l = s.links.get_mut(link).ok_or("No such device (ENODEV)")?;
            l.link.segmentation = if *on {
                Segmentation::On
            } else {
                Segmentation::Off
            };
        }
        Op::AddAddress(a) => {
            if !s.links.contains_key(&a.link) {
                return Err("No such device (ENODEV)".into());
            }
            if !s.addresses.contains(a) {
                s.addresses.push(a.clone());
            }
        }
        Op::DeleteAddress(a) => s.addresses.retain(|x| x != a),
        Op::ReplaceRoute(r) => {
            let missing = |d: &&String| !s.links.contains_key(*d) && managed.owns(d);
            if let Some(dev) = r.dev.as_ref().filter(missing) {
                return Err(format!("{dev}: No such device (ENODEV)"));
            }
            s.routes.retain(|x| x.key() != r.key());
            let mut installed = r.clone();
            installed.metric = r.effective_metric();
            installed.dev = r.dev.clone().or(Some("eth0".into()));
            s.routes.push(installed);
        }
        Op::DeleteRoute(r) => s.routes.retain(|x| x.key() != r.key()),
        Op::AddRule(r) => {
            if s.rules.contains(r) {
                return Err("File exists (EEXIST)".into());
            }
            s.rules.push(r.clone());
        }
        Op::DeleteRule(r) => s.rules.retain(|x| x != r),
    }
    Ok(())
}

fn modify(s: &mut Observed, c: &LinkChange) -> Result<(), String> {
    if let Some(Some(m)) = c
        .master
        .as_ref()
        .filter(|m| matches!(m, Some(m) if !s.links.contains_key(m)))
    {
        return Err(format!("master {m}: No such device (ENODEV)"));
    }
    let l = s.links.get_mut(&c.name).ok_or("No such device (ENODEV)")?;
    if let Some(mtu) = c.mtu {
        l.link.mtu = Some(mtu);
    }
    if let Some(mac) = c.mac {
        l.link.mac = Some(mac);
    }
    l.up |= c.up;
    if let Some(master) = &c.master {
        set_master(s, &c.name, master.clone())?;
    }
    Ok(())
}

/// The kernel cycles a device whose master changes: routes and IPv6 addresses go, bridge
/// port flags reset.
fn set_master(s: &mut Observed, name: &str, master: Option<String>) -> Result<(), String> {
    let l = s.links.get_mut(name).ok_or("No such device (ENODEV)")?;
    l.link.master = master;
    if let LinkKind::Vxlan(v) = &mut l.link.kind {
        v.neigh_suppress = false;
    }
    s.routes.retain(|r| r.dev.as_deref() != Some(name));
    s.addresses
        .retain(|a| a.link != name || a.addr.addr().is_ipv4());
    Ok(())
}
