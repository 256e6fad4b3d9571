//! An ICMP echo from a chosen source address in a VRF: busybox's `ping` in the VM binds either
//! a device or an address, and a node's VRF has addresses the other node has no route back to
//! (node 1 exports only some of its t1 prefixes from rev-2 on). This binary sends it itself when
//! [`ECHO_ROLE`] is set (`ip netns exec NS BINARY`, as the agent role), with the agent's own echo
//! ([`icmp::echo_blocking`]) bound to the VRF device and the source address.

use std::net::Ipv4Addr;
use std::time::Duration;

use netrollout_agent::icmp;

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
    icmp::echo_blocking(
        dst.into(),
        Duration::from_secs(2),
        Some(vrf),
        Some(src.into()),
    )
}
