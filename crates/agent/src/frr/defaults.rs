//! Defaults: the lines FRR accepts and never shows, because they say what its `frr defaults`
//! profile already says, listed per FRR version and line shape (FRR's `FRR_CFG_DEFAULT_*` of
//! `bgpd/bgp_vty.c` in 8.4 and 10.3). A line of the text that FRR's running config lacks is no
//! difference when it is one of these; any other line FRR accepts and does not show stays a
//! difference: the rounds of `sync` end in the `frr-reload.py` fallback (counted and logged with
//! the line), never in a line counted as applied that FRR dropped.
//!
//! Both the version and the profile come from the running config itself (FRR prints
//! `frr version` and `frr defaults` at its top), so the rule follows FRR when it is upgraded or
//! restarted with another profile: nothing is learnt or remembered. `tests/it/frr_defaults.rs`
//! loads every listed line into real FRR of each version and checks that FRR accepts it, does
//! not show it, and shows its opposite.

use super::conf::Conf;

/// FRR's `frr defaults` profiles.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Profile {
    /// `frr defaults traditional` (FRR's default).
    Traditional,
    /// `frr defaults datacenter`.
    Datacenter,
}

/// A default of `router bgp` (any instance): the line FRR does not show, the profile it is the
/// default of (`None`: every profile), and the oldest FRR major version that has it.
struct Default {
    line: &'static str,
    profile: Option<Profile>,
    since: u32,
}

const fn default(line: &'static str, profile: Option<Profile>, since: u32) -> Default {
    Default {
        line,
        profile,
        since,
    }
}

const DC: Option<Profile> = Some(Profile::Datacenter);
const TRAD: Option<Profile> = Some(Profile::Traditional);

/// The `router bgp` defaults of FRR 8.4 and 10.3.
const BGP: [Default; 21] = [
    default("no bgp ebgp-requires-policy", DC, 8),
    default("bgp ebgp-requires-policy", TRAD, 8),
    default("bgp log-neighbor-changes", DC, 8),
    default("no bgp log-neighbor-changes", TRAD, 8),
    default("bgp deterministic-med", DC, 8),
    default("no bgp deterministic-med", TRAD, 8),
    default("bgp default show-hostname", DC, 8),
    default("no bgp default show-hostname", TRAD, 8),
    default("bgp default show-nexthop-hostname", DC, 8),
    default("no bgp default show-nexthop-hostname", TRAD, 8),
    default("bgp suppress-duplicates", None, 8),
    default("bgp graceful-restart notification", None, 8),
    default("bgp hard-administrative-reset", None, 8),
    default("bgp network import-check", None, 8),
    default("bgp default ipv4-unicast", None, 8),
    default("bgp default software-version-capability", DC, 10),
    default("no bgp default software-version-capability", TRAD, 10),
    default("bgp default dynamic-capability", DC, 10),
    default("no bgp default dynamic-capability", TRAD, 10),
    default("bgp enforce-first-as", None, 10),
    default("no bgp bestpath aigp", None, 10),
];

/// The FRR whose running config is read: its major version and profile.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) struct Defaults {
    /// FRR's major version (`frr version 10.3` → 10); `None` when the text names none.
    major: Option<u32>,
    profile: Profile,
}

impl Defaults {
    /// The version and profile `running` (FRR's running config) shows.
    pub(super) fn of(running: &Conf) -> Self {
        let mut major = None;
        let mut profile = Profile::Traditional;
        for key in running.top_lines() {
            if let Some(v) = key.strip_prefix("frr version ") {
                major = v.split('.').next().and_then(|m| m.trim().parse().ok());
            } else if key.trim() == "frr defaults datacenter" {
                profile = Profile::Datacenter;
            }
        }
        Self { major, profile }
    }

    /// Whether `line` of the context `key` is a default FRR does not show (see the module's
    /// doc). An FRR of unknown version has none: its lines are all differences.
    pub(super) fn hidden(&self, key: &[String], line: &str) -> bool {
        let Some(major) = self.major else {
            return false;
        };
        let [instance] = key else { return false };
        instance.starts_with("router bgp ")
            && BGP.iter().any(|d| {
                d.line == line && major >= d.since && d.profile.is_none_or(|p| p == self.profile)
            })
    }

    /// Whether a `hostname` line reaches FRR's daemons (and shows in their config): FRR 10's
    /// vtysh keeps it for itself (its `hostname` is no daemon's command), so the daemons show
    /// the machine's name whatever the file says.
    pub(super) fn hostname_is_config(&self) -> bool {
        self.major.is_none_or(|m| m < 10)
    }

    /// The listed defaults of FRR `major` with `profile` (for the real-FRR test of the list).
    pub fn listed(major: u32, datacenter: bool) -> Vec<&'static str> {
        let profile = if datacenter {
            Profile::Datacenter
        } else {
            Profile::Traditional
        };
        BGP.iter()
            .filter(|d| major >= d.since && d.profile.is_none_or(|p| p == profile))
            .map(|d| d.line)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(s: &str) -> Vec<String> {
        vec![s.to_string()]
    }

    #[test]
    fn a_default_is_hidden_only_under_its_profile_version_and_router_bgp() {
        let dc10 = Defaults::of(&Conf::parse(
            "frr version 10.3\nfrr defaults datacenter\n!\nend\n",
        ));
        let trad8 = Defaults::of(&Conf::parse(
            "frr version 8.4.4\nfrr defaults traditional\n",
        ));
        let unknown = Defaults::of(&Conf::parse("frr defaults datacenter\n"));
        let bgp = key("router bgp 65000 vrf vr.a");
        assert!(dc10.hidden(&bgp, "no bgp ebgp-requires-policy"));
        assert!(!trad8.hidden(&bgp, "no bgp ebgp-requires-policy"));
        assert!(trad8.hidden(&bgp, "bgp ebgp-requires-policy"));
        assert!(dc10.hidden(&bgp, "bgp enforce-first-as"));
        assert!(
            !trad8.hidden(&bgp, "bgp enforce-first-as"),
            "a 10.x default on 8.4"
        );
        assert!(!dc10.hidden(&key("route-map rm permit 10"), "bgp log-neighbor-changes"));
        assert!(!dc10.hidden(&bgp, "neighbor 192.0.2.2 remote-as 65100"));
        assert!(!unknown.hidden(&bgp, "no bgp ebgp-requires-policy"));
        assert_eq!(Defaults::listed(8, true).len(), 10);
        assert_eq!(Defaults::listed(10, false).len(), 14);
    }
}
