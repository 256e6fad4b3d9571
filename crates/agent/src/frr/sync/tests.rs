//! `converge` against a model FRR: a config of contexts that applies `vtysh -f` scripts line by
//! line as FRR does (a `no` line removes its line, or its whole context at the top; `no neighbor
//! X remote-as ...` takes X's other lines with it), shows its running config with FRR's
//! `frr version` and `frr defaults` lines, and can be told to drop a line without a word or to
//! reject one. What is checked is FRR's config after the rounds, not the agent's belief.

use std::sync::atomic::{AtomicU64, Ordering};

use super::{Conf, Io, converge};
use crate::frr::FrrError;

/// The model FRR.
#[derive(Default)]
struct Model {
    /// `frr version` and `frr defaults` lines of its running config.
    head: String,
    /// Contexts in the order first seen: headers, lines, opened by a header (else a top line).
    contexts: Vec<(Vec<String>, Vec<String>, bool)>,
    /// Lines FRR accepts and never shows.
    dropped: Vec<&'static str>,
    /// A line FRR rejects with an error.
    rejects: Option<&'static str>,
    /// A line FRR answers with a `% ...` line but goes on past (a daemon's `CMD_WARNING`), and
    /// whether it took the line all the same.
    warns: Option<(&'static str, bool)>,
    /// The `% ...` lines of the last script.
    said: Vec<String>,
    /// The text `frr-reload.py` applies (the written file).
    file: String,
    /// A read fails with FRR unavailable.
    down: bool,
    sends: usize,
    reads: usize,
    reloads: usize,
}

impl Model {
    fn new(version: &str, running: &str) -> Self {
        let mut model = Self {
            head: format!("frr version {version}\nfrr defaults datacenter\n"),
            ..Self::default()
        };
        model
            .apply(&running.lines().map(String::from).collect::<Vec<_>>())
            .unwrap();
        model
    }

    fn context(&mut self, key: &[String], block: bool) -> &mut Vec<String> {
        let at = match self.contexts.iter().position(|(k, ..)| k == key) {
            Some(at) => at,
            None => {
                self.contexts.push((key.to_vec(), Vec::new(), block));
                self.contexts.len() - 1
            }
        };
        &mut self.contexts[at].1
    }

    /// Applies a script (or a whole file) line by line.
    fn apply(&mut self, lines: &[String]) -> Result<(), FrrError> {
        let mut path: Vec<String> = Vec::new();
        for (i, raw) in lines.iter().enumerate() {
            let depth = raw.len() - raw.trim_start().len();
            let line = raw.trim();
            if line.is_empty() || line.starts_with('!') || line == "end" {
                continue;
            }
            if Some(line) == self.rejects {
                return Err(FrrError::Rejected {
                    line: format!("% Unknown command: {line}"),
                    wrote: true,
                });
            }
            if let Some((warned, taken)) = self.warns
                && line == warned
            {
                self.said.push("% Malformed Route Target list".into());
                if !taken {
                    continue;
                }
            }
            path.truncate(depth);
            if line.starts_with("exit") {
                continue;
            }
            let header = lines
                .get(i + 1)
                .is_some_and(|next| next.len() - next.trim_start().len() > depth);
            if header {
                path.push(line.to_string());
                self.context(&path, true);
            } else if let Some(gone) = line.strip_prefix("no ").filter(|_| depth == 0) {
                self.contexts.retain(|(k, ..)| k[0] != gone && k[0] != line);
            } else if depth == 0 {
                self.context(&[line.to_string()], false);
            } else if let Some(gone) = line.strip_prefix("no ") {
                self.remove(&path, gone);
            } else if !self.dropped.contains(&line) {
                let lines = self.context(&path, true);
                if !lines.iter().any(|l| l == line) {
                    lines.push(line.to_string());
                }
            }
        }
        Ok(())
    }

    /// Removes `gone` from the context `path`; `neighbor X remote-as ...` takes every line of X
    /// with it, in nested contexts too (as bgpd deletes the peer).
    fn remove(&mut self, path: &[String], gone: &str) {
        let peer = gone
            .strip_prefix("neighbor ")
            .and_then(|rest| rest.split_once(' '))
            .filter(|(_, what)| what.starts_with("remote-as") || what.starts_with("interface"))
            .map(|(peer, _)| format!("neighbor {peer} "));
        for (key, lines, _) in &mut self.contexts {
            if key.as_slice() == path {
                lines.retain(|l| l != gone);
            }
            if let Some(peer) = &peer
                && key.starts_with(path)
            {
                lines.retain(|l| !l.starts_with(peer.as_str()));
            }
        }
    }

    /// `show running-config`: each context with its lines, its nested contexts, its exit.
    fn show(&self) -> String {
        let mut out = self.head.clone();
        for (key, _, block) in &self.contexts {
            if !block {
                out.push_str(&format!("{}\n", key[0]));
            } else if key.len() == 1 {
                self.show_block(key, &mut out);
            }
        }
        out
    }

    fn show_block(&self, key: &[String], out: &mut String) {
        let indent = " ".repeat(key.len() - 1);
        out.push_str(&format!("{indent}{}\n", key[key.len() - 1]));
        for (k, lines, _) in &self.contexts {
            if k.as_slice() == key {
                for line in lines {
                    out.push_str(&format!("{indent} {line}\n"));
                }
            }
        }
        for (k, ..) in &self.contexts {
            if k.len() == key.len() + 1 && k.starts_with(key) {
                self.show_block(k, out);
            }
        }
        out.push_str(&format!("{indent}exit\n"));
    }

    /// Whether FRR's running config holds `text` (the agent's diff finds nothing to send).
    fn holds(&self, text: &str) -> bool {
        use crate::frr::{conf::Conf, diff::script};
        script(&Conf::parse(text), &Conf::parse(&self.show())).is_empty()
    }
}

impl Io for Model {
    async fn send(&mut self, lines: &[String]) -> Result<String, FrrError> {
        self.sends += 1;
        self.said.clear();
        self.apply(lines)?;
        Ok(self.said.join(" | "))
    }

    async fn read(&mut self) -> Result<String, FrrError> {
        self.reads += 1;
        if self.down {
            return Err(FrrError::Unavailable {
                daemons: vec!["bgpd"],
                detail: "bgpd: connecting: refused".into(),
            });
        }
        Ok(self.show())
    }

    async fn reload(&mut self) -> Result<(), FrrError> {
        self.reloads += 1;
        self.contexts.clear();
        let file: Vec<String> = self.file.lines().map(String::from).collect();
        self.apply(&file)
    }
}

const BASE: &str = "router bgp 65000\n bgp router-id 192.0.2.1\n \
    neighbor 192.0.2.2 remote-as 65100\n neighbor 192.0.2.2 description spine\nexit\n";

/// `converge` of `text` (also the file `frr-reload.py` applies) from what `model` runs: its
/// result and the fallbacks it counted.
fn run(model: &mut Model, text: &str) -> (Result<u32, FrrError>, u64) {
    model.file = text.to_string();
    let fallbacks = AtomicU64::new(0);
    let running = model.show();
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let out = rt.block_on(converge(
        model,
        &Conf::parse(text),
        Conf::parse(&running),
        &fallbacks,
    ));
    (out, fallbacks.load(Ordering::Relaxed))
}

/// [`run`] that succeeds: the FRR writes and the fallbacks.
fn applied(model: &mut Model, text: &str) -> (u32, u64) {
    match run(model, text) {
        (Ok(writes), fallbacks) => (writes, fallbacks),
        (Err(e), _) => panic!("converge failed: {e}"),
    }
}

#[test]
fn frr_running_the_text_gets_no_write_and_no_read() {
    let mut frr = Model::new("8.4.4", BASE);
    assert_eq!(applied(&mut frr, BASE), (0, 0));
    assert_eq!((frr.sends, frr.reads, frr.reloads), (0, 0, 0));
}

#[test]
fn a_change_is_one_script_then_frrs_config_read_back() {
    for version in ["8.4.4", "10.3"] {
        let mut frr = Model::new(version, BASE);
        let text = format!("{BASE}route-map rm_a permit 10\n match tag 7\nexit\n");
        assert_eq!(applied(&mut frr, &text), (1, 0), "{version}");
        assert!(frr.holds(&text), "{version}: FRR runs\n{}", frr.show());
        assert_eq!((frr.sends, frr.reads, frr.reloads), (1, 1, 0), "{version}");
    }
}

#[test]
fn a_no_line_that_takes_more_with_it_is_put_back_by_the_second_round() {
    // An interface neighbour's identity line changes (not its AS, which is replaced in place):
    // its old line is deleted first, and `no neighbor swp1 interface ...` deletes the peer with
    // every line about it, as bgpd does.
    let running = "router bgp 65000\n bgp router-id 192.0.2.1\n neighbor fabric peer-group\n \
        neighbor fabric remote-as external\n neighbor swp1 interface peer-group fabric\n \
        neighbor swp1 description spine\nexit\n";
    let mut frr = Model::new("10.3", running);
    let text = running.replace("interface peer-group", "interface v6only peer-group");
    assert_eq!(applied(&mut frr, &text), (1, 0));
    // The first script's `no neighbor swp1 interface peer-group fabric` took the description
    // with it; only the read-back shows it, and the second script puts it back.
    assert!(frr.holds(&text), "FRR runs\n{}", frr.show());
    assert_eq!((frr.sends, frr.reads, frr.reloads), (2, 2, 0));
}

#[test]
fn a_listed_default_frr_does_not_show_is_no_difference() {
    for version in ["8.4.4", "10.3"] {
        let mut frr = Model::new(version, BASE);
        frr.dropped = vec!["no bgp ebgp-requires-policy"];
        // FRR started from the text does not show its default: nothing to send.
        let text = BASE.replace("exit\n", " no bgp ebgp-requires-policy\nexit\n");
        assert_eq!(applied(&mut frr, &text), (0, 0), "{version}");
        // With a change beside it, the script holds the change alone and converges.
        let changed = text.replace("spine", "leaf");
        assert_eq!(applied(&mut frr, &changed), (1, 0), "{version}");
        assert_eq!((frr.sends, frr.reads, frr.reloads), (1, 1, 0), "{version}");
    }
}

#[test]
fn a_line_frr_accepts_and_does_not_show_is_never_applied_but_goes_to_frr_reload_counted() {
    for version in ["8.4.4", "10.3"] {
        let mut frr = Model::new(version, BASE);
        frr.dropped = vec!["neighbor 192.0.2.2 timers 1 3"];
        let text = BASE.replace("exit\n", " neighbor 192.0.2.2 timers 1 3\nexit\n");
        assert_eq!(applied(&mut frr, &text), (1, 1), "{version}");
        assert_eq!((frr.sends, frr.reads, frr.reloads), (2, 2, 1), "{version}");
        // Every apply that finds it missing again falls back again (never remembered as
        // applied): the counter and the log say so each time.
        assert_eq!(applied(&mut frr, &text), (1, 1), "{version}");
        assert_eq!(frr.reloads, 2, "{version}");
    }
}

#[test]
fn a_rejected_line_goes_to_frr_reload_counted_and_its_error_is_the_result() {
    let mut frr = Model::new("10.3", BASE);
    frr.rejects = Some("neighbor 192.0.2.2 bogus");
    let text = BASE.replace("exit\n", " neighbor 192.0.2.2 bogus\nexit\n");
    let (out, fallbacks) = run(&mut frr, &text);
    assert!(matches!(out, Err(FrrError::Rejected { .. })), "{out:?}");
    assert_eq!(fallbacks, 1);
    assert_eq!((frr.sends, frr.reads, frr.reloads), (1, 0, 1));
}

#[test]
fn frr_unavailable_after_a_script_is_the_error_without_a_fallback() {
    let mut frr = Model::new("8.4.4", BASE);
    frr.down = true;
    let text = BASE.replace("65100", "65200");
    let (out, fallbacks) = run(&mut frr, &text);
    assert!(matches!(out, Err(FrrError::Unavailable { .. })), "{out:?}");
    assert_eq!((fallbacks, frr.reloads), (0, 0));
}

/// A VRF whose EVPN family gets a route target FRR answers `% Malformed Route Target list` to.
fn with_route_target(rt: &str) -> String {
    format!(
        "{BASE}router bgp 65000 vrf vr.t1\n address-family l2vpn evpn\n  \
         route-target import {rt}\n exit-address-family\nexit\n"
    )
}

#[test]
fn an_error_line_for_a_line_frr_did_not_take_fails_the_apply_naming_the_line_and_its_vrf() {
    for version in ["8.4.4", "10.3"] {
        let mut frr = Model::new(version, &with_route_target("65000:5000"));
        frr.warns = Some(("route-target import 65000:x7", false));
        let (out, fallbacks) = run(&mut frr, &with_route_target("65000:x7"));
        let Err(FrrError::Rejected { line, wrote }) = out else {
            panic!("{version}: {out:?}");
        };
        assert!(wrote, "{version}");
        assert_eq!(
            line,
            "% Malformed Route Target list (FRR does not hold `route-target import 65000:x7` \
             in router bgp 65000 vrf vr.t1 > address-family l2vpn evpn)",
            "{version}"
        );
        // frr-reload.py had its turn (the agent's own script might have been at fault), and
        // FRR's running config was read after it.
        assert_eq!(fallbacks, 1, "{version}");
        assert_eq!((frr.sends, frr.reads, frr.reloads), (1, 2, 1), "{version}");
    }
}

#[test]
fn an_error_line_for_a_line_frr_took_is_a_remark() {
    for version in ["8.4.4", "10.3"] {
        let mut frr = Model::new(version, &with_route_target("65000:5000"));
        frr.warns = Some(("route-target import 65000:7", true));
        let text = with_route_target("65000:7");
        assert_eq!(applied(&mut frr, &text), (1, 0), "{version}");
        assert!(frr.holds(&text), "{version}");
        assert_eq!((frr.sends, frr.reads, frr.reloads), (1, 1, 0), "{version}");
    }
}
