//! An ICMP echo from a chosen source address in a VRF: busybox's `ping` in the VM binds either
//! a device or an address, and a node's VRF has addresses the other node has no route back to
//! (node 1 exports only some of its t1 prefixes from rev-2 on). This binary sends it itself when
//! [`ECHO_ROLE`] is set (`ip netns exec NS BINARY`, as the agent role), with a raw socket bound
//! to the VRF device and the source address.

use std::io::Read;
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::node::Node;

/// Set in the environment of the echo process: `VRF SOURCE DESTINATION`.
pub const ECHO_ROLE: &str = "NETROLLOUT_VM_ECHO";

/// Whether one echo from `src` in this node's VRF `vrf` to `dst` is answered within 2 s.
pub fn echo(node: &Node, vrf: &str, src: &str, dst: &str) -> bool {
    let exe = std::env::current_exe().unwrap();
    std::process::Command::new("ip")
        .args(["netns", "exec", node.ps()])
        .arg(exe)
        .env(ECHO_ROLE, format!("{vrf} {src} {dst}"))
        .output()
        .is_ok_and(|o| o.status.success())
}

/// The echo role: exits 0 when the reply came, 1 otherwise (the reason on stderr).
pub fn run(spec: &str) -> ! {
    let words: Vec<&str> = spec.split_whitespace().collect();
    let code = match words.as_slice() {
        [vrf, src, dst] => match send(vrf, src.parse().unwrap(), dst.parse().unwrap()) {
            Ok(()) => 0,
            Err(e) => {
                eprintln!("echo {spec}: {e}");
                1
            }
        },
        _ => {
            eprintln!("{ECHO_ROLE}={spec:?}: expected VRF SOURCE DESTINATION");
            2
        }
    };
    std::process::exit(code)
}

fn send(vrf: &str, src: Ipv4Addr, dst: Ipv4Addr) -> Result<(), String> {
    let mut socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .map_err(|e| format!("raw socket: {e}"))?;
    socket
        .bind_device(Some(vrf.as_bytes()))
        .map_err(|e| format!("binding to {vrf}: {e}"))?;
    socket
        .bind(&SocketAddr::new(src.into(), 0).into())
        .map_err(|e| format!("binding to {src}: {e}"))?;
    let id = (std::process::id() & 0xffff) as u16;
    let mut packet = vec![8, 0, 0, 0];
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    packet.extend_from_slice(b"netrollout-vm-echo");
    let sum = checksum(&packet);
    packet[2..4].copy_from_slice(&sum.to_be_bytes());
    socket
        .send_to(&packet, &SocketAddr::new(dst.into(), 0).into())
        .map_err(|e| format!("sending: {e}"))?;
    let deadline = Instant::now() + Duration::from_secs(2);
    let mut buf = [0u8; 1500];
    while let Some(left) = deadline.checked_duration_since(Instant::now()) {
        socket
            .set_read_timeout(Some(left.max(Duration::from_millis(1))))
            .map_err(|e| format!("timeout: {e}"))?;
        let Ok(n) = socket.read(&mut buf) else {
            continue;
        };
        let ihl = usize::from(buf[0] & 0x0f) * 4;
        let from = Ipv4Addr::new(buf[12], buf[13], buf[14], buf[15]);
        if n >= ihl + 8 && from == dst && buf[ihl] == 0 && buf[ihl + 4..ihl + 6] == id.to_be_bytes()
        {
            return Ok(());
        }
    }
    Err("no echo reply within 2 s".into())
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}
