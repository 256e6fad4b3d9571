//! FRR in the lab: one zebra + bgpd + bfdd (FRR 10's mgmtd first) per node namespace, each in its own
//! pathspace (`-N NAME`: config under `/etc/frr/NAME/`, sockets and pid files under
//! `/var/run/frr/NAME/`, for FRR 10.3 under its root file system's `run/frr/NAME/`), on the
//! version `--frr` names ([`Version`]: Debian 12's 8.4 on the host, Debian 13's 10.3 from the
//! root file system hack/frr10.sh builds), plus a route reflector in the namespace `nrlab-rr` at
//! [`RR_IP`]. Every node peers iBGP (AS [`ASN`]) with the reflector in the `l2vpn evpn` family
//! with `advertise-all-vni`, so each layer-2 VNI the agent creates gets type-2/3 routes and
//! the remote VTEPs' flood entries. Pathspaces carry the `nrlab-` prefix, so
//! [`teardown`] finds the daemons (by their pid files) and directories a crashed lab left.
//!
//! The base config is written to `/etc/frr/NAME/netrollout-base.conf`, where the agent's
//! `--frr-base-config` flag can point; the daemons start from it.

use std::net::Ipv4Addr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use netrollout_api::Capability;
use netrollout_frr::daemons::{self, Log, Start, Version};

use crate::fabric;

mod logs;

pub use logs::log_to;

/// The lab's autonomous system (iBGP everywhere).
pub const ASN: u32 = 65000;
/// The route reflector's fabric address.
pub const RR_IP: Ipv4Addr = Ipv4Addr::new(10, 77, 0, 2);
/// The route reflector's namespace (and pathspace).
pub const RR_NETNS: &str = "nrlab-rr";
/// The FRR daemons of a node that its agent reports (`status.capabilities`) and that the lab
/// starts on every node ([`start`]): bgpd for everything, bfdd for a `BGPPeering`'s
/// `enableBFD`. The lab is ready only once every agent reports them running.
pub const DAEMONS: [Capability; 2] = [Capability::Bgpd, Capability::Bfdd];
/// Where FRR's daemons are (Debian's `frr`); the environment variable
/// `NETROLLOUT_LAB_FRR_DIR` names another directory.
fn daemon_dir() -> PathBuf {
    std::env::var_os("NETROLLOUT_LAB_FRR_DIR")
        .map_or_else(|| PathBuf::from(daemons::FRR_LIB), PathBuf::from)
}
const ETC: &str = "/etc/frr";
const RUN: &str = "/var/run/frr";

/// Checks that FRR of `version` is installed (daemons, vtysh, frr-reload.py) and, for 8.4 on
/// the host, the `frr` user.
pub fn check_installed(version: Version) -> Result<()> {
    let context = || format!("the lab runs FRR {version} on every node (--frr {version})");
    version
        .check_installed(&daemon_dir(), true)
        .with_context(context)?;
    let reload = version.reload_script();
    if !reload.exists() {
        bail!(
            "{}: {} is missing: the agents apply FRR changes with it (frr-pythontools; \
             hack/install-deps.sh installs it)",
            context(),
            reload.display()
        );
    }
    if version.root().is_some() {
        // FRR 10.3 runs as the root file system's own `frr` user.
        return Ok(());
    }
    let user = Command::new("id").arg("frr").output();
    if !user.is_ok_and(|o| o.status.success()) {
        bail!("the lab runs FRR as user frr, which does not exist: reinstall the frr package");
    }
    Ok(())
}

/// The configuration directory of a pathspace.
pub fn config_dir(pathspace: &str) -> PathBuf {
    Path::new(ETC).join(pathspace)
}

/// The run directory of a pathspace (pid files, vty sockets) of FRR `version`, seen from here.
pub fn run_dir(version: Version, pathspace: &str) -> PathBuf {
    version.run_dir(pathspace)
}

/// The agent's flags that reach FRR of `version`: its vtysh (`--frr-bindir`), `frr-reload.py`
/// (`--frr-reload`) and, for FRR 10.3, the socket directory under its root file system
/// (`--frr-vty-socket`).
pub fn agent_args(version: Version) -> Vec<String> {
    let mut args = vec![
        "--frr-bindir".to_string(),
        version.bindir().display().to_string(),
        "--frr-reload".to_string(),
        version.reload_script().display().to_string(),
    ];
    if let Some(dir) = version.vty_socket() {
        args.extend(["--frr-vty-socket".to_string(), dir.display().to_string()]);
    }
    args
}

/// The base config file of a pathspace (what `--frr-base-config` points to): named as
/// docs/operations.md has an operator name it, which the agent's pod template expects
/// (`NETROLLOUT_FRR_BASE_CONFIG=/etc/frr/netrollout-base.conf`).
pub fn base_config(pathspace: &str) -> PathBuf {
    config_dir(pathspace).join("netrollout-base.conf")
}

/// The base config of a lab node: ASN, router id = its fabric address, iBGP EVPN to the route
/// reflector with `advertise-all-vni`.
pub fn node_config(hostname: &str, router_id: Ipv4Addr) -> String {
    format!(
        "frr defaults datacenter\nhostname {hostname}\nlog stdout informational\n!\n\
         router bgp {ASN}\n bgp router-id {router_id}\n no bgp default ipv4-unicast\n \
         neighbor {RR_IP} remote-as {ASN}\n neighbor {RR_IP} timers connect 1\n !\n \
         address-family l2vpn evpn\n  neighbor {RR_IP} activate\n  advertise-all-vni\n \
         exit-address-family\nexit\n!\n"
    )
}

/// The route reflector's config: every fabric address may peer (a listen range), each peer is
/// a reflector client in the `l2vpn evpn` family.
pub fn reflector_config() -> String {
    format!(
        "frr defaults datacenter\nhostname lab-rr\nlog stdout informational\n!\n\
         router bgp {ASN}\n bgp router-id {RR_IP}\n no bgp default ipv4-unicast\n \
         neighbor lab peer-group\n neighbor lab remote-as {ASN}\n \
         bgp listen range 10.77.0.0/24 peer-group lab\n !\n \
         address-family l2vpn evpn\n  neighbor lab activate\n  \
         neighbor lab route-reflector-client\n exit-address-family\nexit\n!\n"
    )
}

/// Writes `config` as the pathspace's base config and starts FRR `version` from it inside
/// namespace `netns` (zebra, then bgpd once zebra is up, then bfdd; FRR 10's mgmtd first, and the config
/// sent with vtysh: the workspace's one FRR start); returns the daemons' pids. They keep
/// running until [`teardown`].
pub fn start(netns: &str, pathspace: &str, config: &str, version: Version) -> Result<Vec<u32>> {
    let etc = config_dir(pathspace);
    // FRR 10.3's run directory is made by its start, inside the root file system.
    let run = Path::new(RUN).join(pathspace);
    let mut dirs = vec![&etc];
    if version.root().is_none() {
        dirs.push(&run);
    }
    for dir in &dirs {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let base = base_config(pathspace);
    std::fs::write(&base, config).with_context(|| format!("writing {}", base.display()))?;
    // vtysh looks for vtysh.conf in the pathspace; an empty one keeps it quiet.
    std::fs::write(etc.join("vtysh.conf"), "")?;
    run_ok(
        Command::new("chown")
            .args(["-R", &owner(version)?])
            .args(&dirs),
    )?;
    let bin_dir = daemon_dir();
    let daemons = starter(netns, pathspace, &base, &bin_dir, version)?
        .try_start()
        .with_context(|| format!("starting FRR in {netns}"))?;
    Ok(daemons.detach())
}

/// How the lab starts FRR `version` in `netns` from the base config `base`, logging to the
/// pathspace's directory of [`log_to`] (or where the config says).
fn starter<'a>(
    netns: &'a str,
    pathspace: &'a str,
    base: &'a Path,
    bin_dir: &'a Path,
    version: Version,
) -> Result<Start<'a>> {
    Ok(Start {
        config: Some(base),
        log: logs::dir(pathspace)?.map_or(Log::Config, Log::Files),
        timeout: Duration::from_secs(30),
        bin_dir,
        version,
        // The workloads' BGP peerings may ask for BFD (`enableBFD`).
        bfdd: true,
        ..Start::new(netns, pathspace)
    })
}

/// Starts `daemon` of the FRR [`start`] started in `netns` again, alone (the others run), as
/// a supervisor restarts one that died; `config` is the base config it was started from.
pub fn start_daemon(
    netns: &str,
    pathspace: &str,
    config: &str,
    daemon: &str,
    version: Version,
) -> Result<()> {
    let base = base_config(pathspace);
    std::fs::write(&base, config).with_context(|| format!("writing {}", base.display()))?;
    let bin_dir = daemon_dir();
    starter(netns, pathspace, &base, &bin_dir, version)?
        .start_one(daemon)
        .with_context(|| format!("starting {daemon} in {netns} again"))
}

/// The command line of `vtysh -N PATHSPACE -c COMMAND` of FRR `version` in namespace `netns`
/// (the pathspace is the namespace's name, as the lab starts every FRR), for [`run`].
pub fn vtysh_argv(netns: &str, version: Version, command: &str) -> Vec<String> {
    let cmd = vtysh_cmd(netns, netns, version);
    let mut argv = vec![cmd.get_program().to_string_lossy().into_owned()];
    argv.extend(cmd.get_args().map(|a| a.to_string_lossy().into_owned()));
    argv.extend(["-c".into(), command.into()]);
    argv
}

/// Runs `argv` to its end; its stdout, or an error naming it with its stderr.
pub fn run(argv: &[String]) -> Result<String> {
    let (program, args) = argv.split_first().context("an empty command line")?;
    let out = Command::new(program)
        .args(args)
        .output()
        .with_context(|| format!("running {}", argv.join(" ")))?;
    if !out.status.success() {
        bail!(
            "{} failed: {}",
            argv.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Who owns a node's FRR directories: FRR's user, this machine's `frr` for 8.4, the root file
/// system's own for 10.3 (its daemons run as it, and a container-mode agent pod gets its
/// groups), as numeric ids there (this machine's `frr` has others).
fn owner(version: Version) -> Result<String> {
    let Some(root) = version.root() else {
        return Ok("frr:frr".into());
    };
    let file = root.join("etc/passwd");
    let text =
        std::fs::read_to_string(&file).with_context(|| format!("reading {}", file.display()))?;
    text.lines()
        .find_map(|l| {
            let f: Vec<&str> = l.split(':').collect();
            (f.first() == Some(&"frr") && f.len() > 3).then(|| format!("{}:{}", f[2], f[3]))
        })
        .with_context(|| {
            format!(
                "{} has no frr user: rebuild the root file system with hack/frr10.sh",
                file.display()
            )
        })
}

fn run_ok(cmd: &mut Command) -> Result<()> {
    let out = cmd.output().with_context(|| format!("running {cmd:?}"))?;
    if !out.status.success() {
        bail!(
            "{cmd:?} failed: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Starts the route reflector: its namespace on the fabric at [`RR_IP`], FRR `version`.
pub fn start_reflector(version: Version) -> Result<Vec<u32>> {
    fabric::add_namespace(RR_NETNS, "nrlvrr", RR_IP)?;
    start(RR_NETNS, RR_NETNS, &reflector_config(), version)
}

/// vtysh of FRR `version` for `pathspace`, run in namespace `netns`, with no command yet.
fn vtysh_cmd(netns: &str, pathspace: &str, version: Version) -> Command {
    let inner = version.vtysh_cmd(pathspace);
    let mut cmd = Command::new("ip");
    cmd.args(["netns", "exec", netns])
        .arg(inner.get_program())
        .args(inner.get_args());
    cmd
}

/// Runs `vtysh -N PATHSPACE -c COMMAND` of FRR `version` in a namespace; returns its output.
pub fn vtysh(netns: &str, pathspace: &str, version: Version, command: &str) -> Result<String> {
    let out = vtysh_cmd(netns, pathspace, version)
        .args(["-c", command])
        .output()
        .context("running vtysh")?;
    if !out.status.success() {
        bail!(
            "vtysh -N {pathspace} -c {command:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Whether the node's bgpd has an Established session with the route reflector, read from
/// `show bgp l2vpn evpn summary json`; the error says what it saw instead.
pub fn evpn_established(netns: &str, version: Version) -> Result<()> {
    let out = vtysh(netns, netns, version, "show bgp l2vpn evpn summary json")?;
    let json: serde_json::Value = serde_json::from_str(&out)
        .with_context(|| format!("vtysh in {netns} printed no JSON: {out}"))?;
    let state = json["peers"][RR_IP.to_string()]["state"]
        .as_str()
        .unwrap_or("no session")
        .to_string();
    if state != "Established" {
        bail!("{netns}: EVPN session with {RR_IP} is {state}");
    }
    Ok(())
}

/// What a node's FRR and kernel say about EVPN and the routed tenant, for a failure's logs:
/// FRR's running config, its EVPN VNIs and type-5 routes, the VRFs' BGP tables (one vtysh: each
/// start costs seconds under TCG), and the kernel's routes, neighbours and bridge forwarding
/// entries, and the last lines of each daemon's log when it logs to a file ([`log_to`]). A
/// command that fails leaves its error in the text instead.
pub fn dump(netns: &str, version: Version) -> String {
    let mut out = String::new();
    let mut vtysh = vtysh_cmd(netns, netns, version);
    for command in [
        "show running-config",
        "show evpn vni",
        "show bgp l2vpn evpn summary",
        "show bgp l2vpn evpn route type prefix",
        "show bgp vrf all ipv4 unicast",
    ] {
        vtysh.args(["-c", command]);
    }
    let mut ip = Command::new("ip");
    ip.args([
        "-n", netns, "route", "show", "table", "all", "type", "unicast",
    ]);
    // What EVPN routing needs beside the routes: the router MACs as neighbours of the VRFs'
    // bridges and the remote VTEPs in the VXLAN devices' forwarding tables (zebra's entries).
    let mut neigh = Command::new("ip");
    neigh.args(["-n", netns, "neigh", "show"]);
    let mut fdb = Command::new("bridge");
    fdb.args(["-n", netns, "fdb", "show"]);
    for (what, mut cmd) in [
        ("vtysh (running config, EVPN, VRF tables)", vtysh),
        ("ip route show table all", ip),
        ("ip neigh show", neigh),
        ("bridge fdb show", fdb),
    ] {
        out.push_str(&format!("## {what}\n"));
        match cmd.output() {
            Ok(o) => {
                out.push_str(&String::from_utf8_lossy(&o.stdout));
                out.push_str(&String::from_utf8_lossy(&o.stderr));
            }
            Err(e) => out.push_str(&format!("running it: {e}\n")),
        }
    }
    logs::tail(netns, &mut out);
    out
}

/// Ends every FRR daemon of a lab pathspace of either version (by the pids in its pid files)
/// and removes the pathspaces' directories; returns what it did.
pub fn teardown() -> Vec<String> {
    let mut done = Vec::new();
    let lab_dirs = |root: &str| -> Vec<PathBuf> {
        std::fs::read_dir(root)
            .map(|d| {
                d.filter_map(|e| e.ok())
                    .filter(|e| {
                        e.file_name()
                            .to_string_lossy()
                            .starts_with(fabric::NETNS_PREFIX)
                    })
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    // Both versions' run directories: a lab of the other version may have left daemons.
    let run_roots: Vec<String> = Version::ALL
        .iter()
        .map(|v| v.run_dir("").display().to_string())
        .collect();
    let runs = || run_roots.iter().flat_map(|r| lab_dirs(r));
    for dir in runs() {
        for daemon in ["bfdd", "bgpd", "zebra", "mgmtd"] {
            let Some(pid) = std::fs::read_to_string(dir.join(format!("{daemon}.pid")))
                .ok()
                .and_then(|t| t.trim().parse::<u32>().ok())
            else {
                continue;
            };
            // Only a process that is this daemon (a stale pid file may name another process).
            let comm = std::fs::read_to_string(format!("/proc/{pid}/comm")).unwrap_or_default();
            if comm.trim() == daemon
                && Command::new("kill")
                    .args(["-9", &pid.to_string()])
                    .status()
                    .is_ok_and(|s| s.success())
            {
                done.push(format!("{daemon} {pid}"));
            }
        }
    }
    for dir in runs().chain(lab_dirs(ETC)) {
        if std::fs::remove_dir_all(&dir).is_ok() {
            done.push(format!("directory {}", dir.display()));
        }
    }
    done
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_config_peers_with_the_reflector_and_advertises_every_vni() {
        let c = node_config("lab-node-1", Ipv4Addr::new(10, 77, 0, 11));
        assert!(c.contains("router bgp 65000\n"));
        assert!(c.contains("bgp router-id 10.77.0.11\n"));
        assert!(c.contains("neighbor 10.77.0.2 remote-as 65000\n"));
        assert!(c.contains("  neighbor 10.77.0.2 activate\n  advertise-all-vni\n"));
    }

    #[test]
    fn reflector_accepts_the_fabric_as_clients() {
        let c = reflector_config();
        assert!(c.contains("bgp listen range 10.77.0.0/24 peer-group lab"));
        assert!(c.contains("neighbor lab route-reflector-client"));
    }
}
