//! The lab's tenant traffic source: a steady, bounded ICMP echo stream over one raw IPv4
//! socket (needs CAP_NET_RAW; the lab runs as root). The lab runs it inside a workload
//! namespace (`netrollout-lab pinger`, hidden) and reads one line per probe from its stdout:
//! `PAIR SENT_UNIX_MS 1|0` (1: the reply came within the timeout). It exits when its stdout is
//! gone, so it never outlives the lab that reads it.
//!
//! A probe's timeout counts only time the pinger ran ([`Pending`]): when the pinger (or, in VM
//! mode, the whole guest under TCG on a loaded host) is not scheduled for a while, replies that
//! arrived meanwhile wait in the socket, and judging them by the wall clock after such a stall
//! would report every probe in flight lost although the network lost nothing. Each stall is
//! logged on stderr (the lab keeps it in `logs/pinger-*.log`).

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
/// `timeout` of the pinger's running time is reported lost.
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
    let mut pending = Pending::new(timeout, Instant::now());
    let mut next = Instant::now();
    let mut stdout = std::io::stdout().lock();
    let mut buf = [0u8; 1500];
    loop {
        let now = Instant::now();
        if let Some(stall) = pending.tick(now) {
            eprintln!(
                "pinger: not scheduled for {} ms before {} (Unix ms); that time does not count \
                 toward the probes' timeout",
                stall.as_millis(),
                unix_ms()
            );
        }
        if now >= next {
            for (i, t) in targets.iter().enumerate() {
                seq = seq.wrapping_add(1);
                let packet = echo_request(id, seq);
                // A send error (no route yet) is a lost probe, reported at its timeout.
                let _ = socket.send_to(&packet, &SocketAddr::from((t.addr, 0)).into());
                pending.sent(seq, i, unix_ms());
            }
            next += period;
            if next < now {
                next = now + period;
            }
        }
        // Every reply already queued is read before any probe is judged (after a stall the
        // socket may hold many); bounded, so a flood of other ICMP cannot starve the sends.
        for _ in 0..MAX_READS {
            let Ok(n) = (&socket).read(&mut buf) else {
                break;
            };
            if let Some(reply_seq) = parse_reply(&buf[..n], id)
                && let Some((i, sent)) = pending.replied(reply_seq)
                && writeln!(stdout, "{} {sent} 1", targets[i].pair).is_err()
            {
                return Ok(());
            }
        }
        for (i, sent) in pending.expired() {
            if writeln!(stdout, "{} {sent} 0", targets[i].pair).is_err() {
                return Ok(());
            }
        }
        if stdout.flush().is_err() {
            return Ok(());
        }
    }
}

/// Replies read at most per turn of the pinger's loop.
const MAX_READS: usize = 64;

/// The longest gap between two turns of the pinger's loop that counts as running time. The loop
/// turns every few milliseconds (a 5 ms read timeout); a longer gap is a stall: the process or
/// the guest was not scheduled, and no reply could be read in it.
pub const STALL: Duration = Duration::from_millis(100);

/// The probes in flight, their timeout counted in the pinger's running time: the time between
/// turns of its loop, each gap capped at [`STALL`].
#[derive(Debug)]
pub struct Pending {
    timeout: Duration,
    /// Running time since the pinger started.
    ran: Duration,
    last: Instant,
    /// Sequence -> (target index, running time when sent, Unix ms when sent).
    probes: HashMap<u16, (usize, Duration, u64)>,
}

impl Pending {
    /// No probe in flight; the pinger starts running at `now`.
    pub fn new(timeout: Duration, now: Instant) -> Self {
        Self {
            timeout,
            ran: Duration::ZERO,
            last: now,
            probes: HashMap::new(),
        }
    }

    /// A turn of the loop at `now`; returns the gap since the last turn when it was a stall.
    pub fn tick(&mut self, now: Instant) -> Option<Duration> {
        let gap = now.saturating_duration_since(self.last);
        self.last = now;
        self.ran += gap.min(STALL);
        (gap > STALL).then_some(gap)
    }

    /// Probe `seq` to target `target` went out (at `unix_ms`).
    pub fn sent(&mut self, seq: u16, target: usize, unix_ms: u64) {
        self.probes.insert(seq, (target, self.ran, unix_ms));
    }

    /// The reply to `seq` came: its target and send time, unless it was judged already.
    pub fn replied(&mut self, seq: u16) -> Option<(usize, u64)> {
        self.probes.remove(&seq).map(|(t, _, at)| (t, at))
    }

    /// Removes and returns (target, send time) of the probes whose timeout of running time has
    /// passed without a reply.
    pub fn expired(&mut self) -> Vec<(usize, u64)> {
        let (ran, timeout) = (self.ran, self.timeout);
        let late: Vec<u16> = (self.probes.iter())
            .filter(|(_, (_, at, _))| ran.saturating_sub(*at) > timeout)
            .map(|(s, _)| *s)
            .collect();
        let mut out: Vec<(usize, u64)> = (late.iter())
            .filter_map(|s| self.probes.remove(s))
            .map(|(t, _, at)| (t, at))
            .collect();
        out.sort_by_key(|(_, at)| *at);
        out
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

    /// A loop turning every 5 ms from `start` for `ms` milliseconds.
    fn run_for(p: &mut Pending, start: Instant, ms: u64) -> Instant {
        let mut now = start;
        for _ in 0..ms / 5 {
            now += Duration::from_millis(5);
            assert_eq!(p.tick(now), None, "5 ms turns are no stall");
        }
        now
    }

    #[test]
    fn a_probe_without_a_reply_is_lost_after_the_timeout_of_running_time() {
        let t0 = Instant::now();
        let mut p = Pending::new(Duration::from_secs(1), t0);
        p.sent(1, 0, 100);
        let now = run_for(&mut p, t0, 900);
        assert!(p.expired().is_empty(), "not yet: 0.9 s of 1 s");
        run_for(&mut p, now, 200);
        assert_eq!(p.expired(), vec![(0, 100)], "lost after 1.1 s of running");
        assert_eq!(p.replied(1), None, "a late reply does not count twice");
    }

    #[test]
    fn a_stall_of_the_pinger_does_not_count_toward_the_timeout() {
        let t0 = Instant::now();
        let mut p = Pending::new(Duration::from_secs(1), t0);
        p.sent(7, 2, 500);
        let now = run_for(&mut p, t0, 300);
        // Not scheduled for 3 s (a guest stall under TCG): the reply waits in the socket.
        let after = now + Duration::from_secs(3);
        assert_eq!(p.tick(after), Some(Duration::from_secs(3)));
        assert!(
            p.expired().is_empty(),
            "0.4 s of running time: the probe is still in flight"
        );
        assert_eq!(p.replied(7), Some((2, 500)), "the queued reply counts");
        // A real loss still shows, however many stalls come between.
        p.sent(8, 0, 600);
        let now = run_for(&mut p, after, 600);
        assert!(p.tick(now + Duration::from_secs(2)).is_some());
        run_for(&mut p, now + Duration::from_secs(2), 600);
        assert_eq!(p.expired(), vec![(0, 600)]);
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
