//! The lab's tenant traffic source: a steady, bounded ICMP echo stream over one raw IPv4
//! socket (needs CAP_NET_RAW; the lab runs as root). The lab runs it inside a workload
//! namespace (`netrollout-lab pinger`, hidden) and reads one line per probe from its stdout:
//! `PAIR SENT_UNIX_MS 1|0` (1: the reply came within the timeout). It exits when its stdout is
//! gone, so it never outlives the lab that reads it.

use std::collections::HashMap;
use std::io::{Read as _, Write as _};
use std::net::{Ipv4Addr, SocketAddr};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use anyhow::{Context as _, Result, bail};
use socket2::{Domain, Protocol, Socket, Type};

const ECHO_REQUEST: u8 = 8;
const ECHO_REPLY: u8 = 0;

/// One target: the pair number the lab knows it by, and the address to ping.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    /// The lab's pair number.
    pub pair: usize,
    /// Where the echo requests go.
    pub addr: Ipv4Addr,
}

impl std::str::FromStr for Target {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        let (pair, addr) = s
            .split_once('=')
            .ok_or_else(|| format!("target {s:?}: write PAIR=ADDRESS, e.g. 3=192.168.60.12"))?;
        Ok(Self {
            pair: pair
                .parse()
                .map_err(|_| format!("target {s:?}: pair {pair:?} is not a number"))?,
            addr: addr
                .parse()
                .map_err(|_| format!("target {s:?}: {addr:?} is not an IPv4 address"))?,
        })
    }
}

/// Pings every target `rate` times a second until stdout closes; a probe without a reply after
/// `timeout` is reported lost.
pub fn run(targets: &[Target], rate: u32, timeout: Duration) -> Result<()> {
    if targets.is_empty() || rate == 0 {
        bail!("pinger: nothing to do (no targets or rate 0)");
    }
    let socket = Socket::new(Domain::IPV4, Type::RAW, Some(Protocol::ICMPV4))
        .context("raw ICMP socket (needs CAP_NET_RAW)")?;
    socket.set_read_timeout(Some(Duration::from_millis(5)))?;
    let id = (std::process::id() & 0xffff) as u16;
    let period = Duration::from_secs(1) / rate;
    let mut seq: u16 = 0;
    // (sequence) -> (target index, sent at, unix ms)
    let mut pending: HashMap<u16, (usize, Instant, u64)> = HashMap::new();
    let mut next = Instant::now();
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 1500];
    loop {
        let now = Instant::now();
        if now >= next {
            for (i, t) in targets.iter().enumerate() {
                seq = seq.wrapping_add(1);
                let packet = echo_request(id, seq);
                // A send error (no route yet) is a lost probe, reported at its timeout.
                let _ = socket.send_to(&packet, &SocketAddr::from((t.addr, 0)).into());
                pending.insert(seq, (i, now, unix_ms()));
            }
            next += period;
            if next < now {
                next = now + period;
            }
        }
        if let Ok(n) = (&socket).read(&mut buf)
            && let Some(reply_seq) = parse_reply(&buf[..n], id)
            && let Some((i, _, sent)) = pending.remove(&reply_seq)
            && writeln!(stdout, "{} {sent} 1", targets[i].pair).is_err()
        {
            return Ok(());
        }
        let expired: Vec<u16> = pending
            .iter()
            .filter(|(_, (_, at, _))| at.elapsed() > timeout)
            .map(|(s, _)| *s)
            .collect();
        for s in expired {
            if let Some((i, _, sent)) = pending.remove(&s)
                && writeln!(stdout, "{} {sent} 0", targets[i].pair).is_err()
            {
                return Ok(());
            }
        }
        if stdout.flush().is_err() {
            return Ok(());
        }
    }
}

fn unix_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

/// An ICMPv4 echo request with a checksum.
pub fn echo_request(id: u16, seq: u16) -> Vec<u8> {
    let mut packet = vec![ECHO_REQUEST, 0, 0, 0];
    packet.extend_from_slice(&id.to_be_bytes());
    packet.extend_from_slice(&seq.to_be_bytes());
    packet.extend_from_slice(b"netrollout-lab-tenant");
    let sum = checksum(&packet);
    packet[2..4].copy_from_slice(&sum.to_be_bytes());
    packet
}

/// The sequence number of an echo reply with identifier `id` (raw IPv4 sockets deliver the IP
/// header too).
pub fn parse_reply(packet: &[u8], id: u16) -> Option<u16> {
    let ihl = usize::from(packet.first()? & 0x0f) * 4;
    let icmp = packet.get(ihl..)?;
    if icmp.len() < 8 || icmp[0] != ECHO_REPLY {
        return None;
    }
    (u16::from_be_bytes([icmp[4], icmp[5]]) == id).then(|| u16::from_be_bytes([icmp[6], icmp[7]]))
}

fn checksum(data: &[u8]) -> u16 {
    let mut sum: u32 = data
        .chunks(2)
        .map(|c| u32::from(u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)])))
        .sum();
    while sum >> 16 != 0 {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reply_to_our_request_yields_its_sequence() {
        let mut req = echo_request(0x1234, 7);
        assert_eq!(checksum(&req), 0, "a packet with its checksum sums to zero");
        req[0] = ECHO_REPLY;
        let mut ip = vec![0x45u8];
        ip.resize(20, 0);
        ip.extend_from_slice(&req);
        assert_eq!(parse_reply(&ip, 0x1234), Some(7));
        assert_eq!(parse_reply(&ip, 0x9999), None, "another pinger's reply");
    }

    #[test]
    fn targets_parse_and_bad_ones_say_how_to_write_them() {
        assert_eq!(
            "3=192.168.60.12".parse::<Target>(),
            Ok(Target {
                pair: 3,
                addr: Ipv4Addr::new(192, 168, 60, 12)
            })
        );
        let e = "192.168.60.12".parse::<Target>().unwrap_err();
        assert!(e.contains("PAIR=ADDRESS"), "{e}");
    }
}
