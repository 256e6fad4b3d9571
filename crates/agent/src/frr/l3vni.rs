//! New layer-3 VNIs on FRR 8.4: registered again once the whole text is in.
//!
//! FRR 8.4's zebra installs a remote router MAC and next hop of a layer-3 VNI (what forwarding
//! into a tenant VRF needs: the VTEP as a neighbour of the VRF's bridge with the sender's router
//! MAC) only for a route that reaches it while the VNI is up in zebra
//! (`zebra_vxlan_evpn_vrf_route_add` returns early otherwise), and never again for that route.
//! When a node gets a new VRF whose routes the other nodes already announce, bgpd imports them
//! as soon as its VRF instance is configured, and the agent's VM suite saw zebra keep them
//! without router MACs: the routes installed, no echo in the VRF answered. A fresh
//! announcement of the same route installed them. So after an apply that added VRF VNIs, the
//! agent removes and adds each new VNI once more (`no vni N`, `vni N` in the VRF): zebra drops
//! and makes the layer-3 VNI again, bgpd takes the VRF's imported routes out of zebra and puts
//! them back, now with the VNI up. Only new VNIs (no traffic yet), only on FRR 8.x (FRR 10.3
//! installs them; the VM suite checks both).

use super::conf::Conf;
use super::parse::vrf_vnis;
use super::{Frr, FrrError};

/// The `(VRF, VNI)` of each VRF block of `full` whose VNI FRR's running config (`running`,
/// before the apply) does not have.
pub(super) fn new_l3_vnis(full: &str, running: &Conf) -> Vec<(String, u32)> {
    vrf_vnis(full)
        .into_iter()
        .filter(|(vrf, vni)| {
            let key = [format!("vrf {vrf}")];
            !running
                .lines_of(&key)
                .iter()
                .any(|l| *l == format!("vni {vni}"))
        })
        .collect()
}

impl Frr {
    /// Whether the daemons run FRR 8.x (the version of the last read).
    pub(super) fn is_frr8(&self) -> bool {
        self.version().is_some_and(|v| v.starts_with("8."))
    }

    /// `no vni N` and `vni N` again in each VRF of `vnis` (see the module's text); an error line
    /// of FRR is [`FrrError::Rejected`] (FRR holds the text either way: the VNI is back or the
    /// read-back of the next apply finds it missing).
    pub(super) async fn register_l3_vnis_again(
        &self,
        vnis: &[(String, u32)],
    ) -> Result<(), FrrError> {
        for (vrf, vni) in vnis {
            let vrf_line = format!("vrf {vrf}");
            for line in [format!("no vni {vni}"), format!("vni {vni}")] {
                let out = self
                    .vtysh(&["-c", "configure terminal", "-c", &vrf_line, "-c", &line])
                    .await
                    .map_err(|line| FrrError::Rejected { line, wrote: true })?;
                let errors = super::parse::error_lines(&out);
                if !errors.is_empty() {
                    return Err(FrrError::Rejected {
                        line: errors,
                        wrote: true,
                    });
                }
            }
            tracing::info!(vrf = %vrf, vni, "layer-3 VNI registered again (FRR 8.4: router MACs)");
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_vnis_the_running_config_lacks_are_new() {
        let full = "vrf vr.a\n vni 5000\nexit-vrf\n!\nvrf vr.b\n vni 5001\nexit-vrf\n\
            !\nvrf vr.c\n vni 5003\nexit-vrf\n";
        let running = Conf::parse(
            "frr version 8.4.4\n!\nvrf vr.a\n vni 5000\nexit-vrf\n!\nvrf vr.c\n vni 5002\n\
             exit-vrf\n!\n",
        );
        assert_eq!(
            new_l3_vnis(full, &running),
            vec![("vr.b".to_string(), 5001), ("vr.c".to_string(), 5003)]
        );
        assert!(new_l3_vnis(full, &Conf::parse(full)).is_empty());
    }
}
