//! Segmentation offload over the kernel's ethtool netlink interface (the generic netlink family
//! `ethtool`, Linux 5.6 and later): which of GSO, GRO and TSO each link wants, and switching
//! them, as `ethtool -k NAME` and `ethtool -K NAME gso off gro off tso off` do.
//!
//! The `ethtool` crate of the rust-netlink family reads features but cannot change them (its
//! 0.3 emits no feature bitset) and brings a second `netlink-proto`; the two requests needed
//! here are small enough to write on the blocking socket the dumps already use. Feature bits are
//! read in the kernel's compact form (one bit per feature, by index), so a node with thousands
//! of links answers in a few hundred kilobytes; the indexes come from the kernel's own string
//! set, read once, because they differ between kernel versions.

use std::collections::HashMap;
use std::io;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU32, Ordering};

use rtnetlink::packet_core::{
    NLA_F_NESTED, NLM_F_ACK, NLM_F_DUMP, NLM_F_REQUEST, NLMSG_DONE, NLMSG_ERROR, NlasIterator,
};
use rtnetlink::sys::{Socket, SocketAddr, protocols::NETLINK_GENERIC};

use crate::exchange::{acknowledged, exchange, invalid};
use crate::model::Segmentation;

/// The features `ethtool -K NAME gso X gro X tso X` switches: GSO, GRO and the TSO bits (the
/// last one since Linux 6.18; a bit the kernel does not name is skipped).
pub(crate) const FEATURES: [&str; 7] = [
    "tx-generic-segmentation",
    "rx-gro",
    "tx-tcp-segmentation",
    "tx-tcp-ecn-segmentation",
    "tx-tcp-mangleid-segmentation",
    "tx-tcp6-segmentation",
    "tx-tcp-accecn-segmentation",
];

const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;

const ETHTOOL_GENL_VERSION: u8 = 1;
const ETHTOOL_MSG_STRSET_GET: u8 = 1;
const ETHTOOL_MSG_FEATURES_GET: u8 = 11;
const ETHTOOL_MSG_FEATURES_SET: u8 = 12;

const ETHTOOL_A_HEADER_DEV_INDEX: u16 = 1;
const ETHTOOL_A_HEADER_FLAGS: u16 = 3;
const ETHTOOL_FLAG_COMPACT_BITSETS: u32 = 1;
const ETHTOOL_FLAG_OMIT_REPLY: u32 = 2;

const ETHTOOL_A_STRSET_HEADER: u16 = 1;
const ETHTOOL_A_STRSET_STRINGSETS: u16 = 2;
const ETHTOOL_A_STRINGSETS_STRINGSET: u16 = 1;
const ETHTOOL_A_STRINGSET_ID: u16 = 1;
const ETHTOOL_A_STRINGSET_STRINGS: u16 = 3;
const ETHTOOL_A_STRINGS_STRING: u16 = 1;
const ETHTOOL_A_STRING_INDEX: u16 = 1;
const ETHTOOL_A_STRING_VALUE: u16 = 2;
const ETH_SS_FEATURES: u32 = 4;

const ETHTOOL_A_FEATURES_HEADER: u16 = 1;
const ETHTOOL_A_FEATURES_HW: u16 = 2;
const ETHTOOL_A_FEATURES_WANTED: u16 = 3;

const ETHTOOL_A_BITSET_BITS: u16 = 3;
const ETHTOOL_A_BITSET_VALUE: u16 = 4;
const ETHTOOL_A_BITS_BIT: u16 = 1;
const ETHTOOL_A_BIT_NAME: u16 = 2;
const ETHTOOL_A_BIT_VALUE: u16 = 3;

const TYPE_MASK: u16 = 0x3fff;
/// The control family's answer for a family the kernel does not have.
const ENOENT: i32 = 2;

/// A generic netlink socket bound to the `ethtool` family of one network namespace.
#[derive(Debug)]
pub(crate) struct Ethtool {
    socket: Mutex<Socket>,
    family: u16,
    seq: AtomicU32,
    /// The kernel's bit index of each of [`FEATURES`] (absent: the kernel lacks that bit).
    bits: Vec<(u32, &'static str)>,
}

impl Ethtool {
    /// Opens the socket in the calling thread's namespace; `Ok(None)` when the kernel has no
    /// ethtool netlink family (older than 5.6, or built without `CONFIG_ETHTOOL_NETLINK`).
    pub fn open() -> io::Result<Option<Self>> {
        let mut socket = Socket::new(NETLINK_GENERIC)?;
        socket.bind_auto()?;
        socket.connect(&SocketAddr::new(0, 0))?;
        let mut me = Self {
            socket: Mutex::new(socket),
            family: 0,
            seq: AtomicU32::new(1),
            bits: Vec::new(),
        };
        let mut name = Attrs::default();
        name.string(CTRL_ATTR_FAMILY_NAME, "ethtool");
        let mut family = None;
        let asked = me.request(
            GENL_ID_CTRL,
            CTRL_CMD_GETFAMILY,
            2,
            NLM_F_REQUEST,
            &name,
            |a| {
                for nla in NlasIterator::new(a).flatten() {
                    if nla.kind() & TYPE_MASK == CTRL_ATTR_FAMILY_ID {
                        family = nla
                            .value()
                            .get(..2)
                            .map(|b| u16::from_ne_bytes([b[0], b[1]]));
                    }
                }
            },
        );
        match asked {
            Err(e) if e.raw_os_error() == Some(ENOENT) => return Ok(None),
            other => other?,
        }
        me.family = family.ok_or_else(|| invalid("the kernel named no ethtool family id"))?;
        me.bits = me.feature_bits()?;
        Ok(Some(me))
    }

    /// The index of each of [`FEATURES`] in the kernel's feature string set.
    fn feature_bits(&self) -> io::Result<Vec<(u32, &'static str)>> {
        let mut set = Attrs::default();
        // An empty header (no device: the kernel's global string sets); the kernel wants one.
        set.nest(ETHTOOL_A_STRSET_HEADER, |_| {});
        set.nest(ETHTOOL_A_STRSET_STRINGSETS, |sets| {
            sets.nest(ETHTOOL_A_STRINGSETS_STRINGSET, |one| {
                one.u32(ETHTOOL_A_STRINGSET_ID, ETH_SS_FEATURES);
            });
        });
        let mut bits = Vec::new();
        self.request(
            self.family,
            ETHTOOL_MSG_STRSET_GET,
            ETHTOOL_GENL_VERSION,
            NLM_F_REQUEST,
            &set,
            |attrs| {
                for (index, name) in strings(attrs) {
                    if let Some(f) = FEATURES.iter().find(|f| **f == name) {
                        bits.push((index, *f));
                    }
                }
            },
        )?;
        if bits.is_empty() {
            return Err(invalid(
                "the kernel's feature strings name none of GSO, GRO, TSO",
            ));
        }
        Ok(bits)
    }

    /// The segmentation offload each link wants, by interface index, read from one dump
    /// (`ethtool -k` of every link): [`Segmentation::On`] when every feature of [`FEATURES`]
    /// the link can change is wanted on, `Off` when every one is off, `Mixed` otherwise.
    pub fn wanted(&self) -> io::Result<HashMap<u32, Segmentation>> {
        let mut req = Attrs::default();
        req.nest(ETHTOOL_A_FEATURES_HEADER, |h| {
            h.u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_COMPACT_BITSETS);
        });
        let mut out = HashMap::new();
        self.request(
            self.family,
            ETHTOOL_MSG_FEATURES_GET,
            ETHTOOL_GENL_VERSION,
            NLM_F_REQUEST | NLM_F_DUMP,
            &req,
            |attrs| {
                let (mut index, mut hw, mut wanted) = (None, Vec::new(), Vec::new());
                for nla in NlasIterator::new(attrs).flatten() {
                    match nla.kind() & TYPE_MASK {
                        ETHTOOL_A_FEATURES_HEADER => index = header_index(nla.value()),
                        ETHTOOL_A_FEATURES_HW => hw = bitset_words(nla.value()),
                        ETHTOOL_A_FEATURES_WANTED => wanted = bitset_words(nla.value()),
                        _ => {}
                    }
                }
                if let Some(index) = index {
                    out.insert(index, self.segmentation(&hw, &wanted));
                }
            },
        )?;
        Ok(out)
    }

    fn segmentation(&self, hw: &[u32], wanted: &[u32]) -> Segmentation {
        let bit = |words: &[u32], i: u32| {
            words
                .get(i as usize / 32)
                .is_some_and(|w| w >> (i % 32) & 1 == 1)
        };
        let changeable: Vec<bool> = (self.bits.iter())
            .filter(|(i, _)| bit(hw, *i))
            .map(|(i, _)| bit(wanted, *i))
            .collect();
        if changeable.iter().all(|on| *on) {
            Segmentation::On
        } else if changeable.iter().all(|on| !*on) {
            Segmentation::Off
        } else {
            Segmentation::Mixed
        }
    }

    /// Switches every feature of [`FEATURES`] the kernel knows on or off on one link (`ethtool
    /// -K NAME gso X gro X tso X`); returns the kernel's errno (0 for success). Features the
    /// device cannot change are left as they are by the kernel.
    pub fn set(&self, ifindex: u32, on: bool) -> io::Result<i32> {
        let mut req = Attrs::default();
        req.nest(ETHTOOL_A_FEATURES_HEADER, |h| {
            h.u32(ETHTOOL_A_HEADER_DEV_INDEX, ifindex);
            h.u32(ETHTOOL_A_HEADER_FLAGS, ETHTOOL_FLAG_OMIT_REPLY);
        });
        req.nest(ETHTOOL_A_FEATURES_WANTED, |set| {
            set.nest(ETHTOOL_A_BITSET_BITS, |bits| {
                for (_, name) in &self.bits {
                    bits.nest(ETHTOOL_A_BITS_BIT, |b| {
                        b.string(ETHTOOL_A_BIT_NAME, name);
                        if on {
                            b.flag(ETHTOOL_A_BIT_VALUE);
                        }
                    });
                }
            });
        });
        let flags = NLM_F_REQUEST | NLM_F_ACK;
        match self.request(
            self.family,
            ETHTOOL_MSG_FEATURES_SET,
            1,
            flags,
            &req,
            |_| {},
        ) {
            Ok(()) => Ok(0),
            Err(e) => e.raw_os_error().map(Ok).unwrap_or(Err(e)),
        }
    }

    /// Sends one generic netlink request and hands each answer's attributes to `each`, until
    /// the final acknowledgement or `NLMSG_DONE`; a kernel error becomes an `io::Error` with
    /// its errno.
    fn request(
        &self,
        family: u16,
        cmd: u8,
        version: u8,
        flags: u16,
        attrs: &Attrs,
        mut each: impl FnMut(&[u8]),
    ) -> io::Result<()> {
        let seq = self.seq.fetch_add(1, Ordering::Relaxed);
        let len = 16 + 4 + attrs.0.len();
        let mut buf = Vec::with_capacity(len);
        buf.extend_from_slice(&(len as u32).to_ne_bytes());
        buf.extend_from_slice(&family.to_ne_bytes());
        buf.extend_from_slice(&flags.to_ne_bytes());
        buf.extend_from_slice(&seq.to_ne_bytes());
        buf.extend_from_slice(&0u32.to_ne_bytes());
        buf.extend_from_slice(&[cmd, version, 0, 0]);
        buf.extend_from_slice(&attrs.0);
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let acked = flags & NLM_F_ACK == NLM_F_ACK;
        exchange(&self.socket, &buf, seq, |header, payload| {
            match header.message_type {
                NLMSG_DONE => Some(Ok(())),
                NLMSG_ERROR => Some(acknowledged(payload)),
                _ => {
                    each(payload.get(4..).unwrap_or_default());
                    (!dump && !acked).then_some(Ok(()))
                }
            }
        })
    }
}

/// The interface index in an `ETHTOOL_A_*_HEADER` nest.
fn header_index(header: &[u8]) -> Option<u32> {
    NlasIterator::new(header).flatten().find_map(|a| {
        (a.kind() & TYPE_MASK == ETHTOOL_A_HEADER_DEV_INDEX)
            .then(|| {
                a.value()
                    .get(..4)
                    .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
            })
            .flatten()
    })
}

/// The value words of a compact bitset.
fn bitset_words(bitset: &[u8]) -> Vec<u32> {
    NlasIterator::new(bitset)
        .flatten()
        .find(|a| a.kind() & TYPE_MASK == ETHTOOL_A_BITSET_VALUE)
        .map(|a| {
            (a.value().chunks_exact(4))
                .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]))
                .collect()
        })
        .unwrap_or_default()
}

/// The `(index, string)` pairs of a `STRSET_GET` reply.
fn strings(attrs: &[u8]) -> Vec<(u32, String)> {
    let nested = |buf: &[u8], kind: u16| -> Vec<Vec<u8>> {
        NlasIterator::new(buf)
            .flatten()
            .filter(|a| a.kind() & TYPE_MASK == kind)
            .map(|a| a.value().to_vec())
            .collect()
    };
    let mut out = Vec::new();
    for sets in nested(attrs, ETHTOOL_A_STRSET_STRINGSETS) {
        for set in nested(&sets, ETHTOOL_A_STRINGSETS_STRINGSET) {
            for strings in nested(&set, ETHTOOL_A_STRINGSET_STRINGS) {
                for one in nested(&strings, ETHTOOL_A_STRINGS_STRING) {
                    let (mut index, mut value) = (None, None);
                    for a in NlasIterator::new(&one[..]).flatten() {
                        match a.kind() & TYPE_MASK {
                            ETHTOOL_A_STRING_INDEX => {
                                index = a
                                    .value()
                                    .get(..4)
                                    .map(|b| u32::from_ne_bytes([b[0], b[1], b[2], b[3]]));
                            }
                            ETHTOOL_A_STRING_VALUE => {
                                value = a
                                    .value()
                                    .split(|b| *b == 0)
                                    .next()
                                    .map(|s| String::from_utf8_lossy(s).into_owned());
                            }
                            _ => {}
                        }
                    }
                    if let (Some(i), Some(v)) = (index, value) {
                        out.push((i, v));
                    }
                }
            }
        }
    }
    out
}

/// Netlink attributes being written.
#[derive(Default)]
struct Attrs(Vec<u8>);

impl Attrs {
    fn raw(&mut self, kind: u16, value: &[u8]) {
        let len = u16::try_from(4 + value.len()).unwrap_or(u16::MAX);
        self.0.extend_from_slice(&len.to_ne_bytes());
        self.0.extend_from_slice(&kind.to_ne_bytes());
        self.0.extend_from_slice(value);
        self.0.resize((self.0.len() + 3) & !3, 0);
    }
    fn u32(&mut self, kind: u16, v: u32) {
        self.raw(kind, &v.to_ne_bytes());
    }
    fn string(&mut self, kind: u16, s: &str) {
        let mut v = s.as_bytes().to_vec();
        v.push(0);
        self.raw(kind, &v);
    }
    fn flag(&mut self, kind: u16) {
        self.raw(kind, &[]);
    }
    fn nest(&mut self, kind: u16, fill: impl FnOnce(&mut Attrs)) {
        let mut inner = Attrs::default();
        fill(&mut inner);
        self.raw(kind | NLA_F_NESTED, &inner.0);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_compact_bitset_is_read_as_words() {
        let mut set = Attrs::default();
        set.u32(2, 40);
        set.raw(ETHTOOL_A_BITSET_VALUE, &[0x05, 0, 0, 0, 0x01, 0, 0, 0]);
        assert_eq!(bitset_words(&set.0), vec![5, 1]);
    }

    #[test]
    fn segmentation_counts_only_the_bits_a_device_can_change() {
        let e = Ethtool {
            socket: Mutex::new(Socket::new(NETLINK_GENERIC).expect("socket")),
            family: 0,
            seq: AtomicU32::new(1),
            bits: vec![(0, FEATURES[0]), (1, FEATURES[1]), (33, FEATURES[2])],
        };
        // Bit 33 cannot be changed: its wanted value does not count.
        assert_eq!(e.segmentation(&[0b11, 0], &[0b11, 0]), Segmentation::On);
        assert_eq!(e.segmentation(&[0b11, 0], &[0b00, 2]), Segmentation::Off);
        assert_eq!(e.segmentation(&[0b11, 2], &[0b11, 0]), Segmentation::Mixed);
    }
}
