//! A real FRR (zebra + bgpd of the Debian `frr` package) in a network namespace of its own, with
//! an FRR pathspace of the same name (`-N`), for tests. Needs root and FRR; fails loudly without.

#![allow(clippy::unwrap_used, clippy::expect_used, dead_code)] // tests may panic

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use netrollout_frr::daemons::{Daemons, Start};

/// zebra and bgpd running in namespace `name`; stopped and removed on drop.
#[derive(Debug)]
pub struct Frr {
    pub name: String,
    conf_dir: PathBuf,
    /// `None` only while dropping (the daemons stop before the namespace goes).
    daemons: Option<Daemons>,
}

fn run(cmd: &mut Command) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("cannot run {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{cmd:?} failed: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

impl Frr {
    /// Starts zebra and then bgpd in a new namespace `nrfrr<tag><pid>`, reading
    /// `/etc/frr/NAME/frr.conf` (empty).
    pub fn start(tag: &str) -> Self {
        let uid = run(Command::new("id").arg("-u"));
        assert_eq!(
            String::from_utf8_lossy(&uid.stdout).trim(),
            "0",
            "the FRR tests need root (network namespaces, FRR daemons)"
        );
        let name = format!("nrfrr{tag}{}", std::process::id());
        let conf_dir = PathBuf::from(format!("/etc/frr/{name}"));
        run(Command::new("ip").args(["netns", "add", &name]));
        std::fs::create_dir_all(&conf_dir).unwrap();
        std::fs::write(conf_dir.join("vtysh.conf"), "").unwrap();
        std::fs::write(conf_dir.join("frr.conf"), "").unwrap();
        run(Command::new("chown").args(["-R", "frr:frr"]).arg(&conf_dir));
        let daemons = Start::new(&name, &name).start();
        Self {
            name,
            conf_dir,
            daemons: Some(daemons),
        }
    }

    fn vtysh_raw(&self, args: &[&str]) -> Output {
        Command::new("vtysh")
            .args(["-N", &self.name])
            .args(args)
            .output()
            .expect("vtysh runs")
    }

    /// Loads a configuration file with `vtysh -f`; returns (success, every output line).
    pub fn load(&self, path: &Path) -> (bool, String) {
        let out = self.vtysh_raw(&["-f", path.to_str().unwrap()]);
        let text = format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        (out.status.success(), text)
    }

    /// `frr-reload.py --test` of a config file against the running config: the lines it would
    /// delete and add (empty when FRR already runs exactly this config).
    pub fn reload_delta(&self, path: &Path) -> Vec<String> {
        let out = Command::new("python3")
            .args([
                "/usr/lib/frr/frr-reload.py",
                "--test",
                "--stdout",
                "--pathspace",
                &self.name,
            ])
            .arg(path)
            .output()
            .expect("frr-reload.py runs (frr-pythontools)");
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        assert!(
            out.status.success(),
            "frr-reload.py --test failed: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let mut delta = Vec::new();
        let mut section = "";
        for line in text.lines() {
            if line.starts_with("Lines To Delete") {
                section = "-";
            } else if line.starts_with("Lines To Add") {
                section = "+";
            } else if line.starts_with("=====") || line.trim().is_empty() {
                continue;
            } else if !section.is_empty() {
                delta.push(format!("{section} {line}"));
            }
        }
        delta
    }

    /// Runs one `vtysh -c` command and returns its output.
    pub fn show(&self, command: &str) -> String {
        let out = self.vtysh_raw(&["-c", command]);
        assert!(out.status.success(), "vtysh -c {command:?} failed");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for Frr {
    fn drop(&mut self) {
        drop(self.daemons.take());
        let _ = std::fs::remove_dir_all(&self.conf_dir);
        let _ = Command::new("ip")
            .args(["netns", "del", &self.name])
            .status();
    }
}
