//! VM mode, the host side: the lab's nodes run inside Debian's stock kernel in qemu (which has
//! the `vrf`, `8021q` and `dummy` drivers this machine's kernel may lack), while the lab API
//! server and the configurators stay on the host. `hack/vm/lab.sh` boots the VM with the host's
//! root file system read-only over 9p, so the guest runs this very binary in guest mode
//! ([`crate::guest`]); the two talk over one TCP connection the guest opens to the host's
//! loopback (`10.0.2.2` in qemu's user network): JSON lines, the host's [`Op`]s with their
//! replies, and every tenant probe the guest's pingers report.
//!
//! The VM needs nothing on the host besides the qemu process: no tap, no namespace, no link.
//! When the host side goes away (even by SIGKILL) the connection closes, the guest process ends
//! and the VM powers off.

use std::collections::HashMap;
use std::net::{Ipv4Addr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use netrollout_frr::daemons::Version;
use serde::{Deserialize, Serialize};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::TcpListener;
use tokio::process::{Child, Command};
use tokio::sync::{mpsc, oneshot};

use crate::workload::{Network, Recorder, now_ms};

pub mod binaries;

/// The host's loopback as the guest sees it (qemu's user network).
pub const HOST_FROM_GUEST: Ipv4Addr = Ipv4Addr::new(10, 0, 2, 2);
/// How long the VM may take to boot and start the guest side (TCG is slow).
const BOOT_TIMEOUT: Duration = Duration::from_secs(180);
/// How long one request to the guest may take.
const CALL_TIMEOUT: Duration = Duration::from_secs(90);

/// A process the guest starts inside a namespace: `ip netns exec NETNS PROGRAM ARGS...` with
/// `ENV`, stdout and stderr to `LOG`.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Spawn {
    /// The namespace.
    pub netns: String,
    /// The program (a host path; the guest sees the host's files).
    pub program: PathBuf,
    /// Its arguments.
    pub args: Vec<String>,
    /// Environment variables.
    pub env: Vec<(String, String)>,
    /// Where its output goes.
    pub log: PathBuf,
}

impl Spawn {
    /// The command (not started), killed when dropped.
    pub fn command(&self) -> Result<Command> {
        let log = std::fs::File::create(&self.log)
            .with_context(|| format!("creating {}", self.log.display()))?;
        let mut cmd = Command::new("ip");
        cmd.args(["netns", "exec", &self.netns])
            .arg(&self.program)
            .args(&self.args)
            .envs(self.env.iter().map(|(k, v)| (k, v)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true);
        Ok(cmd)
    }
}

/// What the host asks the guest to do.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "op", rename_all = "kebab-case")]
pub enum Op {
    /// Create a node: its namespace on the fabric, its FRR from `frr_config`, the relay to the
    /// API server on its loopback, and its agent.
    AddNode {
        /// Node name.
        name: String,
        /// Node number (1-based).
        index: usize,
        /// FRR base config.
        frr_config: String,
        /// The agent.
        agent: Spawn,
    },
    /// Attach node `index`'s workload to a network; the reply's value says whether it did.
    Attach {
        /// Node name.
        node: String,
        /// Node number.
        index: usize,
        /// The network.
        network: Network,
    },
    /// Start a ping stream in a workload namespace, reporting as pair `pair`.
    Pinger {
        /// The workload's namespace.
        netns: String,
        /// The lab's pair number.
        pair: usize,
        /// The target.
        addr: Ipv4Addr,
        /// The pinger's stderr.
        log: PathBuf,
    },
    /// Stop every ping stream.
    StopPingers,
    /// Whether a node's bgpd has an Established EVPN session with the route reflector.
    Evpn {
        /// The node's namespace.
        netns: String,
    },
    /// A node's FRR and VRF routes as text ([`crate::frr::dump`]), for a failure's logs.
    Dump {
        /// The node's namespace.
        netns: String,
    },
    /// Start FRR from `config` in a workload's namespace (pathspace: the namespace's name), or
    /// only `daemon` of it again ([`crate::frr::start_daemon`]).
    StartFrr {
        /// The workload's namespace.
        netns: String,
        /// Its FRR config.
        config: String,
        /// One daemon to start again, or `None` for all.
        daemon: Option<String>,
    },
    /// Run a program to its end; the reply is its stdout (an error with its stderr when it
    /// fails).
    Run {
        /// The program and its arguments.
        argv: Vec<String>,
    },
}

/// A host request.
#[derive(Debug, Serialize, Deserialize)]
pub struct Request {
    /// Matches the reply.
    pub id: u64,
    /// What to do.
    pub op: Op,
}

/// What the guest sends.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "msg", rename_all = "kebab-case")]
pub enum Message {
    /// The guest side is up: fabric, route reflector and API relay ready.
    Hello {
        /// Whether the guest kernel creates VRF devices.
        vrf: bool,
        /// The guest's clock (Unix ms).
        now_ms: u64,
    },
    /// The answer to request `id`: a value, or an error.
    Reply {
        /// The request.
        id: u64,
        /// `Err` carries the guest's error text.
        result: Result<serde_json::Value, String>,
        /// The guest's clock (Unix ms).
        now_ms: u64,
    },
    /// One tenant probe (send time on the guest's clock).
    Probe {
        /// The lab's pair number.
        pair: usize,
        /// Sent at, Unix ms (guest clock).
        at: u64,
        /// Whether the reply came.
        ok: bool,
    },
}

type Call = (Op, oneshot::Sender<Result<serde_json::Value, String>>);

/// The running VM and the connection to its guest side.
#[derive(Debug)]
pub struct VmHost {
    qemu: Child,
    calls: mpsc::UnboundedSender<Call>,
    /// Whether the guest kernel creates VRF devices.
    pub vrf: bool,
    /// The agent binary as the guest sees it ([`binaries::for_guest`]).
    pub agent: PathBuf,
    console: PathBuf,
}

/// The repository's `hack/vm/lab.sh`: `NETROLLOUT_LAB_VM_SCRIPT`, else found upwards from
/// `bin_dir` (the binaries live in the checkout's `target/<profile>/`).
pub fn script(bin_dir: &Path) -> Result<PathBuf> {
    if let Some(s) = std::env::var_os("NETROLLOUT_LAB_VM_SCRIPT") {
        return Ok(s.into());
    }
    bin_dir
        .ancestors()
        .map(|d| d.join("hack/vm/lab.sh"))
        .find(|p| p.exists())
        .with_context(|| {
            format!(
                "--vm boots the VM with hack/vm/lab.sh of the netrollout repository, which is not \
                 above {}: run the lab from a checkout (hack/lab.sh up --vm) or set \
                 NETROLLOUT_LAB_VM_SCRIPT",
                bin_dir.display()
            )
        })
}

/// Checks what `--vm` needs before anything starts: qemu and the cached Debian kernel (the
/// binaries the guest runs are made visible to it at boot, [`binaries::for_guest`]). Each
/// failure says what is wrong and how to fix it.
pub fn preflight(bin_dir: &Path) -> Result<PathBuf> {
    let script = script(bin_dir)?;
    let has_qemu = std::env::var_os("PATH")
        .is_some_and(|p| std::env::split_paths(&p).any(|d| d.join("qemu-system-x86_64").exists()));
    if !has_qemu {
        bail!(
            "--vm needs qemu-system-x86_64, which is not installed: run hack/install-deps.sh \
             (or hack/vm/deps.sh, which installs only what the VM needs)"
        );
    }
    let root = script
        .parent()
        .and_then(Path::parent)
        .and_then(Path::parent)
        .context("locating the repository of hack/vm/lab.sh")?;
    let boot = root.join(".vm-cache/kernel/boot");
    let has_kernel = std::fs::read_dir(&boot).is_ok_and(|d| {
        d.filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("vmlinuz-"))
    });
    if !has_kernel {
        bail!(
            "--vm boots Debian's kernel, which is not in {}: run hack/vm/deps.sh (it downloads \
             it once)",
            boot.display()
        );
    }
    Ok(script)
}

impl VmHost {
    /// Boots the VM; the guest side builds the fabric and the route reflector and relays the
    /// agents' API traffic to `api_port` on the host's loopback. Probes go to `recorder`.
    pub async fn boot(
        script: &Path,
        bin_dir: &Path,
        state_dir: &Path,
        api_port: u16,
        recorder: Recorder,
        frr: Version,
    ) -> Result<Self> {
        let listener = TcpListener::bind((Ipv4Addr::LOCALHOST, 0))
            .await
            .context("listening for the VM's control connection")?;
        let control = SocketAddr::from((HOST_FROM_GUEST, listener.local_addr()?.port()));
        let exe = std::env::current_exe().context("locating netrollout-lab")?;
        let programs = binaries::for_guest(&exe, bin_dir, state_dir)?;
        let console = state_dir.join("logs").join("vm.log");
        let log = std::fs::File::create(&console)
            .with_context(|| format!("creating {}", console.display()))?;
        let mut qemu = Command::new(script)
            .arg(state_dir.join("vm"))
            .arg(state_dir)
            .arg(&programs.lab)
            .arg("--state-dir")
            .arg(state_dir)
            .args(["guest", "--control", &control.to_string()])
            .args(["--api-port", &api_port.to_string()])
            .args(["--frr", &frr.to_string()])
            // FRR 10.3's root file system: the guest gives its daemons writable directories
            // there (hack/vm/lab.sh).
            .envs(frr.root().map(|root| ("VM_FRR_ROOT", root)))
            .stdin(Stdio::null())
            .stdout(log.try_clone()?)
            .stderr(log)
            .kill_on_drop(true)
            .spawn()
            .with_context(|| format!("starting {}", script.display()))?;
        crate::pids::record_pids(state_dir, qemu.id().as_slice())?;
        let seen = |what: &str| {
            format!(
                "{what}; the VM's console is in {} (last lines: {})",
                console.display(),
                tail(&console)
            )
        };
        let stream = tokio::select! {
            accepted = tokio::time::timeout(BOOT_TIMEOUT, listener.accept()) => match accepted {
                Ok(Ok((stream, _))) => stream,
                Ok(Err(e)) => bail!(seen(&format!("accepting the VM's connection: {e}"))),
                Err(_) => bail!(seen(&format!("the VM did not start the lab within {BOOT_TIMEOUT:?}"))),
            },
            status = qemu.wait() => bail!(seen(&format!("the VM stopped before the lab started in it ({})",
                status.map(|s| s.to_string()).unwrap_or_default()))),
        };
        let (read, mut write) = stream.into_split();
        let mut lines = BufReader::new(read).lines();
        let hello = tokio::time::timeout(BOOT_TIMEOUT, lines.next_line())
            .await
            .map_err(|_| anyhow::anyhow!(seen("the VM's lab connected but said nothing")))??;
        let vrf = match hello.as_deref().map(serde_json::from_str::<Message>) {
            Some(Ok(Message::Hello { vrf, now_ms: guest })) => {
                recorder.set_clock_offset(now_ms() as i64 - guest as i64);
                vrf
            }
            other => bail!(seen(&format!(
                "the VM's lab did not start: {other:?} (its fabric or route reflector failed)"
            ))),
        };
        let (calls, mut rx) = mpsc::unbounded_channel::<Call>();
        tokio::spawn(async move {
            let mut pending: HashMap<u64, oneshot::Sender<_>> = HashMap::new();
            let mut next = 0u64;
            loop {
                tokio::select! {
                    call = rx.recv() => {
                        let Some((op, reply)) = call else { return };
                        next += 1;
                        let Ok(mut line) = serde_json::to_string(&Request { id: next, op }) else { continue };
                        line.push('\n');
                        if let Err(e) = write.write_all(line.as_bytes()).await {
                            let _ = reply.send(Err(format!("sending to the VM: {e}")));
                            continue;
                        }
                        pending.insert(next, reply);
                    }
                    line = lines.next_line() => {
                        let Ok(Some(line)) = line else {
                            for (_, reply) in pending.drain() {
                                let _ = reply.send(Err("the VM's lab ended the connection".into()));
                            }
                            return;
                        };
                        match serde_json::from_str::<Message>(&line) {
                            Ok(Message::Probe { pair, at, ok }) => recorder.push_guest(pair, at, ok),
                            Ok(Message::Reply { id, result, now_ms: guest }) => {
                                recorder.set_clock_offset(now_ms() as i64 - guest as i64);
                                if let Some(reply) = pending.remove(&id) {
                                    let _ = reply.send(result);
                                }
                            }
                            Ok(Message::Hello { .. }) | Err(_) => {}
                        }
                    }
                }
            }
        });
        Ok(Self {
            qemu,
            calls,
            vrf,
            agent: programs.agent,
            console,
        })
    }

    /// Sends `op` to the guest and waits for its reply.
    pub async fn call(&self, op: Op) -> Result<serde_json::Value> {
        let what = format!("{op:?}").chars().take(60).collect::<String>();
        let (tx, rx) = oneshot::channel();
        self.calls
            .send((op, tx))
            .map_err(|_| anyhow::anyhow!("the VM's connection is gone ({what})"))?;
        match tokio::time::timeout(CALL_TIMEOUT, rx).await {
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(e))) => bail!("in the VM: {e}"),
            Ok(Err(_)) => bail!(
                "the VM's connection is gone ({what}); console: {}",
                self.console.display()
            ),
            Err(_) => bail!("the VM did not answer within {CALL_TIMEOUT:?} ({what})"),
        }
    }

    /// Powers the VM off (qemu ends; the guest's processes with it).
    pub async fn shutdown(mut self) {
        drop(self.calls);
        let _ = self.qemu.kill().await;
    }
}

/// The last lines of the console log, on one line.
fn tail(console: &Path) -> String {
    let text = std::fs::read_to_string(console).unwrap_or_default();
    let lines: Vec<&str> = text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    lines[lines.len().saturating_sub(4)..].join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn messages_round_trip_as_json_lines() {
        let m = Message::Reply {
            id: 3,
            result: Err("no such node".into()),
            now_ms: 5,
        };
        let line = serde_json::to_string(&m).unwrap();
        assert!(!line.contains('\n'));
        match serde_json::from_str::<Message>(&line).unwrap() {
            Message::Reply { id, result, .. } => {
                assert_eq!((id, result), (3, Err("no such node".to_string())))
            }
            other => panic!("{other:?}"),
        }
        let op = serde_json::to_string(&Request {
            id: 1,
            op: Op::Evpn {
                netns: "nrlab-lab-node-1".into(),
            },
        })
        .unwrap();
        assert!(op.contains("\"op\":\"evpn\""), "{op}");
    }

    #[test]
    fn a_missing_script_says_how_to_run_the_lab() {
        let e = script(Path::new("/nonexistent/bin"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("hack/lab.sh up --vm"), "{e}");
    }
}
