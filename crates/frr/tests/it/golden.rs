//! Golden tests: the samples and the Go operator's manifests (the repository's fixtures; the
//! third-party ones of `NETROLLOUT_COMPAT_DIR` where a golden text exists) render to the FRR text
//! stored under `tests/golden/`. Re-bless with `NETROLLOUT_BLESS=1 cargo test -p netrollout-frr`.

use crate::common;

use netrollout_frr::{render, with_base};

#[test]
fn samples_and_compat_manifests_render_to_the_golden_texts() {
    let bless = std::env::var_os("NETROLLOUT_BLESS").is_some();
    let dir = common::repo().join("crates/frr/tests/golden");
    let mut failed = Vec::new();
    for (name, config) in common::cases() {
        let text = render(&config, &common::settings());
        assert_eq!(
            text,
            render(&config.clone(), &common::settings()),
            "{name}: same input, same text"
        );
        let path = dir.join(format!("{name}.frr"));
        if bless {
            std::fs::write(&path, &text).unwrap();
            continue;
        }
        // A third-party manifest (NETROLLOUT_COMPAT_DIR) may have no golden text in this
        // repository: it is still rendered twice (above) and loaded into FRR (frr_load.rs).
        if name.starts_with("compat-") && !path.exists() {
            continue;
        }
        let want = std::fs::read_to_string(&path).unwrap_or_else(|e| {
            panic!("{}: {e}; create it with NETROLLOUT_BLESS=1", path.display())
        });
        if want != text {
            failed.push(format!(
                "--- {} (want)\n{want}\n+++ got\n{text}",
                path.display()
            ));
        }
    }
    assert!(
        failed.is_empty(),
        "rendered FRR text differs from the golden file (re-bless with NETROLLOUT_BLESS=1 if intended):\n{}",
        failed.join("\n")
    );
}

#[test]
fn with_base_keeps_the_base_and_replaces_only_the_managed_section() {
    let base = "frr defaults datacenter\nhostname n1\n!\nrouter bgp 65000\n bgp router-id 192.0.2.1\nexit\n";
    let first = with_base(base, "route-map a deny 65535\nexit\n");
    assert!(first.starts_with(base.trim_end()));
    assert!(first.contains(netrollout_frr::BEGIN_MARKER));
    assert!(first.ends_with(&format!("{}\n", netrollout_frr::END_MARKER)));
    let second = with_base(&first, "route-map b deny 65535\nexit\n");
    assert_eq!(second, with_base(base, "route-map b deny 65535\nexit\n"));
    assert!(!second.contains("route-map a"));
    assert_eq!(with_base(&second, ""), with_base(base, ""));
}

#[test]
fn an_empty_config_renders_nothing() {
    let text = render(&Default::default(), &common::settings());
    assert_eq!(text, "");
}

#[test]
fn vrf_blocks_go_ahead_of_the_base_and_the_rest_stays() {
    let base =
        "frr defaults datacenter\nhostname n\n!\nrouter bgp 65000\n bgp router-id 10.0.0.1\nexit\n";
    let managed = "vrf vr.a\n vni 5000\nexit-vrf\n!\nvrf vr.b\n vni 5001\nexit-vrf\n!\n\
        router bgp 65000 vrf vr.a\nexit\n";
    let full = with_base(base, managed);
    let vrf_a = full.find("vrf vr.a\n vni 5000\nexit-vrf").unwrap();
    let vrf_b = full.find("vrf vr.b\n vni 5001\nexit-vrf").unwrap();
    let router = full.find("router bgp 65000\n").unwrap();
    assert!(full.starts_with("frr defaults datacenter\n"), "{full}");
    assert!(vrf_a < router && vrf_b < router, "{full}");
    assert!(full.contains("router bgp 65000 vrf vr.a"), "{full}");
    assert_eq!(full.matches("\nvrf vr.a\n").count(), 1, "{full}");
    // An frr.conf copied into the base: its VRF blocks are dropped, not doubled.
    assert_eq!(with_base(&full, managed), full, "a copied frr.conf as base");
    // Without VRFs nothing moves.
    let plain = with_base(base, "route-map x permit 1\nexit\n");
    assert!(plain.starts_with(base.trim_end()), "{plain}");
    assert!(!plain.contains(netrollout_frr::VRF_BEGIN_MARKER), "{plain}");
    // The operator's own VRF blocks in the base stay where the base has them.
    let own = format!("{base}!\nvrf mgmt\n vni 9\nexit-vrf\n");
    let full = with_base(&own, managed);
    let mgmt = full.find("vrf mgmt\n").unwrap();
    assert!(full.find("router bgp 65000\n").unwrap() < mgmt, "{full}");
    assert_eq!(with_base(&full, managed), full, "{full}");
}
