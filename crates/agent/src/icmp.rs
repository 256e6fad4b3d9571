//! One ICMP echo (`ping -c 1 -W T ADDR`) over a raw socket; needs `CAP_NET_RAW` (the agent runs
//! privileged). IPv4 and IPv6.

use std::io::Read;
use std::net::{IpAddr, SocketAddr};
use std::time::{Duration, Instant};

use socket2::{Domain, Protocol, Socket, Type};

use crate::ticks;

const ECHO_REQUEST_V4: u8 = 8;
const ECHO_REPLY_V4: u8 = 0;
const ECHO_REQUEST_V6: u8 = 128;
const ECHO_REPLY_V6: u8 = 129;

/// Sends one echo request to `addr` and waits up to `timeout` for the reply.
pub async fn ping(addr: IpAddr, timeout: Duration) -> Result<(), String> {
    ping_via(addr, timeout, None).await
}

/// [`ping`] with the socket bound to `device` (a VRF device: the echo goes through its table).
pub async fn ping_via(
    addr: IpAddr,
    timeout: Duration,
    device: Option<String>,
) -> Result<(), String> {
    tokio::task::spawn_blocking(move || echo_blocking(addr, timeout, device.as_deref(), None))
        .await
        .map_err(|e| format!("ping task: {e}"))?
}

/// One echo request to `addr`, waiting up to `timeout` for the reply on this thread: the socket
/// bound to `device` (a VRF) and to the source address `source` when given (a node's VRF may
/// hold addresses the other side has no route back to; the VM tests choose one it has).
pub fn echo_blocking(
    addr: IpAddr,
    timeout: Duration,
    device: Option<&str>,
    source: Option<IpAddr>,
) -> Result<(), String> {
    let (domain, proto, request, reply) = match addr {
        IpAddr::V4(_) => (
            Domain::IPV4,
            Protocol::ICMPV4,
            ECHO_REQUEST_V4,
            ECHO_REPLY_V4,
        ),
        IpAddr::V6(_) => (
            Domain::IPV6,
            Protocol::ICMPV6,
            ECHO_REQUEST_V6,
            ECHO_REPLY_V6,
        ),
    };
    let mut socket = Socket::new(domain, Type::RAW, Some(proto))
        .map_err(|e| format!("raw ICMP socket (needs CAP_NET_RAW): {e}"))?;
    if let Some(dev) = device {
        socket
            .bind_device(Some(dev.as_bytes()))
            .map_err(|e| format!("binding to {dev}: {e}"))?;
    }
    if let Some(source) = source {
        socket
            .bind(&SocketAddr::new(source, 0).into())
            .map_err(|e| format!("binding to {source}: {e}"))?;
    }
    // The identifier tells our replies from other processes' replies.
    let id = (std::process::id() as u16) ^ rand_u16();
    let mut packet = vec![request, 0, 0, 0];
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    packet.extend_from_slice(b"netrollout-probe");
    if addr.is_ipv4() {
        // The kernel fills in the ICMPv6 checksum itself, not the ICMPv4 one.
        let sum = checksum(&packet);
        packet[2..4].copy_from_slice(&sum.to_be_bytes());
    }
    socket
        .send_to(&packet, &SocketAddr::new(addr, 0).into())
        .map_err(|e| format!("sending echo request: {e}"))?;
    // The wait for the reply is counted in ticks of real waiting, so a clock that leaps while
    // it waits (a paused VM resumes) costs one tick, not the reply (crate::ticks).
    let mut limit = ticks::Blocking::new(timeout, Instant::now());
    let mut buf = [0u8; 1500];
    loop {
        let Some(wait) = limit.wait(Instant::now()) else {
            return Err(format!("no echo reply within {timeout:?}"));
        };
        socket
            .set_read_timeout(Some(wait.max(Duration::from_micros(1))))
            .map_err(|e| format!("socket timeout: {e}"))?;
        let n = match socket.read(&mut buf) {
            Ok(n) => n,
            Err(e)
                if matches!(
                    e.kind(),
                    std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                ) =>
            {
                continue;
            }
            Err(e) => return Err(format!("receiving: {e}")),
        };
        // IPv4 raw sockets deliver the IP header; IPv6 ones do not.
        let icmp = if addr.is_ipv4() {
            let ihl = usize::from(buf[0] & 0x0f) * 4;
            let src = IpAddr::from([buf[12], buf[13], buf[14], buf[15]]);
            if n < ihl + 8 || src != addr {
                continue;
            }
            &buf[ihl..n]
        } else {
            &buf[..n]
        };
        if icmp.len() >= 8 && icmp[0] == reply && icmp[4..6] == id.to_be_bytes() {
            return Ok(());
        }
    }
}

fn rand_u16() -> u16 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.subsec_nanos())
        .unwrap_or_default();
    nanos as u16
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

#[cfg(test)]
mod tests {
    #[test]
    fn the_checksum_of_a_packet_with_its_checksum_is_zero() {
        let mut p = vec![8, 0, 0, 0, 0x12, 0x34, 0, 1, b'a', b'b', b'c'];
        let sum = super::checksum(&p);
        p[2..4].copy_from_slice(&sum.to_be_bytes());
        assert_eq!(super::checksum(&p), 0);
    }
}
