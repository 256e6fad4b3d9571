//! Every rendered config (samples, compatibility manifests) loads into a real FRR 8.4 (zebra +
//! bgpd in a network namespace, `vtysh -N`) without a single error line, and FRR then holds it.
//! Needs root and FRR (hack/install-deps.sh); fails loudly without.

use crate::common;

use common::frr::Frr;
use netrollout_frr::{render, with_base};

#[test]
fn every_rendered_config_loads_into_frr_without_an_error_line() {
    let settings = common::settings();
    let base = format!(
        "hostname golden\n!\nrouter bgp {}\n bgp router-id {}\nexit\n",
        settings.asn, settings.router_id
    );
    let dir = tempfile::tempdir().unwrap();
    for (name, config) in common::cases() {
        // A fresh FRR per case, so that no case hides another's lines.
        let frr = Frr::start("l");
        let managed = render(&config, &settings);
        let path = dir.path().join(format!("{name}.conf"));
        std::fs::write(&path, with_base(&base, &managed)).unwrap();
        let (ok, output) = frr.load(&path);
        let errors: Vec<&str> = output.lines().filter(|l| !l.trim().is_empty()).collect();
        assert!(
            ok && errors.is_empty(),
            "{name}: FRR rejected lines of the rendered config:\n{}\n--- config\n{managed}",
            errors.join("\n")
        );
        // FRR runs exactly the rendered text: a reload of the same file changes nothing.
        // Tolerated: the base's hostname/forwarding lines, and the default instance's IPv4
        // `neighbor vd.<v> activate` and the peerings' `neighbor bgpp_<p>_4|ADDR activate`
        // (hidden by FRR under `bgp default ipv4-unicast`, a no-op).
        let delta: Vec<String> = frr
            .reload_delta(&path)
            .into_iter()
            .filter(|l| {
                let line = l[2..].trim();
                let header = line.starts_with("router bgp") || line.starts_with("address-family");
                let base = [
                    "no hostname",
                    "hostname ",
                    "ip forwarding",
                    "ipv6 forwarding",
                ]
                .iter()
                .any(|p| line.starts_with(p));
                let peer = line
                    .strip_prefix("neighbor ")
                    .and_then(|l| l.strip_suffix(" activate"));
                let hidden = peer.is_some_and(|p| {
                    p.starts_with("vd.")
                        || p.starts_with("bgpp_")
                        || (config.bgp_peerings.iter()).any(|b| b.neighbors.iter().any(|n| n == p))
                });
                !(header || base || hidden)
            })
            .collect();
        assert!(
            delta.is_empty(),
            "{name}: frr-reload.py would still change these lines after loading the config:\n{}",
            delta.join("\n")
        );
        let running = frr.show("show running-config");
        for vrf in &config.vrfs {
            let instance = format!("router bgp {} vrf {}", settings.asn, vrf.vrf_interface);
            assert!(
                running.contains(&instance),
                "{name}: {instance} missing:\n{running}"
            );
            if let (Some(vni), Some(rt)) = (vrf.vni, &vrf.route_target) {
                assert!(
                    running.contains(&format!(" vni {vni}\n")),
                    "{name}: vni {vni}"
                );
                assert!(
                    running.contains(&format!("route-target import {rt}")),
                    "{name}: rt"
                );
            }
            for policy in &vrf.policies {
                for item in policy.export.iter().chain(&policy.import) {
                    assert!(
                        running.contains(&item.cidr),
                        "{name}: {} missing",
                        item.cidr
                    );
                }
            }
        }
        for table in &config.routing_tables {
            assert!(
                running.contains(&format!("import vrf {}", table.interface)),
                "{name}: import vrf {}",
                table.interface
            );
        }
        for peering in &config.bgp_peerings {
            for range in &peering.listen_ranges {
                assert!(
                    running.contains(&format!(" bgp listen range {range} peer-group bgpp_")),
                    "{name}: listen range {range} missing:\n{running}"
                );
            }
            for addr in &peering.neighbors {
                let line = format!(" neighbor {addr} remote-as {}", peering.remote_asn);
                assert!(running.contains(&line), "{name}: {line} missing");
            }
        }
    }
}
