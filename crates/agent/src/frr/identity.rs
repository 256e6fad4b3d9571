//! The managed sections' BGP identity: the ASN and the router id, settled once from the flags
//! and the base file, and the refusal of VRFs when the router id clashes.

use std::net::IpAddr;

use netrollout_api::NodeConfig;

use super::parse::parse_base;
use super::{FrrError, FrrSettings};

/// The ASN (`--asn`, else the base file's default `router bgp ASN`; they must agree) and the
/// managed router id, which must differ from the base file's default-VRF `bgp router-id`:
/// `--router-id` (refused when equal to the base's), else `--vtep-ip` when it is IPv4 and
/// differs, else the base's id with the reason kept (a config with VRFs is then refused).
pub(super) fn routing_settings(
    s: &FrrSettings,
    base: &str,
) -> Result<(netrollout_frr::Settings, Option<String>), FrrError> {
    let (base_asn, base_id) = parse_base(base);
    let problem = |problem: String| FrrError::Routing {
        path: s.base_config.clone(),
        problem,
    };
    let asn = match (s.asn, base_asn) {
        (Some(a), Some(b)) if a != b => {
            return Err(problem(format!(
                "--asn {a} disagrees with `router bgp {b}` in the file; make them equal or drop --asn"
            )));
        }
        (Some(a), _) | (None, Some(a)) => a,
        (None, None) => {
            return Err(problem(
                "no `router bgp <asn>` line and no --asn: add the node's BGP instance to the file or pass --asn".into(),
            ));
        }
    };
    let vtep = match s.vtep_ip {
        Some(IpAddr::V4(v)) => Some(v),
        _ => None,
    };
    let (router_id, clash) = match (s.router_id, vtep, base_id) {
        (Some(r), _, Some(b)) if r == b => {
            return Err(problem(format!(
                "--router-id {r} equals `bgp router-id {b}` of the default `router bgp` in the file; \
                 each VRF peers with the default VRF over iBGP and FRR refuses equal router ids: \
                 pass another --router-id (e.g. the VTEP address) or drop it to use --vtep-ip"
            )));
        }
        (Some(r), _, _) => (r, None),
        (None, Some(v), Some(b)) if v == b => (
            b,
            Some(format!(
                "no --router-id, and --vtep-ip {v} is the base's router id too"
            )),
        ),
        (None, Some(v), _) => (v, None),
        (None, None, Some(b)) => (
            b,
            Some(match s.vtep_ip {
                Some(v) => format!("no --router-id, and --vtep-ip {v} is not IPv4"),
                None => "no --router-id and no --vtep-ip".to_string(),
            }),
        ),
        (None, None, None) => {
            return Err(problem(
                "no ` bgp router-id <ipv4>` under `router bgp`, no --router-id and no IPv4 --vtep-ip: \
                 pass --router-id (an address other than the default VRF's router id)"
                    .into(),
            ));
        }
    };
    Ok((netrollout_frr::Settings { asn, router_id }, clash))
}

/// Refuses `config` when it has VRFs and the managed router id is the default VRF's.
pub(super) fn check_clash(
    s: &FrrSettings,
    routing: &netrollout_frr::Settings,
    clash: Option<&str>,
    config: &NodeConfig,
) -> Result<(), FrrError> {
    match clash {
        Some(why) if !config.vrfs.is_empty() => Err(FrrError::RouterIdClash {
            path: s.base_config.clone(),
            router_id: routing.router_id,
            vrfs: config.vrfs.len(),
            why: why.to_string(),
        }),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;

    use crate::frr::Frr;

    fn settings(asn: Option<u32>, id: Option<&str>) -> FrrSettings {
        FrrSettings {
            base_config: "/etc/frr/base.conf".into(),
            config: "/etc/frr/frr.conf".into(),
            pathspace: None,
            vty_socket: None,
            asn,
            router_id: id.map(|i| i.parse().unwrap()),
            vtep_ip: None,
            reload_script: "/usr/lib/frr/frr-reload.py".into(),
            bindir: "/usr/bin".into(),
            rundir: "/var/lib/netrollout".into(),
        }
    }

    fn with_vtep(mut s: FrrSettings, vtep: &str) -> FrrSettings {
        s.vtep_ip = Some(vtep.parse().unwrap());
        s
    }

    const BASE: &str = "router bgp 65001 vrf vr.x\n bgp router-id 9.9.9.9\nexit\n\
        router bgp 65000\n bgp router-id 10.0.0.1\n neighbor 10.0.0.2 remote-as 65100\nexit\n";

    fn one_vrf() -> NodeConfig {
        NodeConfig {
            vrfs: vec![netrollout_api::VrfConfig {
                name: "red".into(),
                ..Default::default()
            }],
            ..Default::default()
        }
    }

    fn tables_only() -> NodeConfig {
        NodeConfig {
            routing_tables: vec![Default::default()],
            ..Default::default()
        }
    }

    #[test]
    fn asn_comes_from_the_base_files_default_bgp_instance() {
        let (r, _) = routing_settings(&settings(None, Some("10.0.0.9")), BASE).unwrap();
        assert_eq!(r.asn, 65000);
        let (r, _) = routing_settings(&settings(Some(65000), Some("10.0.0.9")), BASE).unwrap();
        assert_eq!(r.asn, 65000);
    }

    #[test]
    fn a_missing_or_disagreeing_asn_names_the_file_and_the_fix() {
        let err = routing_settings(&settings(None, None), "hostname x\n").unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("/etc/frr/base.conf") && text.contains("--asn"),
            "{text}"
        );
        let err = routing_settings(&settings(Some(1), None), BASE).unwrap_err();
        assert!(err.to_string().contains("disagrees"), "{err}");
        let (r, clash) =
            routing_settings(&settings(Some(7), Some("1.2.3.4")), "hostname x\n").unwrap();
        assert_eq!(
            (r.asn, r.router_id, clash),
            (7, "1.2.3.4".parse().unwrap(), None)
        );
    }

    #[test]
    fn router_id_flag_equal_to_the_base_files_is_refused_at_start_naming_flag_and_file() {
        let err = routing_settings(&settings(None, Some("10.0.0.1")), BASE).unwrap_err();
        let text = err.to_string();
        assert!(
            text.contains("--router-id 10.0.0.1")
                && text.contains("/etc/frr/base.conf")
                && text.contains("bgp router-id 10.0.0.1")
                && text.contains("iBGP"),
            "{text}"
        );
        // The VRF instance in the base file (9.9.9.9) is not the default VRF's.
        assert!(routing_settings(&settings(None, Some("9.9.9.9")), BASE).is_ok());
    }

    #[test]
    fn router_id_flag_that_differs_from_the_base_wins_over_the_vtep() {
        let s = with_vtep(settings(None, Some("10.0.0.9")), "192.0.2.1");
        let (r, clash) = routing_settings(&s, BASE).unwrap();
        assert_eq!((r.router_id, clash), ("10.0.0.9".parse().unwrap(), None));
    }

    #[test]
    fn without_the_flag_an_ipv4_vtep_that_differs_is_the_router_id() {
        let s = with_vtep(settings(None, None), "192.0.2.1");
        let (r, clash) = routing_settings(&s, BASE).unwrap();
        assert_eq!((r.router_id, clash), ("192.0.2.1".parse().unwrap(), None));
        // Without a router id in the base file too.
        let (r, clash) =
            routing_settings(&with_vtep(settings(Some(7), None), "192.0.2.1"), "").unwrap();
        assert_eq!((r.router_id, clash), ("192.0.2.1".parse().unwrap(), None));
    }

    #[test]
    fn without_a_safe_id_the_base_id_is_kept_with_the_reason() {
        let cases = [
            (settings(None, None), "no --router-id and no --vtep-ip"),
            (
                with_vtep(settings(None, None), "10.0.0.1"),
                "--vtep-ip 10.0.0.1 is the base's router id too",
            ),
            (
                with_vtep(settings(None, None), "2001:db8::1"),
                "--vtep-ip 2001:db8::1 is not IPv4",
            ),
        ];
        for (s, why) in cases {
            let (r, clash) = routing_settings(&s, BASE).unwrap();
            assert_eq!(r.router_id, "10.0.0.1".parse::<Ipv4Addr>().unwrap());
            let clash = clash.expect("a clash");
            assert!(clash.contains(why), "{clash} lacks {why}");
        }
        let err = routing_settings(&settings(Some(7), None), "hostname x\n").unwrap_err();
        assert!(err.to_string().contains("--router-id"), "{err}");
    }

    #[test]
    fn a_clash_refuses_configs_with_vrfs_only() {
        let s = settings(None, None);
        let (r, clash) = routing_settings(&s, BASE).unwrap();
        let err = check_clash(&s, &r, clash.as_deref(), &one_vrf()).unwrap_err();
        let text = err.to_string();
        for part in [
            "1 VRF(s)",
            "10.0.0.1",
            "/etc/frr/base.conf",
            "--router-id",
            "--vtep-ip",
            "no --router-id and no --vtep-ip",
        ] {
            assert!(text.contains(part), "{text} lacks {part}");
        }
        // Routing tables and layer-2 networks have no session to the default VRF.
        check_clash(&s, &r, clash.as_deref(), &tables_only()).unwrap();
        check_clash(&s, &r, clash.as_deref(), &NodeConfig::default()).unwrap();
        // No clash, no refusal.
        let s = with_vtep(settings(None, None), "192.0.2.1");
        let (r, clash) = routing_settings(&s, BASE).unwrap();
        check_clash(&s, &r, clash.as_deref(), &one_vrf()).unwrap();
    }

    #[test]
    fn frr_new_settles_the_router_id_and_managed_renders_it() {
        let dir = tempfile::tempdir().unwrap();
        let base = dir.path().join("base.conf");
        std::fs::write(&base, BASE).unwrap();
        let mut s = with_vtep(settings(None, None), "192.0.2.1");
        s.base_config = base.clone();
        let frr = Frr::new(s.clone()).unwrap();
        let text = frr.managed(&one_vrf()).unwrap();
        assert!(text.contains(" bgp router-id 192.0.2.1\n"), "{text}");
        assert!(!text.contains("10.0.0.1"), "{text}");
        s.vtep_ip = None;
        let frr = Frr::new(s.clone()).unwrap();
        assert!(matches!(
            frr.managed(&one_vrf()),
            Err(FrrError::RouterIdClash { vrfs: 1, .. })
        ));
        assert!(frr.managed(&tables_only()).is_ok());
        s.router_id = Some("10.0.0.1".parse().unwrap());
        let err = Frr::new(s).unwrap_err();
        assert!(matches!(err, FrrError::Routing { .. }), "{err}");
    }
}
