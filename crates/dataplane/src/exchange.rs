//! One request and its answers over a plain (blocking) netlink socket: the route dumps and
//! writes of `dump.rs` and the ethtool family's requests of `ethtool.rs` share it.

use std::io;
use std::sync::Mutex;

use rtnetlink::packet_core::{NetlinkBuffer, NetlinkHeader, Parseable};
use rtnetlink::sys::Socket;

/// Receive buffer size; the kernel sizes dump datagrams to fit (up to 32 KiB, more only for a
/// single oversized message).
pub(crate) const RECV_BUF: usize = 256 * 1024;

/// Sends `request` (one whole netlink message whose sequence number is `seq`) and hands each
/// answer carrying `seq` (its header and payload) to `answer`, until `answer` returns the
/// request's result.
pub(crate) fn exchange(
    socket: &Mutex<Socket>,
    request: &[u8],
    seq: u32,
    mut answer: impl FnMut(&NetlinkHeader, &[u8]) -> Option<io::Result<()>>,
) -> io::Result<()> {
    // A poisoned lock only means another request panicked; the socket itself is fine.
    let socket = socket.lock().unwrap_or_else(|p| p.into_inner());
    socket.send(request, 0)?;
    // A large receive buffer lets the kernel pack many messages into each datagram.
    let mut data: Vec<u8> = Vec::with_capacity(RECV_BUF);
    loop {
        data.clear();
        let n = socket.recv(&mut data, 0)?;
        if n > RECV_BUF {
            return Err(invalid(format!(
                "netlink datagram of {n} bytes exceeds {RECV_BUF}"
            )));
        }
        let mut offset = 0;
        while offset < data.len() {
            let nl = NetlinkBuffer::new_checked(&data[offset..]).map_err(invalid)?;
            let len = nl.length() as usize;
            let header = NetlinkHeader::parse(&nl).map_err(invalid)?;
            offset += (len + 3) & !3;
            if header.sequence_number != seq {
                continue;
            }
            if let Some(result) = answer(&header, nl.payload()) {
                return result;
            }
        }
    }
}

/// The error code of an `NLMSG_ERROR` message's payload (0: an acknowledgement).
pub(crate) fn error_code(payload: &[u8]) -> i32 {
    payload
        .get(..4)
        .map_or(0, |b| i32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
}

/// An `NLMSG_ERROR` message as a result: `Ok` for an acknowledgement, else the kernel's errno.
pub(crate) fn acknowledged(payload: &[u8]) -> io::Result<()> {
    match error_code(payload) {
        0 => Ok(()),
        c => Err(io::Error::from_raw_os_error(-c)),
    }
}

pub(crate) fn invalid(e: impl std::fmt::Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e.to_string())
}
