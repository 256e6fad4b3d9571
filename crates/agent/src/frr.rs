//! FRR: the node's routing daemon, configured as one step of the agent's transaction.
//!
//! The node operator owns a base file (`--frr-base-config`: underlay sessions, ASN, router id);
//! the agent owns the managed sections rendered from the `NodeConfig` by `netrollout-frr`. The
//! full text (base + managed) is written to the `frr.conf` FRR reads (`--frr-config`) atomically
//! (temporary file, fsync, rename) and applied with FRR's own `frr-reload.py --reload`, which
//! computes the difference against the running config; FRR is never restarted.
//!
//! Before a write the new text is checked with `vtysh -m -f` (a parse, no change): a line FRR
//! does not know fails the attempt with FRR's own error line and leaves `frr.conf` and FRR as
//! they were. A line a daemon rejects while loading fails the same way (the restore then loads
//! the last-known-good text again).
//!
//! FRR 8.4's `frr-reload.py` puts a new VRF's ` vni N` on the default VRF (see
//! `Frr::add_new_vrf_vnis`); the agent writes VRF blocks first and configures new VRF VNIs
//! itself before the reload.
//!
//! Unchanged text makes no FRR write at all: the process remembers the text FRR last loaded
//! successfully; after a (re)start the first apply always reloads (`frr-reload.py` then writes
//! only a difference, if any).

use std::net::{IpAddr, Ipv4Addr};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use netrollout_api::NodeConfig;
use tokio::process::Command;
use tokio::sync::Mutex;

/// Where FRR lives and how the agent reaches it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrrSettings {
    /// The operator's base config (underlay, ASN, router id).
    pub base_config: PathBuf,
    /// The `frr.conf` FRR reads; written by the agent.
    pub config: PathBuf,
    /// FRR pathspace (`-N NAME`) when FRR runs with one (the lab, tests).
    pub pathspace: Option<String>,
    /// vtysh's socket directory, when not FRR's default.
    pub vty_socket: Option<PathBuf>,
    /// The ASN of the managed `router bgp` sections; read from the base file when `None`.
    pub asn: Option<u32>,
    /// The router id of the managed `router bgp` instances (`--router-id`). It must differ from
    /// the base file's default-VRF router id; see [`routing_settings`] for the default.
    pub router_id: Option<Ipv4Addr>,
    /// The node's VTEP address (`--vtep-ip`): the managed router id when `--router-id` is not
    /// given and it is IPv4 and differs from the base file's router id (the Go operator's choice).
    pub vtep_ip: Option<IpAddr>,
    /// FRR's `frr-reload.py`.
    pub reload_script: PathBuf,
    /// Directory holding `vtysh`.
    pub bindir: PathBuf,
    /// Where `frr-reload.py` writes its temporary files (the agent's state directory: FRR's
    /// `/var/run/frr` is not the agent's to write).
    pub rundir: PathBuf,
}

/// What went wrong with FRR.
#[derive(Debug, thiserror::Error)]
pub enum FrrError {
    /// The base file cannot be read.
    #[error(
        "FRR base config {path}: {source}; create it (see docs/operations.md) or drop --frr-base-config"
    )]
    Base {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// The ASN or router id is neither a flag nor in the base file, or they disagree.
    #[error("FRR base config {path}: {problem}")]
    Routing {
        /// The base file.
        path: PathBuf,
        /// What is missing or inconsistent and what to do.
        problem: String,
    },
    /// A config with VRFs cannot be routed: the managed router id equals the default VRF's, and
    /// FRR refuses the iBGP session between a VRF and the default VRF over equal ids.
    #[error(
        "FRR: {vrfs} VRF(s) would peer with the default VRF over iBGP, but the managed router id \
         {router_id} equals `bgp router-id` of the default `router bgp` in {path} ({why}); pass \
         --router-id (NETROLLOUT_ROUTER_ID) or an IPv4 --vtep-ip (VTEP_IP) that differs from it"
    )]
    RouterIdClash {
        /// The base file.
        path: PathBuf,
        /// The clashing id.
        router_id: Ipv4Addr,
        /// How many VRFs the config has.
        vrfs: usize,
        /// Why no other id was chosen.
        why: String,
    },
    /// `frr.conf` (or its temporary file) cannot be written.
    #[error("FRR config {path}: {source}")]
    Write {
        /// The file.
        path: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// A program (vtysh, frr-reload.py) cannot be started.
    #[error("running {program}: {source}")]
    Spawn {
        /// The program.
        program: PathBuf,
        /// The system error.
        source: std::io::Error,
    },
    /// FRR refused the config; `line` is FRR's own error output.
    #[error("FRR rejected the config: {line}")]
    Rejected {
        /// FRR's error line(s).
        line: String,
        /// Whether FRR was written to (a daemon refused a line while loading) or not (the
        /// parser refused the file first).
        wrote: bool,
    },
}

/// The node's FRR.
#[derive(Debug)]
pub struct Frr {
    settings: FrrSettings,
    routing: netrollout_frr::Settings,
    /// Why `routing.router_id` equals the base file's default-VRF router id, when it does: a
    /// config with VRFs is then refused (instances without a session to the default VRF, the
    /// routing tables', are fine with it).
    clash: Option<String>,
    /// The full text FRR last loaded successfully from this process.
    loaded: Mutex<Option<String>>,
}

impl Frr {
    /// Reads the base file once to settle the ASN and the managed router id; an explicit
    /// `--router-id` equal to the base file's is refused here.
    pub fn new(settings: FrrSettings) -> Result<Self, FrrError> {
        let base = read_base(&settings.base_config)?;
        let (routing, clash) = routing_settings(&settings, &base)?;
        Ok(Self {
            settings,
            routing,
            clash,
            loaded: Mutex::new(None),
        })
    }

    /// The ASN and router id of the managed sections.
    pub fn routing(&self) -> netrollout_frr::Settings {
        self.routing
    }

    /// The settings.
    pub fn settings(&self) -> &FrrSettings {
        &self.settings
    }

    /// The managed FRR text of `config` (deterministic). A config with VRFs fails when the
    /// managed router id equals the default VRF's ([`FrrError::RouterIdClash`]).
    pub fn managed(&self, config: &NodeConfig) -> Result<String, FrrError> {
        check_clash(&self.settings, &self.routing, self.clash.as_deref(), config)?;
        Ok(netrollout_frr::render(config, &self.routing))
    }

    /// The full `frr.conf` text: the current base file and `managed`, with the managed VRF
    /// blocks (`vrf NAME` / ` vni N` / `exit-vrf`) ahead of the base
    /// ([`netrollout_frr::with_base`] says why).
    pub fn full(&self, managed: &str) -> Result<String, FrrError> {
        let base = read_base(&self.settings.base_config)?;
        Ok(netrollout_frr::with_base(&base, managed))
    }

    /// Makes FRR run `full`; returns the number of FRR writes (0 when FRR already runs it).
    pub async fn apply(&self, full: &str) -> Result<u32, FrrError> {
        let mut loaded = self.loaded.lock().await;
        if loaded.as_deref() == Some(full) {
            return Ok(0);
        }
        let dir = self.confdir();
        let name = self
            .settings
            .config
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "frr.conf".into());
        let tmp = dir.join(format!(".{name}.netrollout.tmp"));
        write_synced(&tmp, full)?;
        if let Err(e) = self.check(&tmp).await {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
        std::fs::rename(&tmp, &self.settings.config).map_err(|source| FrrError::Write {
            path: self.settings.config.clone(),
            source,
        })?;
        if let Ok(d) = std::fs::File::open(&dir) {
            let _ = d.sync_all();
        }
        // From here FRR may hold part of the text: forget what it held.
        *loaded = None;
        self.add_new_vrf_vnis(full).await?;
        self.reload().await?;
        *loaded = Some(full.to_string());
        Ok(1)
    }

    /// Runs `vtysh` with `args` (e.g. `-c "show bgp summary json"`); returns stdout.
    pub async fn vtysh(&self, args: &[&str]) -> Result<String, String> {
        let out = self
            .vtysh_cmd()
            .args(args)
            .output()
            .await
            .map_err(|e| format!("running vtysh: {e}"))?;
        if !out.status.success() {
            return Err(format!(
                "vtysh {}: {}{}",
                args.join(" "),
                error_lines(&String::from_utf8_lossy(&out.stdout)),
                error_lines(&String::from_utf8_lossy(&out.stderr)),
            ));
        }
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    }

    fn confdir(&self) -> PathBuf {
        self.settings
            .config
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_path_buf()
    }

    fn vtysh_cmd(&self) -> Command {
        let mut cmd = Command::new(self.settings.bindir.join("vtysh"));
        cmd.arg("--config_dir").arg(self.confdir());
        if let Some(ps) = &self.settings.pathspace {
            cmd.args(["-N", ps]);
        }
        if let Some(sock) = &self.settings.vty_socket {
            cmd.arg("--vty_socket").arg(sock);
        }
        cmd.stdin(Stdio::null()).kill_on_drop(true);
        cmd
    }

    /// `vtysh -m -f FILE`: FRR's parser reads the file; an unknown line fails with its number.
    async fn check(&self, file: &Path) -> Result<(), FrrError> {
        let program = self.settings.bindir.join("vtysh");
        let out = self
            .vtysh_cmd()
            .arg("-m")
            .arg("-f")
            .arg(file)
            .output()
            .await
            .map_err(|source| FrrError::Spawn { program, source })?;
        if out.status.success() {
            return Ok(());
        }
        let mut line = error_lines(&String::from_utf8_lossy(&out.stderr));
        if line.is_empty() {
            line = format!("vtysh -m -f exited with {}", out.status);
        }
        Err(FrrError::Rejected { line, wrote: false })
    }

    /// Configures the VNI of each VRF block of `full` whose VRF FRR has no config for yet,
    /// with one `vtysh -c` per VRF, before `frr-reload.py` runs. frr-reload.py (FRR 8.4) sends
    /// the lines it adds to existing contexts first and new contexts after them, so a new
    /// `vrf NAME` follows a bgpd-only `router bgp` chunk; vtysh then loses zebra's context and
    /// zebra takes ` vni N` as the global command (the VNI lands on the default VRF). A VRF FRR
    /// has config for already is an existing context, which [`netrollout_frr::with_base`] puts first.
    async fn add_new_vrf_vnis(&self, full: &str) -> Result<(), FrrError> {
        let blocks = vrf_vnis(full);
        if blocks.is_empty() {
            return Ok(());
        }
        let running = self
            .vtysh(&["-c", "show running-config"])
            .await
            .map_err(|line| FrrError::Rejected { line, wrote: false })?;
        for (vrf, vni) in blocks {
            if running.lines().any(|l| l == format!("vrf {vrf}")) {
                continue;
            }
            let (vrf_line, vni_line) = (format!("vrf {vrf}"), format!("vni {vni}"));
            let out = self
                .vtysh(&["-c", "configure terminal", "-c", &vrf_line, "-c", &vni_line])
                .await
                .map_err(|line| FrrError::Rejected { line, wrote: true })?;
            let line = error_lines(&out);
            if !line.is_empty() {
                return Err(FrrError::Rejected { line, wrote: true });
            }
        }
        Ok(())
    }

    /// `frr-reload.py --reload`: FRR applies the difference to the written `frr.conf`.
    async fn reload(&self) -> Result<(), FrrError> {
        let s = &self.settings;
        let mut cmd = Command::new(&s.reload_script);
        cmd.arg("--reload")
            .arg("--stdout")
            .arg("--log-level")
            .arg("error")
            .arg("--bindir")
            .arg(&s.bindir)
            .arg("--confdir")
            .arg(self.confdir())
            .arg("--rundir")
            .arg(&s.rundir);
        if let Some(ps) = &s.pathspace {
            cmd.args(["--pathspace", ps]);
        }
        if let Some(sock) = &s.vty_socket {
            cmd.arg("--vty_socket").arg(sock);
        }
        cmd.arg(&s.config).stdin(Stdio::null()).kill_on_drop(true);
        let out = cmd.output().await.map_err(|source| FrrError::Spawn {
            program: s.reload_script.clone(),
            source,
        })?;
        if out.status.success() {
            return Ok(());
        }
        let text = format!(
            "{}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let mut line = error_lines(&text);
        if line.is_empty() {
            line = format!("frr-reload.py exited with {}", out.status);
            // No FRR error line (e.g. a Python exception): its last line says why.
            if let Some(last) = text.lines().map(str::trim).rfind(|l| !l.is_empty()) {
                line = format!("{line}: {last}");
            }
        }
        Err(FrrError::Rejected { line, wrote: true })
    }
}

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
fn vrf_vnis(text: &str) -> Vec<(String, u32)> {
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

fn read_base(path: &Path) -> Result<String, FrrError> {
    std::fs::read_to_string(path).map_err(|source| FrrError::Base {
        path: path.to_path_buf(),
        source,
    })
}

fn write_synced(path: &Path, text: &str) -> Result<(), FrrError> {
    use std::io::Write;
    let err = |source| FrrError::Write {
        path: path.to_path_buf(),
        source,
    };
    let mut f = std::fs::File::create(path).map_err(err)?;
    f.write_all(text.as_bytes()).map_err(err)?;
    f.sync_all().map_err(err)
}

/// The ASN (`--asn`, else the base file's default `router bgp ASN`; they must agree) and the
/// managed router id, which must differ from the base file's default-VRF `bgp router-id`:
/// `--router-id` (refused when equal to the base's), else `--vtep-ip` when it is IPv4 and
/// differs, else the base's id with the reason kept (a config with VRFs is then refused).
fn routing_settings(
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
fn check_clash(
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

/// `(ASN, router id)` of the default-VRF `router bgp` block of a config text.
fn parse_base(text: &str) -> (Option<u32>, Option<Ipv4Addr>) {
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
