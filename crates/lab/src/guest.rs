//! VM mode, the guest side (`netrollout-lab guest`, hidden): runs inside the VM that
//! `hack/vm/lab.sh` boots and does there what the host side does in local mode — the fabric
//! bridge, the route reflector, per node its namespace, FRR, agent, workloads and pingers — on
//! the host's orders ([`crate::vm::Op`]), reporting every tenant probe back.
//!
//! The agents reach the lab API server on the host through two TCP relays
//! ([`relay`]): one in each node namespace on `127.0.0.1:PORT` (the address the server's
//! certificate and kubeconfigs name) to the guest's fabric address `10.77.0.1:PORT`, across the
//! fabric like in local mode, and one there to the host's loopback (`10.0.2.2:PORT` in qemu's
//! user network). The agents' TCP probe targets `10.77.0.1:PORT`, so a broken fabric still
//! shows. When the host's connection closes, this process ends and the VM powers off.

use std::net::{Ipv4Addr, SocketAddr};
use std::path::Path;

use anyhow::{Context as _, Result};
use netrollout_frr::daemons::Version;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};
use tokio::net::{TcpListener, TcpStream};
use tokio::process::Child;
use tokio::sync::mpsc;

use crate::fabric;
use crate::vm::{HOST_FROM_GUEST, Message, Op, Request, Spawn};
use crate::workload::now_ms;
use netrollout_support::tasks::{Life, Tasks};

/// Where the nodes' FRR daemons log in the VM (`PATHSPACE/DAEMON.log`; [`crate::frr::dump`]
/// shows them).
const GUEST_FRR_LOGS: &str = "/var/log/netrollout-lab-frr";

/// Runs the guest side until the host's connection at `control` closes.
pub async fn run(control: SocketAddr, api_port: u16, state_dir: &Path, frr: Version) -> Result<()> {
    let vrf = fabric::kernel_has_vrf();
    // The guest's own tmpfs: FRR's user may not reach the shared state directory.
    crate::frr::log_to(Path::new(GUEST_FRR_LOGS))?;
    fabric::create_bridge().context("creating the fabric bridge in the VM")?;
    crate::frr::start_reflector(frr).context("starting the route reflector in the VM")?;
    let listener = TcpListener::bind((fabric::HOST_IP, api_port))
        .await
        .context("listening on the fabric for the agents' API traffic")?;
    // Supervised: the agents' API traffic and the replies to the host go through these; one
    // that dies ends the guest with an error naming it (the host then sees the VM's lab gone).
    let mut tasks = Tasks::new(std::sync::Arc::new(|death: &str| {
        crate::err!("guest: {death}");
    }));
    tasks.spawn(
        "relay of the agents' API traffic",
        Life::Process,
        relay(listener, SocketAddr::from((HOST_FROM_GUEST, api_port))),
    );
    let stream = TcpStream::connect(control)
        .await
        .with_context(|| format!("connecting to the host at {control}"))?;
    let (read, mut write) = stream.into_split();
    let (tx, mut rx) = mpsc::unbounded_channel::<Message>();
    tasks.spawn("writer to the host", Life::Job, async move {
        while let Some(m) = rx.recv().await {
            let Ok(mut line) = serde_json::to_string(&m) else {
                continue;
            };
            line.push('\n');
            if write.write_all(line.as_bytes()).await.is_err() {
                return;
            }
        }
    });
    let _ = tx.send(Message::Hello {
        vrf,
        now_ms: now_ms(),
    });
    let mut guest = Guest {
        api_port,
        frr,
        state_dir: state_dir.to_path_buf(),
        processes: Vec::new(),
        pingers: Vec::new(),
        tx: tx.clone(),
    };
    let mut lines = BufReader::new(read).lines();
    let mut died = None;
    loop {
        let line = tokio::select! {
            line = lines.next_line() => line,
            death = tasks.dead() => {
                died = Some(death);
                break;
            }
        };
        let Ok(Some(line)) = line else { break };
        let Ok(Request { id, op }) = serde_json::from_str::<Request>(&line) else {
            crate::err!("guest: ignoring a request it cannot read: {line}");
            continue;
        };
        let result = guest.handle(op).await.map_err(|e| format!("{e:#}"));
        let _ = tx.send(Message::Reply {
            id,
            result,
            now_ms: now_ms(),
        });
    }
    drop(guest);
    tasks.shutdown().await;
    crate::frr::teardown();
    match died {
        Some(death) => anyhow::bail!("the guest's {death}"),
        None => Ok(()),
    }
}

/// What the guest side runs.
struct Guest {
    api_port: u16,
    /// The FRR version the nodes run.
    frr: Version,
    state_dir: std::path::PathBuf,
    processes: Vec<Child>,
    pingers: Vec<Child>,
    tx: mpsc::UnboundedSender<Message>,
}

impl Guest {
    async fn handle(&mut self, op: Op) -> Result<Value> {
        match op {
            Op::AddNode {
                name,
                index,
                frr_config,
                agent,
            } => {
                fabric::add_node(&name, index)?;
                let ns = fabric::netns(&name);
                crate::frr::start(&ns, &ns, &frr_config, self.frr)
                    .with_context(|| format!("starting FRR on {name}"))?;
                let exe = std::env::current_exe().context("locating netrollout-lab")?;
                let relay = Spawn {
                    netns: ns.clone(),
                    program: exe,
                    args: vec![
                        "relay".into(),
                        SocketAddr::from((Ipv4Addr::LOCALHOST, self.api_port)).to_string(),
                        SocketAddr::from((fabric::HOST_IP, self.api_port)).to_string(),
                    ],
                    env: Vec::new(),
                    log: self
                        .state_dir
                        .join("logs")
                        .join(format!("relay-{name}.log")),
                };
                for s in [relay, agent] {
                    let child = s
                        .command()?
                        .spawn()
                        .with_context(|| format!("starting {} on {name}", s.program.display()))?;
                    self.processes.push(child);
                }
                Ok(Value::Null)
            }
            Op::Attach {
                node,
                index,
                network,
            } => Ok(Value::Bool(crate::workload::attach(
                &node, index, &network,
            )?)),
            Op::Pinger {
                netns,
                pair,
                addr,
                log,
            } => {
                let tx = self.tx.clone();
                let child =
                    crate::workload::spawn_pinger(&netns, pair, addr, &log, move |p, at, ok| {
                        let _ = tx.send(Message::Probe { pair: p, at, ok });
                    })?;
                self.pingers.push(child);
                Ok(Value::Null)
            }
            Op::StopPingers => {
                for mut child in self.pingers.drain(..) {
                    let _ = child.kill().await;
                }
                Ok(Value::Null)
            }
            Op::Evpn { netns } => {
                crate::frr::evpn_established(&netns, self.frr)?;
                Ok(Value::Null)
            }
            Op::Dump { netns } => Ok(Value::String(crate::frr::dump(&netns, self.frr))),
            Op::StartFrr {
                netns,
                config,
                daemon,
            } => {
                match daemon {
                    Some(d) => crate::frr::start_daemon(&netns, &netns, &config, &d, self.frr)?,
                    None => drop(crate::frr::start(&netns, &netns, &config, self.frr)?),
                }
                Ok(Value::Null)
            }
            Op::Run { argv } => Ok(Value::String(crate::frr::run(&argv)?)),
        }
    }
}

/// Accepts connections on `listener` and relays each, both ways, to `to`.
pub async fn relay(listener: TcpListener, to: SocketAddr) {
    while let Ok((mut inbound, _)) = listener.accept().await {
        tokio::spawn(async move {
            if let Ok(mut outbound) = TcpStream::connect(to).await {
                let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
            }
        });
    }
}
