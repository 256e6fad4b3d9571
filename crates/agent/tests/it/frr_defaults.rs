//! The defaults the agent's diff counts as there although FRR does not show them
//! (`netrollout_agent::frr::listed_defaults`), against real FRR of the tests' version (8.4, or
//! 10.3 with `NETROLLOUT_FRR_VERSION=10.3`) under each `frr defaults` profile: FRR accepts every
//! listed line without an error, does not show it, and shows its opposite. So the list is
//! exact for the versions it names: a line it lacks would make the diff fall back to
//! `frr-reload.py` (counted), a line it holds wrongly would count a dropped line as applied.
//! Needs root and FRR; fails loudly without.

use crate::common;

use std::path::Path;

use common::frr::{FrrNs, chmod_755};
use netrollout_agent::frr::listed_defaults;
use netrollout_frr::daemons::Version;
use netrollout_testkit::netns::Netns;

/// The line that undoes `line`: `no LINE`, or `LINE` without its `no`.
fn opposite(line: &str) -> String {
    match line.strip_prefix("no ") {
        Some(rest) => rest.to_string(),
        None => format!("no {line}"),
    }
}

/// `vtysh -f` of `lines` inside `router bgp 65000`; panics with FRR's output on an error.
fn load(frr: &FrrNs, dir: &Path, name: &str, lines: &[String]) {
    let file = dir.join(name);
    let body: String = lines.iter().map(|l| format!(" {l}\n")).collect();
    std::fs::write(&file, format!("router bgp 65000\n{body}exit\n")).unwrap();
    let out = frr
        .daemons
        .vtysh_cmd()
        .arg("-f")
        .arg(&file)
        .output()
        .unwrap();
    let said = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    // vtysh's own notes about its missing vtysh.conf are no answer of FRR's.
    let errors: Vec<&str> = said
        .lines()
        .filter(|l| l.starts_with('%') || l.contains("Unknown command") || l.contains("line "))
        .filter(|l| !l.contains("vtysh.conf"))
        .collect();
    assert!(
        out.status.success() && errors.is_empty(),
        "FRR {}: vtysh -f of {lines:?} failed ({}):\n{said}",
        frr.daemons.version(),
        out.status
    );
}

/// The lines of FRR's running config inside `router bgp 65000`.
fn bgp_lines(frr: &FrrNs) -> Vec<String> {
    let running = frr.running();
    let mut inside = false;
    let mut out = Vec::new();
    for line in running.lines() {
        if line == "router bgp 65000" {
            inside = true;
        } else if inside && line == "exit" {
            break;
        } else if inside {
            out.push(line.trim().to_string());
        }
    }
    out
}

#[test]
fn every_listed_default_is_accepted_hidden_and_its_opposite_shown_under_each_profile() {
    netrollout_frr::daemons::require_installed();
    let version = Version::from_env();
    let major: u32 = version
        .to_string()
        .split('.')
        .next()
        .unwrap()
        .parse()
        .unwrap();
    let dir = tempfile::tempdir().unwrap();
    chmod_755(dir.path());
    let root = dir.path().to_path_buf();
    let failures: Vec<String> = std::thread::scope(|s| {
        let runs: Vec<_> = [true, false]
            .into_iter()
            .map(|datacenter| {
                let root = &root;
                s.spawn(move || {
                    let profile = if datacenter {
                        "datacenter"
                    } else {
                        "traditional"
                    };
                    let ns = Netns::new("frrdef");
                    let dir = root.join(profile);
                    let frr = FrrNs::start(
                        &ns.name,
                        &dir,
                        &format!(
                            "frr defaults {profile}\nhostname d\n!\nrouter bgp 65000\n \
                             bgp router-id 192.0.2.1\nexit\n!\n"
                        ),
                    );
                    let listed: Vec<String> = listed_defaults(major, datacenter)
                        .into_iter()
                        .map(String::from)
                        .collect();
                    assert!(!listed.is_empty());
                    let mut failures = Vec::new();
                    load(&frr, &dir, "defaults.conf", &listed);
                    let shown = bgp_lines(&frr);
                    for line in &listed {
                        if shown.contains(line) {
                            failures.push(format!("{profile}: FRR shows the default `{line}`"));
                        }
                    }
                    let opposites: Vec<String> = listed.iter().map(|l| opposite(l)).collect();
                    load(&frr, &dir, "opposites.conf", &opposites);
                    let shown = bgp_lines(&frr);
                    for line in &opposites {
                        if !shown.contains(line) {
                            failures.push(format!(
                                "{profile}: FRR does not show `{line}`, the opposite of a \
                                 listed default; it shows {shown:?}"
                            ));
                        }
                    }
                    failures
                })
            })
            .collect();
        runs.into_iter().flat_map(|h| h.join().unwrap()).collect()
    });
    assert!(
        failures.is_empty(),
        "FRR {version}'s defaults differ from the agent's list:\n{}",
        failures.join("\n")
    );
}
