//! Parse: FRR's texts read back (its error output, VRF blocks, the base file's `router bgp`).

use std::net::Ipv4Addr;

/// FRR's error lines in its output: `line N: ...` and `% ...`, each once, joined by ` | `.
/// vtysh's note about a missing `vtysh.conf` is no error.
pub fn error_lines(text: &str) -> String {
    let mut seen: Vec<&str> = Vec::new();
    for l in text.lines().map(str::trim) {
        let is_error = l.starts_with('%') || (l.starts_with("line ") && l.contains(':'));
        if is_error && !l.contains("Can't open configuration file") && !seen.contains(&l) {
            seen.push(l);
        }
    }
    seen.join(" | ")
}

/// `(VRF, VNI)` of each `vrf NAME` block of a config text that has a ` vni N` line.
pub(super) fn vrf_vnis(text: &str) -> Vec<(String, u32)> {
    let mut out = Vec::new();
    let mut vrf: Option<&str> = None;
    for line in text.lines() {
        if let Some(name) = line.strip_prefix("vrf ") {
            vrf = Some(name.trim());
        } else if line == "exit-vrf" {
            vrf = None;
        } else if let (Some(name), Some(vni)) = (vrf, line.trim().strip_prefix("vni "))
            && let Ok(vni) = vni.trim().parse()
        {
            out.push((name.to_string(), vni));
        }
    }
    out
}

/// `(ASN, router id)` of the default-VRF `router bgp` block of a config text.
pub(super) fn parse_base(text: &str) -> (Option<u32>, Option<Ipv4Addr>) {
    let (mut asn, mut id, mut inside) = (None, None, false);
    for line in text.lines() {
        let words: Vec<&str> = line.split_whitespace().collect();
        match words.as_slice() {
            ["router", "bgp", a] => {
                asn = a.parse().ok();
                inside = true;
            }
            ["router", ..] | ["exit"] => inside = false,
            ["bgp", "router-id", r] if inside => id = r.parse().ok(),
            _ => {}
        }
    }
    (asn, id)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn vrf_vnis_are_read_from_vrf_blocks_only() {
        let text = "vni 7\nvrf vr.a\n vni 5000\nexit-vrf\n!\nvrf vr.b\nexit-vrf\n\
            router bgp 1 vrf vr.c\n vni 9\nexit\n";
        assert_eq!(vrf_vnis(text), vec![("vr.a".to_string(), 5000)]);
    }

    #[test]
    fn frr_error_lines_are_kept_once_and_vtysh_conf_notes_dropped() {
        let out = "% Can't open configuration file /etc/frr/x/vtysh.conf due to 'No such file'.\n\
            % Malformed communities attribute '1:2:3'\n\
            line 2: Failure to communicate[13] to bgpd, line:  set community 1:2:3\n\
            % Malformed communities attribute '1:2:3'\nINFO: noise\n";
        assert_eq!(
            error_lines(out),
            "% Malformed communities attribute '1:2:3' | \
             line 2: Failure to communicate[13] to bgpd, line:  set community 1:2:3"
        );
    }
}
